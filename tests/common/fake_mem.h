/* Guest memory for unit tests: a few host buffers, each standing at a guest address (virtual or
 * physical, as the test decides), behind the reader callbacks the code under test takes. Reads are
 * counted, and one of them can be made to fail. */
#ifndef HVT_TESTS_FAKE_MEM_H
#define HVT_TESTS_FAKE_MEM_H

#include <stddef.h>
#include <stdint.h>

#define FAKE_MEM_REGIONS 4

struct fake_mem {
	struct fake_region {
		uint64_t base;
		uint8_t *buf; /* the test's own memory, @size bytes */
		size_t size;
	} r[FAKE_MEM_REGIONS];
	unsigned nr;
	unsigned reads;	    /* read callbacks so far, failed ones included */
	unsigned fail_read; /* read callback number (1-based) that fails with -EFAULT; 0: none */
};

/* Empties @m (no regions, counters zero). */
void fake_mem_init(struct fake_mem *m);
/* Makes @buf (@size bytes, owned by the caller) appear at guest address @base. */
void fake_mem_map(struct fake_mem *m, uint64_t base, void *buf, size_t size);
/* Host address of guest [@addr, @addr + @len) when it lies inside one region, else NULL. */
uint8_t *fake_mem_at(struct fake_mem *m, uint64_t addr, size_t len);

/* The readers, @ctx being the struct fake_mem. Each counts the call, fails the chosen call, and
 * fails a range that is not inside one region. */
/* vmi_read_fn: 0 or -EFAULT. */
int fake_mem_read(void *ctx, uint64_t addr, void *buf, size_t len);
/* x86_read_pte_fn: an aligned 8-byte entry; 0, or -EIO (unaligned, or outside the regions). */
int fake_mem_read_pte(void *ctx, uint64_t gpa, uint64_t *pte);

#endif

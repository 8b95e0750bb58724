/* The guest-physical map of a running QEMU, learned from QEMU itself: which guest-physical ranges
 * are RAM and which memory backend holds them (HMP `info mtree -f`, `info ramblock`, `info
 * memdev`), and where each backend is mapped in the QEMU process (/proc/PID/smaps: anonymous,
 * memfd, file or hugetlbfs mappings of the block's size and page size). Backends of the same size
 * and page size (NUMA nodes) are told apart by content: a page where the candidate mappings differ,
 * compared with the same page read through the gdbstub's physical mode. Everything QEMU prints is
 * untrusted: lines, names, counts and ranges are bounded, and overlapping or out-of-block ranges
 * are refused. */
#ifndef HVT_QEMU_MEMMAP_H
#define HVT_QEMU_MEMMAP_H

#include "host/vmm/proc_mem.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define QEMU_MEMMAP_NAME       64   /* longest region/block name kept, with its NUL */
#define QEMU_MEMMAP_MAX_RANGES 128  /* RAM ranges of the system flat view */
#define QEMU_MEMMAP_MAX_BLOCKS 64   /* RAM blocks */
#define QEMU_MEMMAP_MAX_MAPS   64   /* candidate host mappings */
#define QEMU_MEMMAP_MAX_LINE   1024 /* a longer line of QEMU's output is refused */

/* A RAM range of the system address space's flat view: guest-physical [gpa, gpa+len) is @name's
 * memory region from @offset on. */
struct qemu_ram_range {
	uint64_t gpa, len, offset;
	char name[QEMU_MEMMAP_NAME];
};

/* A line of `info ramblock`. */
struct qemu_ramblock {
	char name[QEMU_MEMMAP_NAME];
	uint64_t psize, used;
	uint64_t hva; /* where it is mapped in the QEMU process (column HVA, QEMU 10.0): 0 not shown */
	bool ro;      /* column RO says "ro" */
};

/* A host mapping that could hold guest RAM: readable, writable, not executable, anonymous or
 * file-backed (memfd, tmpfs, hugetlbfs). */
struct qemu_host_map {
	uint64_t lo, hi;   /* [lo, hi) in the QEMU process */
	uint64_t pagesize; /* KernelPageSize */
};

/* Parses `info mtree -f`: the RAM ranges (kind "ram") of the flat view of address space "memory"
 * (root: system), at most @max into @r, their number in *@nr. 0, or -EINVAL with one line in @err
 * (a line too long, a range out of shape, no such flat view, too many ranges). */
int qemu_mtree_parse(const char *text, struct qemu_ram_range *r, unsigned max, unsigned *nr,
		     char *err, size_t errlen);

/* Parses `info ramblock`, its columns read by the header's names: Block Name, PSize and Used are
 * needed; Total is checked against Used, HVA and RO (QEMU 10.0) are kept; any other column is one
 * word. 0 or -EINVAL with @err (no header, a line that does not fit it, a block listed twice). */
int qemu_ramblock_parse(const char *text, struct qemu_ramblock *b, unsigned max, unsigned *nr,
			char *err, size_t errlen);

/* Parses `info memdev`: the ids of the memory backends ("memory backend: ID"), into @ids. 0 or
 * -EINVAL with @err. */
int qemu_memdev_parse(const char *text, char (*ids)[QEMU_MEMMAP_NAME], unsigned max, unsigned *nr,
		      char *err, size_t errlen);

/* The same from QMP's `query-memdev` answer @json (its "return" value: an array of objects with
 * "id"), preferred to the HMP text where QEMU answers it. 0, -ENOENT when a backend has no id (QEMU
 * before 4.0: ask `info memdev`), or -EINVAL with @err. */
int qemu_memdev_parse_qmp(const char *json, char (*ids)[QEMU_MEMMAP_NAME], unsigned max,
			  unsigned *nr, char *err, size_t errlen);

/* Reads /proc/PID/smaps (or maps: page size then 4 KiB) from @f: the mappings that could hold guest
 * RAM and whose size is one of @sizes. 0, or -E2BIG with @err when more than @max match. */
int qemu_maps_parse(FILE *f, const uint64_t *sizes, unsigned nsizes, struct qemu_host_map *m,
		    unsigned max, unsigned *nr, char *err, size_t errlen);

/* Reads @len bytes at @addr (a host address of the QEMU process, or a guest-physical address). */
typedef int (*qemu_memmap_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

struct qemu_memmap_in {
	const struct qemu_ram_range *ranges;
	unsigned nr_ranges;
	const struct qemu_ramblock *blocks;
	unsigned nr_blocks;
	const char (*memdevs)[QEMU_MEMMAP_NAME];
	unsigned nr_memdevs;
	const struct qemu_host_map *maps;
	unsigned nr_maps;
	qemu_memmap_read_fn host_read, phys_read; /* phys_read only for backends that look alike */
	void *host_ctx, *phys_ctx;
};

/* Is @block one whose mapping the map needs: a memory backend's (`info memdev`), or, with no
 * backend listed (QEMU before 5.0), one that a RAM range names? */
bool qemu_memmap_wanted(const struct qemu_memmap_in *in, const char *block);

/* The map: each memory backend's block to its host mapping (told apart by content where several
 * fit), then every RAM range of a backend to its host address, sorted by gpa, adjacent ones merged.
 * RAM ranges of other blocks (device RAM) are left out (qemu_memmap_wanted). Main thread. 0, or a
 * negative errno with one line in @err (-ENOENT: a backend with no mapping; -EEXIST: backends that
 * cannot be told apart; -EINVAL: a range outside its block, overlapping ranges; -E2BIG: too many
 * regions). */
int qemu_memmap_resolve(const struct qemu_memmap_in *in, struct proc_mem_region *out, unsigned max,
			unsigned *nr, char *err, size_t errlen);

#endif

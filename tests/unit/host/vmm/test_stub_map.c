/* Stub probes' memory mapped into a guest kernel's page tables (host/vmm/stub_map.c) and the
 * entries every backend's mapping is built of (host/vmm/stub_pt.c), on a guest of 16 MiB in this
 * process: 4-level tables for the kernel image's 1 GiB with its first 32 MiB mapped, free low
 * memory for the stub. Where the stub lands, the exact entries written, W^X, refusals, and the
 * guest put back byte for byte. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/vmm/stub_map.h"
#include "host/vmm/stub_pt.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define GUEST_SIZE (16u << 20)
#define CR3	   0x1000ull
#define PDPT	   0x2000ull
#define PD	   0x3000ull
#define LOW_LO	   0x10000ull /* the free low memory: a page table and 8 pages */
#define LOW_HI	   0x19000ull
#define IMAGE	   0xffffffff80000000ull
#define AFTER	   (IMAGE + (32ull << 20)) /* the first slot after the image's 32 MiB */
#define TEXT_LO	   (IMAGE + (16ull << 20))
#define TEXT_HI	   (IMAGE + (20ull << 20))
#define P	   1ull
#define RW	   2ull
#define A	   (1ull << 5)
#define D	   (1ull << 6)
#define PS	   (1ull << 7)
#define NX	   (1ull << 63)

static uint8_t *guest;
static unsigned fail_write_at; /* the Nth write fails (0: none) */
static unsigned writes;

static int g_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	(void)ctx;
	if (gpa > GUEST_SIZE || len > GUEST_SIZE - gpa)
		return -EFAULT;
	memcpy(buf, guest + gpa, len);
	return 0;
}

static int g_write(void *ctx, uint64_t gpa, const void *buf, size_t len)
{
	(void)ctx;
	if (gpa > GUEST_SIZE || len > GUEST_SIZE - gpa || ++writes == fail_write_at)
		return -EFAULT;
	memcpy(guest + gpa, buf, len);
	return 0;
}

static const struct stub_map_mem mem = {g_read, g_write, NULL};

static uint64_t u64_at(uint64_t gpa)
{
	uint64_t v;

	memcpy(&v, guest + gpa, 8);
	return v;
}

static void put_u64(uint64_t gpa, uint64_t v)
{
	memcpy(guest + gpa, &v, 8);
}

static int kernel_pt(void *ctx, uint64_t *cr3, bool *la57)
{
	(*(unsigned *)ctx)++;
	*cr3 = CR3;
	*la57 = false;
	return 0;
}

/* The kernel image's 1 GiB: PML4[511] -> PDPT, PDPT[510] -> PD, PD[0..15] 2 MiB pages. Low memory
 * holds a pattern the stub's mapping must give back. */
static int setup(void **state)
{
	(void)state;
	guest = calloc(1, GUEST_SIZE);
	assert_non_null(guest);
	put_u64(CR3 + 8 * 511, PDPT | P | RW | A);
	put_u64(PDPT + 8 * 510, PD | P | RW | A);
	for (unsigned i = 0; i < 16; i++)
		put_u64(PD + 8 * i, ((uint64_t)i << 21) | P | RW | A | D | PS);
	for (uint64_t a = LOW_LO; a < LOW_HI; a++)
		guest[a] = (uint8_t)(a * 7 + 3);
	writes = fail_write_at = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(guest);
	return 0;
}

static void test_entries(void **state)
{
	uint64_t pt[STUB_PT_ENTRIES];

	(void)state;
	assert_int_equal(stub_pt_table_entry(0x5000), 0x5000 | P | RW | A);
	assert_int_equal(stub_pt_large_entry(0x200000, false), 0x200000 | P | RW | A | D | PS);
	assert_int_equal(stub_pt_large_entry(0x200000, true), 0x200000 | P | RW | A | D | PS | NX);
	/* the embedded VMM's: every entry, data not executable */
	stub_pt_fill(pt, 0x100000, STUB_PT_ENTRIES, 0, 0, true);
	assert_int_equal(pt[0], 0x100000 | P | A); /* the code's two pages (STUB_CODE_SIZE) */
	assert_int_equal(pt[1], 0x101000 | P | A);
	assert_int_equal(pt[2], 0x102000 | P | RW | A | D | NX);
	assert_int_equal(pt[511], 0x2ff000 | P | RW | A | D | NX);
	/* fewer pages than entries: the rest 0; a range marked executable */
	stub_pt_fill(pt, 0x100000, 4, 0x2ff0, 0x20, false);
	assert_int_equal(pt[1], 0x101000 | P | A);
	assert_int_equal(pt[2], 0x102000 | P | A);
	assert_int_equal(pt[3], 0x103000 | P | A);
	assert_int_equal(pt[4], 0);
	assert_false(stub_pt_meets(0x1000, 0, 0, 0x2000));
	assert_false(stub_pt_meets(0x2000, 0x10, 0x1000, 0x2000));
	assert_true(stub_pt_meets(0x1fff, 1, 0x1000, 0x2000));
}

static void test_map_low_memory(void **state)
{
	uint8_t *before = malloc(GUEST_SIZE);
	struct stub_map s = {0};
	struct target_region r;
	unsigned asked = 0;
	char err[256] = "";

	(void)state;
	assert_non_null(before);
	memcpy(before, guest, GUEST_SIZE);
	stub_map_set_area(&s, LOW_LO, LOW_HI, AFTER, 0, 0);
	assert_int_equal(stub_map_gpa(&s), LOW_LO + 0x1000);
	assert_int_equal(stub_map_map(&s, &mem, NULL, kernel_pt, &asked, TEXT_LO, TEXT_HI, 0x1000,
				      0x100000, &r, err, sizeof(err)),
			 0);
	assert_string_equal(err, "");
	assert_int_equal(asked, 1);
	/* the first free slot after the image, the pages after the page table */
	assert_int_equal(r.gva, AFTER);
	assert_int_equal(r.gpa, LOW_LO + 0x1000);
	assert_int_equal(r.size, 0x8000);
	assert_string_equal(r.where, "low-memory");
	/* one page-directory entry: the page table, first in low memory */
	assert_int_equal(u64_at(PD + 8 * 16), LOW_LO | P | RW | A);
	assert_int_equal(u64_at(PD + 8 * 17), 0);
	assert_int_equal(u64_at(LOW_LO), (LOW_LO + 0x1000) | P | A);
	assert_int_equal(u64_at(LOW_LO + 8), (LOW_LO + 0x2000) | P | A);
	for (unsigned i = 2; i < 8; i++)
		assert_int_equal(u64_at(LOW_LO + 8 * i),
				 (LOW_LO + 0x1000 + i * 0x1000) | P | RW | A | D);
	assert_int_equal(u64_at(LOW_LO + 8 * 8), 0);
	/* the stub's own bytes are left as they were (the caller writes them) */
	assert_memory_equal(guest + LOW_LO + 0x1000, before + LOW_LO + 0x1000, 0x8000);
	/* W^X: page 3 holds executable code too (pages 0 and 1 are the code's) */
	assert_int_equal(stub_map_protect(&s, &mem, 0x3000, 0x100), 0);
	assert_int_equal(u64_at(LOW_LO), (LOW_LO + 0x1000) | P | A);
	assert_int_equal(u64_at(LOW_LO + 8), (LOW_LO + 0x2000) | P | A);
	assert_int_equal(u64_at(LOW_LO + 16), (LOW_LO + 0x3000) | P | RW | A | D | NX);
	assert_int_equal(u64_at(LOW_LO + 24), (LOW_LO + 0x4000) | P | A);
	/* the guest writes its stub; unmap puts everything back */
	memset(guest + LOW_LO + 0x1000, 0xcc, 0x8000);
	stub_map_unmap(&s, &mem);
	assert_memory_equal(guest, before, GUEST_SIZE);
	assert_int_equal(s.nr_pde, 0);
	assert_null(s.saved);
	stub_map_unmap(&s, &mem); /* idempotent */
	assert_memory_equal(guest, before, GUEST_SIZE);
	assert_int_equal(stub_map_protect(&s, &mem, 0, 0), -EINVAL);
	free(before);
}

/* A KASLR slide that leaves no room before the modules: below the image, where the kernel cleared
 * the image mapping's entries. */
static void test_map_below_image(void **state)
{
	struct stub_map s = {0};
	struct target_region r;
	unsigned asked = 0;
	char err[256];

	(void)state;
	for (unsigned i = 16; i < 512; i++)
		put_u64(PD + 8 * i, ((uint64_t)i << 21) | P | RW | A | D | PS);
	for (unsigned i = 0; i < 4; i++)
		put_u64(PD + 8 * i, 0);
	stub_map_set_area(&s, LOW_LO, LOW_HI, AFTER, 0, 0);
	assert_int_equal(stub_map_map(&s, &mem, NULL, kernel_pt, &asked, TEXT_LO, TEXT_HI, 0x1000,
				      0x2000, &r, err, sizeof(err)),
			 0);
	assert_int_equal(r.gva, IMAGE);
	assert_int_equal(r.size, 0x2000);
	assert_int_equal(u64_at(PD), LOW_LO | P | RW | A);
	stub_map_unmap(&s, &mem);
	assert_int_equal(u64_at(PD), 0);
}

/* Reserved RAM (2 MiB aligned): 3 MiB wanted take two slots, the second a 2 MiB page. */
static void test_map_reserved(void **state)
{
	struct stub_map s = {0};
	struct target_region r;
	unsigned asked = 0;
	char err[256];

	(void)state;
	stub_map_set_area(&s, LOW_LO, LOW_HI, AFTER, 8u << 20, 4u << 20);
	assert_int_equal(stub_map_gpa(&s), 8u << 20);
	assert_int_equal(stub_map_reserve(3u << 20), 4u << 20);
	assert_int_equal(stub_map_map(&s, &mem, "why", kernel_pt, &asked, TEXT_LO, TEXT_HI, 0x1000,
				      3u << 20, &r, err, sizeof(err)),
			 0);
	assert_int_equal(r.gpa, 8u << 20);
	assert_int_equal(r.size, 3u << 20);
	assert_string_equal(r.where, "reserved");
	assert_int_equal(u64_at(PD + 8 * 16), LOW_LO | P | RW | A);
	assert_int_equal(u64_at(PD + 8 * 17), (10ull << 20) | P | RW | A | D | PS);
	assert_int_equal(u64_at(LOW_LO), (8ull << 20) | P | A);
	assert_int_equal(u64_at(LOW_LO + 8 * 511), ((8ull << 20) + 511 * 0x1000) | P | RW | A | D);
	assert_int_equal(stub_map_protect(&s, &mem, 0, 0x10), 0);
	assert_int_equal(u64_at(PD + 8 * 17), (10ull << 20) | P | RW | A | D | PS | NX);
	stub_map_unmap(&s, &mem);
	assert_int_equal(u64_at(PD + 8 * 16), 0);
	assert_int_equal(u64_at(PD + 8 * 17), 0);
	/* the page-table page as it was */
	assert_int_equal(guest[LOW_LO], (uint8_t)(LOW_LO * 7 + 3));
	assert_int_equal(guest[LOW_LO + 4095], (uint8_t)((LOW_LO + 4095) * 7 + 3));
}

static void test_refusals(void **state)
{
	uint8_t *before = malloc(GUEST_SIZE);
	struct stub_map s = {0};
	struct target_region r;
	unsigned asked = 0;
	char err[256];

	(void)state;
	assert_non_null(before);
	/* no area */
	assert_int_equal(stub_map_map(&s, &mem, NULL, kernel_pt, &asked, TEXT_LO, TEXT_HI, 0x1000,
				      0x2000, &r, err, sizeof(err)),
			 -ENOTSUP);
	assert_string_equal(err, "stub probes: no free guest memory known for the stub");
	/* too little */
	stub_map_set_area(&s, LOW_LO, LOW_HI, AFTER, 0, 0);
	assert_int_equal(stub_map_map(&s, &mem, "the kernel's own", kernel_pt, &asked, TEXT_LO,
				      TEXT_HI, 0x10000, 0x10000, &r, err, sizeof(err)),
			 -ENOSPC);
	assert_string_equal(err, "stub probes: 32 KiB free at guest-physical 0x11000 (low memory: "
				 "the kernel's own)");
	/* reserved RAM not 2 MiB aligned */
	stub_map_set_area(&s, LOW_LO, LOW_HI, AFTER, 0x100000, 4u << 20);
	assert_int_equal(stub_map_map(&s, &mem, NULL, kernel_pt, &asked, TEXT_LO, TEXT_HI, 0x1000,
				      0x2000, &r, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err,
			    "stub probes: reserved RAM 0x100000+0x400000 is not 2 MiB aligned");
	assert_int_equal(asked, 0);
	/* the traced code out of reach */
	stub_map_set_area(&s, LOW_LO, LOW_HI, AFTER, 0, 0);
	assert_int_equal(stub_map_map(&s, &mem, NULL, kernel_pt, &asked, 0xffffffff00000000ull,
				      TEXT_HI, 0x1000, 0x2000, &r, err, sizeof(err)),
			 -ENOSPC);
	assert_string_equal(err, "stub probes: no 1 free 2 MiB kernel address slots in the image's "
				 "1 GiB within 2 GiB of the traced code");
	/* a page-directory write fails: the guest as it was */
	memcpy(before, guest, GUEST_SIZE);
	writes = 0;
	fail_write_at = 2;
	assert_int_equal(stub_map_map(&s, &mem, NULL, kernel_pt, &asked, TEXT_LO, TEXT_HI, 0x1000,
				      0x2000, &r, err, sizeof(err)),
			 -EFAULT);
	assert_string_equal(err, "stub probes: cannot write the guest's page tables");
	fail_write_at = 0;
	assert_memory_equal(guest, before, GUEST_SIZE);
	assert_null(s.saved);
	free(before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_entries),
	    cmocka_unit_test_setup_teardown(test_map_low_memory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_map_below_image, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_map_reserved, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* arch/x86/x86_pagewalk.h: the page-table walk (4- and 5-level, 2 MiB and 1 GiB pages) over a fake
 * guest-physical memory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/x86_longmode.h"
#include "arch/x86/x86_pagewalk.h"
#include "tests/common/fake_mem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- x86_translate over a fake guest-physical memory ---------------------------------------- */

/* Guest-physical [0, FAKE_PAGES * 4 KiB) backed by a host buffer (the one region of a fake_mem);
 * every other address fails to read. */
#define FAKE_PAGES 16

static int fake_setup(void **state)
{
	struct fake_mem *f = calloc(1, sizeof(*f));
	void *pages = calloc(FAKE_PAGES, X86_PAGE_SIZE);

	if (!f || !pages) {
		free(f);
		free(pages);
		return -1;
	}
	fake_mem_init(f);
	fake_mem_map(f, 0, pages, FAKE_PAGES * X86_PAGE_SIZE);
	*state = f;
	return 0;
}

static int fake_teardown(void **state)
{
	struct fake_mem *f = *state;

	free(f->r[0].buf);
	free(f);
	return 0;
}

/* Sets entry @idx of the table in guest-physical page @page. */
static void set_pte(struct fake_mem *f, unsigned page, unsigned idx, uint64_t val)
{
	((uint64_t *)f->r[0].buf)[page * 512 + idx] = val;
}

#define PG(n)		((uint64_t)(n)*X86_PAGE_SIZE)
#define IDX(gva, level) ((unsigned)(((gva) >> (12 + 9 * ((level)-1))) & 511))
#define PRW		(X86_PTE_P | X86_PTE_RW)

/* 4-level paging, 4 KiB page: flag bits (NX, US, available bits) never leak into the address, and
 * the low CR3 bits (PWT/PCD) are ignored. */
static void test_translate_4level_4k(void **state)
{
	struct fake_mem *f = *state;
	const uint64_t gva = 0xffffffff81234abcull;
	uint64_t gpa = 0;

	set_pte(f, 1, IDX(gva, 4), PG(2) | PRW);
	set_pte(f, 2, IDX(gva, 3), PG(3) | PRW | X86_PTE_US);
	set_pte(f, 3, IDX(gva, 2), PG(4) | PRW);
	set_pte(f, 4, IDX(gva, 1), 0x123456000ull | PRW | X86_PTE_NX | (7ull << 9));

	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1) | 0x18, false, gva, &gpa), 0);
	assert_int_equal(gpa, 0x123456abcull);
	assert_int_equal(f->reads, 4);

	/* the first and last byte of the same page */
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva & ~0xfffull, &gpa),
			 0);
	assert_int_equal(gpa, 0x123456000ull);
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva | 0xfff, &gpa), 0);
	assert_int_equal(gpa, 0x123456fffull);

	/* the next page has no PTE */
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva + 0x1000, &gpa),
			 -EFAULT);
}

/* A 2 MiB page at the PD level: the low 21 bits come from the address; the PAT bit (12) of a
 * large-page entry is not part of the frame. */
static void test_translate_2m(void **state)
{
	struct fake_mem *f = *state;
	const uint64_t gva = 0x00007f0012345678ull;
	uint64_t gpa = 0;

	set_pte(f, 1, IDX(gva, 4), PG(2) | PRW);
	set_pte(f, 2, IDX(gva, 3), PG(3) | PRW);
	set_pte(f, 3, IDX(gva, 2), 0x40000000ull | PRW | X86_PTE_PS | (1ull << 12));

	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), 0);
	assert_int_equal(gpa, 0x40000000ull | (gva & 0x1fffff));
	assert_int_equal(gpa, 0x40145678ull);
	assert_int_equal(f->reads, 3);
}

/* A 1 GiB page at the PDPT level: the low 30 bits come from the address. */
static void test_translate_1g(void **state)
{
	struct fake_mem *f = *state;
	const uint64_t gva = 0xffff888012345678ull;
	uint64_t gpa = 0;

	set_pte(f, 1, IDX(gva, 4), PG(2) | PRW);
	set_pte(f, 2, IDX(gva, 3), 0x1c0000000ull | PRW | X86_PTE_PS | X86_PTE_NX);

	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), 0);
	assert_int_equal(gpa, 0x1c0000000ull | (gva & 0x3fffffff));
	assert_int_equal(gpa, 0x1d2345678ull);
	assert_int_equal(f->reads, 2);
}

/* 5-level paging: bits 48..56 index the PML5; the same tables walked 4-level resolve differently.
 */
static void test_translate_5level(void **state)
{
	struct fake_mem *f = *state;
	const uint64_t gva = 0x00ab008012345678ull; /* PML5 index 0xab */
	uint64_t gpa = 0;

	assert_int_equal(IDX(gva, 5), 0xab);
	set_pte(f, 1, IDX(gva, 5), PG(2) | PRW);
	set_pte(f, 2, IDX(gva, 4), PG(3) | PRW);
	set_pte(f, 3, IDX(gva, 3), PG(4) | PRW);
	set_pte(f, 4, IDX(gva, 2), PG(5) | PRW);
	set_pte(f, 5, IDX(gva, 1), 0xabcdef000ull | PRW);

	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), true, gva, &gpa), 0);
	assert_int_equal(gpa, 0xabcdef678ull);
	assert_int_equal(f->reads, 5);

	/* walked 4-level, PML4 index (gva >> 39) & 511 = 1 is not present in page 1 */
	assert_int_equal(IDX(gva, 4), 1);
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), -EFAULT);
}

/* 5-level with a 2 MiB page under it. */
static void test_translate_5level_2m(void **state)
{
	struct fake_mem *f = *state;
	const uint64_t gva = 0x0001000000345678ull; /* PML5 1, PML4 0, PDPT 0, PD 1 */
	uint64_t gpa = 0;

	set_pte(f, 1, IDX(gva, 5), PG(2) | PRW);
	set_pte(f, 2, IDX(gva, 4), PG(3) | PRW);
	set_pte(f, 3, IDX(gva, 3), PG(4) | PRW);
	set_pte(f, 4, IDX(gva, 2), 0x7e00000ull | PRW | X86_PTE_PS);

	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), true, gva, &gpa), 0);
	assert_int_equal(gpa, 0x7f45678ull);
}

/* A not-present entry at each level gives -EFAULT, even if the other bits look like a valid entry.
 */
static void test_translate_not_present(void **state)
{
	struct fake_mem *f = *state;
	const uint64_t gva = 0x0000123456789abcull;
	uint64_t gpa = 0xdead;

	/* empty PML4 */
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), -EFAULT);

	/* PML4 present, PDPT entry has every bit but P */
	set_pte(f, 1, IDX(gva, 4), PG(2) | PRW);
	set_pte(f, 2, IDX(gva, 3), PG(3) | X86_PTE_RW | X86_PTE_PS);
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), -EFAULT);

	/* down to a not-present PTE */
	set_pte(f, 2, IDX(gva, 3), PG(3) | PRW);
	set_pte(f, 3, IDX(gva, 2), PG(4) | PRW);
	set_pte(f, 4, IDX(gva, 1), 0x5000ull | X86_PTE_RW);
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), -EFAULT);

	/* making it present completes the walk */
	set_pte(f, 4, IDX(gva, 1), 0x5000ull | PRW);
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), 0);
	assert_int_equal(gpa, 0x5abcull);
}

/* A table that cannot be read (outside the fake memory) gives -EFAULT. */
static void test_translate_read_error(void **state)
{
	struct fake_mem *f = *state;
	uint64_t gpa = 0;

	assert_int_equal(
	    x86_translate(fake_mem_read_pte, f, PG(FAKE_PAGES + 4), false, 0x1000, &gpa), -EFAULT);
	/* PML4 entry points outside the fake memory */
	set_pte(f, 1, 0, PG(FAKE_PAGES + 1) | PRW);
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, 0x1000, &gpa), -EFAULT);
}

/* Cyclic tables (a hostile guest's): the walk reads exactly one entry per level and ends, here in
 * the recursive mapping's defined result, the table's own page. */
static void test_translate_self_reference(void **state)
{
	struct fake_mem *f = *state;
	const uint64_t gva = 0x0000123456789abcull;
	uint64_t gpa = 0, pde = 0;

	for (unsigned i = 0; i < 512; i++)
		set_pte(f, 1, i, PG(1) | PRW); /* every entry of the PML4 points at the PML4 */
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), 0);
	assert_int_equal(gpa, PG(1) | 0xabc);
	assert_int_equal(f->reads, 4);
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), true, gva, &gpa), 0);
	assert_int_equal(gpa, PG(1) | 0xabc);
	assert_int_equal(f->reads, 4 + 5);
	assert_int_equal(x86_pde_addr(fake_mem_read_pte, f, PG(1), false, gva, &pde), 0);
	assert_int_equal(pde, PG(1) + IDX(gva, 2) * 8);
	assert_int_equal(f->reads, 4 + 5 + 2);

	/* two tables pointing at each other: the same bound */
	for (unsigned i = 0; i < 512; i++) {
		set_pte(f, 1, i, PG(2) | PRW);
		set_pte(f, 2, i, PG(1) | PRW);
	}
	f->reads = 0;
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), 0);
	assert_int_equal(gpa, PG(1) | 0xabc);
	assert_int_equal(f->reads, 4);
	/* and a cycle that never reaches a present leaf ends in -EFAULT */
	set_pte(f, 2, IDX(gva, 1), PG(1));
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), -EFAULT);
	assert_int_equal(f->reads, 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_translate_4level_4k, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_translate_2m, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_translate_1g, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_translate_5level, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_translate_5level_2m, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_translate_not_present, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_translate_read_error, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_translate_self_reference, fake_setup,
					    fake_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* arch/x86/x86_longmode.h: the identity map and the GDT the VMM builds for freestanding guests. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/x86_longmode.h"
#include "arch/x86/x86_pagewalk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- x86_build_identity_map ----------------------------------------------------------------- */

/* The identity map's tables as the guest sees them: at guest-physical tables_gpa. */
struct idmap_mem {
	const uint64_t *tables;
	uint64_t tables_gpa;
	unsigned pages;
};

static int idmap_read_pte(void *ctx, uint64_t gpa, uint64_t *pte)
{
	struct idmap_mem *m = ctx;

	if (gpa < m->tables_gpa || gpa >= m->tables_gpa + m->pages * X86_PAGE_SIZE)
		return -EIO;
	*pte = m->tables[(gpa - m->tables_gpa) / 8];
	return 0;
}

/* Every address below @gib GiB translates to itself through 2 MiB pages; the next GiB is not
 * mapped. */
static void test_identity_map(void **state)
{
	const unsigned gib = 4;
	const uint64_t tables_gpa = 0x9000;
	static const uint64_t addrs[] = {
	    0,		0x1234,	    0x1fffff,	0x200000,   0x200005,	0x3fffffff,
	    0x40000000, 0x87654321, 0xc0000000, 0xfee00000, 0xffffffff,
	};
	uint64_t *tables = aligned_alloc(4096, X86_IDMAP_PAGES(gib) * X86_PAGE_SIZE);
	struct idmap_mem m = {tables, tables_gpa, X86_IDMAP_PAGES(gib)};
	uint64_t gpa;

	(void)state;
	assert_non_null(tables);
	memset(tables, 0xff, X86_IDMAP_PAGES(gib) * X86_PAGE_SIZE); /* garbage must be cleared */
	assert_int_equal(X86_IDMAP_PAGES(gib), 6);
	assert_int_equal(x86_build_identity_map(tables, tables_gpa, gib), tables_gpa);

	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		gpa = ~0ull;
		assert_int_equal(
		    x86_translate(idmap_read_pte, &m, tables_gpa, false, addrs[i], &gpa), 0);
		assert_int_equal(gpa, addrs[i]);
	}
	/* 4 GiB and above, and the upper half, are not mapped */
	assert_int_equal(x86_translate(idmap_read_pte, &m, tables_gpa, false, 0x100000000ull, &gpa),
			 -EFAULT);
	assert_int_equal(
	    x86_translate(idmap_read_pte, &m, tables_gpa, false, 0xffffffff80000000ull, &gpa),
	    -EFAULT);
	/* the mappings are 2 MiB pages: the PML4 and PDPT entries point at the next table pages */
	assert_int_equal(tables[0], (tables_gpa + 0x1000) | X86_PTE_P | X86_PTE_RW);
	assert_int_equal(tables[512 + 3], (tables_gpa + 0x5000) | X86_PTE_P | X86_PTE_RW);
	assert_int_equal(tables[1024 + 1], 0x200000 | X86_PTE_P | X86_PTE_RW | X86_PTE_PS);
	free(tables);
}

/* ---- x86_build_gdt -------------------------------------------------------------------------- */

/* null, 64-bit code (L=1, DPL0, present), flat data. */
static void test_gdt(void **state)
{
	uint64_t gdt[X86_GDT_ENTRIES];

	(void)state;
	memset(gdt, 0xff, sizeof(gdt));
	x86_build_gdt(gdt);
	assert_int_equal(gdt[0], 0);
	assert_int_equal(gdt[X86_SEL_CODE64 / 8], 0x00209b0000000000ull);
	assert_int_equal(gdt[X86_SEL_DATA / 8], 0x00cf93000000ffffull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_identity_map),
	    cmocka_unit_test(test_gdt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

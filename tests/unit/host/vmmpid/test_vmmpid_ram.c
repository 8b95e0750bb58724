/* Which guest-physical range a foreign VMM's mapping holds (host/vmmpid/vmmpid_ram.c), on synthetic
 * VMM memory: a decoy mapping and one holding a guest's page tables and kernel text, walked from a
 * vCPU's CR3 (4 KiB and 2 MiB pages, a PTI pair, hostile tables that point outside the map or at
 * themselves), and the rest of RAM placed from E820 tables as QEMU (one mapping split at the PCI
 * hole), Firecracker (a mapping per range) and hvtrace's own VMM lay it out, with the refusals. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/vmmpid/vmmpid_ram.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GiB (1ull << 30)
#define MiB (1ull << 20)

#define DECOY_HVA 0x7f0000000000ull
#define RAM_HVA	  0x7f4000000000ull
#define RAM_LEN	  (8 * MiB)
#define KTEXT	  0xffffffff81000000ull
#define KDATA	  0xffffffff82000000ull /* through a 2 MiB page */
#define BANNER	  "Linux version 6.1.0-test (synthetic)"

static uint8_t *decoy, *ram;

static int host_read(void *ctx, uint64_t hva, void *buf, size_t len)
{
	(void)ctx;
	if (hva >= DECOY_HVA && hva + len <= DECOY_HVA + RAM_LEN) {
		memcpy(buf, decoy + (hva - DECOY_HVA), len);
		return 0;
	}
	if (hva >= RAM_HVA && hva + len <= RAM_HVA + RAM_LEN) {
		memcpy(buf, ram + (hva - RAM_HVA), len);
		return 0;
	}
	return -EFAULT;
}

static void put(uint64_t gpa, uint64_t v)
{
	memcpy(ram + gpa, &v, 8);
}

#define P  0x3ull /* present, writable */
#define PS 0x80ull

/* Kernel page tables at PML4 @root: KTEXT -> gpa 0x200000 (4 KiB page), KDATA -> 0x400000 (2 MiB
 * page); tables at @root + 0x1000.. */
static void build_tables(uint64_t root)
{
	uint64_t pdpt = root + 0x1000, pd = root + 0x2000, pt = root + 0x3000;

	put(root + 511 * 8, pdpt | P);
	put(pdpt + 510 * 8, pd | P);
	put(pd + ((KTEXT >> 21) & 511) * 8, pt | P);
	put(pt + 0, 0x200000 | P);
	put(pd + ((KDATA >> 21) & 511) * 8, 0x400000 | P | PS);
}

static int setup(void **state)
{
	(void)state;
	decoy = calloc(1, RAM_LEN);
	ram = calloc(1, RAM_LEN);
	assert_non_null(decoy);
	assert_non_null(ram);
	/* the decoy looks like nothing: a pattern, not page tables */
	memset(decoy, 0xff, RAM_LEN);
	build_tables(0x10000);
	memcpy(ram + 0x200000, BANNER, sizeof(BANNER));
	memcpy(ram + 0x400000 + 0x1234, "DATA", 4);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(decoy);
	free(ram);
	return 0;
}

static unsigned finds;

/* The kernel "found" when its banner is at KTEXT and its data at KDATA, through the reader. */
static int find(void *ctx, vmi_read_fn read, void *rctx, char *why, size_t whylen)
{
	char b[sizeof(BANNER)], d[4];

	(void)ctx;
	finds++;
	if (read(rctx, KTEXT, b, sizeof(b)) < 0 || memcmp(b, BANNER, sizeof(b))) {
		snprintf(why, whylen, "no banner");
		return -ENOENT;
	}
	if (read(rctx, KDATA + 0x1234, d, 4) < 0 || memcmp(d, "DATA", 4)) {
		snprintf(why, whylen, "no data");
		return -ENOENT;
	}
	return 0;
}

static const struct kvm_proc_ram cands[2] = {
    {DECOY_HVA, RAM_LEN, false},
    {RAM_HVA, RAM_LEN, true},
};

#define LONG 0x500ull /* EFER.LME | EFER.LMA */

static void test_prove(void **state)
{
	struct vmmpid_ram_cpu cpu[2] = {{0x10000, 0, LONG}, {0x10000 | 0x5 /* PCID */, 0, LONG}};
	struct vmmpid_ram_proof pr;
	char err[512];

	(void)state;
	finds = 0;
	assert_int_equal(
	    vmmpid_ram_prove(cands, 2, cpu, 2, host_read, NULL, find, NULL, &pr, err, sizeof(err)),
	    0);
	assert_int_equal(pr.cand, 1);
	assert_int_equal(pr.cpu, 0);
	assert_int_equal(pr.root, 0x10000);
	assert_int_equal(pr.mode, 0);
	assert_int_equal(finds, 1); /* the decoy never reached the kernel finder; one root */
}

static void test_not_long_mode(void **state)
{
	struct vmmpid_ram_cpu cpu[1] = {{0x10000, 0, 0}};
	struct vmmpid_ram_proof pr;
	char err[512];

	(void)state;
	assert_int_equal(
	    vmmpid_ram_prove(cands, 2, cpu, 1, host_read, NULL, find, NULL, &pr, err, sizeof(err)),
	    -ENOENT);
	assert_string_equal(err, "no vCPU in long mode");
	assert_int_equal(
	    vmmpid_ram_prove(cands, 0, cpu, 1, host_read, NULL, find, NULL, &pr, err, sizeof(err)),
	    -ENOENT);
	assert_string_equal(err, "no RAM candidate among its mappings");
}

static void test_wrong_root(void **state)
{
	/* CR3 at an empty page, and past the map */
	struct vmmpid_ram_cpu cpu[2] = {{0x30000, 0, LONG}, {RAM_LEN, 0, LONG}};
	struct vmmpid_ram_proof pr;
	char err[512];

	(void)state;
	assert_int_equal(
	    vmmpid_ram_prove(cands, 2, cpu, 2, host_read, NULL, find, NULL, &pr, err, sizeof(err)),
	    -ENOENT);
	assert_non_null(strstr(err, "holds no page-table root at vCPU 0's CR3 0x30000"));
}

static void test_pti_pair(void **state)
{
	/* a user PGD at kernel PGD + 4 KiB with one kernel-half entry of its own (the entry
	 * trampoline's), the vCPU held in user mode */
	struct vmmpid_ram_cpu cpu[1] = {{0x41000, 0, LONG}};
	struct vmmpid_ram_proof pr;
	char err[512];

	(void)state;
	build_tables(0x40000);
	put(0x41000 + 300 * 8, 0x50000 | P);
	assert_int_equal(
	    vmmpid_ram_prove(cands, 2, cpu, 1, host_read, NULL, find, NULL, &pr, err, sizeof(err)),
	    0);
	assert_int_equal(pr.root, 0x41000);
}

static void test_hostile_tables(void **state)
{
	/* a kernel-half entry past the map: not a root; one pointing at itself, and a PD entry
	 * past the map: walked within bounds, no kernel */
	struct vmmpid_ram_cpu cpu[2] = {{0x60000, 0, LONG}, {0x70000, 0, LONG}};
	uint64_t pml4[512] = {0};
	struct vmmpid_ram_proof pr;
	char err[512];

	(void)state;
	put(0x60000 + 511 * 8, (RAM_LEN + 0x1000) | P);
	put(0x70000 + 511 * 8, 0x70000 | P);
	put(0x70000 + 510 * 8, 0x70000 | P);
	assert_int_equal(
	    vmmpid_ram_prove(cands, 2, cpu, 2, host_read, NULL, find, NULL, &pr, err, sizeof(err)),
	    -ENOENT);
	assert_non_null(strstr(err, "vCPU 1's page tables (CR3 0x70000)"));
	assert_non_null(strstr(err, "lead to no kernel: no banner"));
	/* the plausibility check itself */
	assert_false(vmmpid_ram_pml4_plausible(pml4, RAM_LEN)); /* nothing present */
	pml4[3] = 0x1000 | P;
	assert_false(vmmpid_ram_pml4_plausible(pml4, RAM_LEN)); /* user half only */
	pml4[256] = 0x2000 | P;
	assert_true(vmmpid_ram_pml4_plausible(pml4, RAM_LEN));
	pml4[300] = 0x2000 | P | PS;
	assert_false(vmmpid_ram_pml4_plausible(pml4, RAM_LEN)); /* no large page at the root */
	pml4[300] = 0;
	pml4[511] = (0x000fffffffff000ull) | P;
	assert_false(vmmpid_ram_pml4_plausible(pml4, RAM_LEN)); /* past RAM */
}

/* An E820 table image: count, then {addr, size, type} entries. */
static size_t e820(uint8_t *buf, const uint64_t (*e)[3], uint32_t n)
{
	memcpy(buf, &n, 4);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t type = (uint32_t)e[i][2];

		memcpy(buf + 4 + i * 20, &e[i][0], 8);
		memcpy(buf + 4 + i * 20 + 8, &e[i][1], 8);
		memcpy(buf + 4 + i * 20 + 16, &type, 4);
	}
	return 4 + n * 20;
}

static void test_layout_qemu(void **state)
{
	/* pc.ram of 6 GiB: 2 GiB below the PCI hole (SeaBIOS reserves its top pages), 4 above */
	static const uint64_t e[][3] = {
	    {0, 0x9fc00, 1},	      {0x9fc00, 0x400, 2},
	    {0xf0000, 0x10000, 2},    {0x100000, 0x7fee0000 - 0x100000, 1},
	    {0x7fee0000, 0x20000, 3}, {0x7ff00000, 0x100000, 2},
	    {0xfeffc000, 0x4000, 2},  {4 * GiB, 4 * GiB, 1}};
	struct kvm_proc_ram c[2] = {{0x7f0000000000ull, 6 * GiB, true},
				    {0x7e0000000000ull, 64 * MiB}};
	struct proc_mem_region reg[PROC_MEM_MAX_REGIONS];
	uint8_t tbl[4 + 20 * 16];
	unsigned nr;
	char err[256];

	(void)state;
	assert_int_equal(
	    vmmpid_ram_layout(tbl, e820(tbl, e, 8), c, 2, 0, reg, &nr, err, sizeof(err)), 0);
	assert_int_equal(nr, 2);
	assert_int_equal(reg[0].gpa, 0);
	assert_int_equal(reg[0].len, 2 * GiB);
	assert_int_equal(reg[0].hva, 0x7f0000000000ull);
	assert_int_equal(reg[1].gpa, 4 * GiB);
	assert_int_equal(reg[1].len, 4 * GiB);
	assert_int_equal(reg[1].hva, 0x7f0000000000ull + 2 * GiB);
}

static void test_layout_per_range(void **state)
{
	/* Firecracker: [0, 3.25 GiB) and [4 GiB, 5 GiB), a mapping each */
	static const uint64_t e[][3] = {
	    {0, 0x9fc00, 1}, {0x100000, 0xd0000000 - 0x100000, 1}, {4 * GiB, 1 * GiB, 1}};
	struct kvm_proc_ram c[3] = {{0x7f0000000000ull, 0xd0000000, false},
				    {0x7e0000000000ull, 512 * MiB, false},
				    {0x7d0000000000ull, 1 * GiB, false}};
	struct proc_mem_region reg[PROC_MEM_MAX_REGIONS];
	uint8_t tbl[4 + 20 * 16];
	unsigned nr;
	char err[256];

	(void)state;
	assert_int_equal(
	    vmmpid_ram_layout(tbl, e820(tbl, e, 3), c, 3, 0, reg, &nr, err, sizeof(err)), 0);
	assert_int_equal(nr, 2);
	assert_int_equal(reg[0].len, 0xd0000000);
	assert_int_equal(reg[0].hva, 0x7f0000000000ull);
	assert_int_equal(reg[1].gpa, 4 * GiB);
	assert_int_equal(reg[1].hva, 0x7d0000000000ull);
}

static void test_layout_small_and_refused(void **state)
{
	static const uint64_t small[][3] = {{0, 0x9fc00, 1}, {0x100000, 1 * GiB - 0x100000, 1}};
	static const uint64_t big[][3] = {{0x100000, 2 * GiB - 0x100000, 1}};
	static const uint64_t high[][3] = {{0x100000, 1 * GiB - 0x100000, 1},
					   {4 * GiB, 3 * GiB, 1}};
	/* hostile: a wrapping entry, and a count far past the bytes given */
	static const uint64_t wrap[][3] = {{0x100000, 1 * GiB - 0x100000, 1},
					   {0xfffffffffffff000ull, 0x2000, 1}};
	struct kvm_proc_ram c[1] = {{0x7f0000000000ull, 1 * GiB, false}};
	struct proc_mem_region reg[PROC_MEM_MAX_REGIONS];
	uint8_t tbl[4 + 20 * 16];
	uint32_t lie = 0xffffffff;
	size_t n;
	unsigned nr;
	char err[256];

	(void)state;
	assert_int_equal(
	    vmmpid_ram_layout(tbl, e820(tbl, small, 2), c, 1, 0, reg, &nr, err, sizeof(err)), 0);
	assert_int_equal(nr, 1);
	assert_int_equal(reg[0].len, 1 * GiB);
	assert_int_equal(
	    vmmpid_ram_layout(tbl, e820(tbl, big, 1), c, 1, 0, reg, &nr, err, sizeof(err)),
	    -EINVAL);
	assert_string_equal(err, "the kernel's E820 table has RAM up to 0x80000000, past the "
				 "mapping that holds guest-physical 0 (0x40000000 bytes)");
	assert_int_equal(
	    vmmpid_ram_layout(tbl, e820(tbl, high, 2), c, 1, 0, reg, &nr, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "0xc0000000 bytes of RAM above 4 GiB"));
	n = e820(tbl, wrap, 2);
	memcpy(tbl, &lie, 4);
	assert_int_equal(vmmpid_ram_layout(tbl, n, c, 1, 0, reg, &nr, err, sizeof(err)), 0);
	assert_int_equal(nr, 1);
	assert_int_equal(vmmpid_ram_layout(tbl, 3, c, 1, 0, reg, &nr, err, sizeof(err)), -EINVAL);
	assert_int_equal(vmmpid_ram_layout(tbl, n, c, 1, 1, reg, &nr, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prove),
	    cmocka_unit_test(test_not_long_mode),
	    cmocka_unit_test(test_wrong_root),
	    cmocka_unit_test(test_pti_pair),
	    cmocka_unit_test(test_hostile_tables),
	    cmocka_unit_test(test_layout_qemu),
	    cmocka_unit_test(test_layout_per_range),
	    cmocka_unit_test(test_layout_small_and_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

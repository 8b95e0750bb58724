/* arch/arm64/arm64_pagewalk.h: TCR_EL1 decoding and the stage-1 walk over crafted tables in a fake
 * guest memory: 4 KiB 48-bit and 52-bit LPA2 (the real 6.12 guest's TCR_EL1: walk from level -1),
 * 16 KiB 52-bit LPA2 (a real 16k kernel's), 64 KiB 48- and 52-bit, blocks at every legal level
 * and refused at the others, invalid and reserved descriptors, non-canonical addresses, a TTBR
 * with ASID and CnP bits. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/arch.h"
#include "arch/arm64/arm64_pagewalk.h"

#include <errno.h>
#include <string.h>

#define TCR_4K_LPA2  0x095001f6b54c350cull /* 6.12 cloud-arm64: T1SZ 12, TG1 4K, DS 1 */
#define TCR_16K_LPA2 0x0d5001f6754cb50cull /* 7.3 arm64-16k: T1SZ 12, TG1 16K, DS 1 */
#define TTBR1_REAL   0x009c000041a92001ull /* ASID 0x9c, table 0x41a92000, CnP */

/* ---- a fake guest memory: sparse 8-byte words ------------------------------------------------ */

struct mem {
	uint64_t addr[64], val[64];
	unsigned n;
	uint64_t fail; /* a read of this address fails */
	unsigned reads;
};

static void poke(struct mem *m, uint64_t addr, uint64_t val)
{
	for (unsigned i = 0; i < m->n; i++)
		if (m->addr[i] == addr) {
			m->val[i] = val;
			return;
		}
	assert_true(m->n < 64);
	m->addr[m->n] = addr;
	m->val[m->n++] = val;
}

static int peek(void *ctx, uint64_t gpa, uint64_t *pte)
{
	struct mem *m = ctx;

	m->reads++;
	if (gpa & 7)
		fail_msg("unaligned descriptor read at 0x%llx", (unsigned long long)gpa);
	if (m->fail && gpa == m->fail)
		return -EIO;
	*pte = 0;
	for (unsigned i = 0; i < m->n; i++)
		if (m->addr[i] == gpa)
			*pte = m->val[i];
	return 0;
}

/* ---- descriptors, written here independently of the walker ---------------------------------- */

/* Output address @a in a descriptor of granule shift @g (LPA2 with @ds). */
static uint64_t oa(uint64_t a, unsigned g, bool ds)
{
	if (ds)
		return (a & 0x0003fffffffff000ull) | ((a >> 50) & 3) << 8;
	if (g == 16)
		return (a & 0x0000ffffffff0000ull) | ((a >> 48) & 0xf) << 12;
	return a & 0x0000fffffffff000ull;
}

static uint64_t tbl(uint64_t a, unsigned g, bool ds)
{
	return oa(a, g, ds) | 3;
}

/* Leaf attributes: AF, and without LPA2 SH = inner shareable in bits 9:8 (LPA2 moved SH to
 * TCR_EL1 and gave those bits to the output address). */
static uint64_t attrs(bool ds)
{
	return 0x400 | (ds ? 0 : 0x300);
}

static uint64_t blk(uint64_t a, unsigned g, bool ds)
{
	return oa(a, g, ds) | 1 | attrs(ds);
}

static uint64_t page(uint64_t a, unsigned g, bool ds)
{
	return oa(a, g, ds) | 3 | attrs(ds);
}

static unsigned mode(unsigned ia, unsigned g, bool ds)
{
	return ia | g << 8 | (unsigned)ds << 16;
}

static int walk(struct mem *m, uint64_t ttbr, unsigned md, uint64_t gva, uint64_t *gpa)
{
	*gpa = 0xdead;
	return arm64_translate(peek, m, ttbr, md, gva, gpa);
}

/* ---- TCR_EL1 --------------------------------------------------------------------------------- */

static void test_mode_of_tcr(void **state)
{
	unsigned m;

	(void)state;
	m = arm64_mode_of_tcr(TCR_4K_LPA2, true);
	assert_int_equal(ARM64_MODE_IA(m), 52);
	assert_int_equal(ARM64_MODE_GSHIFT(m), 12);
	assert_int_equal(ARM64_MODE_DS(m), 1);
	m = arm64_mode_of_tcr(TCR_4K_LPA2, false); /* T0SZ 12, TG0 0: 4K */
	assert_int_equal(m, mode(52, 12, true));
	m = arm64_mode_of_tcr(TCR_16K_LPA2, true);
	assert_int_equal(m, mode(52, 14, true));
	m = arm64_mode_of_tcr(TCR_16K_LPA2, false); /* TG0 2: 16K */
	assert_int_equal(m, mode(52, 14, true));
	/* 48-bit 4K without DS: T1SZ 16, TG1 2 */
	assert_int_equal(arm64_mode_of_tcr(16ull << 16 | 2ull << 30, true), mode(48, 12, false));
	/* 64K both halves: TG1 3, TG0 1; T1SZ 12 without DS is fine (LVA) */
	assert_int_equal(arm64_mode_of_tcr(12ull << 16 | 3ull << 30, true), mode(52, 16, false));
	assert_int_equal(arm64_mode_of_tcr(16ull | 1ull << 14, false), mode(48, 16, false));
	/* reserved: TG1 0, TG0 3; TnSZ out of 12..48; 52-bit 4K/16K without DS */
	assert_int_equal(arm64_mode_of_tcr(16ull << 16, true), 0);
	assert_int_equal(arm64_mode_of_tcr(16ull | 3ull << 14, false), 0);
	assert_int_equal(arm64_mode_of_tcr(11ull << 16 | 2ull << 30 | 1ull << 59, true), 0);
	assert_int_equal(arm64_mode_of_tcr(49ull << 16 | 2ull << 30, true), 0);
	assert_int_equal(arm64_mode_of_tcr(12ull << 16 | 2ull << 30, true), 0);
	assert_int_equal(arm64_mode_of_tcr(12ull << 16 | 1ull << 30, true), 0);
}

/* Modes arm64_mode_of_tcr never gives are -EINVAL, with no read. */
static void test_bad_modes(void **state)
{
	struct mem m = {0};
	uint64_t gpa;

	(void)state;
	assert_int_equal(walk(&m, 0x1000, mode(48, 13, false), 0, &gpa), -EINVAL);
	assert_int_equal(walk(&m, 0x1000, mode(12, 12, false), 0, &gpa), -EINVAL);
	assert_int_equal(walk(&m, 0x1000, mode(53, 16, false), 0, &gpa), -EINVAL);
	assert_int_equal(walk(&m, 0x1000, mode(52, 12, false), 0, &gpa), -EINVAL);
	assert_int_equal(walk(&m, 0x1000, mode(52, 14, false), 0, &gpa), -EINVAL);
	assert_int_equal(walk(&m, 0x1000, 0, 0, &gpa), -EINVAL);
	assert_int_equal(m.reads, 0);
}

/* ---- 4 KiB, 48-bit --------------------------------------------------------------------------- */

#define K48_VA 0xffff800080012345ull /* L0 256, L1 2, L2 0, L3 0x12 */

static void build_4k48(struct mem *m)
{
	poke(m, 0x40000000 + 256 * 8, tbl(0x40001000, 12, false));
	poke(m, 0x40001000 + 2 * 8, tbl(0x40002000, 12, false));
	poke(m, 0x40002000 + 0 * 8, tbl(0x40003000, 12, false));
	poke(m, 0x40003000 + 0x12 * 8, page(0x7654321000ull, 12, false));
}

static void test_4k48_page(void **state)
{
	struct mem m = {0};
	uint64_t gpa;

	(void)state;
	build_4k48(&m);
	assert_int_equal(walk(&m, 0x40000000, mode(48, 12, false), K48_VA, &gpa), 0);
	assert_true(gpa == 0x7654321345ull);
	assert_int_equal(m.reads, 4);
	/* ASID and CnP in the TTBR change nothing */
	assert_int_equal(walk(&m, 0x00ab000040000001ull, mode(48, 12, false), K48_VA, &gpa), 0);
	assert_true(gpa == 0x7654321345ull);
	/* a tag in the top byte is ignored (TBI) */
	assert_int_equal(walk(&m, 0x40000000, mode(48, 12, false),
			      (K48_VA & ~(0xffull << 56)) | 0x5aull << 56, &gpa),
			 0);
	assert_true(gpa == 0x7654321345ull);
	/* via the table's hook, with the mode from a TCR */
	assert_int_equal(arch_get(ARCH_ARM64)
			     ->translate(peek, &m, 0x40000000,
					 arm64_mode_of_tcr(16ull << 16 | 2ull << 30, true), K48_VA,
					 &gpa),
			 0);
	assert_true(gpa == 0x7654321345ull);
}

/* 1 GiB at level 1 and 2 MiB at level 2; level 0 (no LPA2) is reserved. */
static void test_4k48_blocks(void **state)
{
	struct mem m = {0};
	uint64_t gpa;

	(void)state;
	build_4k48(&m);
	poke(&m, 0x40002000, blk(0x80200000ull, 12, false));
	assert_int_equal(walk(&m, 0x40000000, mode(48, 12, false), K48_VA, &gpa), 0);
	assert_true(gpa == 0x80212345ull);
	poke(&m, 0x40001000 + 2 * 8, blk(0xc0000000ull, 12, false));
	assert_int_equal(walk(&m, 0x40000000, mode(48, 12, false), K48_VA, &gpa), 0);
	assert_true(gpa == 0xc0012345ull);
	poke(&m, 0x40000000 + 256 * 8, blk(0x8000000000ull, 12, false));
	assert_int_equal(walk(&m, 0x40000000, mode(48, 12, false), K48_VA, &gpa), -EFAULT);
}

/* Invalid descriptors at each level, a reserved level-3 one, a failed read. */
static void test_4k48_faults(void **state)
{
	static const uint64_t at[] = {0x40000000 + 256 * 8, 0x40001000 + 2 * 8, 0x40002000,
				      0x40003000 + 0x12 * 8};
	uint64_t gpa;

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		struct mem m = {0};

		build_4k48(&m);
		poke(&m, at[i], 0x40005002ull); /* bit 0 clear */
		assert_int_equal(walk(&m, 0x40000000, mode(48, 12, false), K48_VA, &gpa), -EFAULT);
		assert_true(gpa == 0xdead);
	}
	{
		struct mem m = {0};

		build_4k48(&m);
		poke(&m, at[3], blk(0x7654321000ull, 12, false)); /* bit 1 clear at level 3 */
		assert_int_equal(walk(&m, 0x40000000, mode(48, 12, false), K48_VA, &gpa), -EFAULT);
	}
	{
		struct mem m = {0};

		build_4k48(&m);
		m.fail = at[2];
		assert_int_equal(walk(&m, 0x40000000, mode(48, 12, false), K48_VA, &gpa), -EFAULT);
	}
}

/* Bits 48..55 (ia..55) must all be equal: either half passes, a mix does not (before any read);
 * bit 47 is an index bit (0xffff0000_00000000 is the bottom of the 48-bit kernel half). */
static void test_noncanonical(void **state)
{
	struct mem m = {0};
	uint64_t gpa;

	(void)state;
	build_4k48(&m);
	assert_int_equal(walk(&m, 0x40000000, mode(48, 12, false), 0xff7f800080012345ull, &gpa),
			 -EFAULT);
	assert_int_equal(walk(&m, 0x40000000, mode(48, 12, false), 0x0001800080012345ull, &gpa),
			 -EFAULT);
	assert_int_equal(walk(&m, 0x40000000, mode(48, 12, false), 0x00fe800080012345ull, &gpa),
			 -EFAULT);
	assert_int_equal(m.reads, 0);
	/* 52-bit: bits 52..55 */
	assert_int_equal(walk(&m, 0x40000000, mode(52, 12, true), 0xff8f000000000000ull, &gpa),
			 -EFAULT);
	assert_int_equal(walk(&m, 0x40000000, mode(52, 12, true), 0x0010000000000000ull, &gpa),
			 -EFAULT);
	assert_int_equal(m.reads, 0);
	/* the lower half walks the same tables: index 0 at level 0, nothing there */
	assert_int_equal(walk(&m, 0x40000000, mode(48, 12, false), 0x0000000080012345ull, &gpa),
			 -EFAULT);
}

/* A start table smaller than 64 bytes (4 KiB, 40-bit: 2 entries at level 0) may sit at an address
 * with bits 5:1 set in the TTBR; without LPA2 they are address bits. */
static void test_small_start_table(void **state)
{
	struct mem m = {0};
	uint64_t gpa, va = 0xffffff8000201000ull; /* 40-bit: L0 1, L1 0, L2 1, L3 1 */

	(void)state;
	poke(&m, 0x40000030 + 1 * 8, tbl(0x40001000, 12, false));
	poke(&m, 0x40001000, tbl(0x40002000, 12, false));
	poke(&m, 0x40002000 + 8, tbl(0x40003000, 12, false));
	poke(&m, 0x40003000 + 8, page(0x55555000, 12, false));
	assert_int_equal(walk(&m, 0x0007000040000030ull, mode(40, 12, false), va, &gpa), 0);
	assert_true(gpa == 0x55555000);
}

/* ---- 4 KiB, 52-bit, LPA2: the real guest's TCR_EL1, walks from level -1 -----------------------
 */

/* A KASLR'd text address of the 6.12 guest: L-1 15, L0 0x14b, L1 0x1d3, L2 0x171, L3 0 */
#define K52_VA 0xffffa5f4ee200abcull

static void build_4k52(struct mem *m)
{
	poke(m, 0x41a92000 + 15 * 8, tbl(0x41a93000, 12, true));
	poke(m, 0x41a93000 + 0x14b * 8, tbl(0x41a94000, 12, true));
	poke(m, 0x41a94000 + 0x1d3 * 8, tbl(0x41a95000, 12, true));
	poke(m, 0x41a95000 + 0x171 * 8, tbl(0x41a96000, 12, true));
	poke(m, 0x41a96000, page(0x40210000, 12, true));
}

static void test_4k52_lpa2(void **state)
{
	unsigned md = arm64_mode_of_tcr(TCR_4K_LPA2, true);
	struct mem m = {0};
	uint64_t gpa;

	(void)state;
	build_4k52(&m);
	assert_int_equal(walk(&m, TTBR1_REAL, md, K52_VA, &gpa), 0);
	assert_true(gpa == 0x40210abc);
	assert_int_equal(m.reads, 5);
	/* the bottom of the 52-bit kernel half: index 0 at level -1 */
	poke(&m, 0x41a92000, tbl(0x41a97000, 12, true));
	poke(&m, 0x41a97000, tbl(0x41a98000, 12, true));
	poke(&m, 0x41a98000, blk(0x80000000ull, 12, true)); /* 1 GiB at level 1 */
	assert_int_equal(walk(&m, TTBR1_REAL, md, 0xfff0000000345678ull, &gpa), 0);
	assert_true(gpa == 0x80345678ull);
}

/* arm64_walk_to (where the stub's blocks go): the level-2 descriptor's address of the 6.12 kernel
 * address, whatever it holds; the level-3 one; a block above the level asked for ends the walk
 * there; a missing table above it, and a level other than 2 or 3, refused. */
static void test_walk_to(void **state)
{
	unsigned md = arm64_mode_of_tcr(TCR_4K_LPA2, true);
	struct mem m = {0};
	uint64_t at = 0;
	int level = 0;

	(void)state;
	build_4k52(&m);
	assert_int_equal(arm64_walk_to(peek, &m, TTBR1_REAL, md, K52_VA, 2, &at, &level), 0);
	assert_true(at == 0x41a95000 + 0x171 * 8);
	assert_int_equal(level, 2);
	assert_int_equal(arm64_walk_to(peek, &m, TTBR1_REAL, md, K52_VA, 3, &at, &level), 0);
	assert_true(at == 0x41a96000);
	assert_int_equal(level, 3);
	/* the next 2 MiB: its level-2 entry (0 here) is where a block would go */
	assert_int_equal(
	    arm64_walk_to(peek, &m, TTBR1_REAL, md, K52_VA + (2 << 20), 2, &at, &level), 0);
	assert_true(at == 0x41a95000 + 0x172 * 8);
	/* its level-3 table does not exist */
	assert_int_equal(
	    arm64_walk_to(peek, &m, TTBR1_REAL, md, K52_VA + (2 << 20), 3, &at, &level), -EFAULT);
	/* a 1 GiB block at level 1 */
	poke(&m, 0x41a94000 + 0x1d3 * 8, blk(0x1c0000000ull, 12, true));
	assert_int_equal(arm64_walk_to(peek, &m, TTBR1_REAL, md, K52_VA, 2, &at, &level), 0);
	assert_int_equal(level, 1);
	poke(&m, 0x41a94000 + 0x1d3 * 8, 0);
	assert_int_equal(arm64_walk_to(peek, &m, TTBR1_REAL, md, K52_VA, 2, &at, &level),
			 -EFAULT);
	assert_int_equal(arm64_walk_to(peek, &m, TTBR1_REAL, md, K52_VA, 1, &at, &level),
			 -EINVAL);
}

/* arm64_block_desc: a 2 MiB block with the kernel text leaf's attributes; the code's block
 * read-only and executable at EL1, the data's writable and never executable; never at EL0; the
 * leaf's contiguous, DBM and GP bits dropped; the output address placed as LPA2 says. */
static void test_block_desc(void **state)
{
	unsigned ds = mode(52, 12, true), nods = mode(48, 12, false);
	/* a text page: AF, AP[2] (read-only), UXN, contiguous, DBM, GP, AttrIndx 0 */
	uint64_t text = (1ull << 54) | (1ull << 52) | (1ull << 51) | (1ull << 50) | 0x400 | 0x80 |
			0x41a96000 | 3;

	(void)state;
	assert_true(arm64_level2_span(ds) == 2 << 20);
	assert_true(arm64_block_desc(text, 3, ds, 0x4f200000, true) ==
		    ((1ull << 54) | 0x400 | 0x80 | 0x4f200000 | 1));
	assert_true(arm64_block_desc(text, 3, ds, 0x4f400000, false) ==
		    ((1ull << 54) | (1ull << 53) | 0x400 | 0x4f400000 | 1));
	/* LPA2: OA[51:50] in bits 9:8 (SH is TCR_EL1's) */
	assert_true(arm64_block_desc(text | 0x300, 3, ds, 0x4000000000000ull, false) ==
		    ((1ull << 54) | (1ull << 53) | 0x400 | (1ull << 8) | 1));
	/* without LPA2: SH kept */
	assert_true(arm64_block_desc((text & ~0x0003fffffffff000ull) | 0x300 | 0x41a96000, 3, nods,
				     0x4f200000, true) ==
		    ((1ull << 54) | 0x700 | 0x80 | 0x4f200000 | 1));
	/* a block leaf (level 2) works as well; not a leaf, not aligned: none */
	assert_true(arm64_block_desc((text & ~3ull) | 1, 2, ds, 0x4f200000, true) != 0);
	assert_true(arm64_block_desc(text, 2, ds, 0x4f200000, true) == 0);
	assert_true(arm64_block_desc(0, 3, ds, 0x4f200000, true) == 0);
	assert_true(arm64_block_desc(text, 3, ds, 0x4f201000, true) == 0);
	/* GP: guarded text (a clang kernel with BTI); not set, or not a valid descriptor: not */
	assert_true(arm64_desc_guarded(text));
	assert_false(arm64_desc_guarded(text & ~(1ull << 50)));
	assert_false(arm64_desc_guarded(text & ~1ull));
}

/* Permission indirection (FEAT_S1PIE): the index of a permission in PIR_EL1 with no EL0 access in
 * PIRE0_EL1, and a descriptor's index bits (54 UXN, 53 PXN, 51 DBM, 6 AP[1]). PIR_EL1 and PIRE0_EL1
 * as Debian's 6.12.117 cloud-arm64 set them under QEMU 11.1.3's -cpu max (read through its
 * gdbstub): index 14 (UXN|PXN|DBM, the kernel's PAGE_KERNEL) read-write, 8 (UXN, PAGE_KERNEL_ROX)
 * read-execute, 12 (UXN|PXN, PAGE_KERNEL_RO: what a classic read-write block of hvtrace's meant
 * there) read-only. */
static void test_pie_index(void **state)
{
	const uint64_t pir = 0xcc880e0ac0800000ull, pire0 = 0x5010000070320000ull;
	/* a classic read-write, never executable block: UXN, PXN, AP 00, AF, valid */
	const uint64_t data = (1ull << 54) | (1ull << 53) | 0x400 | 0x4f400000 | 1;

	(void)state;
	assert_int_equal(arm64_pie_index(pir, pire0, ARM64_PIE_RW), 14);
	assert_int_equal(arm64_pie_index(pir, pire0, ARM64_PIE_RX), 8);
	assert_int_equal((pir >> (4 * 12)) & 0xf, 0x8); /* the classic encoding's index: R only */
	/* index 15 is read-write at EL1 too, but EL0 may write there (PIRE0 5): never taken */
	assert_int_equal(arm64_pie_index(pir & ~(0xfull << 56), pire0, ARM64_PIE_RW), -1);
	assert_int_equal(arm64_pie_index(pir, pire0 | (1ull << 32), ARM64_PIE_RX), -1);
	assert_int_equal(arm64_pie_index(0, 0, ARM64_PIE_RW), -1);
	assert_true(arm64_desc_set_pi(data, 14) == (data | (1ull << 51)));
	assert_true(arm64_desc_set_pi(data, 8) == (data & ~(1ull << 53)));
	assert_true(arm64_desc_set_pi(data | (1ull << 51) | 0x40, 0) ==
		    (data & ~((1ull << 54) | (1ull << 53))));
	assert_true(arm64_desc_set_pi(0, 15) ==
		    ((1ull << 54) | (1ull << 53) | (1ull << 51) | 0x40));
	assert_true(arm64_desc_set_pi(0, 1) == 0x40);
}

/* LPA2 blocks: 512 GiB at level 0, 1 GiB at 1, 2 MiB at 2; a block at level -1 is reserved. */
static void test_4k52_blocks(void **state)
{
	unsigned md = mode(52, 12, true);
	struct mem m = {0};
	uint64_t gpa;

	(void)state;
	build_4k52(&m);
	poke(&m, 0x41a95000 + 0x171 * 8, blk(0x40200000, 12, true));
	assert_int_equal(walk(&m, TTBR1_REAL, md, K52_VA, &gpa), 0);
	assert_true(gpa == 0x40200abc);
	poke(&m, 0x41a94000 + 0x1d3 * 8, blk(0x1c0000000ull, 12, true));
	assert_int_equal(walk(&m, TTBR1_REAL, md, K52_VA, &gpa), 0);
	assert_true(gpa == 0x1c0000000ull + (K52_VA & 0x3fffffff));
	poke(&m, 0x41a93000 + 0x14b * 8, blk(0x8000000000ull, 12, true));
	assert_int_equal(walk(&m, TTBR1_REAL, md, K52_VA, &gpa), 0);
	assert_true(gpa == 0x8000000000ull + (K52_VA & 0x7fffffffffull));
	poke(&m, 0x41a92000 + 15 * 8, blk(0x0, 12, true));
	assert_int_equal(walk(&m, TTBR1_REAL, md, K52_VA, &gpa), -EFAULT);
}

/* 52-bit output addresses: the TTBR's bits 5:2 and the descriptors' bits 9:8 hold PA[51:48] and
 * PA[51:50]. */
static void test_4k52_high_pa(void **state)
{
	uint64_t root = 0x000c000041a92000ull, l0 = 0x0004000000001000ull,
		 pg = 0x000b123456789000ull;
	uint64_t ttbr = (root & 0x0000ffffffffffc0ull) | ((root >> 48) & 0xf) << 2 | 1;
	unsigned md = mode(52, 12, true);
	struct mem m = {0};
	uint64_t gpa;

	(void)state;
	poke(&m, root + 15 * 8, tbl(l0, 12, true));
	poke(&m, l0 + 0x14b * 8, tbl(0x2000, 12, true));
	poke(&m, 0x2000 + 0x1d3 * 8, tbl(0x3000, 12, true));
	poke(&m, 0x3000 + 0x171 * 8, tbl(0x4000, 12, true));
	poke(&m, 0x4000, page(pg, 12, true));
	assert_true(tbl(l0, 12, true) & 0x100); /* PA bit 50 in descriptor bit 8 */
	assert_int_equal(walk(&m, ttbr, md, K52_VA, &gpa), 0);
	assert_true(gpa == (pg | 0xabc));
}

/* ---- 16 KiB, 52-bit, LPA2 (a real 16k kernel's TCR_EL1): levels 0-3 -------------------------- */

/* L0 (bits 51:47) 0x1f, L1 (46:36) 0x7ff, L2 (35:25) 0x400, L3 (24:14) 0x123 */
#define K16_VA                                                                                     \
	(0xfff0000000000000ull | 0x1full << 47 | 0x7ffull << 36 | 0x400ull << 25 |                 \
	 0x123ull << 14 | 0x2345)

static void build_16k52(struct mem *m)
{
	poke(m, 0x48000000 + 0x1f * 8, tbl(0x48004000, 14, true));
	poke(m, 0x48004000 + 0x7ff * 8, tbl(0x48008000, 14, true));
	poke(m, 0x48008000 + 0x400 * 8, tbl(0x4800c000, 14, true));
	poke(m, 0x4800c000 + 0x123 * 8, page(0x9abc4000ull, 14, true));
}

static void test_16k52(void **state)
{
	unsigned md = arm64_mode_of_tcr(TCR_16K_LPA2, true);
	struct mem m = {0};
	uint64_t gpa;

	(void)state;
	build_16k52(&m);
	assert_int_equal(walk(&m, 0x0042000048000001ull, md, K16_VA, &gpa), 0);
	assert_true(gpa == 0x9abc6345ull);
	assert_int_equal(m.reads, 4);
	/* 32 MiB at level 2, 64 GiB at level 1 (LPA2), none at level 0 */
	poke(&m, 0x48008000 + 0x400 * 8, blk(0x7e000000ull, 14, true));
	assert_int_equal(walk(&m, 0x48000000, md, K16_VA, &gpa), 0);
	assert_true(gpa == 0x7e000000ull + (K16_VA & 0x1ffffff));
	poke(&m, 0x48004000 + 0x7ff * 8, blk(0x1000000000ull, 14, true));
	assert_int_equal(walk(&m, 0x48000000, md, K16_VA, &gpa), 0);
	assert_true(gpa == 0x1000000000ull + (K16_VA & 0xfffffffffull));
	poke(&m, 0x48000000 + 0x1f * 8, blk(0, 14, true));
	assert_int_equal(walk(&m, 0x48000000, md, K16_VA, &gpa), -EFAULT);
}

/* Without LPA2 a 16 KiB level-1 block is reserved (it was taken for a 64 GiB block). */
static void test_16k48_no_level1_block(void **state)
{
	struct mem m = {0};
	uint64_t gpa, va = 0xffff800000000000ull | 0x3ull << 36 | 0x5ull << 25 | 0x6789;

	(void)state;
	/* 48-bit: L0 bit 47 (1 entry of 2), L1 46:36 */
	poke(&m, 0x48000000 + 1 * 8, tbl(0x48004000, 14, false));
	poke(&m, 0x48004000 + 3 * 8, tbl(0x48008000, 14, false));
	poke(&m, 0x48008000 + 5 * 8, blk(0x7e000000ull, 14, false));
	assert_int_equal(walk(&m, 0x48000000, mode(48, 14, false), va, &gpa), 0);
	assert_true(gpa == 0x7e006789ull);
	poke(&m, 0x48004000 + 3 * 8, blk(0x1000000000ull, 14, false));
	assert_int_equal(walk(&m, 0x48000000, mode(48, 14, false), va, &gpa), -EFAULT);
}

/* ---- 64 KiB, 48- and 52-bit: levels 1-3 ------------------------------------------------------ */

/* 48-bit: L1 (47:42) 0x3f, L2 (41:29) 0x1234, L3 (28:16) 0x0abc */
#define K64_VA (0xffff000000000000ull | 0x3full << 42 | 0x1234ull << 29 | 0xabcull << 16 | 0xfedc)

static void test_64k48(void **state)
{
	struct mem m = {0};
	uint64_t gpa;

	(void)state;
	poke(&m, 0x50000000 + 0x3f * 8, tbl(0x50010000, 16, false));
	poke(&m, 0x50010000 + 0x1234 * 8, tbl(0x50020000, 16, false));
	poke(&m, 0x50020000 + 0xabc * 8, page(0x12340000, 16, false));
	assert_int_equal(walk(&m, 0x0001000050000000ull, mode(48, 16, false), K64_VA, &gpa), 0);
	assert_true(gpa == 0x1234fedc);
	assert_int_equal(m.reads, 3);
	/* 512 MiB at level 2, 4 TiB at level 1 */
	poke(&m, 0x50010000 + 0x1234 * 8, blk(0x60000000ull, 16, false));
	assert_int_equal(walk(&m, 0x50000000, mode(48, 16, false), K64_VA, &gpa), 0);
	assert_true(gpa == 0x60000000ull + (K64_VA & 0x1fffffff));
	poke(&m, 0x50000000 + 0x3f * 8, blk(0x40000000000ull, 16, false));
	assert_int_equal(walk(&m, 0x50000000, mode(48, 16, false), K64_VA, &gpa), 0);
	assert_true(gpa == 0x40000000000ull + (K64_VA & 0x3ffffffffffull));
	/* DS set in a TCR means nothing with 64 KiB: the same walk */
	assert_int_equal(walk(&m, 0x50000000, mode(48, 16, true), K64_VA, &gpa), 0);
	assert_true(gpa == 0x40000000000ull + (K64_VA & 0x3ffffffffffull));
}

/* 52-bit: 1024 entries at level 1 (51:42), PA[51:48] in descriptor bits 15:12 and TTBR bits 5:2. */
static void test_64k52(void **state)
{
	uint64_t root = 0x0003000050000000ull, l2 = 0x000a000000010000ull,
		 pg = 0x000f0000abcd0000ull;
	uint64_t ttbr = (root & 0x0000ffffffffffc0ull) | ((root >> 48) & 0xf) << 2;
	uint64_t va =
	    0xfff0000000000000ull | 0x3ffull << 42 | 0x10ull << 29 | 0x20ull << 16 | 0x1234;
	struct mem m = {0};
	uint64_t gpa;

	(void)state;
	poke(&m, root + 0x3ff * 8, tbl(l2, 16, false));
	poke(&m, l2 + 0x10 * 8, tbl(0x70000000, 16, false));
	poke(&m, 0x70000000 + 0x20 * 8, page(pg, 16, false));
	assert_int_equal(walk(&m, ttbr, mode(52, 16, false), va, &gpa), 0);
	assert_true(gpa == (pg | 0x1234));
	assert_int_equal(
	    walk(&m, ttbr, arm64_mode_of_tcr(12ull << 16 | 3ull << 30, true), va, &gpa), 0);
	assert_true(gpa == (pg | 0x1234));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mode_of_tcr),
	    cmocka_unit_test(test_bad_modes),
	    cmocka_unit_test(test_4k48_page),
	    cmocka_unit_test(test_4k48_blocks),
	    cmocka_unit_test(test_4k48_faults),
	    cmocka_unit_test(test_noncanonical),
	    cmocka_unit_test(test_small_start_table),
	    cmocka_unit_test(test_4k52_lpa2),
	    cmocka_unit_test(test_walk_to),
	    cmocka_unit_test(test_block_desc),
	    cmocka_unit_test(test_pie_index),
	    cmocka_unit_test(test_4k52_blocks),
	    cmocka_unit_test(test_4k52_high_pa),
	    cmocka_unit_test(test_16k52),
	    cmocka_unit_test(test_16k48_no_level1_block),
	    cmocka_unit_test(test_64k48),
	    cmocka_unit_test(test_64k52),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

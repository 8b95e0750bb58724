/* What the arm64 stub's blocks follow of what the guest kernel enabled (host/vmm/stub_map_arm64.c,
 * stub_map_arm64_perm): classic permissions, permission indirection through the kernel's own
 * PIR_EL1/PIRE0_EL1, and the one-line refusals (unreadable registers, no usable index, 128-bit
 * descriptors, an EL1 guarded control stack). The values are those Debian's 6.12.117
 * cloud-arm64 sets under QEMU 11.1.3's -cpu max, read through its gdbstub (docs/arm64.md). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/vmm/stub_map_arm64.h"
#include "arch/arch.h"
#include "guest-stub/stub_abi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TCR2_QEMU11  0x2ull
#define PIR_QEMU11   0xcc880e0ac0800000ull
#define PIRE0_QEMU11 0x5010000070320000ull
#define MMFR3_QEMU11 0x1000000011001111ull

static const struct stub_map_arm64_regs qemu11 = {
    .tcr2 = TCR2_QEMU11,
    .pir = PIR_QEMU11,
    .pire0 = PIRE0_QEMU11,
    .gcscr = 0,
    .mmfr3 = MMFR3_QEMU11,
    .has_tcr2 = true,
    .has_pir = true,
    .has_pire0 = true,
    .has_gcscr = true,
    .has_mmfr3 = true,
};

static int perm(const struct stub_map_arm64_regs *r, struct stub_map_arm64_perm *p, char *err)
{
	err[0] = 0;
	return stub_map_arm64_perm(r, p, err, 256);
}

/* QEMU 11's -cpu max with 6.12: indirection on, read-write at index 14, read-execute at 8. */
static void test_pie(void **state)
{
	struct stub_map_arm64_perm p;
	char err[256];

	(void)state;
	assert_int_equal(perm(&qemu11, &p, err), 0);
	assert_true(p.pie);
	assert_int_equal(p.data_pi, 14);
	assert_int_equal(p.code_pi, 8);
	assert_string_equal(err, "");
}

/* QEMU 7.2's -cpu max: no TCR2_EL1, no ID_AA64MMFR3_EL1 in its description; a CPU with
 * ID_AA64MMFR3_EL1 and no S1PIE; a kernel that left TCR2_EL1.PIE clear: the classic bits. */
static void test_classic(void **state)
{
	struct stub_map_arm64_regs r = {0};
	struct stub_map_arm64_perm p;
	char err[256];

	(void)state;
	assert_int_equal(perm(&r, &p, err), 0);
	assert_false(p.pie);
	r.has_mmfr3 = true;
	r.mmfr3 = MMFR3_QEMU11 & ~0xf00ull;
	assert_int_equal(perm(&r, &p, err), 0);
	assert_false(p.pie);
	r = qemu11;
	r.tcr2 = 0;
	assert_int_equal(perm(&r, &p, err), 0);
	assert_false(p.pie);
	/* PIR_EL1 is not needed then */
	r.has_pir = r.has_pire0 = false;
	assert_int_equal(perm(&r, &p, err), 0);
}

/* Each case the stub cannot follow: one line naming it and --probe trap. */
static void test_refusals(void **state)
{
	struct stub_map_arm64_regs r = qemu11;
	struct stub_map_arm64_perm p;
	char err[256];

	(void)state;
	/* the CPU has S1PIE, the kernel's switch cannot be read */
	r.has_tcr2 = false;
	assert_int_equal(perm(&r, &p, err), -ENOTSUP);
	assert_string_equal(err, "stub probes: the guest's CPU has stage-1 permission indirection "
				 "(FEAT_S1PIE) and its TCR2_EL1 cannot be read through the gdbstub "
				 "(use --probe trap)");
	assert_false(p.pie);
	/* indirection on, its table unread */
	r = qemu11;
	r.has_pire0 = false;
	assert_int_equal(perm(&r, &p, err), -ENOTSUP);
	assert_string_equal(err,
			    "stub probes: the guest kernel uses stage-1 permission indirection "
			    "(TCR2_EL1.PIE) and its PIR_EL1/PIRE0_EL1 cannot be read through "
			    "the gdbstub (use --probe trap)");
	/* no kernel-only read-write index (14 gone; 15 and 7 are EL0's too) */
	r = qemu11;
	r.pir &= ~(0xfull << 56);
	assert_int_equal(perm(&r, &p, err), -ENOTSUP);
	assert_string_equal(err, "stub probes: the guest kernel's permission indirection (PIR_EL1 "
				 "0xc0880e0ac0800000, PIRE0_EL1 0x5010000070320000) has no index "
				 "for kernel-only read-write data (use --probe trap)");
	/* no kernel-only read-execute index */
	r = qemu11;
	r.pire0 |= 1ull << 32;
	assert_int_equal(perm(&r, &p, err), -ENOTSUP);
	assert_non_null(strstr(err, "has no index for kernel-only read-execute code"));
	/* 128-bit descriptors */
	r = qemu11;
	r.tcr2 |= ARM64_TCR2_D128;
	assert_int_equal(perm(&r, &p, err), -ENOTSUP);
	assert_string_equal(err,
			    "stub probes: the guest kernel uses 128-bit page-table descriptors "
			    "(TCR2_EL1.D128) (use --probe trap)");
	/* a guarded control stack at EL1, with or without indirection */
	r = qemu11;
	r.gcscr = 1;
	assert_int_equal(perm(&r, &p, err), -ENOTSUP);
	assert_string_equal(err,
			    "stub probes: the guest kernel runs with a guarded control stack "
			    "(GCSCR_EL1.PCRSEL, FEAT_GCS), which the stub's return hooks would "
			    "break (use --probe trap)");
	r.tcr2 = 0;
	assert_int_equal(perm(&r, &p, err), -ENOTSUP);
	/* GCSCR_EL1's other bits (EL0's stack is the user's business) */
	r.gcscr = 0x300;
	assert_int_equal(perm(&r, &p, err), 0);
}

/* ---- the map: a guest of two windows, the kernel's tables and the reserved RAM --------------- */

#define TABLES	    0x48000000ull /* four tables, one granule each: L0, L1, L2, L3 */
#define TABLES_SIZE (4u << 16)
#define RESV	    0x80000000ull /* the RAM mem= keeps out of the kernel's use */
#define RESV_SIZE   (64u << 20)
#define DESC_AF	    0x400ull
#define DESC_SH	    0x300ull
#define DESC_AP2    (1ull << 7)
#define DESC_PXN    (1ull << 53)
#define DESC_UXN    (1ull << 54)

static uint8_t *tables, *resv;

static uint8_t *at(uint64_t gpa, size_t len)
{
	if (gpa >= TABLES && gpa - TABLES <= TABLES_SIZE && len <= TABLES_SIZE - (gpa - TABLES))
		return tables + (gpa - TABLES);
	if (gpa >= RESV && gpa - RESV <= RESV_SIZE && len <= RESV_SIZE - (gpa - RESV))
		return resv + (gpa - RESV);
	return NULL;
}

static int m_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	uint8_t *p = at(gpa, len);

	(void)ctx;
	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

static int m_write(void *ctx, uint64_t gpa, const void *buf, size_t len)
{
	uint8_t *p = at(gpa, len);

	(void)ctx;
	if (!p)
		return -EFAULT;
	memcpy(p, buf, len);
	return 0;
}

static const struct stub_map_mem gmem = {m_read, m_write, NULL};

static uint64_t table_word(unsigned table, unsigned idx, unsigned g)
{
	uint64_t v;

	memcpy(&v, tables + ((size_t)table << g) + idx * 8, 8);
	return v;
}

static void set_table_word(unsigned table, unsigned idx, unsigned g, uint64_t v)
{
	memcpy(tables + ((size_t)table << g) + idx * 8, &v, 8);
}

/* A 48-bit kernel half of granule shift @g (12: 4 KiB, 14: 16 KiB), no LPA2: one walk L0 -> L1 ->
 * L2 -> L3 to the text's page, at L2 index 5 (its neighbours free); the text's VA in *@text. The
 * reserved RAM holds a pattern, to see it put back. Returns the mode. */
static unsigned build(unsigned g, uint64_t *text)
{
	unsigned bits = g - 3, s2 = g + bits, s1 = s2 + bits, s0 = s1 + bits;
	uint64_t gran = 1ull << g;

	if (!tables)
		tables = malloc(TABLES_SIZE), resv = malloc(RESV_SIZE);
	assert_non_null(tables);
	assert_non_null(resv);
	memset(tables, 0, TABLES_SIZE);
	for (size_t i = 0; i < RESV_SIZE; i++)
		resv[i] = (uint8_t)(i * 7 + 1);
	/* VA bits 47:s0 index L0 (48-bit: one bit with 16 KiB pages) */
	*text = 0xffff000000000000ull | 1ull << 47 | 3ull << s1 | 5ull << s2 | 9ull << g | 0x40;
	set_table_word(0, (unsigned)((*text >> s0) & ((1ull << (48 - s0)) - 1)), g,
		       (TABLES + gran) | 3);
	set_table_word(1, 3, g, (TABLES + 2 * gran) | 3);
	set_table_word(2, 5, g, (TABLES + 3 * gran) | 3);
	set_table_word(3, 9, g, 0x41000000ull | 3 | DESC_AF | DESC_SH | DESC_UXN | DESC_AP2);
	return 48 | g << 8;
}

/* The code's block and the region's: the code at the end of its block, STUB_CODE_DELTA below the
 * region (what the stub's code assumes), in free L2 slots after the text's, within BL reach; the
 * descriptors exact; unmap puts back every word and byte. With 4 KiB pages the blocks are 2 MiB
 * (the code at the block's start), with 16 KiB pages 32 MiB (the code 30 MiB into it). */
static void check_map(unsigned g)
{
	uint64_t text, span = 1ull << (2 * g - 3), va_slot6;
	unsigned mode = build(g, &text);
	struct stub_map q = {.resv_gpa = RESV, .resv_size = RESV_SIZE};
	struct stub_map_arm64_perm perm = {0};
	struct target_region r;
	uint64_t d6, d7, want = 1u << 20;
	char err[256] = "";

	va_slot6 = (text & ~(span - 1)) + span;
	if (stub_map_arm64_map(&q, &gmem, TABLES, mode, &perm, text, text + 0x1000, 64u << 10, want,
			       &r, err, sizeof(err)))
		fail_msg("%s", err);
	assert_true(r.code_gva == va_slot6 + span - STUB_CODE_DELTA);
	assert_true(r.code_gpa == RESV + span - STUB_CODE_DELTA);
	assert_true(r.gva == va_slot6 + span);
	assert_true(r.gpa == RESV + span);
	assert_true(r.gva - r.code_gva == STUB_CODE_DELTA);
	assert_true(r.size == want);
	/* slot 6 the code's (read-only, executable at EL1), slot 7 the region's (writable, PXN) */
	d6 = table_word(2, 6, g);
	d7 = table_word(2, 7, g);
	assert_true(d6 == (RESV | 1 | DESC_AF | DESC_SH | DESC_UXN | DESC_AP2));
	assert_true(d7 == ((RESV + span) | 1 | DESC_AF | DESC_SH | DESC_UXN | DESC_PXN));
	assert_true(table_word(2, 8, g) == 0);
	assert_int_equal(q.nr_pde, 2);
	/* what the stub writes is kept: its code, the region */
	assert_true(q.saved_gpa == r.code_gpa);
	assert_true(q.saved_len == STUB_CODE_DELTA + span);
	memset(resv + (r.code_gpa - RESV), 0xd4, STUB_CODE_SIZE);
	memset(resv + (r.gpa - RESV), 0, want);
	stub_map_unmap(&q, &gmem);
	assert_true(table_word(2, 6, g) == 0);
	assert_true(table_word(2, 7, g) == 0);
	for (size_t i = 0; i < RESV_SIZE; i++)
		if (resv[i] != (uint8_t)(i * 7 + 1))
			fail_msg("byte 0x%zx of the reserved RAM not put back", i);
}

static void test_map_4k(void **state)
{
	(void)state;
	check_map(12);
}

static void test_map_16k(void **state)
{
	(void)state;
	check_map(14);
}

/* With 16 KiB pages the reserved RAM must be 32 MiB aligned (run --qemu reserves it so, from the
 * Image header's page size); a range 2 MiB aligned only is refused, nothing written. */
static void test_map_16k_misaligned(void **state)
{
	uint64_t text;
	unsigned mode = build(14, &text);
	struct stub_map q = {.resv_gpa = RESV + (2u << 20), .resv_size = RESV_SIZE - (2u << 20)};
	struct stub_map_arm64_perm perm = {0};
	struct target_region r;
	char err[256] = "";

	(void)state;
	assert_int_equal(stub_map_arm64_map(&q, &gmem, TABLES, mode, &perm, text, text + 0x1000,
					    64u << 10, 1u << 20, &r, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "stub probes: reserved RAM 0x80200000+0x3e00000 is not aligned to "
				 "the 32 MiB blocks of the kernel's 16 KiB pages");
	assert_true(table_word(2, 6, 14) == 0);
	assert_int_equal(q.nr_pde, 0);
}

/* No free slot within BL reach: the text's L2 neighbours all in use (16 KiB: 4 slots of 32 MiB
 * either side are within 128 MiB). */
static void test_map_16k_no_slot(void **state)
{
	uint64_t text;
	unsigned mode = build(14, &text);
	struct stub_map q = {.resv_gpa = RESV, .resv_size = RESV_SIZE};
	struct stub_map_arm64_perm perm = {0};
	struct target_region r;
	char err[256] = "";

	(void)state;
	for (unsigned i = 0; i < 16; i++)
		if (i != 5)
			set_table_word(2, i, 14, 0x42000000ull | 1 | DESC_AF);
	assert_int_equal(stub_map_arm64_map(&q, &gmem, TABLES, mode, &perm, text, text + 0x1000,
					    64u << 10, 1u << 20, &r, err, sizeof(err)),
			 -ENOSPC);
	assert_string_equal(err, "stub probes: no 2 free 32 MiB kernel address slots within BL "
				 "reach (128 MiB) of the traced code");
	/* one pair free just within reach below the text: taken */
	set_table_word(2, 2, 14, 0);
	set_table_word(2, 3, 14, 0);
	assert_int_equal(stub_map_arm64_map(&q, &gmem, TABLES, mode, &perm, text, text + 0x1000,
					    64u << 10, 1u << 20, &r, err, sizeof(err)),
			 0);
	assert_true(table_word(2, 2, 14) != 0 && table_word(2, 3, 14) != 0);
	stub_map_unmap(&q, &gmem);
	assert_true(table_word(2, 2, 14) == 0 && table_word(2, 3, 14) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pie),
	    cmocka_unit_test(test_classic),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_map_4k),
	    cmocka_unit_test(test_map_16k),
	    cmocka_unit_test(test_map_16k_misaligned),
	    cmocka_unit_test(test_map_16k_no_slot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

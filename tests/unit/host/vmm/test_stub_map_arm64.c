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

#include <errno.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pie),
	    cmocka_unit_test(test_classic),
	    cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

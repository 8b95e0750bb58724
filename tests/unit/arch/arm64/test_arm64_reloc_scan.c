/* arch/arm64/arm64_reloc_scan.h: what a kernel rewrites or fixes up, what cannot run with
 * interrupts masked (and sp's movement), the function's branches into the patch and back to its
 * entry. Words from aarch64-linux-gnu-as. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/arch.h"
#include "arch/arm64/arm64_insn.h"
#include "arch/arm64/arm64_reloc.h"
#include "arch/arm64/arm64_reloc_scan.h"

#include <errno.h>
#include <string.h>

#define F	0xffff800080100000ull
#define PACIASP 0xd503233fu
#define SUB_SP	0xd10283ffu /* sub sp, sp, #0xa0 */

static int plan_of(const uint32_t *w, size_t n, size_t need, struct arch_reloc_plan *plan)
{
	uint8_t code[64];
	char why[256];

	for (size_t i = 0; i < n; i++)
		arm64_put_word(code + 4 * i, w[i]);
	return arm64_reloc_plan(code, 4 * n, F, need, plan, why, sizeof(why));
}

/* ---- kernel_safe ----------------------------------------------------------------------------- */

static void test_kernel_safe(void **state)
{
	static const uint32_t ok[] = {
	    PACIASP,	 SUB_SP, 0xd5384104u, /* mrs x4, sp_el0 */
	    0xa9bf7bfdu,		      /* stp x29, x30, [sp, #-16]! */
	    0xf90007e1u,		      /* str x1, [sp, #8] */
	    0xf9400ba0u,		      /* ldr x0, [x29, #16] */
	    0x58fffc06u,		      /* ldr x6, literal */
	    0x7100041fu,		      /* cmp w0, #1 */
	    0x910003fdu,		      /* mov x29, sp */
	    0x10000801u,		      /* adr x1 */
	    0xd5033fdfu,		      /* isb */
	};
	static const struct {
		uint32_t w;
		const char *says;
	} no[] = {
	    {ARM64_NOP, "jump label"},	  {0x14000040u, "jump label"}, /* b */
	    {0x94000040u, "retarget"},				       /* bl */
	    {0xf9400020u, "through x1"},			       /* ldr x0, [x1] */
	    {0xf8400820u, "through x1"},			       /* ldtr x0, [x1] */
	    {0xb9000262u, "through x19"},			       /* str w2, [x19] */
	    {0x4c407000u, "through x0"},			       /* ld1 {v0.16b}, [x0] */
	    {0xd50b7e20u, "SYS"},				       /* dc civac, x0 */
	    {0xd508871fu, "SYS"},				       /* tlbi vmalle1 */
	};
	struct arch_reloc_plan plan;
	char why[256];

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(plan_of(&ok[i], 1, 4, &plan), 0);
		assert_int_equal(arm64_reloc_kernel_safe(&plan, why, sizeof(why)), 0);
		assert_string_equal(why, "");
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		uint32_t w[] = {PACIASP, no[i].w};

		assert_int_equal(plan_of(w, 2, 8, &plan), 0);
		assert_int_equal(arch_get(ARCH_ARM64)->reloc_kernel_safe(&plan, why, sizeof(why)),
				 -EOPNOTSUPP);
		if (!strstr(why, no[i].says) || !strstr(why, "+4 at 0xffff800080100004"))
			fail_msg("%08x: \"%s\"", no[i].w, why);
	}
}

/* ---- detour_check ---------------------------------------------------------------------------- */

static void test_detour_check_pushed(void **state)
{
	static const struct {
		uint32_t w[4];
		size_t n;
		int pushed;
	} p[] = {
	    {{PACIASP}, 1, 0},
	    {{SUB_SP}, 1, 160},
	    {{0xa9ba7bfdu}, 1, 96},   /* stp x29, x30, [sp, #-96]! */
	    {{0xa8c67bfdu}, 1, -96},  /* ldp x29, x30, [sp], #96 */
	    {{0xd14007ffu}, 1, 4096}, /* sub sp, sp, #1, lsl #12 */
	    {{0x910043ffu}, 1, -16},  /* add sp, sp, #0x10 */
	    {{0xa9047bfdu}, 1, 0},    /* stp x29, x30, [sp, #64]: no writeback */
	    {{0xd10283e0u}, 1, 0},    /* sub x0, sp, #0xa0: not sp */
	    {{PACIASP, 0xa9ba7bfdu, SUB_SP, 0xd53b4223u}, 4, 256}, /* ... mrs x3, daif */
	};
	struct arch_reloc_plan plan;
	char why[256];
	int pushed;

	(void)state;
	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
		assert_int_equal(plan_of(p[i].w, p[i].n, 4 * p[i].n, &plan), 0);
		pushed = 12345;
		assert_int_equal(
		    arch_get(ARCH_ARM64)->reloc_detour_check(&plan, &pushed, why, sizeof(why)), 0);
		assert_int_equal(pushed, p[i].pushed);
	}
}

static void test_detour_check_refusals(void **state)
{
	static const struct {
		uint32_t w;
		const char *says;
	} no[] = {
	    {0x54000101u, "branch"}, /* b.ne */
	    {0x34ffffcbu, "branch"}, /* cbz */
	    {0x361bffedu, "branch"}, /* tbz */
	    {0x14000040u, "branch"}, /* b */
	    {0x94000040u, "branch"}, /* bl */
	    {0xd65f03c0u, "branch"}, /* ret */
	    {0xd61f0060u, "branch"}, /* br x3 */
	    {0xd65f0bffu, "branch"}, /* retaa */
	    {0xd50342dfu, "DAIF"},   /* msr daifset, #2 */
	    {0xd50342ffu, "DAIF"},   /* msr daifclr, #2 */
	    {0xd5034fdfu, "DAIF"},   /* msr daifset, #15 */
	    {0xd51b4223u, "DAIF"},   /* msr daif, x3 */
	    {0xd503207fu, "waits"},  /* wfi */
	    {0xd503205fu, "waits"},  /* wfe */
	};
	struct arch_reloc_plan plan;
	char why[256];
	int pushed;

	(void)state;
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		uint32_t w[] = {SUB_SP, no[i].w};

		assert_int_equal(plan_of(w, 2, 8, &plan), 0);
		pushed = 7;
		assert_int_equal(arm64_reloc_detour_check(&plan, &pushed, why, sizeof(why)),
				 -EOPNOTSUPP);
		assert_int_equal(pushed, 0);
		if (!strstr(why, no[i].says))
			fail_msg("%08x: \"%s\"", no[i].w, why);
	}
}

/* ---- the function's body ----------------------------------------------------------------------
 * F: paciasp; sub sp; (word 2); (word 3) ...: the plan displaces F..F+8. */

static int scan_of(uint32_t w2, uint32_t w3, size_t len, uint64_t addr, char *why)
{
	uint32_t w[] = {PACIASP, SUB_SP, w2, w3, ARM64_NOP};
	struct arch_reloc_plan plan;
	uint8_t body[20];

	assert_int_equal(plan_of(w, 2, 8, &plan), 0);
	for (size_t i = 0; i < 5; i++)
		arm64_put_word(body + 4 * i, w[i]);
	return arch_get(ARCH_ARM64)->reloc_scan_body(&plan, body, len, addr, why, 256);
}

/* Branch words at F + 8 (word 2) to F + @to. */
static uint32_t b_at8(int64_t to)
{
	uint8_t b[4];

	assert_int_equal(arm64_encode_branch(F + 8, F + (uint64_t)to, false, b), 0);
	return arm64_word(b);
}

static void test_scan_body(void **state)
{
	char why[256];

	(void)state;
	/* into the patch past its first word: B, BL, B.cond, CBZ, TBNZ, ADR */
	assert_int_equal(scan_of(b_at8(4), ARM64_NOP, 20, F, why), -EOPNOTSUPP);
	assert_non_null(strstr(why, "+8 at 0xffff800080100008"));
	assert_non_null(strstr(why, "B to 0xffff800080100004"));
	assert_int_equal(scan_of(b_at8(4) | 0x80000000u, ARM64_NOP, 20, F, why), -EOPNOTSUPP);
	assert_int_equal(scan_of(0x54ffffe1u, ARM64_NOP, 20, F, why), -EOPNOTSUPP); /* b.ne .-4 */
	assert_int_equal(scan_of(0xb4ffffe0u, ARM64_NOP, 20, F, why), -EOPNOTSUPP); /* cbz x0 */
	assert_int_equal(scan_of(ARM64_NOP, 0x37ffffc0u, 20, F, why), -EOPNOTSUPP); /* tbnz .-8 */
	assert_int_equal(scan_of(0x10ffffe1u, ARM64_NOP, 20, F, why), -EOPNOTSUPP); /* adr x1 */
	assert_non_null(strstr(why, "ADR to"));
	/* to the first word (it enters the detour), past the patch, elsewhere */
	assert_int_equal(scan_of(b_at8(0), ARM64_NOP, 20, F, why), 0);
	assert_int_equal(scan_of(b_at8(8), b_at8(12), 20, F, why), 0);
	assert_int_equal(scan_of(b_at8(-4), 0x54ffffa1u /* b.ne to F */, 20, F, why), 0);
	assert_int_equal(scan_of(0x10ffffc1u /* adr x1, F */, 0xffffffffu, 20, F, why), 0);
	/* data words are no branches; a cut last word is not read */
	assert_int_equal(scan_of(0xffffffffu, 0x00000000u, 20, F, why), 0);
	assert_int_equal(scan_of(ARM64_NOP, 0x37ffffc0u, 15, F, why), 0);
	assert_int_equal(scan_of(ARM64_NOP, 0x37ffffc0u, 16, F, why), -EOPNOTSUPP);
	assert_int_equal(scan_of(b_at8(4), ARM64_NOP, 0, F, why), 0);
	/* a body read at an address no instruction starts at */
	assert_int_equal(scan_of(ARM64_NOP, ARM64_NOP, 20, F + 2, why), -EINVAL);
}

/* Jumps back to the first instruction (a breakpoint there would be hit by them); calls are not. */
static void test_scan_branch_to(void **state)
{
	const struct arch *a = arch_get(ARCH_ARM64);
	uint8_t body[12];
	char why[256];
	static const struct {
		uint32_t w;
		int err;
	} s[] = {
	    {0x17fffffeu, -EOPNOTSUPP}, /* b .-8 */
	    {0x97fffffeu, 0},		/* bl .-8 */
	    {0x54ffffc0u, -EOPNOTSUPP}, /* b.eq .-8 */
	    {0x54ffffd0u, -EOPNOTSUPP}, /* bc.eq .-8 */
	    {0xb4ffffc0u, -EOPNOTSUPP}, /* cbz x0, .-8 */
	    {0x3607ffc0u, -EOPNOTSUPP}, /* tbz w0, #0, .-8 */
	    {0x17ffffffu, 0},		/* b .-4: the second word */
	    {0x10ffffc0u, 0},		/* adr x0, .-8: no jump */
	    {0xd61f0000u, 0},		/* br x0 */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		arm64_put_word(body, PACIASP);
		arm64_put_word(body + 4, SUB_SP);
		arm64_put_word(body + 8, s[i].w);
		assert_int_equal(a->scan_branch_to(body, 12, F, F, why, sizeof(why)), s[i].err);
		if (s[i].err)
			assert_non_null(strstr(why, "jumps back"));
	}
	assert_int_equal(arm64_scan_branch_to(body, 12, F + 1, F, why, sizeof(why)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kernel_safe),
	    cmocka_unit_test(test_detour_check_pushed),
	    cmocka_unit_test(test_detour_check_refusals),
	    cmocka_unit_test(test_scan_body),
	    cmocka_unit_test(test_scan_branch_to),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

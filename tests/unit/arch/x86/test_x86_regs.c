/* arch/x86/x86_arch.c's register map: the register that holds each integer argument, and the
 * accessors of arch/arch.h over it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/arch.h"

/* ---- arch_regs_arg -------------------------------------------------------------------------- */

/* SysV: rdi, rsi, rdx, rcx, r8, r9; the 7th argument is on the stack (0 here). */
static void test_reg_arg(void **state)
{
	const struct arch *a = arch_get(ARCH_X86_64);
	struct arch_regs r = {.r[X86_RDI] = 1,
			      .r[X86_RSI] = 2,
			      .r[X86_RDX] = 3,
			      .r[X86_RCX] = 4,
			      .r[X86_R8] = 5,
			      .r[X86_R9] = 6,
			      .r[X86_RAX] = 100,
			      .r[X86_RBX] = 101,
			      .r[X86_R10] = 102,
			      .r[X86_RSP] = 103,
			      .r[X86_RIP] = 104,
			      .r[X86_RBP] = 105};

	(void)state;
	for (unsigned n = 0; n < X86_NR_REG_ARGS; n++)
		assert_int_equal(arch_regs_arg(a, &r, n), n + 1);
	assert_int_equal(arch_regs_arg(a, &r, 6), 0);
	assert_int_equal(arch_regs_arg(a, &r, 1000), 0);
	assert_int_equal(arch_regs_ret(a, &r), 100);
	assert_int_equal(arch_regs_sp(a, &r), 103);
	assert_int_equal(arch_regs_ip(a, &r), 104);
	assert_int_equal(arch_regs_fp(a, &r), 105);
}

/* The setters write the registers the getters read; a stack argument has none. */
static void test_set(void **state)
{
	const struct arch *a = arch_get(ARCH_X86_64);
	struct arch_regs r = {{0}};

	(void)state;
	arch_regs_set_ip(a, &r, 7);
	arch_regs_set_sp(a, &r, 8);
	arch_regs_set_ret(a, &r, 9);
	arch_regs_set_arg(a, &r, 0, 10);
	arch_regs_set_arg(a, &r, 6, 11);
	assert_int_equal(r.r[X86_RIP], 7);
	assert_int_equal(r.r[X86_RSP], 8);
	assert_int_equal(r.r[X86_RAX], 9);
	assert_int_equal(r.r[X86_RDI], 10);
	for (unsigned i = X86_NR_REGS; i < ARCH_REGS_MAX; i++)
		assert_int_equal(r.r[i], 0);
	assert_true(arch_reg_is_arg(a, X86_R9));
	assert_false(arch_reg_is_arg(a, X86_RBX));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reg_arg),
	    cmocka_unit_test(test_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

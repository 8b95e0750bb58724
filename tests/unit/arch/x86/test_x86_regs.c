/* arch/x86/x86_regs.h: the register that holds each integer argument. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/x86_regs.h"

/* ---- x86_reg_arg ---------------------------------------------------------------------------- */

/* SysV: rdi, rsi, rdx, rcx, r8, r9; the 7th argument is on the stack (0 here). */
static void test_reg_arg(void **state)
{
	struct x86_regs r = {.rdi = 1,
			     .rsi = 2,
			     .rdx = 3,
			     .rcx = 4,
			     .r8 = 5,
			     .r9 = 6,
			     .rax = 100,
			     .rbx = 101,
			     .r10 = 102,
			     .rsp = 103};

	(void)state;
	for (unsigned n = 0; n < X86_NR_REG_ARGS; n++)
		assert_int_equal(x86_reg_arg(&r, n), n + 1);
	assert_int_equal(x86_reg_arg(&r, 6), 0);
	assert_int_equal(x86_reg_arg(&r, 1000), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reg_arg),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* arch/x86/x86_insn.h: NOP5 recognition and byte formatting. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/x86_insn.h"

#include <string.h>

/* ---- x86_is_nop5 ---------------------------------------------------------------------------- */

/* Each of the four NOP5 forms is recognised. */
static void test_nop5_forms(void **state)
{
	static const uint8_t forms[][5] = {
	    {0x0f, 0x1f, 0x44, 0x00, 0x00}, /* P6 nopl 0(%rax,%rax,1): gcc -mnop-mcount, Linux */
	    {0x66, 0x66, 0x66, 0x66, 0x90}, /* K8 */
	    {0x66, 0x66, 0x90, 0x66, 0x90}, /* generic */
	    {0x3e, 0x8d, 0x74, 0x26, 0x00}, /* ds leal 0(%esi,%eiz,1) */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		assert_true(x86_is_nop5(forms[i]));
}

/* CALL rel32, INT3 over a NOP5, a 4-byte NOP followed by another instruction, near misses. */
static void test_nop5_rejects(void **state)
{
	static const uint8_t others[][5] = {
	    {0xe8, 0x12, 0x34, 0x56, 0x78}, /* call rel32 (a patched stub probe) */
	    {0xe8, 0x00, 0x00, 0x00, 0x00},
	    {0xcc, 0x1f, 0x44, 0x00, 0x00}, /* INT3 already over the first byte */
	    {0xcc, 0xcc, 0xcc, 0xcc, 0xcc},
	    {0x0f, 0x1f, 0x40, 0x00, 0x90}, /* nopl 0(%rax) (NOP4) + nop */
	    {0x0f, 0x1f, 0x40, 0x00, 0x00},
	    {0x0f, 0x1f, 0x44, 0x00, 0x01}, /* last byte differs */
	    {0x66, 0x0f, 0x1f, 0x44, 0x00}, /* first 5 bytes of the NOP6 */
	    {0x90, 0x90, 0x90, 0x90, 0x90}, /* five 1-byte NOPs: not one instruction */
	    {0x66, 0x66, 0x66, 0x66, 0x66},
	    {0x3e, 0x8d, 0x74, 0x26, 0x01},
	    {0x00, 0x00, 0x00, 0x00, 0x00},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		assert_false(x86_is_nop5(others[i]));
}

/* ---- x86_format_bytes ----------------------------------------------------------------------- */

/* Lower-case hex pairs separated by single spaces; writes exactly 3*n bytes (incl. the NUL). */
static void test_format_bytes(void **state)
{
	static const uint8_t nop[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
	static const uint8_t call[5] = {0xe8, 0xab, 0xCD, 0xef, 0xff};
	char buf[32];

	(void)state;
	memset(buf, 'X', sizeof(buf));
	assert_ptr_equal(x86_format_bytes(nop, 5, buf), buf);
	assert_string_equal(buf, "0f 1f 44 00 00");
	assert_int_equal(buf[15], 'X'); /* nothing written past 3*n */

	assert_string_equal(x86_format_bytes(call, 5, buf), "e8 ab cd ef ff");
	assert_string_equal(x86_format_bytes(call, 1, buf), "e8");
	assert_string_equal(x86_format_bytes(call, 0, buf), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nop5_forms),
	    cmocka_unit_test(test_nop5_rejects),
	    cmocka_unit_test(test_format_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

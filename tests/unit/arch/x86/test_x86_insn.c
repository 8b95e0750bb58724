/* arch/x86/x86_insn.h: NOP5 recognition, rel32 branches, entry pads, and byte formatting. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/arch.h"
#include "arch/x86/x86_insn.h"

#include <errno.h>
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

/* ---- arch_format_bytes ----------------------------------------------------------------------- */

/* Lower-case hex pairs separated by single spaces; writes exactly 3*n bytes (incl. the NUL). */
static void test_format_bytes(void **state)
{
	static const uint8_t nop[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
	static const uint8_t call[5] = {0xe8, 0xab, 0xCD, 0xef, 0xff};
	char buf[32];

	(void)state;
	memset(buf, 'X', sizeof(buf));
	assert_ptr_equal(arch_format_bytes(nop, 5, buf), buf);
	assert_string_equal(buf, "0f 1f 44 00 00");
	assert_int_equal(buf[15], 'X'); /* nothing written past 3*n */

	assert_string_equal(arch_format_bytes(call, 5, buf), "e8 ab cd ef ff");
	assert_string_equal(arch_format_bytes(call, 1, buf), "e8");
	assert_string_equal(arch_format_bytes(call, 0, buf), "");
}

/* ---- x86_call_precedes ---------------------------------------------------------------------- */

/* @tail (@n bytes) right before the address, the rest of the 7 bytes filler that is no CALL. */
static bool precedes(const uint8_t *tail, size_t n)
{
	uint8_t b[X86_CALL_BEFORE_LEN];

	memset(b, 0x90, sizeof(b));
	memcpy(b + sizeof(b) - n, tail, n);
	return x86_call_precedes(b);
}

/* Each CALL form the kernel's code returns to: rel32, through a register (with REX), through
 * memory at a register, disp8 (with and without SIB), RIP-relative, disp32, absolute through SIB. */
static void test_call_precedes_forms(void **state)
{
	(void)state;
	assert_true(precedes((const uint8_t[]){0xe8, 0x10, 0x20, 0x30, 0x40}, 5));
	assert_true(precedes((const uint8_t[]){0xff, 0xd0}, 2));		/* call *%rax */
	assert_true(precedes((const uint8_t[]){0x41, 0xff, 0xd3}, 3));		/* call *%r11 */
	assert_true(precedes((const uint8_t[]){0xff, 0x13}, 2));		/* call *(%rbx) */
	assert_true(precedes((const uint8_t[]){0xff, 0x50, 0x08}, 3));		/* call *8(%rax) */
	assert_true(precedes((const uint8_t[]){0xff, 0x54, 0x24, 0x08}, 4));	/* *8(%rsp) */
	assert_true(precedes((const uint8_t[]){0xff, 0x15, 1, 2, 3, 4}, 6));	/* *x(%rip) */
	assert_true(precedes((const uint8_t[]){0xff, 0x90, 1, 2, 3, 4}, 6));	/* *x(%rax) */
	assert_true(precedes((const uint8_t[]){0xff, 0x14, 0x25, 1, 2, 3, 4}, 7)); /* *abs */
}

/* What is no CALL: a JMP through a register (FF /4), a PUSH (FF /6), plain NOPs, the bytes of an
 * error code or a user address. */
static void test_call_precedes_rejects(void **state)
{
	(void)state;
	assert_false(precedes((const uint8_t[]){0xff, 0xe0}, 2));		/* jmp *%rax */
	assert_false(precedes((const uint8_t[]){0xff, 0x30}, 2));		/* push (%rax) */
	assert_false(precedes((const uint8_t[]){0xe9, 0x10, 0x20, 0x30, 0x40}, 5)); /* jmp */
	assert_false(precedes((const uint8_t[]){0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, 7));
	assert_false(precedes((const uint8_t[]){0x90}, 1));
	/* FF /2 with a SIB byte cut short: "ff 14" as the last two bytes is no whole CALL */
	assert_false(precedes((const uint8_t[]){0xff, 0x14}, 2));
}

/* ---- x86_encode_rel32, x86_direct_branch, x86_entry_pad_len --------------------------------- */

/* CALL and JMP rel32 encode and decode back to their target, backwards and forwards; a target
 * beyond +-2 GiB is refused. */
static void test_rel32(void **state)
{
	const uint64_t at = 0xffffffff81000000ull;
	const uint64_t to[] = {at + 5, at + 0x1234, at - 0x40, at + 0x7fffffffull + 5};
	uint8_t b[5];
	uint64_t got;

	(void)state;
	for (size_t i = 0; i < sizeof(to) / sizeof(to[0]); i++) {
		assert_int_equal(x86_encode_rel32(at, to[i], true, b), 0);
		assert_int_equal(b[0], X86_CALL_REL32);
		assert_int_equal(x86_direct_branch(b, 5, at, false, &got), 5);
		assert_int_equal(got, to[i]);
		assert_int_equal(x86_encode_rel32(at, to[i], false, b), 0);
		assert_int_equal(b[0], X86_JMP_REL32);
		assert_int_equal(x86_direct_branch(b, 5, at, false, &got),
				 0); /* a jump, not a call */
		assert_int_equal(x86_direct_branch(b, 5, at, true, &got), 5);
		assert_int_equal(got, to[i]);
	}
	assert_int_equal(x86_encode_rel32(at, at + 0x80000000ull + 5, true, b), -ERANGE);
	assert_int_equal(x86_direct_branch(b, 4, at, true, &got), 0); /* cut short */
}

/* ENDBR64 and the two NOPs Linux seals it into are a 4-byte pad; anything else is none. */
static void test_entry_pad(void **state)
{
	static const uint8_t endbr[] = {0xf3, 0x0f, 0x1e, 0xfa},
			     sealed[] = {0x66, 0x0f, 0x1f, 0x00},
			     sealed73[] = {0x0f, 0x1f, 0x40, 0xd6},
			     nop5[] = {0x0f, 0x1f, 0x44, 0x00};

	(void)state;
	assert_int_equal(x86_entry_pad_len(endbr), 4);
	assert_int_equal(x86_entry_pad_len(sealed), 4);
	assert_int_equal(x86_entry_pad_len(sealed73), 4);
	assert_int_equal(x86_entry_pad_len(nop5), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nop5_forms),
	    cmocka_unit_test(test_nop5_rejects),
	    cmocka_unit_test(test_format_bytes),
	    cmocka_unit_test(test_call_precedes_forms),
	    cmocka_unit_test(test_call_precedes_rejects),
	    cmocka_unit_test(test_rel32),
	    cmocka_unit_test(test_entry_pad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* arch/x86/x86_reloc_scan.h: what a kernel may rewrite among displaced instructions, and branches
 * of the rest of the function into the patch, on hand-made byte sequences. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/x86_reloc_scan.h"

#include <errno.h>
#include <string.h>

#define CODE 0xffffffff81000000ull

static struct arch_reloc_plan plan;
static char why[256];

static void plan5(const uint8_t *code, size_t len)
{
	int e = x86_reloc_plan(code, len, CODE, X86_JMP_REL32_LEN, &plan, why, sizeof(why));

	if (e)
		fail_msg("plan: %d: %s", e, why);
}

/* Plans @code, expecting x86_reloc_kernel_safe to take it (@text NULL) or refuse with @text. */
#define KERNEL(text, ...)                                                                          \
	do {                                                                                       \
		static const uint8_t c_[] = {__VA_ARGS__};                                         \
		int e_;                                                                            \
		plan5(c_, sizeof(c_));                                                             \
		memset(why, 'X', sizeof(why));                                                     \
		e_ = x86_reloc_kernel_safe(&plan, why, sizeof(why));                               \
		if (!(text)) {                                                                     \
			if (e_)                                                                    \
				fail_msg("refused: %s", why);                                      \
		} else {                                                                           \
			assert_int_equal(e_, -EOPNOTSUPP);                                         \
			if (!strstr(why, (text) ? (text) : ""))                                    \
				fail_msg("reason: %s", why);                                       \
		}                                                                                  \
	} while (0)

/* The prologues Linux functions without an fentry site start with. */
static void test_prologues_safe(void **state)
{
	(void)state;
	KERNEL(NULL, 0x55, 0x48, 0x89, 0xe5, 0x41, 0x57);	/* push rbp; mov rbp,rsp; ... */
	KERNEL(NULL, 0x41, 0x57, 0x41, 0x56, 0x41, 0x55, 0xc3); /* push r15; push r14; push r13 */
	KERNEL(NULL, 0x48, 0x83, 0xec, 0x18, 0x48, 0x89, 0x1c, 0x24, 0xc3); /* sub; mov (rsp) */
	/* mov rax, gs:[0x1234] (a per-CPU load) */
	KERNEL(NULL, 0x65, 0x48, 0x8b, 0x04, 0x25, 0x34, 0x12, 0x00, 0x00);
	/* mov rax, [rip+0x10]; lea rdx, [rdi+8] */
	KERNEL(NULL, 0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00, 0x48, 0x8d, 0x57, 0x08);
}

static void test_kernel_rewrites_refused(void **state)
{
	(void)state;
	KERNEL("jump label", 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3);	 /* nopl 0(rax,rax) */
	KERNEL("jump label", 0x55, 0x66, 0x90, 0x48, 0x89, 0xe5);	 /* a NOP2 inside */
	KERNEL("jump label", 0x55, 0xe9, 0x10, 0x00, 0x00, 0x00);	 /* jmp rel32 */
	KERNEL("static call", 0x55, 0xe8, 0x10, 0x00, 0x00, 0x00, 0xc3); /* call rel32 */
	KERNEL("fixed up", 0x48, 0x8b, 0x07, 0x48, 0x89, 0xe5);		 /* mov rax, [rdi] */
	KERNEL("fixed up", 0x55, 0x8b, 0x04, 0x24, 0x8b, 0x04, 0x8e);	 /* mov eax, [rsi+rcx*4] */
	if (!strstr(why, "+4 at 0xffffffff81000004 (8b 04 8e)"))
		fail_msg("where: %s", why);
}

/* Plans @code, expecting x86_reloc_detour_check to take it with @push bytes pushed (@text NULL)
 * or refuse with @text. */
#define DETOUR(push, text, ...)                                                                    \
	do {                                                                                       \
		static const uint8_t c_[] = {__VA_ARGS__};                                         \
		int e_, pushed_ = -1;                                                              \
		plan5(c_, sizeof(c_));                                                             \
		memset(why, 'X', sizeof(why));                                                     \
		e_ = x86_reloc_detour_check(&plan, &pushed_, why, sizeof(why));                    \
		if (!(text)) {                                                                     \
			if (e_)                                                                    \
				fail_msg("refused: %s", why);                                      \
			assert_int_equal(pushed_, (push));                                         \
		} else {                                                                           \
			assert_int_equal(e_, -EOPNOTSUPP);                                         \
			if (!strstr(why, (text) ? (text) : ""))                                    \
				fail_msg("reason: %s", why);                                       \
		}                                                                                  \
	} while (0)

/* What a detour can run with interrupts off before its JMP through the stack. */
static void test_detour_check(void **state)
{
	(void)state;
	DETOUR(16, NULL, 0x55, 0x48, 0x89, 0xe5, 0x41, 0x57);		  /* push; mov; push */
	DETOUR(24, NULL, 0x48, 0x83, 0xec, 0x18, 0x48, 0x89, 0x1c, 0x24); /* sub rsp, 0x18; mov */
	DETOUR(-8, NULL, 0x48, 0x83, 0xc4, 0x08, 0x90, 0x90);		  /* add rsp, 8 */
	DETOUR(0, NULL, 0x65, 0x48, 0x8b, 0x04, 0x25, 0x34, 0x12, 0x00, 0x00); /* gs load */
	DETOUR(0, "branch", 0x85, 0xff, 0x74, 0x10, 0x90, 0x90, 0x90);	       /* test; je */
	DETOUR(0, "branch", 0x31, 0xc0, 0x31, 0xd2, 0xc3, 0xcc);	       /* xor; xor; ret */
	DETOUR(0, "changes RSP", 0x48, 0x83, 0xe4, 0xf0, 0x90, 0x90);	       /* and rsp, -16 */
	DETOUR(0, "changes RSP", 0x48, 0x89, 0xec, 0x90, 0x90, 0x90);	       /* mov rsp, rbp */
	DETOUR(0, "further", 0x48, 0x81, 0xec, 0x00, 0x01, 0x00, 0x00);	       /* sub rsp, 0x100 */
	/* mov [rsp - 0x100], rax; mov [rbp - 8], rdi */
	DETOUR(0, "below the return-address slot", 0x48, 0x89, 0x84, 0x24, 0x00, 0xff, 0xff, 0xff);
	DETOUR(0, "below the return-address slot", 0x48, 0x89, 0x7d, 0xf8, 0x90, 0x90);
}

static int scan(const uint8_t *body, size_t len)
{
	memset(why, 'X', sizeof(why));
	return x86_reloc_scan_body(&plan, body, len, CODE, why, sizeof(why));
}

/* Where instructions start, decoded from a function's first byte: a boundary, the middle of an
 * instruction (with its bounds), bytes that do not decode before the offset; and the instructions
 * a single step may never get over. */
/* A jump back to a function's first instruction is found, a recursive CALL is not. */
static void test_branch_to(void **state)
{
	/* 0x1000: PUSH RBP; CALL 0x1000; DEC RDI; JNZ 0x1000 (rel8 -11); POP RBP; RET */
	static const uint8_t f[] = {0x55, 0xe8, 0xfa, 0xff, 0xff, 0xff, 0x48, 0xff, 0xcf,
				    0x75, 0xf5, 0x5d, 0xc3};
	char why[200];

	(void)state;
	assert_int_equal(x86_scan_branch_to(f, sizeof(f), 0x1000, 0x1000, why, sizeof(why)),
			 -EOPNOTSUPP);
	assert_string_equal(why, "+9 at 0x1009 (75 f5): jnz: jumps back to the function's first "
				 "instruction");
	/* the CALL alone (cut before the JNZ) is a call, not a jump */
	assert_int_equal(x86_scan_branch_to(f, 9, 0x1000, 0x1000, why, sizeof(why)), 0);
	assert_int_equal(x86_scan_branch_to(f, sizeof(f), 0x1000, 0x1001, why, sizeof(why)), 0);
	assert_int_equal(x86_scan_branch_to((const uint8_t[]){0x55, 0x06}, 2, 0x1000, 0x1000, why,
					    sizeof(why)),
			 -EILSEQ);
}

static void test_insn_start_and_waits(void **state)
{
	/* ENDBR64; NOP5; PUSH RBP; MOV RBP,RSP; HLT */
	static const uint8_t f[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x0f, 0x1f, 0x44, 0x00, 0x00,
				    0x55, 0x48, 0x89, 0xe5, 0xf4};
	static const uint8_t bad[] = {0x55, 0x06, 0x55}; /* PUSH ES: none in 64-bit mode */
	size_t before, after;

	(void)state;
	assert_int_equal(x86_scan_insn_start(f, sizeof(f), 0, &before, &after), 0);
	assert_int_equal(x86_scan_insn_start(f, sizeof(f), 9, &before, &after), 0);
	assert_int_equal(before, 4);
	assert_int_equal(after, 9);
	assert_int_equal(x86_scan_insn_start(f, sizeof(f), 13, &before, &after), 0);
	assert_int_equal(x86_scan_insn_start(f, sizeof(f), 2, &before, &after), -EINVAL);
	assert_int_equal(before, 0);
	assert_int_equal(after, 4);
	assert_int_equal(x86_scan_insn_start(f, sizeof(f), 11, &before, &after), -EINVAL);
	assert_int_equal(before, 10);
	assert_int_equal(after, 13);
	assert_int_equal(x86_scan_insn_start(bad, sizeof(bad), 2, &before, &after), -EILSEQ);
	assert_int_equal(before, 1);
	/* cut: the MOV runs past what was read */
	assert_int_equal(x86_scan_insn_start(f, 11, 13, &before, &after), -EILSEQ);
	assert_int_equal(before, 10);
	assert_true(x86_insn_waits(f + 13, 1));
	assert_true(x86_insn_waits((const uint8_t[]){0x0f, 0x01, 0xc9}, 3)); /* MWAIT */
	assert_false(x86_insn_waits(f + 9, 5));
	assert_false(x86_insn_waits(bad + 1, 2));
}

static void test_body_branches(void **state)
{
	/* push rbp; mov rbp,rsp (4 bytes), push r15 (2): the patch covers [CODE, CODE + 6) */
	static const uint8_t head[] = {0x55, 0x48, 0x89, 0xe5, 0x41, 0x57};
	uint8_t body[64];

	(void)state;
	plan5(head, sizeof(head));
	assert_int_equal(plan.len, 6);
	memcpy(body, head, sizeof(head));
	/* +6: test edi,edi; +8: je +0x10 (to +26); +10: ret; padding INT3s */
	memcpy(body + 6, (uint8_t[]){0x85, 0xff, 0x74, 0x10, 0xc3}, 5);
	memset(body + 11, 0xcc, sizeof(body) - 11);
	assert_int_equal(scan(body, sizeof(body)), 0);
	/* a jump back to the function's first byte enters the detour: fine */
	body[9] = (uint8_t)(0 - 10);
	assert_int_equal(scan(body, sizeof(body)), 0);
	/* to +1, +4 or +5: the middle of the JMP or of what it displaced */
	for (int to = 1; to < 6; to++) {
		body[9] = (uint8_t)(to - 10);
		assert_int_equal(scan(body, sizeof(body)), -EOPNOTSUPP);
		if (!strstr(why, "+8 at 0xffffffff81000008 (74 ") || !strstr(why, "detour"))
			fail_msg("to +%d: %s", to, why);
	}
	/* past the patch again */
	body[9] = (uint8_t)(6 - 10);
	assert_int_equal(scan(body, sizeof(body)), 0);
	/* a CALL rel32 into the patch from further on */
	memcpy(body + 11, (uint8_t[]){0xe8, 0xf0, 0xff, 0xff, 0xff}, 5); /* to +16 - 16 + ... */
	body[12] = (uint8_t)(3 - 16);
	assert_int_equal(scan(body, sizeof(body)), -EOPNOTSUPP);
	/* cut at the end: the last instruction read in part ends the scan */
	assert_int_equal(scan(body, 12), 0);
	/* bytes that do not decode: the branches cannot all be seen */
	memset(body + 11, 0xcc, sizeof(body) - 11);
	body[20] = 0x06; /* push es: invalid in 64-bit mode */
	assert_int_equal(scan(body, sizeof(body)), -EILSEQ);
	if (!strstr(why, "+20 at"))
		fail_msg("where: %s", why);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prologues_safe),
	    cmocka_unit_test(test_kernel_rewrites_refused),
	    cmocka_unit_test(test_body_branches),
	    cmocka_unit_test(test_detour_check),
	    cmocka_unit_test(test_insn_start_and_waits),
	    cmocka_unit_test(test_branch_to),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

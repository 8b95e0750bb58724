/* arch/x86/x86_reloc.h: which first instructions of a function a JMP rel32 displaces, what is
 * refused, and their bytes at a detour, checked by hand and decoded back with Zydis. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/x86_reloc.h"

#include <Zydis/Zydis.h>
#include <errno.h>
#include <string.h>

/* Kernel text, and a stub region 1 GiB above it (module space): within rel32 reach. */
#define CODE 0xffffffff81000000ull
#define DEST 0xffffffffc0000000ull

#define ENDBR 0xf3, 0x0f, 0x1e, 0xfa

static struct arch_reloc_plan plan;
static char why[256];

static int plan_of(const uint8_t *code, size_t len, size_t need)
{
	memset(why, 'X', sizeof(why));
	return x86_reloc_plan(code, len, CODE, need, &plan, why, sizeof(why));
}

/* Plans @code for a JMP rel32, expecting success. */
#define PLAN_OK(...)                                                                               \
	do {                                                                                       \
		static const uint8_t c_[] = {__VA_ARGS__};                                         \
		int e_ = plan_of(c_, sizeof(c_), X86_JMP_REL32_LEN);                               \
		if (e_)                                                                            \
			fail_msg("%d: %s", e_, why);                                               \
	} while (0)

/* Plans @code for a JMP rel32, expecting @err and @text in the reason. */
#define PLAN_BAD(err, text, ...)                                                                   \
	do {                                                                                       \
		static const uint8_t c_[] = {__VA_ARGS__};                                         \
		assert_int_equal(plan_of(c_, sizeof(c_), X86_JMP_REL32_LEN), (err));               \
		if (!strstr(why, (text)))                                                          \
			fail_msg("reason \"%s\" lacks \"%s\"", why, (text));                       \
	} while (0)

static void check_insn(size_t i, unsigned off, unsigned len, enum x86_reloc_kind kind)
{
	assert_true(i < plan.nr);
	assert_int_equal(plan.insn[i].off, off);
	assert_int_equal(plan.insn[i].len, len);
	assert_int_equal(plan.insn[i].kind, kind);
}

/* ---- round trip: the emitted bytes decoded again ------------------------------------------ */

static uint64_t decode_at(const uint8_t *p, size_t n, uint64_t ip, ZydisDecodedInstruction *in,
			  ZydisDecodedOperand *ops, bool *has_target)
{
	ZydisDecoder dec;
	uint64_t t = 0;

	assert_true(
	    ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)));
	assert_true(ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, p, n, in, ops)));
	*has_target = false;
	for (unsigned i = 0; i < in->operand_count; i++) {
		const ZydisDecodedOperand *o = &ops[i];

		if ((o->type == ZYDIS_OPERAND_TYPE_IMMEDIATE && o->imm.is_relative) ||
		    (o->type == ZYDIS_OPERAND_TYPE_MEMORY && o->mem.base == ZYDIS_REGISTER_RIP)) {
			assert_true(ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(in, o, ip, &t)));
			*has_target = true;
		}
	}
	return t;
}

/* Decodes @out (the detour's bytes at @dest) and each original instruction of @code with Zydis:
 * every relocated branch reaches the original's target, every RIP-relative operand the original's
 * address, a CALL pushes its original return address; the copy ends with a JMP back. */
static void round_trip(const uint8_t *code, const uint8_t *out, size_t out_len, uint64_t dest)
{
	ZydisDecodedInstruction oi, ni;
	ZydisDecodedOperand oops[ZYDIS_MAX_OPERAND_COUNT], nops[ZYDIS_MAX_OPERAND_COUNT];
	size_t o = 0;
	bool ot, nt;

	for (size_t i = 0; i < plan.nr; i++) {
		const struct arch_reloc_insn *ri = &plan.insn[i];
		uint64_t orig = decode_at(code + ri->off, ri->len, CODE + ri->off, &oi, oops, &ot);
		uint64_t now;

		if (ri->kind == X86_RELOC_CALL) { /* push imm32; jmp rel32 */
			now = decode_at(out + o, out_len - o, dest + o, &ni, nops, &nt);
			assert_int_equal(ni.mnemonic, ZYDIS_MNEMONIC_PUSH);
			assert_int_equal((uint64_t)nops[0].imm.value.s, CODE + ri->off + ri->len);
			o += ni.length;
		} else if (ri->kind == X86_RELOC_LOOP) { /* op +2; jmp +5; jmp rel32 */
			now = decode_at(out + o, out_len - o, dest + o, &ni, nops, &nt);
			assert_int_equal(ni.mnemonic, oi.mnemonic);
			assert_int_equal(now, dest + o + 4);
			now = decode_at(out + o + 2, out_len - o - 2, dest + o + 2, &ni, nops, &nt);
			assert_int_equal(now, dest + o + 9);
			o += 4;
		}
		now = decode_at(out + o, out_len - o, dest + o, &ni, nops, &nt);
		if (ri->kind != X86_RELOC_CALL && ri->kind != X86_RELOC_LOOP)
			assert_int_equal(ni.mnemonic, oi.mnemonic);
		assert_int_equal(nt, ot);
		if (ot)
			assert_int_equal(now, orig);
		if (ri->kind == X86_RELOC_COPY || ri->kind == X86_RELOC_RIPREL)
			assert_int_equal(ni.length, ri->len);
		o += ni.length;
	}
	assert_int_equal(o + 5, out_len);
	assert_int_equal(decode_at(out + o, 5, dest + o, &ni, nops, &nt),
			 CODE + plan.pad_len + plan.len);
	assert_int_equal(ni.mnemonic, ZYDIS_MNEMONIC_JMP);
}

/* Emits plan (of @code) at @dest, expecting success and @want exactly; then the round trip. */
static void emit_expect(const uint8_t *code, uint64_t dest, const uint8_t *want, size_t want_len)
{
	uint8_t out[X86_RELOC_OUT_MAX + 8];
	size_t n = 99;
	int err;

	memset(out, 0xa5, sizeof(out));
	err = x86_reloc_emit(&plan, code, CODE, dest, out, X86_RELOC_OUT_MAX, &n, why, sizeof(why));
	if (err)
		fail_msg("%d: %s", err, why);
	assert_int_equal(n, want_len);
	assert_int_equal(n, x86_reloc_emit_len(&plan));
	assert_memory_equal(out, want, want_len);
	assert_int_equal(out[n], 0xa5);
	round_trip(code, out, n, dest);
}

/* ---- plans of real prologues ---------------------------------------------------------------- */

/* push %rbp; mov %rsp,%rbp; sub $0x10,%rsp: three whole instructions (8 bytes) for 5. */
static void test_frame_prologue(void **state)
{
	static const uint8_t code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xcc};
	static const uint8_t want[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10,
				       /* jmp back to CODE + 8: 0xffffffff81000008 - (DEST + 13) */
				       0xe9, 0xfb, 0xff, 0xff, 0xc0};

	(void)state;
	PLAN_OK(0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xcc);
	assert_int_equal(plan.pad_len, 0);
	assert_int_equal(plan.len, 8);
	assert_int_equal(plan.nr, 3);
	check_insn(0, 0, 1, X86_RELOC_COPY);
	check_insn(1, 1, 3, X86_RELOC_COPY);
	check_insn(2, 4, 4, X86_RELOC_COPY);
	assert_int_equal((uint32_t)(CODE + 8 - (DEST + 13)), 0xc0fffffb);
	emit_expect(code, DEST, want, sizeof(want));
}

/* The same after an ENDBR64: it stays, the patch goes after it; a 1-instruction cover needs one. */
static void test_endbr_prologue(void **state)
{
	static const uint8_t code[] = {ENDBR, 0x55, 0x48, 0x89, 0xe5, 0x41, 0x57};
	static const uint8_t want[] = {0x55, 0x48, 0x89, 0xe5, 0x41, 0x57, /* push %r15 */
				       0xe9, 0xff, 0xff, 0xff, 0xc0};

	(void)state;
	PLAN_OK(ENDBR, 0x55, 0x48, 0x89, 0xe5, 0x41, 0x57);
	assert_int_equal(plan.pad_len, 4);
	assert_int_equal(plan.len, 6);
	check_insn(0, 4, 1, X86_RELOC_COPY);
	check_insn(2, 8, 2, X86_RELOC_COPY);
	/* back to CODE + 10 from DEST + 11 */
	assert_int_equal((uint32_t)(CODE + 10 - (DEST + 11)), 0xc0ffffff);
	emit_expect(code, DEST, want, sizeof(want));

	/* nopl 0(%rax,%rax,1) (an fentry NOP5) covers the patch alone */
	PLAN_OK(ENDBR, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3);
	assert_int_equal(plan.nr, 1);
	assert_int_equal(plan.len, 5);
}

/* ENDBR64; mov 0xff9(%rip),%rax: its disp32 rewritten for the detour. */
static void test_riprel_load(void **state)
{
	static const uint8_t code[] = {ENDBR, 0x48, 0x8b, 0x05, 0xf9, 0x0f, 0x00, 0x00, 0xc3};
	/* operand: CODE + 4 + 7 + 0xff9 = 0xffffffff81001004; at DEST, RIP after it is DEST + 7:
	 * 0xffffffff81001004 - 0xffffffffc0000007 = -0x3efff003 = 0xc1000ffd. Back to CODE + 11
	 * from DEST + 12: -0x3f000001 = 0xc0ffffff. */
	static const uint8_t want[] = {0x48, 0x8b, 0x05, 0xfd, 0x0f, 0x00,
				       0xc1, 0xe9, 0xff, 0xff, 0xff, 0xc0};

	(void)state;
	PLAN_OK(ENDBR, 0x48, 0x8b, 0x05, 0xf9, 0x0f, 0x00, 0x00, 0xc3);
	check_insn(0, 4, 7, X86_RELOC_RIPREL);
	assert_int_equal(plan.insn[0].field_off, 3);
	assert_int_equal(plan.insn[0].target, CODE + 4 + 7 + 0xff9);
	assert_int_equal((uint32_t)(CODE + 4 + 7 + 0xff9 - (DEST + 7)), 0xc1000ffd);
	assert_int_equal((uint32_t)(CODE + 11 - (DEST + 12)), 0xc0ffffff);
	emit_expect(code, DEST, want, sizeof(want));
}

/* cmpb $0x0,-0x10(%rip): the immediate after the disp32 counts in RIP; then jz short, out of the
 * range, becomes 0f 84 rel32 (for a patch of 8 bytes: the cmp alone would cover 5). */
static void test_riprel_cmp_jz(void **state)
{
	static const uint8_t code[] = {0x80, 0x3d, 0xf0, 0xff, 0xff, 0xff, 0x00, 0x74, 0x10, 0x55};
	/* cmp: CODE + 7 - 0x10 = CODE - 9; at DEST, next is DEST + 7: CODE - 9 - DEST - 7.
	 * jz: target CODE + 9 + 0x10 = CODE + 0x19, next DEST + 13.
	 * back: CODE + 9 from DEST + 18. */
	uint8_t want[] = {0x80, 0x3d, 0, 0, 0, 0, 0x00, 0x0f, 0x84, 0, 0, 0, 0, 0xe9, 0, 0, 0, 0};
	uint32_t d = (uint32_t)(CODE - 9 - (DEST + 7)), j = (uint32_t)(CODE + 0x19 - (DEST + 13));
	uint32_t b = (uint32_t)(CODE + 9 - (DEST + 18));

	(void)state;
	assert_int_equal(d, 0xc0fffff0);
	assert_int_equal(j, 0xc100000c);
	assert_int_equal(b, 0xc0fffff7);
	memcpy(want + 2, &d, 4);
	memcpy(want + 9, &j, 4);
	memcpy(want + 14, &b, 4);
	/* an 8-byte patch: the cmp alone is 7 */
	assert_int_equal(plan_of(code, sizeof(code), 8), 0);
	assert_int_equal(plan.len, 9);
	check_insn(0, 0, 7, X86_RELOC_RIPREL);
	assert_int_equal(plan.insn[0].field_off, 2);
	check_insn(1, 7, 2, X86_RELOC_JCC);
	assert_int_equal(plan.insn[1].target, CODE + 0x19);
	emit_expect(code, DEST, want, sizeof(want));
}

/* test %edi,%edi; je (rel8, out of the range); push %rbx; and the rel32 Jcc and JMP forms. */
static void test_test_je(void **state)
{
	static const uint8_t code[] = {0x85, 0xff, 0x74, 0x1f, 0x53, 0x48};
	/* je: CODE + 4 + 0x1f from DEST + 8: 0xc100001b; back: CODE + 5 from DEST + 14 */
	static const uint8_t want[] = {0x85, 0xff, 0x0f, 0x84, 0x1b, 0x00, 0x00,
				       0xc1, 0x53, 0xe9, 0xf7, 0xff, 0xff, 0xc0};
	static const uint8_t code32[] = {0x0f, 0x85, 0x00, 0x01, 0x00, 0x00}; /* jne rel32 */
	static const uint8_t jmp8[] = {0x31, 0xc0, 0x66, 0x90, 0xeb, 0x30};   /* ... jmp short */

	(void)state;
	PLAN_OK(0x85, 0xff, 0x74, 0x1f, 0x53, 0x48);
	assert_int_equal(plan.len, 5);
	check_insn(1, 2, 2, X86_RELOC_JCC);
	assert_int_equal(plan.insn[1].op, 4);
	assert_int_equal((uint32_t)(CODE + 4 + 0x1f - (DEST + 8)), 0xc100001b);
	emit_expect(code, DEST, want, sizeof(want));

	assert_int_equal(plan_of(code32, sizeof(code32), 5), 0);
	check_insn(0, 0, 6, X86_RELOC_JCC);
	emit_expect(
	    code32, DEST,
	    (const uint8_t[]){0x0f, 0x85, 0x00, 0x01, 0x00, 0xc1, 0xe9, 0xfb, 0xff, 0xff, 0xc0},
	    11);

	/* a JMP that completes the range ends the function's displaced part: allowed */
	assert_int_equal(plan_of(jmp8, sizeof(jmp8), 5), 0);
	check_insn(2, 4, 2, X86_RELOC_JMP);
	emit_expect(jmp8, DEST,
		    (const uint8_t[]){0x31, 0xc0, 0x66, 0x90, 0xe9, 0x2d, 0x00, 0x00, 0xc1, 0xe9,
				      0xf8, 0xff, 0xff, 0xc0},
		    14);
}

/* xor %eax,%eax; call rel32 (last): push of its return address CODE + 7, jmp to its target. */
static void test_xor_call(void **state)
{
	static const uint8_t code[] = {0x31, 0xc0, 0xe8, 0x3b, 0x2a, 0x00, 0x00};
	/* push $0x81000007 (sign-extended: CODE + 7); jmp CODE + 7 + 0x2a3b from DEST + 12; back to
	 * CODE + 7 from DEST + 17 (never reached: the callee returns to CODE + 7) */
	static const uint8_t want[] = {0x31, 0xc0, 0x68, 0x07, 0x00, 0x00, 0x81, 0xe9, 0x36,
				       0x2a, 0x00, 0xc1, 0xe9, 0xf6, 0xff, 0xff, 0xc0};

	(void)state;
	PLAN_OK(0x31, 0xc0, 0xe8, 0x3b, 0x2a, 0x00, 0x00);
	check_insn(1, 2, 5, X86_RELOC_CALL);
	assert_int_equal(plan.insn[1].target, CODE + 7 + 0x2a3b);
	assert_int_equal((uint32_t)(CODE + 0x2a42 - (DEST + 12)), 0xc1002a36);
	emit_expect(code, DEST, want, sizeof(want));

	/* cs call (retpoline's thunk calls): the prefix dropped */
	PLAN_OK(0x2e, 0xe8, 0x00, 0x10, 0x00, 0x00);
	check_insn(0, 0, 6, X86_RELOC_CALL);
}

/* jrcxz and loop have no rel32 form: op +2; jmp +5; jmp rel32. A branch to the patch's first byte
 * (a loop back to the function's start) is fine: it enters the detour again. */
static void test_loop_forms(void **state)
{
	static const uint8_t code[] = {0x31, 0xc0, 0xe3, 0x40, 0x90, 0x90};
	static const uint8_t back[] = {0x31, 0xc0, 0xff, 0xc0, 0x75, 0xfa};

	(void)state;
	assert_int_equal(plan_of(code, sizeof(code), 5), 0);
	check_insn(1, 2, 2, X86_RELOC_LOOP);
	/* jrcxz target CODE + 0x44 from DEST + 11: 0xc1000039; back to CODE + 5 from DEST + 17 */
	emit_expect(code, DEST,
		    (const uint8_t[]){0x31, 0xc0, 0xe3, 0x02, 0xeb, 0x05, 0xe9, 0x39, 0x00, 0x00,
				      0xc1, 0x90, 0xe9, 0xf4, 0xff, 0xff, 0xc0},
		    17);

	assert_int_equal(plan_of(back, sizeof(back), 5), 0);
	assert_int_equal(plan.insn[2].target, CODE);
	emit_expect(back, DEST,
		    (const uint8_t[]){0x31, 0xc0, 0xff, 0xc0, 0x0f, 0x85, 0xf6, 0xff, 0xff, 0xc0,
				      0xe9, 0xf7, 0xff, 0xff, 0xc0},
		    15);
}

/* What kernel entries hold besides frames: per-CPU loads through %gs with an absolute disp32
 * (no RIP), lfence, lock-prefixed updates, cli, pause, nopw, xchg: copied as they are. Zydis's
 * SYSTEM category (rdtsc among them) is refused wholesale: conservative. */
static void test_copied_as_is(void **state)
{
	(void)state;
	/* mov %gs:0x1f000,%rax; lfence */
	PLAN_OK(0x65, 0x48, 0x8b, 0x04, 0x25, 0x00, 0xf0, 0x01, 0x00, 0x0f, 0xae, 0xe8);
	check_insn(0, 0, 9, X86_RELOC_COPY);
	/* lock incl (%rdi); cli; pause; nopw 0(%rax,%rax,1); xchg %ax,%ax */
	assert_int_equal(plan_of((const uint8_t[]){0xf0, 0xff, 0x07, 0xfa, 0xf3, 0x90, 0x66, 0x0f,
						   0x1f, 0x44, 0x00, 0x00, 0x66, 0x90},
				 14, 14),
			 0);
	assert_int_equal(plan.nr, 5);
	for (size_t i = 0; i < plan.nr; i++)
		assert_int_equal(plan.insn[i].kind, X86_RELOC_COPY);
	PLAN_BAD(-EOPNOTSUPP, "(0f 31): rdtsc: traps, is privileged or leaves the kernel", 0x0f,
		 0x31, 0x90, 0x90, 0x90);
	/* jmp *0x10(%rip) as the last displaced instruction: its disp32 adjusted */
	PLAN_OK(0x90, 0xff, 0x25, 0x10, 0x00, 0x00, 0x00);
	check_insn(1, 1, 6, X86_RELOC_RIPREL);
}

/* ---- refusals ------------------------------------------------------------------------------- */

/* A branch back into the displaced bytes past the first: it would land in the patch. */
static void test_refuse_branch_into(void **state)
{
	(void)state;
	/* xor; inc %eax; jne +2 (to the inc at +2) */
	PLAN_BAD(-EOPNOTSUPP,
		 "+4 at 0xffffffff81000004 (75 fc): branches to 0xffffffff81000002 (+2), "
		 "inside the 6 displaced bytes",
		 0x31, 0xc0, 0xff, 0xc0, 0x75, 0xfc);
	/* after an ENDBR64: a jump to itself (+4 is the patch's first byte, +6 is not) */
	PLAN_BAD(-EOPNOTSUPP, "+6 at 0xffffffff81000006 (75 fe): branches to", ENDBR, 0x31, 0xc0,
		 0x75, 0xfe, 0x90);
	/* a branch to the end of the range is fine */
	PLAN_OK(0x31, 0xc0, 0x74, 0x01, 0x90, 0x90);
}

/* The function leaves (or stops) before the patch's bytes are covered. */
static void test_refuse_leaves(void **state)
{
	(void)state;
	PLAN_BAD(-EOPNOTSUPP, "+2 at 0xffffffff81000002 (c3): ret: the function leaves", 0x31, 0xc0,
		 0xc3, 0xcc, 0xcc);
	PLAN_BAD(-EOPNOTSUPP, "(eb 10): jmp: the function leaves", 0xeb, 0x10, 0xcc, 0xcc, 0xcc);
	PLAN_BAD(-EOPNOTSUPP, "(ff e0): jmp: the function leaves", 0xff, 0xe0, 0xcc, 0xcc, 0xcc);
	PLAN_BAD(-EOPNOTSUPP, "(cc): int3: traps", ENDBR, 0xcc, 0x48, 0x89, 0xe5, 0x90);
	PLAN_BAD(-EOPNOTSUPP, "(0f 0b): ud2: traps", 0x31, 0xc0, 0x0f, 0x0b, 0x90, 0x90);
	PLAN_BAD(-EOPNOTSUPP, "(0f 05): syscall", 0x0f, 0x05, 0x90, 0x90, 0x90);
	PLAN_BAD(-EOPNOTSUPP, "(f4): hlt", 0xf4, 0x90, 0x90, 0x90, 0x90);
	PLAN_BAD(-EOPNOTSUPP, "(48 cf): iretq", 0x48, 0xcf, 0x90, 0x90, 0x90);
	PLAN_BAD(-EOPNOTSUPP, "(cd 80): int", 0xcd, 0x80, 0x90, 0x90, 0x90);
	PLAN_BAD(-EOPNOTSUPP, "(0f 01 c1): vmcall", 0x0f, 0x01, 0xc1, 0x90, 0x90);
	/* a RET that completes the range is the function's end inside the patch: allowed */
	PLAN_OK(0x90, 0x90, 0x90, 0x90, 0xc3);
}

/* CALLs whose callee would return into the detour, and indirect ones. */
static void test_refuse_calls(void **state)
{
	(void)state;
	/* for a 6-byte patch, the CALL is not the last displaced instruction */
	assert_int_equal(plan_of((const uint8_t[]){0xe8, 0, 0, 0, 0, 0x90}, 6, 6), -EOPNOTSUPP);
	assert_string_equal(why, "+0 at 0xffffffff81000000 (e8 00 00 00 00): call before the last "
				 "displaced instruction: the callee would return into the detour");
	PLAN_BAD(-EOPNOTSUPP, "(ff d0): indirect call", 0xff, 0xd0, 0x90, 0x90, 0x90);
	PLAN_BAD(-EOPNOTSUPP, "(ff 15 00 00 00 00): indirect call", 0xff, 0x15, 0, 0, 0, 0);
	/* operand-size prefixed branch: refused rather than guessed */
	PLAN_BAD(-EOPNOTSUPP, "relative, in a form or with prefixes not relocated", 0x66, 0xe9,
		 0x00, 0x01, 0x00, 0x00, 0x90);
	/* xbegin: relative, and transactional */
	PLAN_BAD(-EOPNOTSUPP, "xbegin", 0xc7, 0xf8, 0x00, 0x00, 0x00, 0x00);
	/* RIP-relative with a 32-bit address size */
	PLAN_BAD(-EOPNOTSUPP, "32-bit RIP-relative", 0x67, 0x8b, 0x05, 0, 0, 0, 0);
}

/* Undecodable bytes, a buffer cut short, a bad need. */
static void test_refuse_bytes(void **state)
{
	(void)state;
	PLAN_BAD(-EILSEQ, "+1 at 0xffffffff81000001 (06 00 00 00): not a valid x86-64", 0x55, 0x06,
		 0x00, 0x00, 0x00);
	PLAN_BAD(-ENODATA,
		 "+1 at 0xffffffff81000001 (48 8b 05 10): the instruction runs past the 5 "
		 "bytes read",
		 0x55, 0x48, 0x8b, 0x05, 0x10);
	PLAN_BAD(-ENODATA,
		 "+4 at 0xffffffff81000004 (no bytes): 4 bytes read, the patch needs 5 "
		 "after +4",
		 ENDBR);
	PLAN_BAD(-ENODATA, "(f3 0f 1e)", 0xf3, 0x0f, 0x1e); /* half an ENDBR64 */
	assert_int_equal(plan_of((const uint8_t[]){0x90}, 1, 0), -EINVAL);
	assert_non_null(strstr(why, "a patch of 0 bytes: 1 to 16"));
	assert_int_equal(plan_of((const uint8_t[]){0x90}, 1, X86_RELOC_MAX_NEED + 1), -EINVAL);
	assert_int_equal(plan_of(NULL, 0, 5), -ENODATA);
}

/* Emit: a destination out of rel32 reach, a small buffer, bytes that changed, a forged plan. */
static void test_refuse_emit(void **state)
{
	static const uint8_t code[] = {ENDBR, 0x48, 0x8b, 0x05, 0xf9, 0x0f, 0x00, 0x00};
	static const uint8_t callc[] = {0x31, 0xc0, 0xe8, 0x3b, 0x2a, 0x00, 0x00};
	uint8_t out[64], other[sizeof(code)];
	size_t n = 7;

	(void)state;
	assert_int_equal(plan_of(code, sizeof(code), 5), 0);
	/* 3 GiB below: the RIP-relative operand is out of reach */
	assert_int_equal(x86_reloc_emit(&plan, code, CODE, CODE - 0xc0000000ull, out, sizeof(out),
					&n, why, sizeof(why)),
			 -ERANGE);
	assert_int_equal(n, 0);
	assert_string_equal(why, "+4 at 0xffffffff81000004 (48 8b 05 f9 0f 00 00): "
				 "0xffffffff81001004 is out of rel32 reach from the detour at "
				 "0xfffffffec1000000");
	/* out_cap one short: nothing written */
	memset(out, 0x5a, sizeof(out));
	assert_int_equal(x86_reloc_emit(&plan, code, CODE, DEST, out, 11, &n, why, sizeof(why)),
			 -ENOSPC);
	assert_string_equal(why, "+4 at 0xffffffff81000004 (no bytes): the detour's copy needs 12 "
				 "bytes, 11 given");
	for (size_t i = 0; i < sizeof(out); i++)
		assert_int_equal(out[i], 0x5a);
	/* the bytes changed since the plan, or another address */
	memcpy(other, code, sizeof(code));
	other[7] ^= 1;
	assert_int_equal(
	    x86_reloc_emit(&plan, other, CODE, DEST, out, sizeof(out), &n, why, sizeof(why)),
	    -EINVAL);
	assert_non_null(strstr(why, "not the bytes the plan was made from"));
	assert_int_equal(
	    x86_reloc_emit(&plan, code, CODE + 1, DEST, out, sizeof(out), &n, why, sizeof(why)),
	    -EINVAL);
	plan.insn[0].len = 3; /* forged: instructions no longer back to back */
	assert_int_equal(
	    x86_reloc_emit(&plan, code, CODE, DEST, out, sizeof(out), &n, why, sizeof(why)),
	    -EINVAL);
	/* a CALL's return address that is no sign-extended imm32 (user space above 2 GiB) */
	assert_int_equal(
	    x86_reloc_plan(callc, sizeof(callc), 0x7f0000000000ull, 5, &plan, why, sizeof(why)), 0);
	assert_int_equal(x86_reloc_emit(&plan, callc, 0x7f0000000000ull, 0x7f0000100000ull, out,
					sizeof(out), &n, why, sizeof(why)),
			 -ERANGE);
	assert_non_null(strstr(why, "no sign-extended imm32"));
}

/* ---- x86_reloc_hits_patch ------------------------------------------------------------------- */

/* The displaced bytes past the first, by address range; the ENDBR64 and the first byte are not. */
static void test_hits_patch(void **state)
{
	(void)state;
	PLAN_OK(ENDBR, 0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10);
	/* patch: CODE + 4 .. CODE + 11 */
	assert_false(x86_reloc_hits_patch(&plan, CODE + 4, 1));
	assert_true(x86_reloc_hits_patch(&plan, CODE + 5, 1));
	assert_true(x86_reloc_hits_patch(&plan, CODE + 11, 1));
	assert_false(x86_reloc_hits_patch(&plan, CODE + 12, 1));
	assert_false(x86_reloc_hits_patch(&plan, CODE, 5));
	assert_true(x86_reloc_hits_patch(&plan, CODE, 6));
	assert_true(x86_reloc_hits_patch(&plan, CODE + 11, 100));
	assert_true(x86_reloc_hits_patch(&plan, CODE - 100, 200));
	assert_false(x86_reloc_hits_patch(&plan, CODE + 6, 0));
	/* ranges that wrap around 2^64 */
	assert_false(x86_reloc_hits_patch(&plan, CODE + 12, UINT64_MAX - 100));
	assert_true(x86_reloc_hits_patch(&plan, CODE + 12, UINT64_MAX - 5));
	assert_true(x86_reloc_hits_patch(&plan, CODE + 10, UINT64_MAX));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frame_prologue),
	    cmocka_unit_test(test_endbr_prologue),
	    cmocka_unit_test(test_riprel_load),
	    cmocka_unit_test(test_riprel_cmp_jz),
	    cmocka_unit_test(test_test_je),
	    cmocka_unit_test(test_xor_call),
	    cmocka_unit_test(test_loop_forms),
	    cmocka_unit_test(test_copied_as_is),
	    cmocka_unit_test(test_refuse_branch_into),
	    cmocka_unit_test(test_refuse_leaves),
	    cmocka_unit_test(test_refuse_calls),
	    cmocka_unit_test(test_refuse_bytes),
	    cmocka_unit_test(test_refuse_emit),
	    cmocka_unit_test(test_hits_patch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

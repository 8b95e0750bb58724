/* arch/arm64/arm64_reloc.h and arm64_detour.h: plans of real entry words (aarch64-linux-gnu-as),
 * every PC-relative class re-encoded or expanded at distances from a few words to beyond +-4 GiB
 * (checked by running the copy in a small interpreter, a64_sim.h, and by the assembler's words
 * where re-encoded), refusals and hostile inputs (truncated code, branches into the displaced
 * words or into the copy itself, corrupt plans), and the detour slot's layout. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/arch.h"
#include "arch/arm64/arm64_detour.h"
#include "arch/arm64/arm64_insn.h"
#include "arch/arm64/arm64_reloc.h"
#include "arch/arm64/arm64_reloc_scan.h"
#include "tests/unit/arch/arm64/a64_sim.h"

#include <errno.h>
#include <string.h>

#define F   0xffff800080100000ull /* the function */
#define MIB (1ull << 20)
#define GIB (1ull << 30)

#define PACIASP 0xd503233fu
#define SUB_SP	0xd10283ffu /* sub sp, sp, #0xa0 */
#define MRS_X1	0xd5384101u /* mrs x1, sp_el0 */
#define CMP_W0	0x7100041fu /* cmp w0, #1 */
#define STP_FP	0xa9047bfdu /* stp x29, x30, [sp, #64] */
#define MOV_X9	0xaa1e03e9u
#define BR_X16	0xd61f0200u

static void put_words(uint8_t *b, const uint32_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		arm64_put_word(b + 4 * i, w[i]);
}

/* Plans @n words at @addr for a patch of @need bytes; returns the errno, @why filled. */
static int plan_words(const uint32_t *w, size_t n, uint64_t addr, size_t need,
		      struct arch_reloc_plan *plan, uint8_t *code, char *why)
{
	put_words(code, w, n);
	return arm64_reloc_plan(code, 4 * n, addr, need, plan, why, 256);
}

/* ---- plans ----------------------------------------------------------------------------------- */

/* __schedule (notrace): paciasp first, moved out of line; 16 bytes take four whole words. */
static void test_plan_schedule(void **state)
{
	static const uint32_t w[] = {PACIASP, SUB_SP, MRS_X1, CMP_W0, STP_FP};
	struct arch_reloc_plan plan;
	uint8_t code[64];
	char why[256];

	(void)state;
	assert_int_equal(plan_words(w, 5, F, 4, &plan, code, why), 0);
	assert_string_equal(why, "");
	assert_true(plan.code_addr == F);
	assert_int_equal(plan.pad_len, 0);
	assert_int_equal(plan.len, 4);
	assert_int_equal(plan.nr, 1);
	assert_int_equal(plan.insn[0].kind, ARM64_RELOC_COPY);
	assert_int_equal(arm64_word(plan.bytes), PACIASP);
	assert_int_equal(plan_words(w, 5, F, 16, &plan, code, why), 0);
	assert_int_equal(plan.nr, 4);
	assert_int_equal(plan.len, 16);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(plan.insn[i].off, 4 * i);
		assert_int_equal(plan.insn[i].len, 4);
		assert_int_equal(plan.insn[i].kind, ARM64_RELOC_COPY);
	}
	assert_memory_equal(plan.bytes, code, 16);
	/* 5 bytes need two words; through the table's hook */
	assert_int_equal(arch_get(ARCH_ARM64)->reloc_plan(code, 20, F, 5, &plan, why, 256), 0);
	assert_int_equal(plan.nr, 2);
}

/* A BTI landing pad stays in place (all four forms); paciasp after it moves. */
static void test_plan_bti_pad(void **state)
{
	static const uint32_t pads[] = {0xd503241fu, ARM64_BTI_C, 0xd503249fu, ARM64_BTI_JC};
	struct arch_reloc_plan plan;
	uint8_t code[16];
	char why[256];

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		uint32_t w[] = {pads[i], PACIASP, SUB_SP};

		assert_int_equal(plan_words(w, 3, F, 4, &plan, code, why), 0);
		assert_int_equal(plan.pad_len, 4);
		assert_int_equal(plan.len, 4);
		assert_int_equal(plan.insn[0].off, 4);
		assert_memory_equal(plan.bytes, code, 8);
	}
	{
		uint32_t w[] = {ARM64_BTI_C};

		assert_int_equal(plan_words(w, 1, F, 4, &plan, code, why), -ENODATA);
		assert_non_null(strstr(why, "4 bytes read"));
	}
	{ /* paciasp is no pad: it is displaced */
		uint32_t w[] = {PACIASP, ARM64_BTI_C};

		assert_int_equal(plan_words(w, 2, F, 4, &plan, code, why), 0);
		assert_int_equal(plan.pad_len, 0);
	}
}

/* Bad arguments and truncated code. */
static void test_plan_args(void **state)
{
	static const uint32_t w[] = {PACIASP, SUB_SP};
	struct arch_reloc_plan plan;
	uint8_t code[8];
	char why[256];

	(void)state;
	put_words(code, w, 2);
	assert_int_equal(arm64_reloc_plan(code, 8, F, 0, &plan, why, 256), -EINVAL);
	assert_int_equal(arm64_reloc_plan(code, 8, F, 17, &plan, why, 256), -EINVAL);
	assert_non_null(strstr(why, "1 to 16"));
	assert_int_equal(arm64_reloc_plan(code, 8, F + 2, 4, &plan, why, 256), -EINVAL);
	assert_non_null(strstr(why, "4-aligned"));
	assert_int_equal(arm64_reloc_plan(NULL, 8, F, 4, &plan, why, 256), -EINVAL);
	assert_int_equal(arm64_reloc_plan(NULL, 0, F, 4, &plan, why, 256), -ENODATA);
	assert_int_equal(arm64_reloc_plan(code, 3, F, 4, &plan, why, 256), -ENODATA);
	assert_int_equal(arm64_reloc_plan(code, 7, F, 8, &plan, why, 256), -ENODATA);
	assert_non_null(strstr(why, "+4 at 0xffff800080100004"));
	assert_int_equal(arm64_reloc_plan(code, 8, F, 9, &plan, why, 256), -ENODATA);
	/* no @why at all is fine */
	assert_int_equal(arm64_reloc_plan(code, 3, F, 4, &plan, NULL, 0), -ENODATA);
}

/* Each PC-relative class, from the assembler's words at F + their offset in the listing. */
static void test_plan_kinds(void **state)
{
	static const struct {
		uint32_t w;
		unsigned off;
		uint8_t kind, op;
		int64_t to; /* from F */
	} k[] = {
	    {0x10000801u, 0x00, ARM64_RELOC_ADR, 0, 0x100},	      /* adr x1, .+0x100 */
	    {0x10800002u, 0x04, ARM64_RELOC_ADR, 0, 4 - 0x100000},    /* adr x2, .-1 MiB */
	    {0xb0091a23u, 0x08, ARM64_RELOC_ADRP, 0, 0x12345000},     /* adrp x3 */
	    {0xf0ffffe4u, 0x0c, ARM64_RELOC_ADRP, 0, -0x1000},	      /* adrp x4, page - 1 */
	    {0x18000205u, 0x10, ARM64_RELOC_LIT, ARM64_LIT_W, 0x50},  /* ldr w5 */
	    {0x58fffc06u, 0x14, ARM64_RELOC_LIT, ARM64_LIT_X, -0x6c}, /* ldr x6 */
	    {0x987fffe7u, 0x18, ARM64_RELOC_LIT, ARM64_LIT_SW, 0x100014},
	    {0xd8000100u, 0x1c, ARM64_RELOC_LIT, ARM64_LIT_PRFM, 0x3c},
	    {0x1c000088u, 0x20, ARM64_RELOC_LIT, ARM64_LIT_S, 0x30},
	    {0x5c0000c9u, 0x24, ARM64_RELOC_LIT, ARM64_LIT_D, 0x3c},
	    {0x9c00018au, 0x28, ARM64_RELOC_LIT, ARM64_LIT_Q, 0x58},
	    {0x14000040u, 0x2c, ARM64_RELOC_B, 0, 0x12c},
	    {0x97f00000u, 0x30, ARM64_RELOC_BL, 0, 0x30 - 0x400000},
	    {0x54000101u, 0x34, ARM64_RELOC_BCOND, 0, 0x54},	   /* b.ne */
	    {0x54000210u, 0x38, ARM64_RELOC_BCOND, 0, 0x78},	   /* bc.eq */
	    {0x34ffffcbu, 0x3c, ARM64_RELOC_CB, 0, 0x34},	   /* cbz w11, .-8 */
	    {0xb51fffecu, 0x40, ARM64_RELOC_CB, 0, 0x4003c},	   /* cbnz x12 */
	    {0x361bffedu, 0x44, ARM64_RELOC_TB, 0, 0x8040},	   /* tbz w13, #3 */
	    {0xb744000eu, 0x48, ARM64_RELOC_TB, 0, 0x48 - 0x8000}, /* tbnz x14, #40 */
	};
	struct arch_reloc_plan plan;
	uint8_t code[4];
	char why[256];

	(void)state;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		assert_int_equal(plan_words(&k[i].w, 1, F + k[i].off, 4, &plan, code, why), 0);
		assert_int_equal(plan.insn[0].kind, k[i].kind);
		if (k[i].kind == ARM64_RELOC_LIT)
			assert_int_equal(plan.insn[0].op, k[i].op);
		assert_true(plan.insn[0].target == F + (uint64_t)k[i].to);
	}
}

/* What never moves, each in one line naming the word. */
static void test_plan_refusals(void **state)
{
	static const struct {
		uint32_t w[2];
		size_t n, need;
		int err;
		const char *says;
	} r[] = {
	    {{0xd4000001u}, 1, 4, -EOPNOTSUPP, "exception generation"}, /* svc #0 */
	    {{0xd4210000u}, 1, 4, -EOPNOTSUPP, "exception generation"}, /* brk #0x800 (BUG) */
	    {{0xd4000002u}, 1, 4, -EOPNOTSUPP, "exception generation"}, /* hvc #0 */
	    {{0x00000000u}, 1, 4, -EOPNOTSUPP, "UDF"},
	    {{0xd69f03e0u}, 1, 4, -EOPNOTSUPP, "ERET"},
	    {{0xd6bf03e0u}, 1, 4, -EOPNOTSUPP, "ERET or DRPS"},	   /* drps */
	    {{0xd63f0060u}, 1, 4, -EOPNOTSUPP, "indirect call"},   /* blr x3 */
	    {{0xd73f0822u}, 1, 4, -EOPNOTSUPP, "indirect call"},   /* blraa x1, x2 */
	    {{0xd63f08bfu}, 1, 4, -EOPNOTSUPP, "indirect call"},   /* blraaz x5 */
	    {{0xc85f7c20u}, 1, 4, -EOPNOTSUPP, "exclusive"},	   /* ldxr x0, [x1] */
	    {{0xc8027c20u}, 1, 4, -EOPNOTSUPP, "exclusive"},	   /* stxr w2, x0, [x1] */
	    {{0xc87f8440u}, 1, 4, -EOPNOTSUPP, "exclusive"},	   /* ldaxp x0, x1, [x2] */
	    {{0xc8238440u}, 1, 4, -EOPNOTSUPP, "exclusive"},	   /* stlxp w3, x0, x1, [x2] */
	    {{0x085f7c20u}, 1, 4, -EOPNOTSUPP, "exclusive"},	   /* ldxrb w0, [x1] */
	    {{0x04a0e3e0u}, 1, 4, -EOPNOTSUPP, "SVE"},		   /* incw x0 */
	    {{0x02000000u}, 1, 4, -EILSEQ, "not an allocated"},	   /* op0 0001 */
	    {{0x06000000u}, 1, 4, -EILSEQ, "not an allocated"},	   /* op0 0011 */
	    {{0xdc000000u}, 1, 4, -EILSEQ, "unallocated literal"}, /* ldr (literal) opc 11 V 1 */
	    {{0x55000000u}, 1, 4, -EOPNOTSUPP, "branch-class"},	   /* unallocated in 0x54 space */
	    {{0x74000000u}, 1, 4, -EOPNOTSUPP, "branch-class"},	   /* FEAT_CMPBR's space */
	    {{0xd65f03c0u, SUB_SP}, 2, 8, -EOPNOTSUPP, "before the patch"}, /* ret first */
	    {{0xd61f0060u, SUB_SP}, 2, 8, -EOPNOTSUPP, "before the patch"}, /* br x3 first */
	    {{0x14000040u, SUB_SP}, 2, 8, -EOPNOTSUPP, "B before"},
	    {{0x94000040u, SUB_SP}, 2, 8, -EOPNOTSUPP, "BL before"},
	};
	struct arch_reloc_plan plan;
	uint8_t code[8];
	char why[256];

	(void)state;
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		assert_int_equal(plan_words(r[i].w, r[i].n, F, r[i].need, &plan, code, why),
				 r[i].err);
		if (!strstr(why, r[i].says))
			fail_msg("word %08x: \"%s\" lacks \"%s\"", r[i].w[0], why, r[i].says);
		assert_non_null(strstr(why, "+0 at 0xffff800080100000 ("));
	}
	/* the same words last are fine: RET, BR, B and BL may end the displaced words */
	{
		static const uint32_t last[] = {0xd65f03c0u, 0xd61f0060u, 0x14000040u, 0x94000040u,
						0xd65f0bffu /* retaa */};

		for (size_t i = 0; i < 5; i++) {
			uint32_t w[] = {SUB_SP, last[i]};

			assert_int_equal(plan_words(w, 2, F, 8, &plan, code, why), 0);
		}
	}
	/* CASP is no exclusive: it moves */
	{
		uint32_t w[] = {0x48207c82u};

		assert_int_equal(plan_words(w, 1, F, 4, &plan, code, why), 0);
	}
}

/* A branch back into the displaced words past their first is refused; to the first (it enters
 * the detour) or past the end, not. */
static void test_plan_branch_into_patch(void **state)
{
	struct arch_reloc_plan plan;
	uint8_t code[16];
	char why[256];

	(void)state;
	{
		uint32_t w[] = {0x54000021u, SUB_SP}; /* b.ne .+4 */

		assert_int_equal(plan_words(w, 2, F, 8, &plan, code, why), -EOPNOTSUPP);
		assert_non_null(strstr(why, "inside the 8 displaced bytes"));
	}
	{
		uint32_t w[] = {SUB_SP, 0x17ffffffu}; /* b .-4: the first word */

		assert_int_equal(plan_words(w, 2, F, 8, &plan, code, why), 0);
	}
	{
		uint32_t w[] = {0x54000041u, SUB_SP}; /* b.ne .+8: just past */

		assert_int_equal(plan_words(w, 2, F, 8, &plan, code, why), 0);
	}
	{
		uint32_t w[] = {SUB_SP, 0xb4000000u, MRS_X1}; /* cbz x0, . : itself */

		assert_int_equal(plan_words(w, 3, F, 12, &plan, code, why), -EOPNOTSUPP);
		assert_non_null(strstr(why, "+4 at"));
	}
	{ /* behind a BTI pad: P = F + 4; tbz to P + 4 */
		uint32_t w[] = {ARM64_BTI_C, 0x36000020u, SUB_SP};

		assert_int_equal(plan_words(w, 3, F, 8, &plan, code, why), -EOPNOTSUPP);
	}
	{ /* a literal load from the displaced words (they become the B) */
		uint32_t w[] = {0x58000000u}; /* ldr x0, . */

		assert_int_equal(plan_words(w, 1, F, 4, &plan, code, why), -EOPNOTSUPP);
		assert_non_null(strstr(why, "loads from"));
	}
	{ /* ldr x0, .-4 behind a pad: 8 bytes over the pad and the first displaced word */
		uint32_t w[] = {ARM64_BTI_C, 0x58ffffe0u};

		assert_int_equal(plan_words(w, 2, F, 4, &plan, code, why), -EOPNOTSUPP);
	}
	{ /* ldr w0, .-4 behind a pad: the pad alone, which stays */
		uint32_t w[] = {ARM64_BTI_C, 0x18ffffe0u};

		assert_int_equal(plan_words(w, 2, F, 4, &plan, code, why), 0);
	}
}

/* ---- emit ------------------------------------------------------------------------------------ */

/* Plans word @w at @pc alone and writes it at @dest: the errno; @out, *@n. */
static int emit1(uint32_t w, uint64_t pc, uint64_t dest, uint8_t *out, size_t *n, char *why)
{
	struct arch_reloc_plan plan;
	uint8_t code[4];
	int ret = plan_words(&w, 1, pc, 4, &plan, code, why);

	if (ret)
		return ret;
	return arm64_reloc_emit(&plan, code, pc, dest, out, ARCH_RELOC_OUT_MAX, n, why, 256);
}

/* In reach, the word is re-encoded: the assembler's words for the new distance, then B back. */
static void test_emit_reencoded(void **state)
{
	static const struct {
		uint32_t w;
		uint64_t pc, dest;
		uint32_t want;
	} e[] = {
	    {0x10000801u, F, F + 0x40, 0x10000601u},		     /* adr x1 */
	    {0x54000101u, F + 0x34, F + 0x74, 0x54ffff01u},	     /* b.ne */
	    {0x361bffedu, F + 0x44, F + 0x44 + 0x7800, 0x36183fedu}, /* tbz w13, #3 */
	    {0x58fffc06u, F + 0x14, F + 0x54, 0x58fffa06u},	     /* ldr x6 */
	    {0xb51fffecu, F + 0x40, F + 0x80, 0xb51ffdecu},	     /* cbnz x12 */
	    {PACIASP, F, F + 64 * MIB, PACIASP},
	};
	uint8_t out[ARCH_RELOC_OUT_MAX];
	char why[256];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
		uint64_t to;

		assert_int_equal(emit1(e[i].w, e[i].pc, e[i].dest, out, &n, why), 0);
		assert_int_equal(n, 8);
		assert_int_equal(arm64_word(out), e[i].want);
		assert_int_equal(arm64_direct_branch(out + 4, 4, e[i].dest + 4, true, &to), 4);
		assert_true(to == e[i].pc + 4);
	}
}

/* Where a copy of one word at @pc, written at @dest, goes and what it does, by the interpreter;
 * @taken: whether a condition holds. Asserts the copy ends with its B back. */
static void run1(uint32_t w, uint64_t pc, uint64_t dest, bool taken, struct a64_run *r, size_t *n)
{
	uint8_t out[ARCH_RELOC_OUT_MAX];
	char why[256];

	int ret = emit1(w, pc, dest, out, n, why);

	if (ret)
		fail_msg("%08x at 0x%llx copied to 0x%llx: %d %s", w, (unsigned long long)pc,
			 (unsigned long long)dest, ret, why);
	assert_true(*n <= 4 * ARM64_RELOC_WORDS_MAX + 4);
	a64_run(out, dest, *n, dest, w, taken, r);
	assert_false(r->stuck);
}

/* The copy's destinations: near, past +-1 MiB, past +-32 KiB only, far from the function in the
 * other direction than the target. */
static const int64_t dists[] = {0x1000,
				-0x1000,
				0x10000,
				3 * (int64_t)MIB,
				-3 * (int64_t)MIB,
				100 * (int64_t)MIB,
				-100 * (int64_t)MIB,
				127 * (int64_t)MIB};

/* ADR and ADRP give the same register value from anywhere: ADR, ADRP (+ ADD), MOVZ/MOVK. */
static void test_emit_adr_adrp(void **state)
{
	static const struct {
		uint32_t w;
		int64_t to;
	} a[] = {
	    {0x10000801u, 0x100},	       /* adr x1, .+0x100 */
	    {0x10800002u, -0x100000},	       /* adr x2, .-1 MiB */
	    {0xb0091a23u, 0x12345000},	       /* adrp x3, +0x12345 pages */
	    {0xf0ffffe4u, -0x1000},	       /* adrp x4, page - 1 */
	    {0x90800005u, -(4ll << 30)},       /* adrp x5, -4 GiB: MOVZ/MOVK from 100 MiB above */
	    {0xf07fffe6u, (4ll << 30) - 4096}, /* adrp x6, +4 GiB - 1 page */
	};
	struct a64_run r;
	size_t n, max = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++)
		for (size_t d = 0; d < sizeof(dists) / sizeof(dists[0]); d++) {
			uint64_t want = (a[i].w >> 31) ? (F & ~0xfffull) + (uint64_t)a[i].to
						       : F + (uint64_t)a[i].to;

			run1(a[i].w, F, F + (uint64_t)dists[d], true, &r, &n);
			assert_true(r.exit == F + 4);
			assert_true(r.written == 1u << (a[i].w & 31));
			if (r.reg[a[i].w & 31] != want)
				fail_msg("%08x at +%lld: 0x%llx, not 0x%llx", a[i].w,
					 (long long)dists[d],
					 (unsigned long long)r.reg[a[i].w & 31],
					 (unsigned long long)want);
			assert_int_equal(r.copied, 0);
			max = n > max ? n : max;
		}
	assert_int_equal(max, 5 * 4); /* MOVZ + 3 MOVK + B back */
	/* adr xzr: a NOP */
	run1(0x1000005fu, F, F + 100 * MIB, true, &r, &n);
	assert_int_equal(n, 8);
	assert_int_equal(r.written, 0);
}

/* Literal loads load from the same address into the same register from anywhere; PRFM out of
 * reach is a NOP. */
static void test_emit_literals(void **state)
{
	static const struct {
		uint32_t w;
		int64_t to;
	} l[] = {
	    {0x18000205u, 0x40}, {0x58fffc06u, -0x80}, {0x987fffe7u, 0xffffc}, {0xd8000100u, 0x20},
	    {0x1c000088u, 0x10}, {0x5c0000c9u, 0x18},  {0x9c00018au, 0x30},
	};
	struct a64_run r;
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++)
		for (size_t d = 0; d < sizeof(dists) / sizeof(dists[0]); d++) {
			bool prfm = (l[i].w >> 30) == 3, simd = l[i].w & 0x04000000u;
			int64_t from_copy = l[i].to - dists[d];
			bool in = from_copy >= -(int64_t)MIB && from_copy < (int64_t)MIB;

			run1(l[i].w, F, F + (uint64_t)dists[d], true, &r, &n);
			assert_true(r.exit == F + 4);
			if (prfm) {
				assert_int_equal(r.loads, 0);
				assert_int_equal(r.prfm, in ? 1 : 0);
				continue;
			}
			assert_int_equal(r.loads, 1);
			assert_true(r.load_addr == F + (uint64_t)l[i].to);
			assert_int_equal(r.load_op & 31, l[i].w & 31); /* the same Rt */
			assert_int_equal((r.load_op & 0x04000000u) != 0,
					 simd); /* the same register file */
			if (!in && simd)
				assert_true(r.written == 1u << 16); /* x16 only */
			else if (!in)
				assert_true(r.written == 1u << (l[i].w & 31));
			else
				assert_int_equal(r.load_op, (l[i].w & 0xff00001fu) |
								(r.load_op & 0x00ffffe0u));
		}
	/* the load's size class survives the far form */
	run1(0x987fffe7u, F, F + 100 * MIB, true, &r, &n);
	assert_int_equal(r.load_op & 0xffc00000u, 0xb9800000u); /* ldrsw */
	run1(0x9c00018au, F, F + 100 * MIB, true, &r, &n);
	assert_int_equal(r.load_op & 0xffc00000u, 0x3dc00000u); /* ldr q */
}

/* B and the conditional branches reach their target when taken and the B back when not, from
 * anywhere; a target beyond +-128 MiB of the copy goes through x16. */
static void test_emit_branches(void **state)
{
	static const struct {
		uint32_t w;
		int64_t to;
		bool cond;
	} b[] = {
	    {0x14000040u, 0x100, false},		  /* b .+0x100 */
	    {0x15ffffffu, 128 * (int64_t)MIB - 4, false}, /* b, the forward edge */
	    {0x16000000u, -128 * (int64_t)MIB, false},	  /* b, the backward edge */
	    {0x54000101u, 0x20, true},			  /* b.ne */
	    {0x54000210u, 0x40, true},			  /* bc.eq */
	    {0x5400008eu, 0x10, false},			  /* b.al: always */
	    {0x5400008fu, 0x10, false},			  /* b.nv: always too */
	    {0x34ffffcbu, -0x8, true},			  /* cbz w11 */
	    {0xb51fffecu, 0x3fffc, true},		  /* cbnz x12 */
	    {0x361bffedu, 0x7ffc, true},		  /* tbz w13, #3 */
	    {0xb744000eu, -0x8000, true},		  /* tbnz x14, #40 */
	};
	struct a64_run r;
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++)
		for (size_t d = 0; d < sizeof(dists) / sizeof(dists[0]); d++)
			for (int taken = 0; taken < 2; taken++) {
				uint64_t dest = F + (uint64_t)dists[d];
				uint64_t want = taken || !b[i].cond ? F + (uint64_t)b[i].to : F + 4;

				run1(b[i].w, F, dest, taken, &r, &n);
				if (r.exit != want)
					fail_msg("%08x at %+lld, %s: to 0x%llx, not 0x%llx", b[i].w,
						 (long long)dists[d], taken ? "taken" : "not",
						 (unsigned long long)r.exit,
						 (unsigned long long)want);
				assert_true((r.written & ~(1u << 16)) == 0);
				assert_int_equal(r.copied, 0);
			}
	/* 128 MiB - 4 ahead, copied 100 MiB back: ADRP x16 (+ ADD), BR x16 */
	run1(0x15ffffffu, F, F - 100 * MIB, true, &r, &n);
	assert_true(r.written == 1u << 16);
	assert_true(n == 3 * 4 || n == 4 * 4);
}

/* A last BL: x30 = the word after it in the function, then its target; never into the copy. */
static void test_emit_bl(void **state)
{
	static const int64_t tos[] = {-0x400000 + 4, 128 * (int64_t)MIB - 4,
				      -128 * (int64_t)MIB + 4};
	struct arch_reloc_plan plan;
	uint8_t code[8], out[ARCH_RELOC_OUT_MAX];
	struct a64_run r;
	char why[256];
	size_t n;

	(void)state;
	for (size_t t = 0; t < 3; t++)
		for (size_t d = 0; d < sizeof(dists) / sizeof(dists[0]); d++) {
			uint8_t b[4];
			uint32_t w[2] = {PACIASP, 0};
			uint64_t dest = F + (uint64_t)dists[d];

			assert_int_equal(
			    arm64_encode_branch(F + 4, F + 4 + (uint64_t)tos[t], true, b), 0);
			w[1] = arm64_word(b);
			assert_int_equal(plan_words(w, 2, F, 8, &plan, code, why), 0);
			assert_int_equal(plan.insn[1].kind, ARM64_RELOC_BL);
			assert_int_equal(
			    arm64_reloc_emit(&plan, code, F, dest, out, sizeof(out), &n, why, 256),
			    0);
			a64_run(out, dest, n, dest, w[1], true, &r);
			assert_false(r.stuck);
			assert_true(r.exit == F + 4 + (uint64_t)tos[t]);
			assert_true(r.written & 1u << 30);
			assert_true(r.reg[30] == F + 8);
			assert_int_equal(r.copied, 1); /* paciasp */
			assert_int_equal(r.last_copied, PACIASP);
		}
}

/* Emit refuses what does not fit its plan, a branch to the copy itself, an out-of-reach way back,
 * a small buffer, and a literal load into xzr out of reach; nothing is written then. */
static void test_emit_refusals(void **state)
{
	static const uint32_t w[] = {PACIASP, SUB_SP};
	struct arch_reloc_plan plan, bad;
	uint8_t code[8], other[8], out[ARCH_RELOC_OUT_MAX];
	char why[256];
	size_t n = 99;

	(void)state;
	assert_int_equal(plan_words(w, 2, F, 8, &plan, code, why), 0);
	memset(out, 0xee, sizeof(out));
	assert_int_equal(
	    arm64_reloc_emit(&plan, code, F + 4, F + 0x1000, out, sizeof(out), &n, why, 256),
	    -EINVAL);
	assert_int_equal(n, 0);
	assert_int_equal(
	    arm64_reloc_emit(&plan, code, F, F + 0x1002, out, sizeof(out), &n, why, 256), -EINVAL);
	memcpy(other, code, 8);
	other[5] ^= 1;
	assert_int_equal(
	    arm64_reloc_emit(&plan, other, F, F + 0x1000, out, sizeof(out), &n, why, 256), -EINVAL);
	assert_non_null(strstr(why, "not the bytes"));
	assert_int_equal(
	    arm64_reloc_emit(&plan, NULL, F, F + 0x1000, out, sizeof(out), &n, why, 256), -EINVAL);
	assert_int_equal(arm64_reloc_emit(&plan, code, F, F + 0x1000, out, 8, &n, why, 256),
			 -ENOSPC);
	assert_non_null(strstr(why, "needs 12 bytes, 8 given"));
	assert_int_equal(
	    arm64_reloc_emit(&plan, code, F, F + 129 * MIB, out, sizeof(out), &n, why, 256),
	    -ERANGE);
	assert_non_null(strstr(why, "way back"));
	assert_int_equal(
	    arm64_reloc_emit(&plan, code, F, F - 129 * MIB, out, sizeof(out), &n, why, 256),
	    -ERANGE);
	for (size_t i = 0; i < sizeof(out); i++)
		assert_int_equal(out[i], 0xee);
	/* corrupt plans */
	bad = plan;
	bad.insn[1].kind = 42;
	assert_int_equal(
	    arm64_reloc_emit(&bad, code, F, F + 0x1000, out, sizeof(out), &n, why, 256), -EINVAL);
	bad = plan;
	bad.insn[0].kind = ARM64_RELOC_BL;
	assert_int_equal(
	    arm64_reloc_emit(&bad, code, F, F + 0x1000, out, sizeof(out), &n, why, 256), -EINVAL);
	bad = plan;
	bad.len = 12;
	assert_int_equal(
	    arm64_reloc_emit(&bad, code, F, F + 0x1000, out, sizeof(out), &n, why, 256), -EINVAL);
	bad = plan;
	bad.pad_len = 2;
	assert_int_equal(
	    arm64_reloc_emit(&bad, code, F, F + 0x1000, out, sizeof(out), &n, why, 256), -EINVAL);
	bad = plan;
	bad.nr = 0;
	bad.len = 0;
	assert_int_equal(
	    arm64_reloc_emit(&bad, code, F, F + 0x1000, out, sizeof(out), &n, why, 256), -EINVAL);
	/* a branch to the copy's own words: b to F + 0x1000, copied at F + 0x1000 (and + 4) */
	{
		uint8_t b[4];

		assert_int_equal(arm64_encode_branch(F, F + 0x1004, false, b), 0);
		assert_int_equal(emit1(arm64_word(b), F, F + 0x1000, out, &n, why), -EINVAL);
		assert_non_null(strstr(why, "inside its own copy"));
		assert_int_equal(emit1(arm64_word(b), F, F + 0x1004, out, &n, why), -EINVAL);
		assert_int_equal(emit1(arm64_word(b), F, F + 0x1008, out, &n, why), 0);
	}
	/* ldr xzr, .+0x40 copied 3 MiB away */
	assert_int_equal(emit1(0x5800021fu, F, F + 3 * MIB, out, &n, why), -ERANGE);
	assert_non_null(strstr(why, "zero register"));
	assert_int_equal(emit1(0x5800021fu, F, F + 0x100, out, &n, why), 0);
}

/* The longest copy (four words each far) fits ARCH_RELOC_OUT_MAX; through the table's hook. */
static void test_emit_longest(void **state)
{
	uint32_t w[4] = {0x987fffe7u, 0x9c00018au, 0x54000101u, 0};
	struct arch_reloc_plan plan;
	uint8_t code[16], out[ARCH_RELOC_OUT_MAX], b[4];
	char why[256];
	size_t n;

	(void)state;
	assert_int_equal(arm64_encode_branch(F + 12, F + 12 + 128 * MIB - 4, true, b), 0);
	w[3] = arm64_word(b);
	assert_int_equal(plan_words(w, 4, F, 16, &plan, code, why), 0);
	assert_int_equal(
	    arch_get(ARCH_ARM64)
		->reloc_emit(&plan, code, F, F - 127 * MIB, out, sizeof(out), &n, why, 256),
	    0);
	assert_true(n <= ARCH_RELOC_OUT_MAX);
	assert_true(n >= 4 * 10);
}

/* ---- the detour slot ------------------------------------------------------------------------- */

#define SLOT  (F + 64 * MIB)
#define ENTRY (F + 64 * MIB - 0x2000)

static const struct arch_detour_slot slot = {
    .size = 128, .sti_off = 96, .nosti_off = 112, .scratch = 256, .idx = 3};

/* __schedule's paciasp: stp; bl; two copies (ldp, paciasp, B); the way back; BRK elsewhere. */
static void test_detour_schedule(void **state)
{
	static const uint32_t w[] = {PACIASP, SUB_SP};
	struct arch_reloc_plan plan;
	uint8_t code[16], s[128];
	char why[256];
	size_t len;
	uint64_t to;

	(void)state;
	assert_int_equal(plan_words(w, 2, F, 4, &plan, code, why), 0);
	assert_int_equal(
	    arch_get(ARCH_ARM64)->detour_code(&plan, &slot, SLOT, ENTRY, s, &len, why, 256), 0);
	assert_int_equal(len, 104);
	assert_int_equal(arm64_word(s), ARM64_DT_STP_X9_X30);
	assert_int_equal(arm64_direct_branch(s + 4, 4, SLOT + 4, false, &to), 4);
	assert_true(to == ENTRY);
	/* interrupts were masked at the call: the routine returns to +8 */
	assert_int_equal(arm64_word(s + ARM64_DT_MASKED), ARM64_DT_LDP_X9_X30);
	assert_int_equal(arm64_word(s + 12), PACIASP);
	assert_int_equal(arm64_direct_branch(s + 16, 4, SLOT + 16, true, &to), 4);
	assert_true(to == F + 4);
	/* they were not: to +52, then to the way back that unmasks them */
	assert_int_equal(arm64_word(s + ARM64_DT_UNMASKED), ARM64_DT_LDP_X9_X30);
	assert_int_equal(arm64_word(s + 56), PACIASP);
	assert_int_equal(arm64_direct_branch(s + 60, 4, SLOT + 60, true, &to), 4);
	assert_true(to == SLOT + 96);
	assert_int_equal(arm64_word(s + 96), ARM64_DAIFCLR_I);
	assert_int_equal(arm64_direct_branch(s + 100, 4, SLOT + 100, true, &to), 4);
	assert_true(to == F + 4);
	for (size_t off = 0; off < 128; off += 4)
		if ((off >= 20 && off < 52) || (off >= 64 && off < 96) || off >= 104)
			assert_int_equal(arm64_word(s + off), ARM64_BRK0);
}

/* An ADRP and a BTI pad: both copies give the same value and come back past the patch. */
static void test_detour_adrp_behind_bti(void **state)
{
	static const uint32_t w[] = {ARM64_BTI_C, 0xb0091a23u, SUB_SP};
	struct arch_reloc_plan plan;
	uint8_t code[16], s[128];
	struct a64_run r;
	char why[256];
	size_t len;

	(void)state;
	assert_int_equal(plan_words(w, 3, F, 4, &plan, code, why), 0);
	assert_int_equal(plan.pad_len, 4);
	assert_int_equal(arm64_detour_code(&plan, &slot, SLOT, ENTRY, s, &len, why, 256), 0);
	for (size_t c = 0; c < 2; c++) {
		a64_run(s, SLOT, len, SLOT + (c ? ARM64_DT_UNMASKED : ARM64_DT_MASKED), 0, true,
			&r);
		assert_false(r.stuck);
		assert_true(r.reg[3] == ((F + 4) & ~0xfffull) + 0x12345000ull);
		assert_true(r.exit == F + 8);
		assert_int_equal(r.copied, c ? 2 : 1); /* the LDP (and the MSR) */
	}
}

/* Refusals: a slot without room, the stub or the way back out of reach, a copy larger than its
 * part of the slot, what reloc_detour_check refuses. */
static void test_detour_refusals(void **state)
{
	static const uint32_t ok[] = {PACIASP};
	struct arch_detour_slot small = slot;
	struct arch_reloc_plan plan;
	uint8_t code[16], s[128];
	char why[256];
	size_t len;

	(void)state;
	assert_int_equal(plan_words(ok, 1, F, 4, &plan, code, why), 0);
	small.sti_off = 60;
	assert_int_equal(arm64_detour_code(&plan, &small, SLOT, ENTRY, s, &len, why, 256), -EINVAL);
	assert_non_null(strstr(why, "slot 3"));
	small = slot;
	small.size = 100;
	assert_int_equal(arm64_detour_code(&plan, &small, SLOT, ENTRY, s, &len, why, 256), -EINVAL);
	assert_int_equal(arm64_detour_code(&plan, &slot, SLOT, SLOT + 200 * MIB, s, &len, why, 256),
			 -ERANGE);
	assert_non_null(strstr(why, "BL's reach"));
	assert_int_equal(arm64_detour_code(&plan, &slot, F + 200 * MIB, F + 200 * MIB - 0x2000, s,
					   &len, why, 256),
			 -ERANGE);
	assert_non_null(strstr(why, "way back"));
	{ /* four far literal loads: 3 words each, more than a copy's 10 with its B back */
		uint32_t w[] = {0x18000205u, 0x58000206u, 0x98000207u, 0x18000208u};

		assert_int_equal(plan_words(w, 4, F, 16, &plan, code, why), 0);
		assert_int_equal(arm64_detour_code(&plan, &slot, SLOT, ENTRY, s, &len, why, 256),
				 -ENOSPC);
		assert_int_equal(arm64_detour_code(&plan, &slot, F + 0x100000 - 0x200, F + 0x1000,
						   s, &len, why, 256),
				 0); /* in reach: one word each */
	}
	{
		uint32_t w[] = {0x54000101u}; /* b.ne */

		assert_int_equal(plan_words(w, 1, F, 4, &plan, code, why), 0);
		assert_int_equal(arm64_detour_code(&plan, &slot, SLOT, ENTRY, s, &len, why, 256),
				 -EOPNOTSUPP);
		assert_non_null(strstr(why, "interrupts masked"));
	}
}

/* Random words (a fixed seed): every hook either refuses in one line or gives a copy and a slot
 * within their bounds; a word that moves as is is copied as is; nothing reads or writes outside. */
static void test_random_words(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned planned = 0, slots = 0;

	(void)state;
	for (unsigned i = 0; i < 200000; i++) {
		struct arch_reloc_plan plan;
		uint8_t code[8], out[ARCH_RELOC_OUT_MAX + 1], s[128];
		uint32_t w[2];
		uint64_t dest;
		char why[256];
		size_t n, len;
		int pushed, ret;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		w[0] = (uint32_t)x;
		w[1] = (uint32_t)(x >> 32);
		dest = F + ((int64_t)(x >> 40) - (1ll << 23)) * 16; /* +-128 MiB, 16-aligned */
		ret = plan_words(w, 2, F, i & 1 ? 8 : 4, &plan, code, why);
		if (ret) {
			assert_true(ret == -EOPNOTSUPP || ret == -EILSEQ);
			assert_non_null(strstr(why, " at 0xffff80008010000"));
			continue;
		}
		planned++;
		out[ARCH_RELOC_OUT_MAX] = 0x5a;
		ret = arm64_reloc_emit(&plan, code, F, dest, out, ARCH_RELOC_OUT_MAX, &n, why, 256);
		assert_int_equal(out[ARCH_RELOC_OUT_MAX], 0x5a);
		if (ret) {
			assert_true(ret == -ERANGE || ret == -EINVAL);
			assert_true(why[0]);
		} else {
			assert_true(n >= 8 && n <= ARCH_RELOC_OUT_MAX && n % 4 == 0);
			if (plan.nr == 1 && plan.insn[0].kind == ARM64_RELOC_COPY)
				assert_int_equal(arm64_word(out), arm64_word(code + plan.pad_len));
		}
		(void)arm64_reloc_kernel_safe(&plan, why, sizeof(why));
		if (arm64_reloc_detour_check(&plan, &pushed, why, sizeof(why)))
			continue;
		ret = arm64_detour_code(&plan, &slot, SLOT, ENTRY, s, &len, why, sizeof(why));
		if (ret == 0) {
			slots++;
			assert_int_equal(len, 104);
		} else
			assert_true(ret == -ENOSPC || ret == -ERANGE || ret == -EINVAL);
	}
	assert_true(planned > 100000);
	assert_true(slots > 50000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plan_schedule),
	    cmocka_unit_test(test_plan_bti_pad),
	    cmocka_unit_test(test_plan_args),
	    cmocka_unit_test(test_plan_kinds),
	    cmocka_unit_test(test_plan_refusals),
	    cmocka_unit_test(test_plan_branch_into_patch),
	    cmocka_unit_test(test_emit_reencoded),
	    cmocka_unit_test(test_emit_adr_adrp),
	    cmocka_unit_test(test_emit_literals),
	    cmocka_unit_test(test_emit_branches),
	    cmocka_unit_test(test_emit_bl),
	    cmocka_unit_test(test_emit_refusals),
	    cmocka_unit_test(test_emit_longest),
	    cmocka_unit_test(test_detour_schedule),
	    cmocka_unit_test(test_detour_adrp_behind_bti),
	    cmocka_unit_test(test_detour_refusals),
	    cmocka_unit_test(test_random_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

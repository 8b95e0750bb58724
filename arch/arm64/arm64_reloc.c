/* Out-of-line relocation of a function's first A64 words: the plan (decode by bit pattern, refuse
 * what cannot move) and the words written at a detour. Offsets are from code_addr; the patch starts
 * at P = code_addr + pad_len and covers [P, P + len). */
#include "arch/arm64/arm64_reloc.h"
#include "arch/arm64/arm64_insn.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#define IP0	      16 /* x16: the scratch register of the far forms */
#define LR	      30
#define XZR	      31
#define BR_X16	      0xd61f0200u
#define OUT_WORDS_MAX (ARCH_RELOC_OUT_MAX / ARM64_INSN_LEN)

int arm64_say(char *why, size_t whylen, int err, uint64_t base, uint64_t at, const uint8_t *p,
	      size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	arch_vsay(why, whylen, base, at, p, n >= ARM64_INSN_LEN ? ARM64_INSN_LEN : 0, fmt, ap);
	va_end(ap);
	return err;
}

static int64_t sext(uint64_t v, unsigned bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/* Whether @d is a multiple of 4 whose quarter fits a signed field of @bits. */
static bool reach(int64_t d, unsigned bits)
{
	int64_t lim = (int64_t)1 << (bits + 1); /* 2^(bits-1) words, in bytes */

	return !(d & 3) && d >= -lim && d < lim;
}

bool arm64_rel_branch(uint32_t w, uint64_t pc, uint64_t *to, uint8_t *kind)
{
	if ((w & 0x7c000000u) == 0x14000000u) { /* B, BL */
		*kind = w >> 31 ? ARM64_RELOC_BL : ARM64_RELOC_B;
		*to = pc + (uint64_t)(sext(w & 0x3ffffffu, 26) * 4);
	} else if ((w & 0xff000000u) == 0x54000000u) { /* B.cond, BC.cond */
		*kind = ARM64_RELOC_BCOND;
		*to = pc + (uint64_t)(sext((w >> 5) & 0x7ffffu, 19) * 4);
	} else if ((w & 0x7e000000u) == 0x34000000u) { /* CBZ, CBNZ */
		*kind = ARM64_RELOC_CB;
		*to = pc + (uint64_t)(sext((w >> 5) & 0x7ffffu, 19) * 4);
	} else if ((w & 0x7e000000u) == 0x36000000u) { /* TBZ, TBNZ */
		*kind = ARM64_RELOC_TB;
		*to = pc + (uint64_t)(sext((w >> 5) & 0x3fffu, 14) * 4);
	} else
		return false;
	return true;
}

/* The literal class of LDR (literal) word @w (opc:V), or -1 for the unallocated one. */
static int lit_class(uint32_t w)
{
	static const int8_t cls[8] = {ARM64_LIT_W,  ARM64_LIT_S, ARM64_LIT_X,	 ARM64_LIT_D,
				      ARM64_LIT_SW, ARM64_LIT_Q, ARM64_LIT_PRFM, -1};

	return cls[(w >> 30) << 1 | ((w >> 26) & 1)];
}

/* Bytes a literal of class @c spans. */
static unsigned lit_size(int c)
{
	return c == ARM64_LIT_Q ? 16 : c == ARM64_LIT_X || c == ARM64_LIT_D ? 8 : 4;
}

/* Why word @w never moves (NULL: it may). @last: it completes the patch's bytes. */
static const char *never_moves(uint32_t w, bool last, int *err)
{
	unsigned op0 = (w >> 25) & 0xf;

	*err = -EOPNOTSUPP;
	if (op0 == 0 && !(w >> 16))
		return "UDF: permanently undefined";
	if (op0 == 0)
		return "an SME or reserved word: not relocated";
	if (op0 == 2)
		return "an SVE word: not relocated";
	if (op0 == 1 || op0 == 3) {
		*err = -EILSEQ;
		return "not an allocated A64 encoding";
	}
	if ((w & 0xff000000u) == 0xd4000000u)
		return "exception generation (SVC, HVC, SMC, BRK, HLT, DCPS): its handler sees the "
		       "address";
	if ((w & 0xfe000000u) == 0xd6000000u) { /* branch (register) */
		unsigned opc = (w >> 21) & 0xf;

		if (opc == 1 || opc == 9)
			return "an indirect call: the callee would return into the copy";
		if (opc == 4 || opc == 5)
			return "ERET or DRPS: leaves the exception level";
		if (opc != 0 && opc != 2 && opc != 8)
			return "a branch (register) word not relocated";
		if (!last)
			return "a branch or return before the patch's bytes are covered (they "
			       "would "
			       "overwrite what follows)";
		return NULL;
	}
	if ((w & 0x1c000000u) == 0x14000000u && (w & 0xffc00000u) != 0xd5000000u) {
		uint64_t to;
		uint8_t kind;

		if (!arm64_rel_branch(w, 0, &to, &kind))
			return "a branch-class word not relocated";
		if (kind == ARM64_RELOC_BL && !last)
			return "BL before the last displaced word: the callee would return into "
			       "the "
			       "copy";
		if (kind == ARM64_RELOC_B && !last)
			return "B before the patch's bytes are covered (they would overwrite what "
			       "follows)";
		return NULL;
	}
	if ((w & 0x3f800000u) == 0x08000000u && (w & 0x80200000u) != 0x00200000u)
		return "an exclusive load or store: its pair would not see the same monitor";
	return NULL;
}

/* Classifies word @w at @pc into @ri (kind, op, target). */
static void classify(uint32_t w, uint64_t pc, struct arch_reloc_insn *ri)
{
	ri->kind = ARM64_RELOC_COPY;
	if (arm64_rel_branch(w, pc, &ri->target, &ri->kind))
		return;
	if ((w & 0x1f000000u) == 0x10000000u) { /* ADR, ADRP */
		int64_t imm = sext(((w >> 5) & 0x7ffffu) << 2 | ((w >> 29) & 3), 21);

		ri->kind = w >> 31 ? ARM64_RELOC_ADRP : ARM64_RELOC_ADR;
		ri->target =
		    w >> 31 ? (pc & ~0xfffull) + (uint64_t)(imm * 4096) : pc + (uint64_t)imm;
	} else if ((w & 0x3b000000u) == 0x18000000u) { /* LDR (literal) */
		ri->kind = ARM64_RELOC_LIT;
		ri->op = (uint8_t)lit_class(w);
		ri->target = pc + (uint64_t)(sext((w >> 5) & 0x7ffffu, 19) * 4);
	}
}

bool arm64_reloc_hits_patch(const struct arch_reloc_plan *plan, uint64_t addr, uint64_t n)
{
	uint64_t lo = plan->code_addr + plan->pad_len + ARM64_INSN_LEN;
	uint64_t span = plan->len > ARM64_INSN_LEN ? plan->len - ARM64_INSN_LEN : 0;

	if (!n || !span)
		return false;
	return addr - lo < span || lo - addr < n;
}

static bool is_bti(uint32_t w)
{
	return (w & 0xffffff3fu) == 0xd503241fu;
}

int arm64_reloc_plan(const uint8_t *code, size_t code_len, uint64_t code_addr, size_t need,
		     struct arch_reloc_plan *plan, char *why, size_t whylen)
{
	size_t start, off;

	memset(plan, 0, sizeof(*plan));
	plan->code_addr = code_addr;
	if (why && whylen)
		why[0] = 0;
	if (need < 1 || need > ARCH_RELOC_MAX_NEED || (!code && code_len))
		return arm64_say(why, whylen, -EINVAL, code_addr, code_addr, NULL, 0,
				 "a patch of %zu bytes: 1 to %d can be planned", need,
				 ARCH_RELOC_MAX_NEED);
	if (code_addr & 3)
		return arm64_say(why, whylen, -EINVAL, code_addr, code_addr, NULL, 0,
				 "not 4-aligned: no A64 instruction starts there");
	start = code_len >= ARM64_INSN_LEN && is_bti(arm64_word(code)) ? ARM64_INSN_LEN : 0;
	for (off = start; off - start < need; off += ARM64_INSN_LEN) {
		struct arch_reloc_insn *ri = &plan->insn[plan->nr];
		const char *no;
		uint32_t w;
		int err;

		if (code_len < off + ARM64_INSN_LEN)
			return arm64_say(why, whylen, -ENODATA, code_addr, code_addr + off,
					 code_len > off ? code + off : NULL, 0,
					 "%zu bytes read, the patch needs %zu after +%zu", code_len,
					 need, start);
		w = arm64_word(code + off);
		no = never_moves(w, off + ARM64_INSN_LEN - start >= need, &err);
		if (no)
			return arm64_say(why, whylen, err, code_addr, code_addr + off, code + off,
					 ARM64_INSN_LEN, "%s", no);
		classify(w, code_addr + off, ri);
		if (ri->kind == ARM64_RELOC_LIT && ri->op == (uint8_t)-1)
			return arm64_say(why, whylen, -EILSEQ, code_addr, code_addr + off,
					 code + off, ARM64_INSN_LEN,
					 "an unallocated literal load encoding");
		ri->off = (uint8_t)off;
		ri->len = ARM64_INSN_LEN;
		plan->nr++;
	}
	plan->pad_len = start;
	plan->len = off - start;
	memcpy(plan->bytes, code, off);
	for (size_t i = 0; i < plan->nr; i++) {
		const struct arch_reloc_insn *ri = &plan->insn[i];
		const uint8_t *p = code + ri->off;

		uint64_t first = code_addr + start;

		if (ri->kind == ARM64_RELOC_LIT &&
		    (ri->target - first < plan->len || first - ri->target < lit_size(ri->op)))
			return arm64_say(why, whylen, -EOPNOTSUPP, code_addr, code_addr + ri->off,
					 p, ARM64_INSN_LEN,
					 "loads from 0x%llx, inside the %zu displaced bytes",
					 (unsigned long long)ri->target, plan->len);
		if (ri->kind >= ARM64_RELOC_B && arm64_reloc_hits_patch(plan, ri->target, 1))
			return arm64_say(
			    why, whylen, -EOPNOTSUPP, code_addr, code_addr + ri->off, p,
			    ARM64_INSN_LEN,
			    "branches to 0x%llx (+%llu), inside the %zu displaced bytes",
			    (unsigned long long)ri->target,
			    (unsigned long long)(ri->target - code_addr), plan->len);
	}
	return 0;
}

/* ---- emit ------------------------------------------------------------------------------------ */

/* Words being written at guest address at + 4 * n. */
struct words {
	uint32_t w[OUT_WORDS_MAX];
	size_t n;
	uint64_t at; /* guest address of w[0] */
};

static void put(struct words *o, uint32_t w)
{
	if (o->n < OUT_WORDS_MAX)
		o->w[o->n] = w;
	o->n++;
}

static uint64_t here(const struct words *o)
{
	return o->at + 4 * o->n;
}

/* MOVZ/MOVK: @v into Xd, four words. */
static void mov64(struct words *o, unsigned rd, uint64_t v)
{
	for (unsigned hw = 0; hw < 4; hw++)
		put(o, (hw ? 0xf2800000u : 0xd2800000u) | hw << 21 |
			   (uint32_t)((v >> (16 * hw)) & 0xffff) << 5 | rd);
}

/* The ADR/ADRP word for Xd with immediate @imm (21 bits). */
static uint32_t adr_word(bool page, unsigned rd, int64_t imm)
{
	return (page ? 0x90000000u : 0x10000000u) | (uint32_t)(imm & 3) << 29 |
	       (uint32_t)((imm >> 2) & 0x7ffff) << 5 | rd;
}

/* @v into Xd (not 31) from the next word's address: ADR, ADRP (+ ADD), or MOVZ/MOVK. */
static void addr_into(struct words *o, unsigned rd, uint64_t v)
{
	uint64_t pc = here(o);
	int64_t d = (int64_t)(v - pc), pages = (int64_t)((v >> 12) - (pc >> 12));

	if (d >= -(1 << 20) && d < (1 << 20))
		put(o, adr_word(false, rd, d));
	else if (pages >= -(1 << 20) && pages < (1 << 20)) {
		put(o, adr_word(true, rd, pages));
		if (v & 0xfff)
			put(o, 0x91000000u | (uint32_t)(v & 0xfff) << 10 | rd << 5 | rd);
	} else
		mov64(o, rd, v);
}

/* A jump to @to: B, or the address into x16 and BR x16. */
static void jump(struct words *o, uint64_t to)
{
	int64_t d = (int64_t)(to - here(o));

	if (reach(d, 26))
		put(o, 0x14000000u | ((uint32_t)(d >> 2) & 0x3ffffffu));
	else {
		addr_into(o, IP0, to);
		put(o, BR_X16);
	}
}

/* LDR of class @c into register @rt from [Xn]. */
static uint32_t ldr_base(int c, unsigned rt, unsigned rn)
{
	static const uint32_t op[] = {
	    [ARM64_LIT_W] = 0xb9400000u, [ARM64_LIT_X] = 0xf9400000u, [ARM64_LIT_SW] = 0xb9800000u,
	    [ARM64_LIT_S] = 0xbd400000u, [ARM64_LIT_D] = 0xfd400000u, [ARM64_LIT_Q] = 0x3dc00000u};

	return op[c] | rn << 5 | rt;
}

/* The width of a conditional branch's offset field (bits 5 up): TBZ/TBNZ 14, the others 19. */
static unsigned imm_bits(uint8_t kind)
{
	return kind == ARM64_RELOC_TB ? 14 : 19;
}

/* Word @w with its offset field of @bits (from bit 5) set to @d bytes. */
static uint32_t with_imm(uint32_t w, int64_t d, unsigned bits)
{
	uint32_t mask = ((1u << bits) - 1) << 5;

	return (w & ~mask) | ((uint32_t)(d >> 2) << 5 & mask);
}

/* A conditional branch @w (of @kind) to @to out of its reach: its inverse over a jump. */
static void cond_far(struct words *o, uint32_t w, uint8_t kind, uint64_t to)
{
	size_t at = o->n, words;

	put(o, 0); /* the inverse, once the jump's length is known */
	jump(o, to);
	words = o->n - at; /* the inverse skips to the word after the jump */
	if (at >= OUT_WORDS_MAX)
		return;
	if (kind == ARM64_RELOC_BCOND)
		o->w[at] = 0x54000000u | (uint32_t)words << 5 | ((w & 0xf) ^ 1);
	else /* CBZ <-> CBNZ, TBZ <-> TBNZ: bit 24 */
		o->w[at] = with_imm(w ^ 0x01000000u, 4 * (int64_t)words, imm_bits(kind));
}

/* Writes displaced word @w (@ri, at original address @pc) at here(@o); 0 or -ERANGE. */
static int emit_one(struct words *o, const struct arch_reloc_insn *ri, uint32_t w, uint64_t pc)
{
	int64_t d = (int64_t)(ri->target - here(o));
	unsigned rt = w & 31;

	switch (ri->kind) {
	case ARM64_RELOC_ADR:
	case ARM64_RELOC_ADRP:
		if (rt == XZR)
			put(o, ARM64_NOP); /* writes the zero register: nothing */
		else
			addr_into(o, rt, ri->target);
		return 0;
	case ARM64_RELOC_LIT:
		if (reach(d, 19))
			put(o, with_imm(w, d, 19));
		else if (ri->op == ARM64_LIT_PRFM)
			put(o, ARM64_NOP);
		else if (ri->op >= ARM64_LIT_S) {
			addr_into(o, IP0, ri->target);
			put(o, ldr_base(ri->op, rt, IP0));
		} else if (rt == XZR)
			return -ERANGE;
		else {
			addr_into(o, rt, ri->target);
			put(o, ldr_base(ri->op, rt, rt));
		}
		return 0;
	case ARM64_RELOC_B:
		jump(o, ri->target);
		return 0;
	case ARM64_RELOC_BL:
		addr_into(o, LR, pc + ARM64_INSN_LEN);
		jump(o, ri->target);
		return 0;
	case ARM64_RELOC_BCOND:
	case ARM64_RELOC_CB:
	case ARM64_RELOC_TB:
		if (reach(d, imm_bits(ri->kind)))
			put(o, with_imm(w, d, imm_bits(ri->kind)));
		else if (ri->kind == ARM64_RELOC_BCOND && (w & 0xf) >= 14) /* AL, NV: always */
			jump(o, ri->target);
		else
			cond_far(o, w, ri->kind, ri->target);
		return 0;
	default:
		put(o, w);
		return 0;
	}
}

/* Whether @plan is one arm64_reloc_plan could have made from @code at @code_addr. */
static bool plan_sane(const struct arch_reloc_plan *plan)
{
	size_t off = plan->pad_len;

	if ((plan->pad_len != 0 && plan->pad_len != ARM64_INSN_LEN) || !plan->nr ||
	    plan->nr > ARCH_RELOC_MAX_INSNS || plan->len != plan->nr * ARM64_INSN_LEN ||
	    plan->len > ARCH_RELOC_MAX_BYTES - plan->pad_len || (plan->code_addr & 3))
		return false;
	for (size_t i = 0; i < plan->nr; i++) {
		const struct arch_reloc_insn *ri = &plan->insn[i];

		if (ri->off != off || ri->len != ARM64_INSN_LEN || ri->kind > ARM64_RELOC_TB ||
		    (ri->kind == ARM64_RELOC_LIT && ri->op > ARM64_LIT_Q) ||
		    (ri->kind == ARM64_RELOC_BL && i != plan->nr - 1))
			return false;
		off += ARM64_INSN_LEN;
	}
	return true;
}

int arm64_reloc_emit(const struct arch_reloc_plan *plan, const uint8_t *code, uint64_t code_addr,
		     uint64_t dest_addr, uint8_t *out, size_t out_cap, size_t *out_len, char *why,
		     size_t whylen)
{
	uint64_t back = code_addr + plan->pad_len + plan->len;
	struct words o = {.at = dest_addr};
	size_t total;
	int64_t d;

	*out_len = 0;
	if (why && whylen)
		why[0] = 0;
	if (!plan_sane(plan) || code_addr != plan->code_addr || (dest_addr & 3))
		return arm64_say(why, whylen, -EINVAL, code_addr, code_addr, NULL, 0,
				 "no plan for this address (or a copy at 0x%llx, not 4-aligned)",
				 (unsigned long long)dest_addr);
	if (!code || memcmp(code, plan->bytes, plan->pad_len + plan->len))
		return arm64_say(why, whylen, -EINVAL, code_addr, code_addr, code,
				 code ? ARM64_INSN_LEN : 0, "not the bytes the plan was made from");
	for (size_t i = 0; i < plan->nr; i++) {
		const struct arch_reloc_insn *ri = &plan->insn[i];
		const uint8_t *p = plan->bytes + ri->off;

		if (emit_one(&o, ri, arm64_word(p), code_addr + ri->off) < 0)
			return arm64_say(why, whylen, -ERANGE, code_addr, code_addr + ri->off, p,
					 ARM64_INSN_LEN,
					 "a literal load into the zero register, out of reach from "
					 "the copy at 0x%llx",
					 (unsigned long long)dest_addr);
	}
	for (size_t i = 0; i < plan->nr; i++) {
		const struct arch_reloc_insn *ri = &plan->insn[i];

		if (ri->kind >= ARM64_RELOC_B && ri->target - dest_addr < 4 * (o.n + 1))
			return arm64_say(why, whylen, -EINVAL, code_addr, code_addr + ri->off,
					 plan->bytes + ri->off, ARM64_INSN_LEN,
					 "branches to 0x%llx, inside its own copy at 0x%llx",
					 (unsigned long long)ri->target,
					 (unsigned long long)dest_addr);
	}
	d = (int64_t)(back - here(&o));
	if (!reach(d, 26))
		return arm64_say(why, whylen, -ERANGE, code_addr, back, NULL, 0,
				 "the way back is out of B's reach (+-128 MiB) from the copy at "
				 "0x%llx",
				 (unsigned long long)dest_addr);
	put(&o, 0x14000000u | ((uint32_t)(d >> 2) & 0x3ffffffu));
	total = 4 * o.n;
	if (o.n > OUT_WORDS_MAX || total > out_cap)
		return arm64_say(why, whylen, -ENOSPC, code_addr, code_addr + plan->pad_len, NULL,
				 0, "the copy needs %zu bytes, %zu given", total, out_cap);
	for (size_t i = 0; i < o.n; i++)
		arm64_put_word(out + 4 * i, o.w[i]);
	*out_len = total;
	return 0;
}

/* A tiny A64 interpreter for the words arm64_reloc_emit and arm64_detour_code write: ADR, ADRP,
 * ADD (immediate), MOVZ/MOVK, LDR (unsigned offset), LDR/PRFM (literal), NOP, B, BL, BR, B.cond,
 * CBZ/CBNZ, TBZ/TBNZ, the rest counted as copied words. It runs from an address until control
 * leaves [base, base + len) and says where it went, what registers were written and what was
 * loaded: the tests check a copy's meaning rather than its words. Conditions come from the test:
 * a conditional word of the same sense as @orig (the displaced word) is taken iff @taken, one of
 * the opposite sense iff !@taken. */
#ifndef HVT_TEST_A64_SIM_H
#define HVT_TEST_A64_SIM_H

#include "arch/arm64/arm64_insn.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct a64_run {
	uint64_t exit;	  /* where control left the words */
	uint64_t reg[32]; /* values written (x31: none) */
	uint32_t written; /* bit n: xn was written */
	unsigned loads;	  /* loads done */
	uint64_t load_addr;
	uint32_t load_op; /* the last load's opcode bits (31:22, V) and Rt */
	unsigned prfm;	  /* literal prefetches */
	unsigned copied;  /* other words run */
	uint32_t last_copied;
	unsigned steps;
	bool stuck; /* more than 64 steps, or a register read before any write */
};

static inline int64_t a64_sext(uint64_t v, unsigned bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/* Whether conditional word @w is taken, given the displaced word @orig and @taken. */
static inline bool a64_cond(uint32_t w, uint32_t orig, bool taken)
{
	bool same;

	if ((w & 0xff000000u) == 0x54000000u) {
		if ((w & 0xf) >= 14)
			return true;
		same = (w & 0xf) == (orig & 0xf);
	} else
		same = ((w ^ orig) & 0x01000000u) == 0; /* CBZ/CBNZ, TBZ/TBNZ: bit 24 */
	return same ? taken : !taken;
}

static inline uint64_t a64_get(struct a64_run *r, unsigned n)
{
	if (n == 31 || !(r->written & (1u << n)))
		r->stuck = true;
	return r->reg[n];
}

static inline void a64_set(struct a64_run *r, unsigned n, uint64_t v)
{
	if (n == 31)
		return;
	r->reg[n] = v;
	r->written |= 1u << n;
}

static inline void a64_run(const uint8_t *words, uint64_t base, size_t len, uint64_t start,
			   uint32_t orig, bool taken, struct a64_run *r)
{
	uint64_t pc = start;

	memset(r, 0, sizeof(*r));
	while (pc - base < len) {
		uint32_t w = arm64_word(words + (pc - base));
		uint64_t next = pc + 4;

		if (++r->steps > 64) {
			r->stuck = true;
			break;
		}
		if ((w & 0x1f000000u) == 0x10000000u) { /* ADR, ADRP */
			int64_t imm = a64_sext(((w >> 5) & 0x7ffffu) << 2 | ((w >> 29) & 3), 21);

			a64_set(r, w & 31,
				w >> 31 ? (pc & ~0xfffull) + (uint64_t)(imm * 4096)
					: pc + (uint64_t)imm);
		} else if ((w & 0xffc00000u) == 0x91000000u) { /* ADD Xd, Xn, #imm12 */
			a64_set(r, w & 31, a64_get(r, (w >> 5) & 31) + ((w >> 10) & 0xfff));
		} else if ((w & 0xff800000u) == 0xd2800000u) { /* MOVZ */
			a64_set(r, w & 31, (uint64_t)((w >> 5) & 0xffff) << (16 * ((w >> 21) & 3)));
		} else if ((w & 0xff800000u) == 0xf2800000u) { /* MOVK */
			unsigned sh = 16 * ((w >> 21) & 3);
			uint64_t v = a64_get(r, w & 31);

			a64_set(r, w & 31,
				(v & ~(0xffffull << sh)) | (uint64_t)((w >> 5) & 0xffff) << sh);
		} else if ((w & 0xffc00000u) == 0xb9400000u || (w & 0xffc00000u) == 0xf9400000u ||
			   (w & 0xffc00000u) == 0xb9800000u || (w & 0xffc00000u) == 0xbd400000u ||
			   (w & 0xffc00000u) == 0xfd400000u || (w & 0xffc00000u) == 0x3dc00000u) {
			r->loads++;
			r->load_addr = a64_get(r, (w >> 5) & 31);
			if ((w >> 10) & 0xfff)
				r->stuck = true;
			r->load_op = w;
			if ((w & 0x04000000u) == 0)
				a64_set(r, w & 31, 0x10ad); /* a GP load: its Rt now holds data */
		} else if ((w & 0x3b000000u) == 0x18000000u) { /* literal */
			if ((w >> 30) == 3 && !(w & 0x04000000u))
				r->prfm++;
			else {
				r->loads++;
				r->load_op = w;
			}
			r->load_addr = pc + (uint64_t)(a64_sext((w >> 5) & 0x7ffffu, 19) * 4);
		} else if (w == ARM64_NOP) {
		} else if ((w & 0x7c000000u) == 0x14000000u) { /* B, BL */
			if (w >> 31)
				a64_set(r, 30, pc + 4);
			next = pc + (uint64_t)(a64_sext(w & 0x3ffffffu, 26) * 4);
		} else if ((w & 0xfffffc1fu) == 0xd61f0000u) { /* BR */
			next = a64_get(r, (w >> 5) & 31);
		} else if ((w & 0xff000000u) == 0x54000000u || (w & 0x7e000000u) == 0x34000000u) {
			if (a64_cond(w, orig, taken))
				next = pc + (uint64_t)(a64_sext((w >> 5) & 0x7ffffu, 19) * 4);
		} else if ((w & 0x7e000000u) == 0x36000000u) {
			if ((w & 0x80f80000u) != (orig & 0x80f80000u)) /* the bit tested */
				r->stuck = true;
			if (a64_cond(w, orig, taken))
				next = pc + (uint64_t)(a64_sext((w >> 5) & 0x3fffu, 14) * 4);
		} else {
			r->copied++;
			r->last_copied = w;
		}
		pc = next;
	}
	r->exit = pc;
}

#endif

/* Relocating a function's first instructions out of line on arm64 (struct arch's reloc_plan and
 * reloc_emit): which whole words a B (or any patch of @need bytes) at a function entry displaces,
 * whether they can run elsewhere, and their words at a detour. Decoded by bit pattern (every A64
 * instruction is one aligned little-endian word; the position-dependent ones are a handful of
 * classes: ADR, ADRP, LDR/LDRSW/PRFM/SIMD literal, B, BL, B.cond, BC.cond, CBZ/CBNZ, TBZ/TBNZ),
 * from bytes read from the guest (untrusted). Host-side and pure: no I/O, no allocation, no global
 * state; any thread. */
#ifndef HVT_ARM64_RELOC_H
#define HVT_ARM64_RELOC_H

#include "arch/arch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How a displaced word is written out of line (struct arch_reloc_insn's kind; op: for
 * ARM64_RELOC_LIT the literal's class, enum arm64_lit). */
enum arm64_reloc_kind {
	ARM64_RELOC_COPY,  /* position-independent: copied as is */
	ARM64_RELOC_ADR,   /* ADR Xd: ADR, ADRP + ADD, or MOVZ/MOVK into Xd */
	ARM64_RELOC_ADRP,  /* ADRP Xd: ADRP, or MOVZ/MOVK into Xd */
	ARM64_RELOC_LIT,   /* a load from a literal: re-encoded, else through its own Xt (or x16) */
	ARM64_RELOC_B,	   /* B: re-encoded, else through x16 (BR x16) */
	ARM64_RELOC_BL,	   /* BL, last displaced only: x30 = its return address, then as B */
	ARM64_RELOC_BCOND, /* B.cond, BC.cond: re-encoded, else B.!cond over a B */
	ARM64_RELOC_CB,	   /* CBZ, CBNZ: re-encoded, else the inverse over a B */
	ARM64_RELOC_TB,	   /* TBZ, TBNZ: re-encoded, else the inverse over a B */
};

/* A literal load's class (struct arch_reloc_insn's op for ARM64_RELOC_LIT). */
enum arm64_lit {
	ARM64_LIT_W,	/* LDR Wt */
	ARM64_LIT_X,	/* LDR Xt */
	ARM64_LIT_SW,	/* LDRSW Xt */
	ARM64_LIT_PRFM, /* PRFM: out of reach it becomes a NOP (a prefetch is only a hint) */
	ARM64_LIT_S,	/* LDR St: out of reach through x16 */
	ARM64_LIT_D,	/* LDR Dt: likewise */
	ARM64_LIT_Q,	/* LDR Qt: likewise */
};

/* The most words reloc_emit writes for one displaced word (BL out of B's reach: MOVZ/MOVK x30,
 * MOVZ/MOVK x16, BR x16). */
#define ARM64_RELOC_WORDS_MAX 9

_Static_assert(ARM64_RELOC_WORDS_MAX * 4 * (ARCH_RELOC_MAX_NEED / 4) + 4 <= ARCH_RELOC_OUT_MAX,
	       "arch's bound holds arm64's longest copy");

/* struct arch_reloc_plan (arch/arch.h) for arm64: pad_len is 0, or 4 for a BTI landing pad (`bti`,
 * `bti c`, `bti j`, `bti jc`) that stays in place; len is a multiple of 4, nr = len / 4. */

/* Decodes the words of @code (@code_len bytes read from the guest at @code_addr, untrusted: nothing
 * past @code_len is read) after a leading BTI until at least @need bytes (1..ARCH_RELOC_MAX_NEED)
 * are covered, and fills @plan with them. PACIASP/PACIBSP move out of line (they sign x30 with sp:
 * position-independent). The patch then goes at code_addr + plan->pad_len over plan->len bytes.
 * Returns 0, or a negative errno with one line in @why naming the word's offset and bytes: -EINVAL
 * (@need out of range, @code_addr not 4-aligned), -ENODATA (a word runs past @code_len), -EILSEQ
 * (an unallocated encoding group), -EOPNOTSUPP (not safely relocatable: a branch back into the
 * displaced words past their first, a literal load from them, the function leaving before @need
 * bytes, a BL before the last displaced word, an indirect call, exception generation (SVC, HVC,
 * SMC, BRK, HLT, UDF), ERET, DRPS, an exclusive load or store, SVE or SME words, branch-class words
 * not listed above). Only the displaced words are checked: the caller scans the rest of the
 * function (arm64_reloc_scan_body). Pure, thread-safe. */
int arm64_reloc_plan(const uint8_t *code, size_t code_len, uint64_t code_addr, size_t need,
		     struct arch_reloc_plan *plan, char *why, size_t whylen);

/* Whether [@addr, @addr + @n) meets the displaced words past their first (code_addr + pad_len + 4
 * .. + len): a branch there would land in the middle of the patch. Pure. */
bool arm64_reloc_hits_patch(const struct arch_reloc_plan *plan, uint64_t addr, uint64_t n);

/* The target of a PC-relative branch word @w at @pc (B, BL, B.cond, BC.cond, CBZ, CBNZ, TBZ, TBNZ)
 * into *@to with its kind (ARM64_RELOC_B ...); false for any other word. Pure. */
bool arm64_rel_branch(uint32_t w, uint64_t pc, uint64_t *to, uint8_t *kind);

/* Writes into @out (@out_cap bytes) the displaced words of @plan as they must be at guest address
 * @dest_addr (4-aligned), then a B back to code_addr + pad_len + len; *@out_len gets the length.
 * @code and @code_addr must be what @plan was made from. Out of a word's reach, ADR/ADRP/LDR
 * literal compute the address in their own Xd/Xt (ADRP + ADD within +-4 GiB, else MOVZ/MOVK); SIMD
 * literals use x16; PRFM becomes a NOP; conditional branches become their inverse over a B; a B
 * beyond +-128 MiB goes through x16 (BR x16). x16 and x17 (IP0/IP1) are what AAPCS64 lets a veneer
 * clobber between a call and a function's first instruction: these forms are for a function's
 * entry. A last BL becomes x30 = its original return address and a B to its target: the callee
 * returns straight to the function, never into the copy. Returns 0, or a negative errno with one
 * line in @why (nothing past @out_cap is written): -EINVAL (@code, @code_addr or @dest_addr do not
 * fit the plan; a branch to the copy's own words), -ERANGE (the B back out of reach, a literal load
 * into xzr out of reach), -ENOSPC (@out_cap too small). Pure, thread-safe. */
int arm64_reloc_emit(const struct arch_reloc_plan *plan, const uint8_t *code, uint64_t code_addr,
		     uint64_t dest_addr, uint8_t *out, size_t out_cap, size_t *out_len, char *why,
		     size_t whylen);

/* arch_vsay's line (BYTES the word at @p when @n >= 4) into @why; returns @err. The one line every
 * arm64 relocation refusal is. */
int arm64_say(char *why, size_t whylen, int err, uint64_t base, uint64_t at, const uint8_t *p,
	      size_t n, const char *fmt, ...) __attribute__((format(printf, 8, 9)));

#endif

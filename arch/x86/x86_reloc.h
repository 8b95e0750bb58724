/* Relocating a function's first instructions out of line: which whole instructions a JMP rel32
 * (or any patch of @need bytes) at a function entry would displace, whether they can run
 * elsewhere, and their bytes at a detour. Decoded with Zydis from bytes read from the guest
 * (untrusted). Host-side and pure: no I/O, no allocation, no global state; any thread. */
#ifndef HVT_X86_RELOC_H
#define HVT_X86_RELOC_H

#include "arch/arch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define X86_ENDBR64_LEN	  4
#define X86_JMP_REL32_LEN 5
#define X86_RELOC_MAX_NEED  ARCH_RELOC_MAX_NEED
#define X86_RELOC_MAX_INSNS ARCH_RELOC_MAX_INSNS
/* ENDBR64, then up to need - 1 bytes plus one whole instruction (15 bytes at most). */
#define X86_RELOC_MAX_BYTES (X86_ENDBR64_LEN + X86_RELOC_MAX_NEED - 1 + 15)
/* Room x86_reloc_emit never exceeds: each instruction grows by 7 bytes at most, then the JMP back.
 */
#define X86_RELOC_OUT_MAX (X86_RELOC_MAX_BYTES + 7 * X86_RELOC_MAX_INSNS + X86_JMP_REL32_LEN)

_Static_assert(X86_RELOC_MAX_BYTES == ARCH_RELOC_MAX_BYTES, "a plan holds x86's bytes");
_Static_assert(X86_RELOC_OUT_MAX == ARCH_RELOC_OUT_MAX, "arch's bound is x86's");

/* How a displaced instruction is written at the detour (struct arch_reloc_insn's kind; its op is
 * a JCC's condition (0-15) or a LOOP's opcode (e0-e3), its field_off a RIPREL's disp32 offset). */
enum x86_reloc_kind {
	X86_RELOC_COPY,	  /* position-independent: copied as is */
	X86_RELOC_RIPREL, /* RIP-relative memory operand: copied, its disp32 adjusted */
	X86_RELOC_JMP,	  /* JMP rel8/rel32: e9 rel32 to the same target */
	X86_RELOC_JCC,	  /* Jcc rel8/rel32: 0f 8x rel32 to the same target */
	X86_RELOC_LOOP,	  /* LOOP/LOOPE/LOOPNE/JRCXZ: op +2; jmp +5; jmp rel32 to the target */
	X86_RELOC_CALL,	  /* CALL rel32, last displaced only: push imm32 (its return), jmp rel32 */
};

/* struct arch_reloc_plan (arch/arch.h) for x86: pad_len is 0, or 4 for an ENDBR64 that stays. */

/* Decodes whole instructions of @code (@code_len bytes read from the guest at @code_addr,
 * untrusted: nothing past @code_len is read) after a leading ENDBR64 until at least @need bytes
 * (1..X86_RELOC_MAX_NEED) are covered, and fills @plan (the caller's) with them. The patch then
 * goes at code_addr + plan->pad_len over plan->len bytes. Returns 0, or a negative errno with
 * one line in @why naming the instruction's offset and bytes: -EINVAL (@need out of range),
 * -ENODATA (an instruction runs past @code_len), -EILSEQ (undecodable), -EOPNOTSUPP (not safely
 * relocatable: a branch back into the displaced bytes past their first, the function leaving
 * before @need bytes, a CALL other than a last CALL rel32, INT3/UD2/INT/SYSCALL/IRET/HLT,
 * privileged and hypercall instructions, XBEGIN, prefixed relative branches, 32-bit RIP-relative
 * addressing). Only the displaced instructions themselves are checked: the caller must scan the
 * rest of the function (and anything else that may branch here) with x86_reloc_hits_patch, and
 * refuse addresses the guest itself patches or fixes up (jump labels, static calls, alternatives,
 * exception and bug tables), which this module cannot know. Pure, thread-safe. */
int x86_reloc_plan(const uint8_t *code, size_t code_len, uint64_t code_addr, size_t need,
		   struct arch_reloc_plan *plan, char *why, size_t whylen);

/* Whether any byte of [@addr, @addr + @n) lies inside the displaced bytes other than their first
 * (code_addr + pad_len + 1 .. + len - 1): a branch there would land in the middle of the patch.
 * A branch to the patch's first byte is fine (it enters the detour). Pure. */
bool x86_reloc_hits_patch(const struct arch_reloc_plan *plan, uint64_t addr, uint64_t n);

/* Bytes x86_reloc_emit writes for @plan. Pure. */
size_t x86_reloc_emit_len(const struct arch_reloc_plan *plan);

/* Writes into @out (the caller's, @out_cap bytes) the displaced instructions of @plan as they must
 * be at guest address @dest_addr, then a JMP rel32 back to code_addr + pad_len + len; *@out_len
 * gets the length. @code and @code_addr must be what @plan was made from. A last CALL rel32
 * becomes push imm32 of its original return address and a JMP to its target: the callee returns
 * straight to the function, never into the detour (no task sleeps with a detour address on its
 * stack, unwinders and return hooks see the address they would have seen); refused when that
 * address is no sign-extended imm32 (kernel text, in the top 2 GiB, always is). The price: the
 * return stack buffer mispredicts that one return, and a supervisor shadow stack (which Linux does
 * not use) would fault it. Short branches become rel32 ones, JRCXZ/LOOP a 9-byte equivalent.
 * Returns 0, or a negative errno with one line in @why (nothing past @out_cap is written):
 * -EINVAL (@code or @code_addr differ from the plan's, or a plan no x86_reloc_plan made), -ERANGE
 * (a displacement or rel32 that does not fit in 32 bits from @dest_addr), -ENOSPC (@out_cap
 * too small). Pure, thread-safe. */
int x86_reloc_emit(const struct arch_reloc_plan *plan, const uint8_t *code, uint64_t code_addr,
		   uint64_t dest_addr, uint8_t *out, size_t out_cap, size_t *out_len, char *why,
		   size_t whylen);

#endif

/* Relocating a function's first instructions out of line: which whole instructions a JMP rel32
 * (or any patch of @need bytes) at a function entry would displace, whether they can run
 * elsewhere, and their bytes at a detour. Decoded with Zydis from bytes read from the guest
 * (untrusted). Host-side and pure: no I/O, no allocation, no global state; any thread. */
#ifndef HVT_X86_RELOC_H
#define HVT_X86_RELOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define X86_ENDBR64_LEN	  4
#define X86_JMP_REL32_LEN 5
/* Largest patch a plan is made for, and so the most instructions it displaces. */
#define X86_RELOC_MAX_NEED  16
#define X86_RELOC_MAX_INSNS X86_RELOC_MAX_NEED
/* ENDBR64, then up to need - 1 bytes plus one whole instruction (15 bytes at most). */
#define X86_RELOC_MAX_BYTES (X86_ENDBR64_LEN + X86_RELOC_MAX_NEED - 1 + 15)
/* Room x86_reloc_emit never exceeds: each instruction grows by 7 bytes at most, then the JMP back.
 */
#define X86_RELOC_OUT_MAX (X86_RELOC_MAX_BYTES + 7 * X86_RELOC_MAX_INSNS + X86_JMP_REL32_LEN)

/* How a displaced instruction is written at the detour. */
enum x86_reloc_kind {
	X86_RELOC_COPY,	  /* position-independent: copied as is */
	X86_RELOC_RIPREL, /* RIP-relative memory operand: copied, its disp32 adjusted */
	X86_RELOC_JMP,	  /* JMP rel8/rel32: e9 rel32 to the same target */
	X86_RELOC_JCC,	  /* Jcc rel8/rel32: 0f 8x rel32 to the same target */
	X86_RELOC_LOOP,	  /* LOOP/LOOPE/LOOPNE/JRCXZ: op +2; jmp +5; jmp rel32 to the target */
	X86_RELOC_CALL,	  /* CALL rel32, last displaced only: push imm32 (its return), jmp rel32 */
};

struct x86_reloc_insn {
	uint8_t off;	   /* from code_addr (the ENDBR64, if any, included) */
	uint8_t len;	   /* whole instruction, prefixes included */
	uint8_t kind;	   /* enum x86_reloc_kind */
	uint8_t field_off; /* RIPREL: where its disp32 starts in the instruction */
	uint8_t op;	   /* JCC: the condition (0-15); LOOP: the opcode (e0-e3) */
	uint64_t target;   /* JMP/JCC/LOOP/CALL: the branch target; RIPREL: the operand's address */
};

struct x86_reloc_plan {
	uint64_t code_addr; /* guest address of code[0] */
	size_t endbr_len;   /* 0, or 4 when code starts with an ENDBR64 that stays in place */
	size_t len;	    /* displaced bytes, from code_addr + endbr_len: >= need, whole insns */
	size_t nr;	    /* instructions in insn[] */
	struct x86_reloc_insn insn[X86_RELOC_MAX_INSNS];
	uint8_t bytes[X86_RELOC_MAX_BYTES]; /* code[0, endbr_len + len), as planned */
};

/* Decodes whole instructions of @code (@code_len bytes read from the guest at @code_addr,
 * untrusted: nothing past @code_len is read) after a leading ENDBR64 until at least @need bytes
 * (1..X86_RELOC_MAX_NEED) are covered, and fills @plan (the caller's) with them. The patch then
 * goes at code_addr + plan->endbr_len over plan->len bytes. Returns 0, or a negative errno with
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
		   struct x86_reloc_plan *plan, char *why, size_t whylen);

/* Whether any byte of [@addr, @addr + @n) lies inside the displaced bytes other than their first
 * (code_addr + endbr_len + 1 .. + len - 1): a branch there would land in the middle of the patch.
 * A branch to the patch's first byte is fine (it enters the detour). Pure. */
bool x86_reloc_hits_patch(const struct x86_reloc_plan *plan, uint64_t addr, uint64_t n);

/* Bytes x86_reloc_emit writes for @plan. Pure. */
size_t x86_reloc_emit_len(const struct x86_reloc_plan *plan);

/* Writes into @out (the caller's, @out_cap bytes) the displaced instructions of @plan as they must
 * be at guest address @dest_addr, then a JMP rel32 back to code_addr + endbr_len + len; *@out_len
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
int x86_reloc_emit(const struct x86_reloc_plan *plan, const uint8_t *code, uint64_t code_addr,
		   uint64_t dest_addr, uint8_t *out, size_t out_cap, size_t *out_len, char *why,
		   size_t whylen);

#endif

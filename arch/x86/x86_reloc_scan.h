/* What a relocation plan (x86_reloc.h) cannot see by itself: the rest of the function, which must
 * not branch into the patch, and displaced instructions a running kernel may rewrite or fix up
 * itself. Decoded with Zydis from guest bytes (untrusted). Pure: no I/O, no allocation, no global
 * state; any thread. */
#ifndef HVT_X86_RELOC_SCAN_H
#define HVT_X86_RELOC_SCAN_H

#include "arch/x86/x86_reloc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Refuses a plan whose displaced instructions a kernel may change under a detour or expect at
 * their own address: a NOP or JMP (jump labels and static branches are NOPs turned into JMPs and
 * back), a CALL (static calls, alternatives), and a memory access other than through RSP or RBP,
 * a %gs per-CPU operand or a RIP-relative one (an access that may fault can have an exception
 * table fixup, found by its address). Returns 0, or -EOPNOTSUPP with one line in @why naming the
 * instruction's offset and bytes. Pure. */
int x86_reloc_kernel_safe(const struct arch_reloc_plan *plan, char *why, size_t whylen);

/* Below the return-address slot, the most a detour's displaced instructions may push (and a bound
 * on stack operands they may touch), so that the word the stub leaves further down survives. */
#define X86_DETOUR_STACK_MAX 192

/* Whether the displaced instructions of @plan can run in a detour between a stub that returns with
 * interrupts off and a JMP through a stack slot that restores them (guest-stub/stub_abi.h): no
 * branch or return (it would leave with interrupts off), RSP changed only by PUSH, POP and ADD/SUB
 * of an immediate, at most X86_DETOUR_STACK_MAX bytes pushed, no stack operand further below the
 * return-address slot than that, and no negative RBP offset (RBP's relation to RSP is unknown).
 * *@pushed gets the bytes they push in all (RSP's entry value minus its value after them).
 * Returns 0, or -EOPNOTSUPP with one line in @why. Pure. */
int x86_reloc_detour_check(const struct arch_reloc_plan *plan, int *pushed, char *why,
			   size_t whylen);

/* Decodes @body (@body_len bytes read at @body_addr: the whole function, untrusted) instruction by
 * instruction from its start and refuses any relative branch (JMP, Jcc, CALL, LOOP, JRCXZ) whose
 * target lies inside the patch of @plan past its first byte (x86_reloc_hits_patch). An instruction
 * cut at the end of @body ends the scan. Returns 0, -EILSEQ (bytes that do not decode: the function
 * cannot be proven) or -EOPNOTSUPP, with one line in @why naming the instruction. Pure. */
int x86_reloc_scan_body(const struct arch_reloc_plan *plan, const uint8_t *body, size_t body_len,
			uint64_t body_addr, char *why, size_t whylen);

/* Whether a relative jump of @body (JMP, Jcc, LOOP, JRCXZ; as for x86_reloc_scan_body, CALLs
 * excepted: a recursive call is a call) targets @target itself: a breakpoint there would be hit
 * by that jump as by a call. 0, -EOPNOTSUPP (one does) or -EILSEQ,
 * with one line in @why naming the instruction. Pure. */
int x86_scan_branch_to(const uint8_t *body, size_t body_len, uint64_t body_addr, uint64_t target,
		       char *why, size_t whylen);

/* Whether an instruction of @body (@body_len bytes of a function from its start: untrusted) starts
 * at @off, decoding one instruction after another from the start. Returns 0; -EINVAL when @off lies
 * inside the instruction that starts at *@before and ends at *@after; -EILSEQ when the bytes at
 * *@before do not decode (or run past @body_len) before @off is reached; -EOPNOTSUPP without a
 * decoder. Pure. */
int x86_scan_insn_start(const uint8_t *body, size_t body_len, size_t off, size_t *before,
			size_t *after);

/* Whether the instruction at @p (@n bytes available) waits for an interrupt or a store (HLT, MWAIT,
 * MWAITX, UMWAIT, TPAUSE): a single step with interrupts held off, as QEMU's gdbstub steps, may
 * never end there. False for anything that does not decode. Pure. */
bool x86_insn_waits(const uint8_t *p, size_t n);

#endif

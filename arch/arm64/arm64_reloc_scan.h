/* What an arm64 relocation plan (arm64_reloc.h) cannot see by itself: the rest of the function,
 * which must not branch into the patch, displaced words a running kernel may rewrite or fix up by
 * their address, and what cannot run between the stub's detour routine (which returns with
 * interrupts masked) and the way back. Decoded by bit pattern from guest bytes (untrusted). Pure:
 * no I/O, no allocation, no global state; any thread. */
#ifndef HVT_ARM64_RELOC_SCAN_H
#define HVT_ARM64_RELOC_SCAN_H

#include "arch/arm64/arm64_reloc.h"

#include <stddef.h>
#include <stdint.h>

/* Refuses a plan whose displaced words a kernel may change under a detour or expect at their own
 * address: a NOP or B (jump labels are NOPs turned into Bs and back), a BL (a call site the kernel
 * retargets), a load or store through a base other than sp or x29 (one that may fault can have an
 * exception-table fixup, found by its address: uaccess, LDTR/STTR), a cache or TLB maintenance
 * word (SYS, SYSL: DC, IC, AT, TLBI; DC may fault and be fixed up). Returns 0, or -EOPNOTSUPP with
 * one line in @why naming the word's offset and bytes. Pure. */
int arm64_reloc_kernel_safe(const struct arch_reloc_plan *plan, char *why, size_t whylen);

/* Whether the displaced words of @plan can run in an arm64 detour slot (arm64_detour.h) between
 * the detour routine, which returns with interrupts masked, and the B back: no branch or return
 * (it would leave with interrupts masked), no write to DAIF (MSR DAIFSet, DAIFClr, DAIF), nothing
 * that waits (WFI, WFE, WFIT, WFET). *@pushed gets what they move sp down by, for the forms a
 * prologue uses (SUB/ADD sp, sp, #imm; STP/LDP of X registers with sp writeback); other writes to
 * sp are allowed and not counted (the arm64 way back does not go through the stack). Returns 0,
 * or -EOPNOTSUPP with one line in @why. Pure. */
int arm64_reloc_detour_check(const struct arch_reloc_plan *plan, int *pushed, char *why,
			     size_t whylen);

/* Reads @body (@body_len bytes at @body_addr: the whole function, untrusted) word by word from its
 * start and refuses any PC-relative branch (B, BL, B.cond, BC.cond, CBZ/CBNZ, TBZ/TBNZ) or ADR
 * whose target lies inside the patch of @plan past its first word (arm64_reloc_hits_patch). Words
 * that are no instruction (data) are skipped: they cannot branch; a partial word at the end ends
 * the scan. Returns 0, -EINVAL (@body_addr not 4-aligned) or -EOPNOTSUPP, with one line in @why
 * naming the word. Pure. */
int arm64_reloc_scan_body(const struct arch_reloc_plan *plan, const uint8_t *body, size_t body_len,
			  uint64_t body_addr, char *why, size_t whylen);

/* Whether a PC-relative jump of @body (B, B.cond, BC.cond, CBZ/CBNZ, TBZ/TBNZ; BL excepted: a
 * recursive call is a call) targets @target itself: a breakpoint there would be hit by that jump
 * as by a call. 0, -EOPNOTSUPP (one does; one line in @why naming it) or -EINVAL (@body_addr not
 * 4-aligned). Pure. */
int arm64_scan_branch_to(const uint8_t *body, size_t body_len, uint64_t body_addr, uint64_t target,
			 char *why, size_t whylen);

#endif

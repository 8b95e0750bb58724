/* The code of an arm64 detour slot (struct arch_detour_slot; the stub's detour routine keeps the
 * contract below). A function's first word (after a BTI pad) gives way to a B into the slot:
 *
 *   +0                 stp  x9, x30, [sp, #-16]!   x30: the function's return address
 *   +4                 bl   ENTRY                  the stub's detour routine
 *   +ARM64_DT_MASKED   ldp  x9, x30, [sp], #16     the call was made with interrupts masked:
 *                      displaced words, relocated
 *                      b    BACK                   (code_addr + pad_len + len)
 *   +ARM64_DT_UNMASKED ldp  x9, x30, [sp], #16     the call was made with interrupts unmasked:
 *                      displaced words, relocated
 *                      b    +sti_off
 *   +sti_off           msr  daifclr, #2            interrupts back on,
 *                      b    BACK                   an interrupt may be taken here (no shadow)
 *   the rest           brk  #0
 *
 * Why so: BL clobbers x30, which the function still needs, and at an arbitrary instruction no
 * register is free; the slot pushes x9 and x30 (sp is 16-aligned everywhere in AAPCS64 code), so
 * it serves any entry whatever the displaced words use. The way back cannot go through a register
 * either (after the displaced words any register may be live) nor through a B.cond on flags they
 * may set: the routine picks the copy by where it returns, and each copy ends in a plain B.
 *
 * The detour routine's contract (ENTRY): entered by the BL with x30 = slot + 8 (the slot, the
 * record's site, is x30 - 8), [sp] = the function's x9, [sp + 8] = its return address, every other
 * register the function's. It does what the patch-site entry routine does, reading the return
 * address from [sp + 8] and hooking the return by writing it there (before PACIASP, displaced
 * into the copy, signs it); it masks interrupts (PSTATE.I) and returns with every register but x30
 * (and NZCV) and sp as it found them, to x30 when interrupts were masked at the call, else to
 * x30 - 8 + ARM64_DT_UNMASKED. So no task is interrupted (or preempted) inside a detour except
 * at +0 and +4 (interrupts still as the function had them) and at +sti_off + 4 (a B out of the
 * slot): the points a detach looks for in saved contexts. nosti_off and scratch (x86's) are not
 * used. */
#ifndef HVT_ARM64_DETOUR_H
#define HVT_ARM64_DETOUR_H

#include "arch/arch.h"

#define ARM64_DT_MASKED	    8  /* the copy run when the call was made with interrupts masked */
#define ARM64_DT_UNMASKED   52 /* the copy run when they were not, then the way back at sti_off */
#define ARM64_DT_STP_X9_X30 0xa9bf7be9u /* stp x9, x30, [sp, #-16]! */
#define ARM64_DT_LDP_X9_X30 0xa8c17be9u /* ldp x9, x30, [sp], #16 */
#define ARM64_DAIFCLR_I	    0xd50342ffu /* msr daifclr, #2 */

/* See struct arch's detour_code and the layout above: -EINVAL (a slot without room for that
 * layout), -ERANGE (@entry or the way back out of B/BL's reach), -ENOSPC (a relocated copy larger
 * than its part of the slot), or what arm64_reloc_detour_check and arm64_reloc_emit refuse. Pure.
 */
int arm64_detour_code(const struct arch_reloc_plan *plan, const struct arch_detour_slot *slot,
		      uint64_t at, uint64_t entry, uint8_t *code, size_t *len, char *why,
		      size_t whylen);

#endif

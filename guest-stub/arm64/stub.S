/* The exit-free stub for arm64 guests: the only hvtrace code that runs inside an arm64 guest.
 * Layout and record format: guest-stub/stub_abi.h (shared with x86-64: the host drains both the
 * same way). Assembled by aarch64-linux-gnu-as (after the C preprocessor), turned into bytes by
 * objcopy and compiled into the host binary as data (scripts/stub-blob.sh, guest-stub/arm64/blob.c);
 * copied into the guest by host/trace/stub.c. Every reference is PC-relative inside the blob or
 * goes through the header, so the bytes run wherever they are placed.
 *
 * hvt_stub_entry      reached by `BL` from a patched site: ftrace's patchable entry is
 *                     `mov x9, x30; nop`, the NOP (the site) becomes `BL hvt_stub_entry*`. So x9
 *                     holds the function's return address and x30 the site + 4; the routine
 *                     records the entry and returns to x30 with x30 = x9 (as ftrace_caller does).
 * hvt_stub_entry_ret  the same, and hooks the return: the return address is pushed on the shadow
 *                     stack of its guest stack, keyed by SP at the call (which is SP again after
 *                     the function's RET), and x30 leaves as hvt_stub_ret. The function's
 *                     `paciasp` after the site then signs hvt_stub_ret, its `autiasp` checks it,
 *                     and its RET comes here: nothing the host would have to re-sign.
 * hvt_stub_entry_args, hvt_stub_entry_ret_args
 *                     the same two, recording x0-x5 too (a STUB_REC_ARGS record).
 * hvt_stub_ret        reached by a hooked function's RET: pops the frame of its SP, records the
 *                     return (x0) and goes on to the saved address. It needs nothing from the
 *                     host, so a guest whose tracer vanished still returns correctly.
 *
 * At a function's entry (and after its return) AAPCS64 leaves x9-x17 free (ftrace_caller uses
 * them too); x0-x8 (arguments, the indirect result, return values), x18 and x19-x29 are kept, the
 * last ones saved on the stack. IRQ and FIQ are masked from the routine's second instruction to
 * its last (`msr daif` before the final RET), so a record and a shadow-stack update are never split
 * by preemption or migration; the places where a context can be interrupted are marked
 * hvt_stub_irq_* for the host's detach. The CPU number is MPIDR_EL1's affinity (the VMM's vCPU
 * index on QEMU's virt up to its first cluster: what the guest cannot change), the time
 * CNTVCT_EL0, the current task SP_EL0 (`current` in the kernel). Nothing here is ever written after
 * placement. The code runs from its own read-only executable block STUB_CODE_DELTA below the
 * region it writes (stub_abi.h), so no page is both writable and executable (the kernel's W+X
 * check at boot walks our blocks too). */
#include "guest-stub/stub_abi.h"

/* clang-format off */
#define FRAME 80 /* x19-x28 */

	.text
	.balign 4096
	.globl hvt_stub_start, hvt_stub_entry, hvt_stub_entry_ret, hvt_stub_entry_args
	.globl hvt_stub_entry_ret_args, hvt_stub_entry_root, hvt_stub_entry_root_args
	.globl hvt_stub_detour, hvt_stub_detour_ret, hvt_stub_detour_args, hvt_stub_detour_ret_args
	.globl hvt_stub_detour_root, hvt_stub_detour_root_args
	.globl hvt_stub_ret, hvt_stub_end
	.globl hvt_stub_irq_entry_out, hvt_stub_irq_ret_out
	.globl hvt_stub_irq_entry_out2, hvt_stub_irq_ret_out2
	.globl hvt_stub_count, hvt_stub_count_pid, hvt_stub_count_ret, hvt_stub_count_ret_pid
	.globl hvt_stub_count_ret_log2, hvt_stub_count_ret_pid_log2
hvt_stub_start:
.Lbase:

/* A detour routine (arch/arm64/arm64_detour.h): reached by the slot's `BL` with x30 = slot + 8,
 * [sp] = the function's x9 (free here: the slot restores it), [sp + 8] its return address. x9 =
 * DAIF as it was, IRQ and FIQ masked; x10-x17 pushed (a detour keeps every register but x30 and
 * the flags); x10 = the routine's bits | 16 (from a detour slot). */
#define DFRAME 64 /* x10-x17 */
.macro DETOUR bits
	mrs x9, daif
	msr daifset, #3
	sub sp, sp, #DFRAME
	stp x10, x11, [sp]
	mov x10, #(\bits | 16)
	b .Ldetour
.endm

/* Leaves a routine by `ret \target` with DAIF's I and F as they were at its start (x16): when both
 * were clear (the common case) by MSR DAIFClr, #3, which under TCG leaves QEMU's CPU loop to look
 * for pending interrupts but does not, as a write of DAIF from a register does, rebuild QEMU's
 * cached CPU flags as well; otherwise by the general MSR DAIF. \on and \on2: where an interrupt
 * may be taken inside the stub (hvt_stub_irq_*; no shadow on arm64). Clobbers the flags. */
.macro LEAVE target, on, on2
	tst x16, #0xc0
	b.ne 1f
	msr daifclr, #3
\on:
	ret \target
1:	msr daif, x16
\on2:
	ret \target
.endm

/* x16 = DAIF as it was, IRQ and FIQ masked; x10 = the routine's bits (bit 0 hook the return, bit 1
 * the argument registers, bit 2 a graph root, bit 3 an entry outside the graph recorded for its
 * event alone; R_FLAGS gets them >> 1). */
.macro ENTER bits
	mrs x16, daif
	msr daifset, #3
	mov x10, #\bits
	b .Lentry
.endm

.macro SAVE
	sub sp, sp, #FRAME
	stp x19, x20, [sp]
	stp x21, x22, [sp, #16]
	stp x23, x24, [sp, #32]
	stp x25, x26, [sp, #48]
	stp x27, x28, [sp, #64]
.endm

.macro RESTORE
	ldp x19, x20, [sp]
	ldp x21, x22, [sp, #16]
	ldp x23, x24, [sp, #32]
	ldp x25, x26, [sp, #48]
	ldp x27, x28, [sp, #64]
	add sp, sp, #FRAME
.endm

/* The header's u64 counter at \off incremented atomically (every CPU counts there). Clobbers x10,
 * x17, x27. */
.macro HDR_INC off
	add x17, x11, #\off
.Lhi\@:	ldxr x10, [x17]
	add x10, x10, #1
	stxr w27, x10, [x17]
	cbnz w27, .Lhi\@
.endm

/* x11 = header, x14 = CNTVCT_EL0, x12 = CPU number (all-ones when out of range, counted),
 * x13 = its ring header. Clobbers x10, x17, x27. */
.macro PROLOGUE
	adr x11, .Lbase
	add x11, x11, #(STUB_CODE_DELTA >> 12), lsl #12
	add x11, x11, #(STUB_HDR_OFF >> 12), lsl #12
	mrs x14, cntvct_el0
	mrs x12, mpidr_el1
	and x12, x12, #0xffffff
	ldr w17, [x11, #H_NR_CPUS]
	cmp x12, x17
	b.lo 1f
	HDR_INC H_BAD_CPU
	mov x12, #-1
	b 3f
1:	add x13, x11, #((STUB_RINGHDR_OFF - STUB_HDR_OFF) >> 12), lsl #12
	add x13, x13, x12, lsl #6
3:
.endm

/* x15 = the current task (SP_EL0), w23 = its identity (stub_task_id in stub_abi.h; 0 without
 * H_COMM_OFF), announced with a STUB_REC_TASK record when it is not the one this CPU's ring last
 * announced. Clobbers x10, x17, x26, x27, x28, x30. */
.macro ANNOUNCE
	mrs x15, sp_el0
	mov w23, #0
	ldr x17, [x11, #H_COMM_OFF]
	cbz x17, 5f
	add x17, x15, x17
	ldp x26, x27, [x17]
	eor x26, x26, x27
	eor x26, x26, x26, lsr #32
	ldr x17, [x11, #H_PID_OFF]
	ldr w27, [x15, x17]
	movz w17, #0x79b1
	movk w17, #0x9e37, lsl #16
	mul w27, w27, w17
	eor w23, w26, w27
	orr w23, w23, #1
	ldr x17, [x13, #RH_LAST_TASK]
	cmp x17, x15
	b.ne 4f
	ldr w17, [x13, #RH_LAST_ID]
	cmp w17, w23
	b.eq 5f
4:	mov x10, #1
	bl .Lreserve
	cbz x10, 5f
	mov w17, #STUB_REC_TASK
	orr w17, w17, w12, lsl #16
	str w17, [x10, #R_TYPE]
	str wzr, [x10, #R_FLAGS]
	str x14, [x10, #R_TSC]
	str x15, [x10, #R_TASK]
	ldr x17, [x11, #H_PID_OFF]
	ldr w17, [x15, x17]
	str x17, [x10, #R_IP]
	str xzr, [x10, #R_PARENT]
	ldr x17, [x11, #H_COMM_OFF]
	add x17, x15, x17
	ldp x26, x27, [x17]
	str x26, [x10, #R_RAX]
	str x27, [x10, #R_T0]
	COMMIT x10, w17, w23
	str x15, [x13, #RH_LAST_TASK]
	str w23, [x13, #RH_LAST_ID]
5:
.endm

/* The record at \rec committed: R_TASK_ID (over the stash) = \id, then the stashed sequence
 * number written last, after its fields. */
.macro COMMIT rec, tmp, id
	ldr \tmp, [\rec, #R_STASH]
	str \id, [\rec, #R_TASK_ID]
	dmb ishst
	str \tmp, [\rec, #R_SEQ]
.endm

/* x10 = the top frame of the shadow stack at x26 (S_NR in x17); to \empty when it holds none. */
.macro TOP_FRAME empty
	ldr x17, [x26, #S_NR]
	cbz x17, \empty
	add x10, x26, x17, lsl #5
	add x10, x10, #(S_E - 32)
.endm

/* The frame at x10 (the top of the shadow stack at x26) abandoned without returning: a
 * STUB_REC_DROP record (when the ring has room), the frame popped. Clobbers x10, x17, x27, x28,
 * x30. */
.macro DROP_TOP
	str x10, [sp, #-16]!
	cmn x12, #1
	b.eq 6f
	ldr x17, [x10, #E_TSC]
	tbz x17, #61, 10f
	bl .Ldrop_count /* a counting routine's frame: counted as unwound, not recorded */
	b 6f
10:	mov x10, #1
	bl .Lreserve
	cbz x10, 6f
	ldr x28, [sp]
	mov w17, #STUB_REC_DROP
	orr w17, w17, w12, lsl #16
	str w17, [x10, #R_TYPE]
	str wzr, [x10, #R_FLAGS]
	str x14, [x10, #R_TSC]
	ldr x17, [x28, #E_IP]
	str x17, [x10, #R_IP]
	ldr x17, [x28, #E_ORIG]
	str x17, [x10, #R_PARENT]
	ldr x17, [x28, #E_TSC]
	str x17, [x10, #R_T0]
	str xzr, [x10, #R_TASK]
	COMMIT x10, w17, wzr
6:	add sp, sp, #16
	ldr x17, [x26, #S_NR]
	sub x17, x17, #1
	str x17, [x26, #S_NR]
	FIX_ROOT
.endm

/* One record reserved as .Lreserve reserves it (x10, 0 when the ring is full), its common case
 * (room in the ring) in place: no call and return for QEMU to look up at run time; a full ring goes
 * to .Lreserve (its wait under backpressure, its count). Clobbers x17, x27, x28, x30. */
.macro RESERVE1
	ldr x27, [x13, #RH_HEAD]
	ldr x28, [x13, #RH_TAIL]
	sub x17, x27, x28
	ldr x28, [x11, #H_RING_MASK]
	cmp x17, x28
	b.ls .Lr1_room\@
	mov x10, #1
	bl .Lreserve
	b .Lr1_out\@
.Lr1_room\@:
	add x17, x27, #1
	str x17, [x13, #RH_HEAD]
	madd x10, x28, x12, x12 /* (mask + 1) * cpu: this CPU's first record */
	and x28, x27, x28
	add x28, x28, x10
	ldr x10, [x11, #H_RINGS]
	add x10, x10, x28, lsl #STUB_REC_SHIFT
	str w17, [x10, #R_STASH] /* its sequence number: the index + 1 */
.Lr1_out\@:
.endm

/* Before a push on the shadow stack at x26: frames deeper than SP x21 are gone, and so is one at
 * x21 unless the return address x9 is hvt_stub_ret (a tail call, whose frame stays below the new
 * one), each dropped (DROP_TOP). Clobbers x10, x17, x27, x28, x30. */
.macro DROP_STALE
.Lds_loop\@:
	TOP_FRAME .Lds_out\@
	ldr x27, [x10, #E_SLOT]
	cmp x27, x21
	b.lo .Lds_drop\@
	b.ne .Lds_out\@
	ldr x27, [x11, #H_RET]
	cmp x9, x27
	b.eq .Lds_out\@
.Lds_drop\@:
	DROP_TOP
	b .Lds_loop\@
.Lds_out\@:
.endm

/* x17 = the frames on the shadow stack at x26; to \full when it has no room for one more (the
 * header's bound, and the room's whatever the header says now). Clobbers x10. */
.macro ROOM full
	ldr x17, [x26, #S_NR]
	ldr x10, [x11, #H_MAX_DEPTH]
	cmp x17, x10
	b.hs \full
	cmp x17, #STUB_STACK_DEPTH
	b.hs \full
.endm

/* A frame just popped from the shadow stack at x26 may have been the graph's root: S_ROOT (index
 * + 1) past S_NR is cleared. Clobbers x17, x27. */
.macro FIX_ROOT
	ldr x17, [x26, #S_ROOT]
	ldr x27, [x26, #S_NR]
	cmp x17, x27
	b.ls 8f
	str xzr, [x26, #S_ROOT]
8:
.endm

/* \dst = the depth of frame index \src on the shadow stack at x26, counted from the graph's root
 * frame when there is one (DEPTH8 bounds it). Clobbers x27. */
.macro REL_DEPTH dst, src
	ldr x27, [x26, #S_ROOT]
	mov \dst, \src
	cbz x27, 9f
	sub x27, x27, #1
	sub \dst, \src, x27
9:
.endm

/* Unlocks the shadow stack at x26, freed when it is empty. Clobbers x17. */
.macro RELEASE
	ldr x17, [x26, #S_NR]
	cbnz x17, 7f
	str xzr, [x26, #S_KEY]
7:	add x17, x26, #S_LOCK
	stlr xzr, [x17]
.endm

/* w17 = \src's depth (at most 255) shifted into R_DEPTH's byte of a type word. Clobbers x27. */
.macro DEPTH8 src
	mov x27, #255
	cmp \src, x27
	csel x17, \src, x27, lo
	lsl w17, w17, #8
.endm

/* x22 = the key of mode x20 for .Lagg, bucket 0: the current task's pid (x15 = SP_EL0, the task)
 * with STUB_AGG_PID (0 where the task or its layout is unknown), else STUB_AGG_NOPID. Clobbers
 * x17. */
.macro AGG_KEY
	mov w22, #STUB_AGG_NOPID
	mrs x15, sp_el0
	tbz x20, #1, .Lak_out\@ /* STUB_AGG_PID */
	mov x22, #0
	cbz x15, .Lak_out\@
	ldr x17, [x11, #H_COMM_OFF]
	cbz x17, .Lak_out\@
	ldr x17, [x11, #H_PID_OFF]
	ldr w22, [x15, x17]
.Lak_out\@:
.endm

/* The profiler's mode (STUB_AGG_RET alone: no pid, no log2): one entry of the site counts its calls
 * and its returns (STUB_AGG_BOTH, as x86's short path keeps them: calls in A_HITS, returns in the
 * u64 at A_COMM, their durations in A_SUM, A_SUMSQ and A_MAX), so a site hit on a CPU takes one
 * entry of its table, not two. x22 = that key for mode x20 (else as it was). */
.macro BOTH_KEY
	cmp x20, #STUB_AGG_RET
	b.ne .Lbk_out\@
	mov x22, #-1 /* (STUB_AGG_BOTH << 32) | STUB_AGG_NOPID */
.Lbk_out\@:
.endm

hvt_stub_entry:
	ENTER 0
hvt_stub_entry_ret:
	ENTER 1
hvt_stub_entry_args:
	ENTER 2
hvt_stub_entry_ret_args:
	ENTER 3
hvt_stub_entry_root:
	ENTER 5
hvt_stub_entry_root_args:
	ENTER 7

hvt_stub_detour:
	DETOUR 0
hvt_stub_detour_ret:
	DETOUR 1
hvt_stub_detour_args:
	DETOUR 2
hvt_stub_detour_ret_args:
	DETOUR 3
hvt_stub_detour_root:
	DETOUR 5
hvt_stub_detour_root_args:
	DETOUR 7

/* The counting routines (aggregation in the guest, stub_abi.h): reached by a site's BL as the
 * entry routines are, with x10 = the mode (STUB_AGG_*: the routine's index in struct stub's
 * agg[]), x16 = DAIF as it was, IRQ and FIQ masked. They add the call to the CPU's table instead of
 * recording it and hook the return when the mode says so (a frame whose E_TSC holds the mode in
 * bits 63..61 over the counter, which hvt_stub_ret counts in turn). */
.macro COUNT mode
	mrs x16, daif
	msr daifset, #3
	mov x10, #\mode
	b .Lcount
.endm

hvt_stub_count:
	COUNT 0
hvt_stub_count_ret:
	COUNT STUB_AGG_RET
hvt_stub_count_pid:
	COUNT STUB_AGG_PID
hvt_stub_count_ret_pid:
	COUNT (STUB_AGG_RET | STUB_AGG_PID)
hvt_stub_count_ret_log2:
	COUNT (STUB_AGG_RET | STUB_AGG_LOG2)
hvt_stub_count_ret_pid_log2:
	COUNT (STUB_AGG_RET | STUB_AGG_PID | STUB_AGG_LOG2)

/* From a detour slot: x9 DAIF as it was, x10 the bits, x10-x11 pushed, x30 the slot + 8. */
.Ldetour:
	stp x12, x13, [sp, #16]
	stp x14, x15, [sp, #32]
	stp x16, x17, [sp, #48]
	mov x16, x9
	ldr x9, [sp, #(DFRAME + 8)] /* the function's return address, pushed by the slot */
	SAVE
	mov x20, x10
	add x21, sp, #(FRAME + DFRAME + 16) /* SP at the function's entry, before the slot's push */
	sub x24, x30, #8                    /* the slot: the record's site */
	mov x25, x30
	b .Lentry_body

/* A counting routine's body: x9 the function's return address, x30 the site + 4, x10 the mode. */
.Lcount:
	SAVE
	mov x20, x10
	add x21, sp, #FRAME /* SP at the call: where the function's return leaves it */
	sub x24, x30, #4    /* the site */
	mov x25, x30
	PROLOGUE
	cmn x12, #1
	b.eq .Lout
	AGG_KEY
	BOTH_KEY
	mov x23, #0 /* a call: bucket 0 (STUB_AGG_BOTH's calls), no duration */
	mov x19, #A_HITS
	bl .Lagg
	tbz x20, #0, .Lout /* STUB_AGG_RET */
	/* the return hooked: the frame's E_TSC is the mode in bits 63..61 over the counter */
	and x23, x14, #STUB_AGG_TSC_MASK
	orr x23, x23, x20, lsl #61
	mov w10, #1
	bl .Lstack_get
	cbz x26, .Lc_nohook
	DROP_STALE
	ROOM .Lc_full
	add x10, x26, x17, lsl #5
	add x10, x10, #S_E
	stp x21, x9, [x10, #E_SLOT] /* E_SLOT, E_ORIG */
	stp x24, x23, [x10, #E_IP]  /* E_IP, E_TSC */
	add x17, x17, #1
	str x17, [x26, #S_NR]
	ldr x9, [x11, #H_RET] /* the function returns into the stub */
	RELEASE
	b .Lout
.Lc_full:
	RELEASE
.Lc_nohook:
	HDR_INC H_NO_STACK
	b .Lout

/* x9 the function's return address, x30 the site + 4. */
.Lentry:
	SAVE
	mov x20, x10
	add x21, sp, #FRAME /* SP at the call: where the function's return leaves it */
	sub x24, x30, #4    /* the site */
	mov x25, x30
.Lentry_body:
	PROLOGUE
	cmn x12, #1
	b.eq .Lout
	/* set_graph_function: below no live root on this stack, a call is not traced at all */
	ldr x17, [x11, #H_GRAPH]
	cbz x17, 2f
	tbnz x20, #2, 2f
	mov w10, #0
	bl .Lstack_get
	cbz x26, 3f
	ldr x17, [x26, #S_ROOT]
	add x27, x26, #S_LOCK
	stlr xzr, [x27]
	cbnz x17, 2f
3:	/* outside the graph: an -e event still fires (as ftrace's do), its return not hooked */
	tbz x20, #1, .Lout
	and x20, x20, #16 /* from a detour slot or not */
	orr x20, x20, #8 /* | 2: the argument registers, alone */
	orr x20, x20, #2
2:	ANNOUNCE
	/* the entry (and the argument registers) */
	tbnz x20, #1, 1f
	RESERVE1
	b 3f
1:	mov x10, #2
	bl .Lreserve
3:	cbz x10, .Lout /* ring full: counted, and the return is not hooked either */
	mov x22, x10
	tbz x20, #1, 2f
	/* the argument registers, committed first: the host reads the entry before them */
	mov w17, #STUB_REC_ARGS
	orr w17, w17, w12, lsl #16
	str w17, [x28, #R_TYPE]
	str wzr, [x28, #R_FLAGS]
	stp x0, x1, [x28, #R_ARGS]
	stp x2, x3, [x28, #R_ARGS + 16]
	stp x4, x5, [x28, #R_ARGS + 32]
	COMMIT x28, w17, wzr
2:	ubfx w17, w20, #1, #3
	str w17, [x22, #R_FLAGS]
	str x14, [x22, #R_TSC]
	str x24, [x22, #R_IP]
	str x9, [x22, #R_PARENT]
	str x15, [x22, #R_TASK]
	str x0, [x22, #R_RAX]
	str xzr, [x22, #R_T0]
	mov w19, #STUB_REC_ENTRY
	orr w19, w19, w12, lsl #16
	tbz x20, #0, .Lcommit_entry

	/* Hook the return: the shadow stack of this guest stack, locked (busy or full: not hooked). */
	mov w10, #1
	bl .Lstack_get
	cbz x26, .Lnohook
	DROP_STALE
	ROOM .Lfull
	ldr x10, [x11, #H_GRAPH]
	cbz x10, 5f
	ldr x10, [x26, #S_ROOT]
	tbnz x20, #2, 6f
	cbz x10, .Lskip /* its root was unwound just now: outside the graph */
	b 5f
6:	cbnz x10, 5f /* a root below a live root: an ordinary frame of that graph */
	add x10, x17, #1
	str x10, [x26, #S_ROOT]
5:	add x10, x26, x17, lsl #5
	add x10, x10, #S_E
	stp x21, x9, [x10, #E_SLOT] /* E_SLOT, E_ORIG */
	stp x24, x14, [x10, #E_IP]  /* E_IP, E_TSC */
	add x27, x17, #1
	str x27, [x26, #S_NR]
	REL_DEPTH x28, x17
	DEPTH8 x28
	orr w19, w19, w17
	ldr x9, [x11, #H_RET] /* the function returns into the stub */
	RELEASE
	b .Lcommit_entry
.Lskip:
	RELEASE
	and w19, w19, #0xffff0000
	ldr w17, [x22, #R_FLAGS]
	tbz w17, #0, 7f /* STUB_F_ARGS: an -e event, recorded alone as outside the graph */
	orr w17, w17, #STUB_F_ALONE
	str w17, [x22, #R_FLAGS]
	orr w19, w19, #STUB_REC_ENTRY
	b .Lcommit_entry
7:	orr w19, w19, #STUB_REC_SKIP
	b .Lcommit_entry
.Lfull:
	RELEASE
.Lnohook:
	HDR_INC H_NO_STACK
	eor w19, w19, #(STUB_REC_ENTRY ^ STUB_REC_ENTRY_NOHOOK)
.Lcommit_entry:
	str w19, [x22, #R_TYPE]
	COMMIT x22, w17, w23
.Lout:
	tbnz x20, #4, .Ldetour_out
	mov x17, x25
	RESTORE
	mov x30, x9
	LEAVE x17, hvt_stub_irq_entry_out, hvt_stub_irq_entry_out2

/* Back into the slot: the return address (hvt_stub_ret when hooked) where the slot's LDP takes
 * it, IRQ left masked (the slot unmasks it after the displaced words when it was on), to the
 * slot's first copy (x30) when IRQ was masked at the call, else to its second. */
.Ldetour_out:
	str x9, [sp, #(FRAME + DFRAME + 8)]
	mov x30, x25
	RESTORE
	tbnz x16, #7, 1f /* PSTATE.I */
	add x30, x30, #(52 - 8) /* ARM64_DT_UNMASKED */
	orr x16, x16, #(1 << 7)
1:	ldp x10, x11, [sp]
	ldp x12, x13, [sp, #16]
	ldp x14, x15, [sp, #32]
	msr daif, x16
	ldp x16, x17, [sp, #48]
	add sp, sp, #DFRAME
	ret

/* Reached by a hooked function's RET: SP is what it was at the call. */
hvt_stub_ret:
	mrs x16, daif
	msr daifset, #3
	SAVE
	add x21, sp, #FRAME
	PROLOGUE
	mov w10, #0
	bl .Lstack_get
	cbz x26, .Lorphan
.Lr_pop:
	TOP_FRAME .Lorphan
	ldr x27, [x10, #E_SLOT]
	cmp x27, x21
	b.eq .Lr_match
	b.hi .Lorphan
	DROP_TOP
	b .Lr_pop
.Lr_match:
	ldr x9, [x10, #E_ORIG]
	ldr x24, [x10, #E_IP]
	ldr x22, [x10, #E_TSC]
	sub x17, x17, #1
	str x17, [x26, #S_NR]
	REL_DEPTH x20, x17
	FIX_ROOT /* the root itself returning ends the graph */
	RELEASE
	cmn x12, #1
	b.eq .Lr_out
	tbnz x22, #61, .Lr_count /* a counting routine's frame: counted, not recorded */
	ANNOUNCE
	RESERVE1
	cbz x10, .Lr_out
	mov w19, #STUB_REC_RETURN
	orr w19, w19, w12, lsl #16
	DEPTH8 x20
	orr w19, w19, w17
	str w19, [x10, #R_TYPE]
	str wzr, [x10, #R_FLAGS]
	str x14, [x10, #R_TSC]
	str x24, [x10, #R_IP]
	str x9, [x10, #R_PARENT]
	str x15, [x10, #R_TASK]
	str x0, [x10, #R_RAX]
	str x22, [x10, #R_T0]
	COMMIT x10, w17, w23
.Lr_out:
	RESTORE
	mov x30, x9
	LEAVE x30, hvt_stub_irq_ret_out, hvt_stub_irq_ret_out2
.Lr_count:
	/* the duration in ns ((ticks * H_NS_MULT) >> H_NS_SHIFT), keyed by the frame's mode (bits
	 * 63..61 of its E_TSC, in x22) and added to the CPU's table */
	lsr x20, x22, #61
	and x22, x22, #STUB_AGG_TSC_MASK
	subs x23, x14, x22
	csel x23, x23, xzr, hs /* a counter behind the entry's (another CPU's): 0 */
	ldr x17, [x11, #H_NS_MULT]
	mul x27, x23, x17
	umulh x28, x23, x17
	ldr x17, [x11, #H_NS_SHIFT]
	and x17, x17, #63
	lsr x27, x27, x17
	neg x10, x17
	lsl x28, x28, x10 /* by 64 - shift (mod 64) */
	cmp x17, #0
	csel x28, x28, xzr, ne
	orr x23, x27, x28
	AGG_KEY
	mov x19, #A_HITS
	cmp x20, #STUB_AGG_RET
	b.ne .Lr_bucket
	BOTH_KEY /* the profiler's: the returns' count in A_COMM's first u64 */
	mov x19, #A_COMM
	bl .Lagg
	b .Lr_out
.Lr_bucket:
	mov x17, #1 /* bucket 1: a return */
	tbz x20, #2, 2f /* STUB_AGG_LOG2 */
	mov x17, #2 /* 2 + log2 of the duration as ftrace's .log2: ilog2(roundup_pow_of_two) */
	cmp x23, #1
	b.ls 2f
	sub x27, x23, #1
	clz x27, x27
	mov x10, #66
	sub x17, x10, x27
2:	orr x22, x22, x17, lsl #32
	bl .Lagg
	b .Lr_out
.Lorphan:
	/* A return through the stub with no frame for its SP: only a host bug can cause it. */
	udf #0

/* Reserves x10 (1 or 2) consecutive records on CPU x12's ring (header x13): the first in x10, the
 * second in x28, each with its sequence number stashed; x10 = 0 when the ring is full (counted in
 * the ring's lost). Only this CPU moves its ring's head, with IRQ and FIQ masked, so a plain store
 * publishes it. With H_WAIT_TSC set (backpressure), a full ring is first waited for, a YIELD loop
 * bounded by that many counter ticks, until the host has made room; a wait that times out sets the
 * ring's RH_GAVE_UP, and no more is waited on that ring until the host clears it (as x86's).
 * Clobbers x17, x27, x28. */
.Lreserve:
	ldr x27, [x13, #RH_HEAD]
	ldr x28, [x13, #RH_TAIL]
	sub x17, x27, x28
	add x17, x17, x10
	sub x17, x17, #1
	ldr x28, [x11, #H_RING_MASK]
	cmp x17, x28
	b.hi 9f
	add x17, x27, x10
	str x17, [x13, #RH_HEAD]
	cmp x10, #2 /* eq: two records (the flags kept to the end) */
	add x10, x28, #1
	mul x10, x10, x12 /* this CPU's first record */
	and x17, x27, x28
	add x17, x17, x10
	add x27, x27, #1
	and x28, x27, x28
	add x28, x28, x10
	ldr x10, [x11, #H_RINGS]
	add x28, x10, x28, lsl #STUB_REC_SHIFT
	add x10, x10, x17, lsl #STUB_REC_SHIFT
	str w27, [x10, #R_STASH]
	b.ne 11f /* one record: the slot after it is not this event's (a full ring's is the host's) */
	add w27, w27, #1
	str w27, [x28, #R_STASH]
11:	ret
9:	ldr x17, [x11, #H_WAIT_TSC]
	cbz x17, 12f
	ldr x27, [x13, #RH_GAVE_UP]
	cbnz x27, 12f
	ldr x27, [x13, #RH_WAITS]
	add x27, x27, #1
	str x27, [x13, #RH_WAITS]
	mrs x27, cntvct_el0
	add x17, x17, x27 /* the deadline */
10:	yield
	ldr x27, [x13, #RH_HEAD]
	ldr x28, [x13, #RH_TAIL]
	sub x27, x27, x28
	add x27, x27, x10
	sub x27, x27, #1
	ldr x28, [x11, #H_RING_MASK]
	cmp x27, x28
	b.ls .Lreserve /* room now: reserve again */
	mrs x27, cntvct_el0
	cmp x27, x17
	b.lo 10b
	mov x27, #1
	str x27, [x13, #RH_GAVE_UP]
12:	ldr x17, [x13, #RH_LOST]
	add x17, x17, #1
	str x17, [x13, #RH_LOST]
	mov x10, #0
	ret

/* Adds one event of site x24 and key x22 with duration x23 (ns; 0 for a call) to CPU x12's table
 * (ring header x13), its count in the entry's u64 at offset x19 (A_HITS; A_COMM for a
 * STUB_AGG_BOTH entry's returns): the entry of that key found or claimed within STUB_AGG_PROBES
 * entries of its hash (a pid key's first claim copies task x15's comm), else counted in the CPU's
 * RH_AGG_DROP. The table is this CPU's alone and IRQ and FIQ are masked: plain loads and stores.
 * Clobbers x10, x17, x27, x28. */
.Lagg:
	ldr x17, [x11, #H_AGG]
	cbz x17, 9f
	stp x0, x1, [sp, #-32]!
	str x2, [sp, #16]
	ldr x28, [x11, #H_AGG_MASK]
	add x10, x28, #1
	mul x10, x10, x12
	add x10, x17, x10, lsl #STUB_AGG_SHIFT /* the CPU's table */
	ror x2, x22, #35 /* the hash: rotl(key, 29) ^ site, times a large odd number, folded */
	eor x2, x2, x24
	movz x17, #0xe995
	movk x17, #0x5bd1, lsl #16
	mul x2, x2, x17
	eor x2, x2, x2, lsr #29
	mov w27, #STUB_AGG_PROBES
1:	and x2, x2, x28
	add x17, x10, x2, lsl #STUB_AGG_SHIFT
	ldr x0, [x17, #A_IP]
	cmp x0, x24
	b.ne 2f
	ldr x0, [x17, #A_KEY]
	cmp x0, x22
	b.eq 4f
	b 3f
2:	cbnz x0, 3f
	/* an empty entry: the key first, then the claim */
	str x22, [x17, #A_KEY]
	str x24, [x17, #A_IP]
	cmn w22, #1 /* STUB_AGG_NOPID: no comm */
	b.eq 4f
	cbz x15, 4f
	ldr x0, [x11, #H_COMM_OFF]
	cbz x0, 4f
	add x0, x15, x0
	ldp x0, x1, [x0]
	stp x0, x1, [x17, #A_COMM]
	b 4f
3:	add x2, x2, #1
	subs w27, w27, #1
	b.ne 1b
	ldr x0, [x13, #RH_AGG_DROP]
	add x0, x0, #1
	str x0, [x13, #RH_AGG_DROP]
	b 5f
4:	ldr x0, [x17, x19]
	add x0, x0, #1
	str x0, [x17, x19]
	ldr x0, [x17, #A_SUM]
	add x0, x0, x23
	str x0, [x17, #A_SUM]
	ldr x0, [x17, #A_SUMSQ]
	madd x0, x23, x23, x0
	str x0, [x17, #A_SUMSQ]
	ldr x0, [x17, #A_MAX]
	cmp x23, x0
	b.ls 5f
	str x23, [x17, #A_MAX]
5:	ldr x2, [sp, #16]
	ldp x0, x1, [sp], #32
9:	ret

/* A counting routine's frame x10 abandoned without returning: counted in the CPU's table as
 * STUB_AGG_UNWOUND of its site (pid not keyed). Keeps every register but x10, x17, x27, x28 and
 * x30 (DROP_TOP's). */
.Ldrop_count:
	stp x22, x23, [sp, #-48]!
	stp x24, x19, [sp, #16]
	str x30, [sp, #32]
	ldr x24, [x10, #E_IP]
	movn x22, #0xffff, lsl #48 /* (STUB_AGG_UNWOUND << 32) | STUB_AGG_NOPID */
	mov x23, #0
	mov x19, #A_HITS
	bl .Lagg
	ldr x30, [sp, #32]
	ldp x24, x19, [sp, #16]
	ldp x22, x23, [sp], #48
	ret

/* x26 = the shadow stack of the guest stack keyed by SP x21, locked; 0 if there is none. With
 * w10 = 1 it is created if needed and only tried-locked (0 if busy); with w10 = 0 the lock is
 * waited for. Clobbers x17, x27, x28. */
.Lstack_get:
	stp x0, x1, [sp, #-32]!
	stp x2, x3, [sp, #16]
.Lsg_retry:
	ldr x0, [x11, #H_STACK_SHIFT]
	lsr x27, x21, x0
	add x27, x27, #1 /* the key */
	movz x0, #0x7c15
	movk x0, #0x7f4a, lsl #16
	movk x0, #0x79b9, lsl #32
	movk x0, #0x9e37, lsl #48
	mul x28, x27, x0
	lsr x28, x28, #32 /* the hash */
	ldr x1, [x11, #H_STACKS_MASK]
	ldr x2, [x11, #H_STACKS]
	mov x17, #0
1:	add x26, x28, x17
	and x26, x26, x1
	add x26, x2, x26, lsl #STUB_STACK_SHIFT
	ldr x0, [x26, #S_KEY]
	cmp x0, x27
	b.eq .Lsg_found
	add x17, x17, #1
	cmp x17, #STUB_STACK_PROBES
	b.lo 1b
	cbz w10, .Lsg_none
	mov x17, #0
2:	add x26, x28, x17
	and x26, x26, x1
	add x26, x2, x26, lsl #STUB_STACK_SHIFT
3:	ldaxr x0, [x26]
	cbnz x0, 4f
	stxr w3, x27, [x26]
	cbnz w3, 3b
	b .Lsg_found
4:	clrex
	cmp x0, x27 /* another CPU just claimed it for the same stack: share it */
	b.eq .Lsg_found
	add x17, x17, #1
	cmp x17, #STUB_STACK_PROBES
	b.lo 2b
	b .Lsg_none
.Lsg_found:
	add x3, x26, #S_LOCK
5:	ldaxr x0, [x3]
	tbnz x0, #0, 6f
	orr x0, x0, #1
	stxr w1, x0, [x3]
	cbnz w1, 5b
	/* freed (emptied) or taken for another stack while we waited for the lock: look again */
	ldr x0, [x26, #S_KEY]
	cmp x0, x27
	b.eq .Lsg_out
	stlr xzr, [x3]
	b .Lsg_retry
6:	clrex
	cbnz w10, .Lsg_none
	yield
	b 5b
.Lsg_none:
	mov x26, #0
.Lsg_out:
	ldp x2, x3, [sp, #16]
	ldp x0, x1, [sp], #32
	ret

hvt_stub_end:
	.section .note.GNU-stack, "", @progbits
/* clang-format on */

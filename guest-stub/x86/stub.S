/* The exit-free stub for x86-64 guests: the only hvtrace code that runs inside a guest besides the
 * trampoline byte. Layout and record format: guest-stub/stub_abi.h. One assembly unit, assembled
 * into the host binary as data (.rodata) and copied into the guest by host/trace/stub.c; every
 * reference is RIP-relative inside the blob or goes through the header, so the bytes run wherever
 * they are placed.
 *
 * hvt_stub_entry      reached by CALL rel32 from a patched site: records the entry and returns past
 *                     the site. 0(%rsp) = site + 5, 8(%rsp) = the function's return address.
 * hvt_stub_entry_ret  the same, and hooks the return: the return address is pushed on the shadow
 *                     stack of its guest stack (in guest memory, next to the rings) and replaced by
 *                     hvt_stub_ret.
 * hvt_stub_entry_args, hvt_stub_entry_ret_args
 *                     the same two, recording the argument registers too (a second record).
 * hvt_stub_count*     reached like hvt_stub_entry: the call counted in the CPU's aggregation
 *                     table instead of recorded, the return hooked for its duration (agg.S).
 * hvt_stub_ret        reached by the hooked function's RET: pops the frame matching the slot,
 *                     records the return and goes on to the saved address. It needs nothing from
 *                     the host, so a guest whose tracer vanished still returns correctly.
 *
 * The entry routines run with interrupts off from the first instruction to the last (CLI after
 * PUSHF; STI just before the RET when they were on, see RESTORE_RET), so a record and a
 * shadow-stack update are never split by preemption or migration. The counting routines and the
 * return routine keep them on where the header gives the preempt count (H_PREEMPT_GS: PIN raises
 * it, UNPIN_RET lowers it; frame.h): no preemption or migration either, and no STI, which ends a
 * TCG translation block through QEMU's main loop; they mask interrupts only for a record (the
 * return routine's, a drop record). Every register is preserved, and of the flags IF (the others are dead
 * across a call, and the stub changes none of them).
 *
 * Its parts, in this folder: macros expanded in place (frame.h: the saved registers, leaving;
 * cpu.h: the CPU number and the time; ring.h: records reserved and filled; task.h: the current
 * task and its announcement; shadow.h: shadow-stack frames), then the code, in the order of its
 * bytes (entry.S: the entry and detour routines; agg.S: the counting routines; prof.S: the
 * function profiler's short path of a counting routine and of the return routine; ret.S: the return
 * routine; ring.S and shadow.S: what those call out of line). */
#include "guest-stub/stub_abi.h"
#include "guest-stub/x86/frame.h"
#include "guest-stub/x86/cpu.h"
#include "guest-stub/x86/ring.h"
#include "guest-stub/x86/task.h"
#include "guest-stub/x86/shadow.h"

	.section .rodata.hvt_stub, "a"
	.balign 4096
	.globl hvt_stub_start, hvt_stub_entry, hvt_stub_entry_ret, hvt_stub_entry_args
	.globl hvt_stub_entry_ret_args, hvt_stub_entry_root, hvt_stub_entry_root_args
	.globl hvt_stub_detour, hvt_stub_detour_ret, hvt_stub_detour_args, hvt_stub_detour_ret_args
	.globl hvt_stub_detour_root, hvt_stub_detour_root_args
	.globl hvt_stub_count, hvt_stub_count_pid, hvt_stub_count_ret, hvt_stub_count_ret_pid
	.globl hvt_stub_count_ret_log2, hvt_stub_count_ret_pid_log2
	.globl hvt_stub_ret, hvt_stub_ret_end, hvt_stub_end
hvt_stub_start:
.Lbase:

#include "guest-stub/x86/entry.S"
#include "guest-stub/x86/agg.S"
#include "guest-stub/x86/prof.S"
#include "guest-stub/x86/ret.S"
#include "guest-stub/x86/ring.S"
#include "guest-stub/x86/shadow.S"

hvt_stub_end:
	.section .note.GNU-stack, "", @progbits

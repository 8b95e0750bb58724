/* The QEMU target's run loop: lets the VM run, hands each breakpoint stop to the tracer, steps an
 * instruction left under a breakpoint, holds the VM for the stub drain, and stops when asked. Over
 * the target (target_qemu.h) and its VM (qemu_vm.h); main thread. */
#ifndef HVT_TARGET_QEMU_RUN_H
#define HVT_TARGET_QEMU_RUN_H

#include "host/qemu/target_qemu.h"

#include <stdbool.h>

/* QEMU said whether it runs TCG (@tcg) or KVM (or nothing): how a breakpoint's instruction is
 * stepped over. Before target_qemu_run. */
void target_qemu_set_tcg(struct target_qemu *q, bool tcg);

/* Result of target_qemu_run. */
/* QEMU_RUN_GUEST_OFF: the guest powered off (or reset under -no-reboot) and QEMU, started with
 * -no-shutdown (target_qemu.no_shutdown), holds the VM stopped: its memory can still be read. */
enum qemu_run_end { QEMU_RUN_STOP_ASKED, QEMU_RUN_GUEST_GONE, QEMU_RUN_GUEST_OFF, QEMU_RUN_ERROR };

/* Lets the VM run, handing every breakpoint stop to the registered callback, until @should_stop
 * (polled at least every 50 ms, and at once when a wait is interrupted: tcp_set_interrupt) says so
 * (the VM is then left stopped) or the guest is gone. QEMU_RUN_ERROR when the gdbstub fails or lies
 * (a stop of a thread that is no vCPU, a reply out of shape): q->err says how. Main thread. */
enum qemu_run_end target_qemu_run(struct target_qemu *q, bool (*should_stop)(void *ctx), void *ctx);

/* From now on target_qemu_run polls @hold (every HOLD_POLL_MS at most, on its own thread) and keeps
 * the VM stopped (a gdbstub stop: QEMU's virtual clock stands still too) for as long as it says so;
 * @should_stop still ends the run at once, the VM left stopped as always. Counted in q->holds and
 * q->hold_ns. NULL: no holds. Main thread, before target_qemu_run. */
void target_qemu_set_hold(struct target_qemu *q, bool (*hold)(void *ctx), void *ctx);

#endif

/* The QEMU target's run loop: lets the VM run, hands each breakpoint stop to the tracer, steps an
 * instruction left under a breakpoint, holds the VM for the stub drain, and stops when asked. Main
 * thread. */
#include "host/qemu/target_qemu_run.h"
#include "arch/arch.h"
#include "host/trace/clock.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define POLL_MS	     50
#define HOLD_POLL_MS 2	    /* with a hold callback: how often it is asked while the VM runs */
#define HOLD_WAIT_NS 200000 /* and while it holds the VM */

/* The vCPU of gdbstub thread @thread (0, a stop that names none: the first), or -1. */
static int cpu_of_thread(struct target_qemu *q, int thread)
{
	if (!thread)
		return 0;
	for (unsigned i = 0; i < q->t.nr_cpus; i++)
		if (q->vm.cpu[i].thread == thread)
			return (int)i;
	return -1;
}

/* q->err for a failed gdbstub call: its own reason, or @what and the errno. */
static int gdb_failed(struct target_qemu *q, const char *what, int ret)
{
	if (q->vm.gdb->why[0])
		msg_fmt(q->err, sizeof(q->err), "%s", q->vm.gdb->why);
	else
		msg_fmt(q->err, sizeof(q->err), "gdbstub: %s: %s", what, strerror(-ret));
	return ret;
}

/* One single step of @c alone, the others stopped, over the instruction at @at. Under TCG the
 * breakpoint there stays inserted (a step ignores it); under KVM (or where QEMU does not say) its
 * INT3 would trap again, so it is taken out for the step and put back. 0 or -errno. */
static int step_once(struct target_qemu *q, struct qemu_cpu *c, uint64_t at)
{
	struct gdb_stop st;
	int ret = qemu_vm_flush_rips(&q->vm);

	if (ret == 0 && !q->tcg) /* QEMU takes it out and puts it back through c_cpu: @c maps @at */
		ret = gdb_select_bp_thread(q->vm.gdb, c->thread);
	if (ret == 0 && !q->tcg)
		ret = gdb_remove_bp(q->vm.gdb, at);
	if (ret == 0)
		ret = gdb_step(q->vm.gdb, c->thread, &st);
	if (ret == 0 && !q->tcg)
		ret = gdb_insert_bp(q->vm.gdb, at);
	if (q->vm.gdb->running)
		q->vm.stopped = false; /* no stop reply in time: the VM runs */
	qemu_vm_invalidate_regs(&q->vm);
	if (ret < 0)
		return gdb_failed(q, "stepping over a changed function entry", ret);
	if (st.kind != GDB_STOP_SIGNAL) {
		msg_fmt(q->err, sizeof(q->err), "gdbstub: the VM is gone (a step)");
		return -ESRCH;
	}
	return 0;
}

/* Steps QEMU may report done with the vCPU still at the instruction (seen with QEMU 7.2 under TCG
 * on a loaded host: the step's stop came before the vCPU ran anything). Each is taken again, up to
 * this many; a REP string instruction also stays at its address for each iteration stepped. */
#define STEPS_AGAIN_MAX 64

/* Executes the instruction at @c's RIP, the others stopped: stepped until RIP has left it (a
 * breakpoint left in place would otherwise be hit a second time by the same execution, and its
 * probe traced twice). 0 or -errno; the registers are read again afterwards. */
static int step_over(struct target_qemu *q, struct qemu_cpu *c)
{
	uint64_t at = arch_regs_ip(q->t.arch, &c->regs);
	unsigned cpu = (unsigned)(c - q->vm.cpu);
	int ret;

	for (unsigned k = 0;; k++) {
		ret = step_once(q, c, at);
		if (ret < 0 || !q->vm.stopped || k == STEPS_AGAIN_MAX)
			return ret;
		ret = qemu_vm_cpu_regs(&q->vm, cpu);
		if (ret < 0)
			return gdb_failed(q, "registers after a step", ret);
		if (arch_regs_ip(q->t.arch, &c->regs) != at)
			return 0;
		q->steps_again++;
	}
}

/* The tracer emulates the NOP5 at a function entry by moving RIP past it (@rip -> @rip + 5); the
 * gdbstub's breakpoint left the guest's bytes as they were, so the guest may have changed them
 * since (its own ftrace or live patching turns the NOP5 into a CALL, text_poke puts an INT3 there,
 * or a hostile guest anything). Whether the 5 bytes the vCPU sees at @rip are still a NOP5. */
static bool nop5_at(struct target_qemu *q, unsigned cpu, uint64_t rip)
{
	uint8_t b[ARCH_PATCH_MAX];

	return q->t.ops->read_virt(&q->t, cpu, rip, b, q->t.arch->site_len) == 0 &&
	       q->t.arch->is_site_nop(b);
}

/* Handles one stop, which came at monotonic ns @at_ns: a breakpoint of the tracer's gets its
 * callback (its records stamped then, not after the register round trip); the new RIP it sets goes
 * out with the continue (resume_vm). A NOP5 emulation over bytes that are no NOP5 is refused: the
 * instruction there is single-stepped instead, so the guest runs what it wrote. */
static int handle_stop(struct target_qemu *q, const struct gdb_stop *st, uint64_t at_ns)
{
	int cpu = cpu_of_thread(q, st->thread);
	struct qemu_cpu *c;
	uint64_t rip;
	int ret;

	if (cpu < 0) {
		msg_fmt(q->err, sizeof(q->err),
			"gdbstub: a stop of thread %d, which is no vCPU of this VM (%u threads)",
			st->thread, q->t.nr_cpus);
		return -EPROTO;
	}
	c = &q->vm.cpu[cpu];
	q->stops++;
	if (!q->bp)
		return 0;
	ret = qemu_vm_cpu_regs(&q->vm, (unsigned)cpu);
	if (ret < 0)
		return gdb_failed(q, "registers", ret);
	rip = arch_regs_ip(q->t.arch, &c->regs);
	ret = q->bp(q->bp_ctx, (unsigned)cpu, rip, &c->regs, at_ns);
	if (ret < 0)
		return 0; /* not ours (an interrupt, another debugger's stop) */
	q->hits++;
	if (ret == TARGET_BP_IN_PLACE) { /* an entry probe: the instruction under it runs now */
		arch_regs_set_ip(q->t.arch, &c->regs, rip);
		return step_over(q, c);
	}
	if (arch_regs_ip(q->t.arch, &c->regs) == rip)
		return 0; /* the breakpoint again (the trampoline for a tail call's second frame) */
	if (arch_regs_ip(q->t.arch, &c->regs) == rip + q->t.arch->site_len &&
	    rip != q->t.trampoline && !nop5_at(q, (unsigned)cpu, rip)) {
		arch_regs_set_ip(q->t.arch, &c->regs, rip);
		q->nop5_refused++;
		return step_over(q, c);
	}
	c->rip_dirty = true;
	return 0;
}

void target_qemu_set_tcg(struct target_qemu *q, bool tcg)
{
	q->tcg = tcg;
}

void target_qemu_set_hold(struct target_qemu *q, bool (*hold)(void *ctx), void *ctx)
{
	q->hold = hold;
	q->hold_ctx = ctx;
}

enum qemu_run_end target_qemu_run(struct target_qemu *q, bool (*should_stop)(void *ctx), void *ctx)
{
	uint64_t stopped_at = 0; /* when the stop being handled was received */
	uint64_t held_since = 0; /* when the VM was stopped for q->hold (0: it is not) */

	for (;;) {
		struct gdb_stop st;
		bool stop = should_stop(ctx);
		int ret;

		if (held_since && (stop || !q->hold(q->hold_ctx))) {
			q->hold_ns += clock_now_ns() - held_since;
			held_since = 0;
		}
		if (stop) {
			ret = qemu_vm_stop(&q->vm);
			if (ret == 0)
				return QEMU_RUN_STOP_ASKED;
			if (ret == -ESRCH || ret == -ECONNRESET)
				return QEMU_RUN_GUEST_GONE;
			gdb_failed(q, "stopping the VM", ret);
			return QEMU_RUN_ERROR;
		}
		if (!held_since && q->hold && q->hold(q->hold_ctx)) {
			/* the stub drain is behind: the VM waits for it (no record lost) */
			ret = qemu_vm_stop(&q->vm);
			if (ret == -EINTR)
				continue; /* a signal: should_stop says so next */
			if (ret == -ESRCH || ret == -ECONNRESET)
				return QEMU_RUN_GUEST_GONE;
			if (ret < 0) {
				gdb_failed(q, "stopping the VM for the stub drain", ret);
				return QEMU_RUN_ERROR;
			}
			held_since = clock_now_ns();
			q->holds++;
			if (stopped_at) {
				q->held_ns += held_since - stopped_at;
				stopped_at = 0;
			}
		}
		if (held_since) {
			struct timespec ts = {0, HOLD_WAIT_NS};

			nanosleep(&ts, NULL);
			continue;
		}
		if (q->vm.stopped) {
			ret = qemu_vm_resume(&q->vm);
			if (!q->vm.stopped && stopped_at) {
				q->held_ns += clock_now_ns() - stopped_at;
				stopped_at = 0;
			}
			if (ret == -ECONNABORTED || (ret < 0 && !q->vm.stopped && ret != -EINTR)) {
				gdb_failed(q, "continuing", ret);
				return QEMU_RUN_ERROR;
			}
			if (ret < 0 && q->vm.stopped)
				return QEMU_RUN_GUEST_GONE;
		}
		ret = gdb_wait_stop(q->vm.gdb, q->hold ? HOLD_POLL_MS : POLL_MS, &st);
		if (ret == -ETIMEDOUT || ret == -EINTR)
			continue; /* a stop asked: should_stop says so next */
		if (ret == -EPROTO || ret == -ECONNABORTED) {
			gdb_failed(q, "waiting for a stop", ret);
			return QEMU_RUN_ERROR;
		}
		if (ret < 0 || st.kind != GDB_STOP_SIGNAL)
			return QEMU_RUN_GUEST_GONE;
		stopped_at = clock_now_ns();
		q->vm.stopped = true;
		/* QEMU's gdbstub stops with SIGQUIT when the guest shuts down (RUN_STATE_SHUTDOWN),
		 * which -no-shutdown turns into a stopped VM that cannot run again */
		if (q->no_shutdown && st.code == GDB_SIGNAL_QUIT)
			return QEMU_RUN_GUEST_OFF;
		/* asked to end meanwhile: the stop is left unhandled (a guest that reset stops at a
		 * stale breakpoint in its new boot, which is no probe's function) */
		if (should_stop(ctx))
			continue;
		ret = handle_stop(q, &st, stopped_at);
		if (ret < 0 && ret != -EINTR) {
			if (q->vm.stopped)
				qemu_vm_flush_rips(&q->vm);
			return QEMU_RUN_ERROR;
		}
	}
}

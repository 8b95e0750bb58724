/* How a QEMU run ends (backend_qemu.c's wait and detach): the detach that restores the guest,
 * --verify-text's verdict, the guardian's takeover when hvtrace died, a guest that reset, and the
 * status from what happened to the guest. Main thread (the takeover: the guardian process). */
#include "host/qemu/backend_qemu_int.h"
#include "host/vmm/gdbstub.h"
#include "host/vmm/tcp.h"
#include "host/session/cmd_out.h"
#include "host/session/end_status.h"
#include "host/session/exitcode.h"
#include "host/trace/clock.h"
#include "host/util/peer_text.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

bool qemu_run_signalled(struct linux_run *r)
{
	struct pollfd p = {.fd = r->sfd, .events = POLLIN};
	struct signalfd_siginfo si;

	if (r->sig)
		return true;
	if (poll(&p, 1, 0) == 1 && read(r->sfd, &si, sizeof(si)) == sizeof(si))
		r->sig = (int)si.ssi_signo;
	return r->sig != 0;
}

/* @a as "symbol+0xoff" (or the bare address) for messages. */
static const char *sym_at(const struct linux_run *r, uint64_t a, char *buf, size_t len)
{
	const struct vmi_sym *f = vmi_symtab_lookup(&r->l.funcs, a);

	if (f)
		snprintf(buf, len, "%s+0x%llx", f->name, (unsigned long long)(a - f->addr));
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)a);
	return buf;
}

/* --verify-text: the kernel text read again (VM stopped, probes out) against the copy from just
 * before the first patch. A byte hvtrace may have written that differs fails the run; what the
 * kernel patched in its own text meanwhile is only reported. */
static void verify_text(struct linux_run *r)
{
	struct text_verdict v;
	char at[160];

	const struct tracer *t = pipeline_tracer(r->p);

	if (text_verify_end(&r->text, tracer_arch(t), target_qemu_read_kernel, &r->tq,
			    tracer_probes(t), tracer_trampoline(t), &v) < 0) {
		cmd_error("--verify-text: cannot read the kernel text after detach");
		r->text_changed = true;
		return;
	}
	if (v.ours) {
		cmd_error(
		    "--verify-text: kernel text differs after detach at %s (0x%llx): %02x, was "
		    "%02x, a byte hvtrace patched (%zu such bytes)",
		    sym_at(r, v.ours_at, at, sizeof(at)), (unsigned long long)v.ours_at, v.ours_now,
		    v.ours_was, v.ours);
		r->text_changed = true;
	} else if (v.kernel) {
		fprintf(stderr,
			"hvtrace: --verify-text: kernel text unchanged where hvtrace patched (%zu "
			"probes%s); the kernel itself changed %zu bytes in %zu places since attach "
			"(first at %s)\n",
			probe_count(tracer_probes(t)),
			tracer_trampoline(t) ? " and the trampoline" : "", v.kernel, v.kernel_runs,
			sym_at(r, v.kernel_at, at, sizeof(at)));
	} else {
		fprintf(stderr, "hvtrace: --verify-text: kernel text unchanged (%zu bytes)\n",
			v.len);
	}
}

/* In the guardian, after hvtrace died: stop the VM, take over the gdbstub connection, restore the
 * guest as tracer_detach does (the shadow stacks are shared memory), and detach, which makes QEMU
 * drop every breakpoint and resume. */
void qemu_run_guardian_takeover(void *ctx)
{
	struct linux_run *r = ctx;
	struct gdb fresh;
	char c = 0x03, buf[4096], err[256];
	int fd = r->qc.gdb.fd;

	tcp_set_interrupt(-1); /* the signalfd is hvtrace's: nothing may cut this short */
	if (write(fd, &c, 1) != 1)
		return;
	usleep(300000);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (int i = 0; i < 256 && read(fd, buf, sizeof(buf)) > 0; i++)
		; /* what the dead process left unread: 1 MiB at most (a stub may flood) */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (gdb_attach_fd(&fresh, fd, err, sizeof(err)) < 0) {
		dprintf(2, "hvtrace guardian: %s\n", err);
		return;
	}
	target_qemu_adopt(&r->tq, &fresh);
	if (pipeline_has_tracer(r->p))
		pipeline_takeover_detach(r->p);
	gdb_detach(&fresh);
	r->qc.have_gdb = false; /* detached and closed as fresh */
	dprintf(2, "hvtrace guardian: hvtrace died; probes removed, return slots restored, VM "
		   "resumed\n");
	if (qemu_attach_takeover_stop_gdbstub(&r->qc, err, sizeof(err)) < 0)
		dprintf(2, "hvtrace guardian: %s\n", err);
	qemu_attach_takeover_end_qemu(&r->qc); /* a launched QEMU: quit, its sockets removed */
}

/* The gdbstub detach (QEMU drops every breakpoint and lets the VM run) and the gdbstub stopped
 * where hvtrace started it. */
static void let_go(struct linux_run *r)
{
	char err[320];

	if (r->qc.have_gdb) {
		target_qemu_leave_phys_mode(&r->tq);
		gdb_detach(&r->qc.gdb);
	}
	if (qemu_attach_stop_gdbstub(&r->qc, err, sizeof(err)) < 0)
		cmd_error("%s", err);
	r->detached = true;
}

/* Removes every probe, restores every return slot, and lets the VM go (gdbstub detach). */
void qemu_run_detach(struct linux_run *r)
{
	int ret;

	if (r->detached)
		return;
	tcp_set_interrupt(-1); /* the restore runs to its end, each wait with its deadline */
	guardian_stop(&r->guard);
	ret = pipeline_selected(r->p) ? pipeline_detach(r->p) : 0;
	/* -EBUSY: only the stub stays mapped (a vCPU never left it), said where it was found */
	if (ret < 0 && ret != -EBUSY) {
		cmd_error("restoring the guest failed%s%s: some probes or return slots may remain",
			  r->qc.gdb.why[0] ? ": " : "", r->qc.gdb.why);
		r->restore_failed = true;
	}
	if (r->text.before && r->tq.vm.stopped)
		verify_text(r);
	let_go(r);
}

/* The guest reset while traced (QMP's RESET event): the kernel whose text and stacks hvtrace
 * changed is gone, so nothing is written back (it would land in the new boot's memory); the
 * gdbstub detach drops every breakpoint. The VM runs on (attach) or is ended (launched).
 * Returns EXIT_GUEST_FAULT. */
static int abandon_reset_guest(struct linux_run *r)
{
	char reason[sizeof(r->qc.qmp.end_reason) * 4];

	tcp_set_interrupt(-1);
	guardian_stop(&r->guard);
	pipeline_stop_drain(r->p);
	let_go(r);
	if (r->qc.launched)
		qemu_attach_end_qemu(&r->qc);
	cmd_error("the guest reset while traced (%s): the traced kernel is gone; "
		  "breakpoints dropped, nothing written into the new boot",
		  r->qc.qmp.end_reason[0] ? peer_str(r->qc.qmp.end_reason, reason, sizeof(reason))
					  : "QEMU said RESET");
	return EXIT_GUEST_FAULT;
}

/* QEMU ended by itself with status 0: it was launched with -no-reboot, so a guest that reset
 * (a triple fault, or a reboot without "Kernel panic" on the console) ends it as a power-off
 * does. QMP's SHUTDOWN event says which (its "reason", QEMU 4.0 and later; the event may still
 * wait in the socket). 0 for a power-off or when QEMU did not say, else EXIT_GUEST_FAULT. */
static int guest_reset_status(struct linux_run *r)
{
	if (r->qc.have_qmp)
		qmp_drain_events(&r->qc.qmp);
	if (!strcmp(r->qc.qmp.end_reason, "guest-reset")) {
		cmd_error("the guest reset itself instead of powering off (a triple fault, or a "
			  "reboot; see the console)");
		return EXIT_GUEST_FAULT;
	}
	return 0;
}

/* The guest powered off (or reset: -no-reboot) and QEMU, under -no-shutdown, holds it stopped:
 * QEMU told to quit, and the status as if it had exited by itself. */
static int guest_off_status(struct linux_run *r)
{
	qemu_attach_end_qemu(&r->qc);
	if (atomic_load(&r->qc.proc.panic)) {
		cmd_error("the guest kernel panicked (see the console)");
		return EXIT_GUEST_PANIC;
	}
	return guest_reset_status(r);
}

/* After the traced part: what happened to the guest decides the status. */
int qemu_run_finish(struct linux_run *r, enum qemu_run_end how)
{
	const struct session *s = r->s;
	int st;

	if (how == QEMU_RUN_ERROR) {
		cmd_error("gdbstub failed while tracing: %s", r->tq.err);
		return EXIT_QEMU_FAILED;
	}
	if (how == QEMU_RUN_STOP_ASKED && r->guest_reset)
		return abandon_reset_guest(r);
	if (how == QEMU_RUN_STOP_ASKED)
		qemu_run_detach(r);
	else /* nothing left to restore in a VM that is gone or off (its memory, still there when
	      * off, gives the last records and the counting tables) */
		pipeline_stop_drain(r->p);
	r->detached = true;
	if (!r->qc.launched) {
		/* attach: the VM runs on; a detach by signal or --duration is the normal end */
		if (how == QEMU_RUN_GUEST_GONE)
			cmd_error("the VM went away");
		return 0;
	}
	if (r->sig || r->timed_out) {
		qemu_attach_end_qemu(&r->qc);
		if (r->sig)
			return end_status_signal(r->sig);
		return end_status_timeout(s, "QEMU");
	}
	/* powered off under -no-shutdown: QEMU waits to be told to quit */
	if (how == QEMU_RUN_GUEST_OFF)
		return guest_off_status(r);
	/* the guest goes on to power off (after --duration it runs untraced) */
	for (;;) {
		st = qemu_proc_wait(&r->qc.proc, 100);
		if (st != -ETIMEDOUT)
			break;
		/* -no-shutdown: its power-off is QMP's SHUTDOWN event, QEMU staying */
		if (r->tq.no_shutdown && r->qc.have_qmp && qmp_drain_events(&r->qc.qmp) == 0 &&
		    (r->qc.qmp.events & QMP_EV_SHUTDOWN))
			return guest_off_status(r);
		if (atomic_load(&r->qc.proc.panic) || qemu_run_signalled(r) ||
		    (r->timeout_at && clock_now_s() > r->timeout_at))
			break;
	}
	if (st == -ETIMEDOUT) {
		qemu_attach_end_qemu(&r->qc);
		if (r->sig)
			return end_status_signal(r->sig);
		if (!atomic_load(&r->qc.proc.panic))
			return end_status_timeout(s, "QEMU");
	}
	if (atomic_load(&r->qc.proc.panic)) {
		cmd_error("the guest kernel panicked (see the console)");
		return EXIT_GUEST_PANIC;
	}
	if (st != 0) {
		char text[sizeof(r->qc.proc.err_text)];

		cmd_error("QEMU exited with status %d%s%s", st, r->qc.proc.err_text[0] ? ": " : "",
			  peer_str(r->qc.proc.err_text, text, sizeof(text)));
		return EXIT_QEMU_FAILED;
	}
	return guest_reset_status(r);
}


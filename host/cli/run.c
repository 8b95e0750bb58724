#include "host/cli/run.h"
#include "host/cli/cmd_common.h"
#include "host/session/exitcode.h"
#include "host/session/pipeline.h"
#include "host/trace/clock.h"
#include "host/kvm/guest_image.h"
#include "host/kvm/target_kvm.h"
#include "host/kvm/vcpu.h"
#include "host/kvm/vm.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>


int cmd_list_functions(const struct session *s)
{
	struct guest_image g;
	char err[512];
	int werr = 0;

	if (guest_image_open(&g, s->guest, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		return EXIT_BAD_INPUT;
	}
	for (size_t i = 0; i < g.sites.nr && !werr; i++) {
		errno = 0;
		if (printf("%s\n", g.sites.v[i].func->name) < 0)
			werr = errno ? errno : EIO;
	}
	guest_image_close(&g);
	return cmd_finish_out(stdout, NULL, NULL, werr) < 0 ? EXIT_HOST_ERROR : 0;
}



int run_wait_for_end(struct vm *vm, int sfd, double deadline)
{
	for (;;) {
		struct pollfd fds[2] = {{.fd = vm->event_fd, .events = POLLIN},
					{.fd = sfd, .events = POLLIN}};
		int ms = -1;

		if (deadline) {
			double left = deadline - clock_now_s();

			if (left <= 0)
				return -1;
			ms = (int)(left * 1000) + 1;
		}
		if (poll(fds, 2, ms) < 0 && errno != EINTR)
			return 0;
		if (fds[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				return (int)si.ssi_signo;
		}
		if (fds[0].revents & POLLIN)
			return 0;
	}
}

#define HOLD_POLL_S 0.002	/* backpressure: how often the drain is asked while the vCPUs run, */
#define HOLD_WAIT_S 0.0002	/* and while they are held */

/* Backpressure: holds every vCPU (paused, as for a patch) while the stub drain asks for it, up to
 * @deadline (0: none). Counted in the drain's pauses. Returns -1 when the hold ended (or the vCPUs
 * could not be paused), else as run_wait_for_end (a signal: the vCPUs run again first). */
static int hold_vcpus(struct vm *vm, struct pipeline *p, int sfd, double deadline)
{
	struct target *tgt = p->tr.tgt;
	uint64_t t0 = clock_now_ns();
	int r = -1;

	if (tgt->ops->pause(tgt) < 0)
		return -1;
	while (stub_drain_holding(&p->tr.stub) && (!deadline || clock_now_s() < deadline)) {
		r = run_wait_for_end(vm, sfd, clock_now_s() + HOLD_WAIT_S);
		if (r != -1)
			break;
	}
	tgt->ops->resume(tgt);
	stub_drain_count_pauses(&p->tr.stub, 1, clock_now_ns() - t0);
	return r;
}

int run_supervise(struct vm *vm, struct pipeline *p, int sfd, const struct session *s)
{
	double start = clock_now_s();
	double timeout_at = s->timeout > 0 ? start + s->timeout : 0;
	double detach_at = s->duration > 0 ? start + s->duration : 0;
	bool bp = p && p->tr.opts.stub_backpressure && p->tr.stub.nr_probes;

	for (;;) {
		double deadline = timeout_at, tick = bp ? clock_now_s() + HOLD_POLL_S : 0;
		int r;

		if (detach_at && (!deadline || detach_at < deadline))
			deadline = detach_at;
		if (tick && (!deadline || tick < deadline)) {
			r = run_wait_for_end(vm, sfd, tick);
			if (r == -1 && stub_drain_holding(&p->tr.stub))
				r = hold_vcpus(vm, p, sfd, deadline);
			if (r != -1)
				return r;
			if (!deadline || clock_now_s() < deadline)
				continue;
		} else {
			r = run_wait_for_end(vm, sfd, deadline);
		}
		if (r == -1 && detach_at && deadline == detach_at) {
			if (p && pipeline_detach(p) < 0)
				fprintf(stderr, "hvtrace: restoring the patched sites failed\n");
			detach_at = 0;
			continue;
		}
		return r;
	}
}


void run_print_vm_stats(const struct vm *vm)
{
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		exit_stats_print(&vm->vcpus[i].xs, i, stderr);
	fprintf(stderr, "hvtrace: stats: vm pauses %llu paused-ms %llu coalesced-pio %llu\n",
		(unsigned long long)vm->pauses, (unsigned long long)(vm->paused_ns / 1000000),
		(unsigned long long)vm->pio_coalesced);
}

void run_print_stats(void *ctx, const struct pipeline *p)
{
	const struct vm *vm = ctx;
	const unsigned long long *events = p->w.events;
	const struct tracer *t = &p->tr;
	struct tracer_stats st;

	tracer_stats(t, &st);
	fprintf(stderr,
		"hvtrace: stats: probes %zu restored-slots %llu orphan-returns %llu "
		"interrupted-returns %llu\n",
		st.probes, st.restored_slots, st.orphan_returns, st.interrupted_returns);
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		fprintf(stderr,
			"hvtrace: stats: cpu%u events %llu exits %llu bp-exits debug %llu emulation %llu "
			"shutdown %llu ring-stalls %llu lost %llu translations %llu cached %llu walked\n",
			i, events ? events[i] : 0, (unsigned long long)vm->vcpus[i].exits,
			(unsigned long long)vm->vcpus[i].bp_exits[VCPU_BP_DEBUG],
			(unsigned long long)vm->vcpus[i].bp_exits[VCPU_BP_EMULATION],
			(unsigned long long)vm->vcpus[i].bp_exits[VCPU_BP_SHUTDOWN],
			tracer_cpu_stalls(t, i), tracer_cpu_lost(t, i),
			(unsigned long long)vm->vcpus[i].tlb.hits,
			(unsigned long long)vm->vcpus[i].tlb.walks);
	run_print_vm_stats(vm);
	pipeline_print_stub_stats(p);
	if (st.stub_probes) {
		for (unsigned i = 0; i < vm->nr_vcpus; i++)
			fprintf(stderr, "hvtrace: stats: cpu%u stub-events %llu\n", i,
				events ? events[vm->nr_vcpus + i] : 0);
	}
}

int run_end_status(const struct vm *vm, int sig, const struct session *s)
{
	if (sig > 0) {
		cmd_error("stopped by SIG%s", sigabbrev_np(sig));
		return EXIT_SIGNAL_BASE + sig;
	}
	if (sig < 0) {
		cmd_error("--timeout %g: the guest was stopped after %g s", s->timeout, s->timeout);
		return EXIT_TIMEOUT;
	}
	switch (vm->end) {
	case VM_END_POWEROFF:
	case VM_END_REBOOT: /* as QEMU's -no-reboot: the guest's own end */
		return 0;
	case VM_END_PANIC:
		cmd_error("%s", vm->end_msg);
		return EXIT_GUEST_PANIC;
	case VM_END_GUEST_EXIT:
		if (vm->end_status && !(vm->end_status & 0xff))
			return 1;
		return vm->end_status & 0xff;
	case VM_END_HALTED:
	case VM_END_FAULT:
		cmd_error("%s", vm->end_msg);
		return EXIT_GUEST_FAULT;
	default:
		cmd_error("%s", vm->end_msg);
		return EXIT_HOST_ERROR;
	}
}

int cmd_run(const struct session *s)
{
	struct guest_image g;
	struct pipeline p;
	FILE *out = NULL, *con = NULL;
	struct vm vm;
	struct target tgt;
	char err[512];
	sigset_t old;
	int sfd = -1, sig, status = EXIT_BAD_INPUT, out_err = 0, con_err = 0;
	bool vm_made = false, selected = false;

	if (guest_image_open(&g, s->guest, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		return EXIT_BAD_INPUT;
	}
	sfd = cmd_block_signals(&old);
	if (sfd < 0) {
		cmd_error("signalfd: %s", strerror(-sfd));
		status = EXIT_HOST_ERROR;
		goto out;
	}
	status = pipeline_select(&p, s, &g.sites, NULL, 0, err, sizeof(err));
	selected = true;
	if (status) {
		cmd_error("%s", err);
		goto out;
	}
	status = EXIT_BAD_INPUT;
	out = cmd_open_out(s->output, "-o");
	con = cmd_open_out(s->console, "--console");
	if (!out || !con)
		goto out;

	struct vm_config cfg = {.smp = s->smp, .mem_mb = s->mem_mb, .console = con};
	bool no_trap;

	if (cmd_check_int3(s, false, &no_trap, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		goto out;
	}
	status = EXIT_HOST_ERROR;
	if (vm_create(&vm, &cfg, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		goto out;
	}
	vm_made = true;
	if (vm_load_elf(&vm, &g.elf, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		status = EXIT_BAD_INPUT;
		goto out;
	}
	target_kvm_init(&tgt, &vm);

	struct pipeline_guest pg = {
		.tgt = &tgt,
		.task = &g.task,
		.funcs = &g.elf.funcs,
		.no_trampoline = "this target has no return trampoline",
		.backpressure = !s->no_backpressure,
	};

	pg.no_trap = no_trap;
	/* the stub's CPU number: RDTSCP's IA32_TSC_AUX, which the VMM set to each vCPU's index, else
	 * CPUID's APIC ID, also the vCPU's index (this host's PVM has no RDTSCP: docs/pvm-cpu.md) */
	g.task.cpu_aux_mask = vm.tsc_aux ? ~0u : 0;
	g.task.cpu_apic_id = vm.cpuid_apic_id;
	if (cmd_probe_mode(s, &tgt, &g.task, NULL, no_trap, &pg.stub, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		status = EXIT_BAD_INPUT;
		goto out;
	}
	status = pipeline_build(&p, &pg, out, err, sizeof(err));
	if (!status)
		status = pipeline_start(&p, EXIT_BAD_INPUT, err, sizeof(err));
	if (status) {
		cmd_error("%s", err);
		goto out;
	}
	status = EXIT_HOST_ERROR;
	if (vcpu_start_all(&vm, err, sizeof(err)) < 0) {
		cmd_error("%s", sfd < 0 ? strerror(errno) : err);
		goto out;
	}
	sig = run_supervise(&vm, &p, sfd, s);
	/* From now on a signal cuts the rest of the trace short (it still ends with its trailer);
	 * without the watcher, a signal waits until the end */
	(void)pipeline_run_ended(&p, sfd);
	/* a signal or --timeout is said now, not after the rest of the trace is written */
	if (sig)
		status = run_end_status(&vm, sig, s);
	/* Teardown: probes out with the vCPUs paused, then the VM stops. */
	if (pipeline_detach(&p) < 0)
		cmd_error("restoring the patched sites failed");
	vcpu_join_all(&vm);
	if (!sig)
		status = run_end_status(&vm, sig, s);
out:
	if (selected)
		pipeline_detach(&p);
	if (vm_made)
		vcpu_join_all(&vm);
	if (selected) {
		status = pipeline_finish(&p, status, run_print_stats, &vm);
		out_err = p.sink.err;
		pipeline_free(&p);
	}
	if (vm_made) {
		con_err = vm.console_err;
		vm_destroy(&vm);
	}
	if (sfd >= 0)
		close(sfd);
	/* a trace or console that could not be written: one line (one for both on stdout), exit 4
	 * unless something else failed first */
	if (!out_err && out == con)
		out_err = con_err;
	if (out && cmd_finish_out(out, s->output, "-o", out_err) && !status)
		status = EXIT_HOST_ERROR;
	if (con && con != out && cmd_finish_out(con, s->console, "--console", con_err) && !status)
		status = EXIT_HOST_ERROR;
	fflush(stdout);
	guest_image_close(&g);
	/* last: a signal still pending (one that came after the watcher stopped) ends hvtrace only
	 * once every output is complete */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return status;
}

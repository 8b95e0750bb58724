#include "host/cli/run.h"
#include "host/cli/events.h"
#include "host/cli/cmd_common.h"
#include "host/cli/exitcode.h"
#include "host/trace/clock.h"
#include "host/trace/filter.h"
#include "host/kvm/guest_image.h"
#include "host/out/profile.h"
#include "host/out/sink.h"
#include "host/kvm/target_kvm.h"
#include "host/trace/tracer.h"
#include "host/kvm/vcpu.h"
#include "host/kvm/vm.h"
#include "host/out/writer.h"

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

	if (guest_image_open(&g, s->guest, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		return EXIT_BAD_INPUT;
	}
	for (size_t i = 0; i < g.sites.nr; i++)
		printf("%s\n", g.sites.v[i].func->name);
	guest_image_close(&g);
	return fflush(stdout) ? EXIT_HOST_ERROR : 0;
}



/* Waits for the VM to end, a signal, or the absolute time @deadline (0: none). Returns 0 (VM ended),
 * the signal number, or -1 (deadline). */
static int wait_for_end(struct vm *vm, int sfd, double deadline)
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

/* Runs until the guest ends, a signal or --timeout; --duration detaches the tracer on the way and lets
 * the guest go on untraced. Returns as wait_for_end. */
static int supervise(struct vm *vm, struct tracer *tr, int sfd, const struct session *s)
{
	double start = clock_now_s();
	double timeout_at = s->timeout > 0 ? start + s->timeout : 0;
	double detach_at = s->duration > 0 ? start + s->duration : 0;

	for (;;) {
		double deadline = timeout_at;
		int r;

		if (detach_at && (!deadline || detach_at < deadline))
			deadline = detach_at;
		r = wait_for_end(vm, sfd, deadline);
		if (r == -1 && detach_at && deadline == detach_at) {
			if (tracer_detach(tr) < 0)
				fprintf(stderr, "hvtrace: restoring the patched sites failed\n");
			detach_at = 0;
			continue;
		}
		return r;
	}
}


static void print_stats(const struct vm *vm, const struct tracer *t, const struct writer *w)
{
	fprintf(stderr, "hvtrace: stats: probes %zu restored-slots %llu orphan-returns %llu\n",
		t->probes.nr, (unsigned long long)t->restored_slots,
		(unsigned long long)atomic_load(&t->orphan_returns));
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		fprintf(stderr,
			"hvtrace: stats: cpu%u events %llu exits %llu bp-exits debug %llu emulation %llu "
			"shutdown %llu ring-stalls %llu lost %llu translations %llu cached %llu walked\n",
			i, w->events ? w->events[i] : 0, (unsigned long long)vm->vcpus[i].exits,
			(unsigned long long)vm->vcpus[i].bp_exits[VCPU_BP_DEBUG],
			(unsigned long long)vm->vcpus[i].bp_exits[VCPU_BP_EMULATION],
			(unsigned long long)vm->vcpus[i].bp_exits[VCPU_BP_SHUTDOWN],
			(unsigned long long)t->rings[i].stalls, t->cpu[i].lost,
			(unsigned long long)vm->vcpus[i].tlb.hits,
			(unsigned long long)vm->vcpus[i].tlb.walks);
	cmd_print_stub_stats(t);
	if (t->nr_stub_probes) {
		for (unsigned i = 0; i < vm->nr_vcpus; i++)
			fprintf(stderr, "hvtrace: stats: cpu%u stub-events %llu\n", i,
				w->events ? w->events[vm->nr_vcpus + i] : 0);
	}
}

/* Exit status and message for how the VM ended. */
static int end_status(const struct vm *vm, int sig, const struct session *s)
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
	const struct vmi_site **sel = NULL;
	size_t nr_sel = 0, nr_traced = 0;
	bool *traced = NULL;
	FILE *out = NULL, *con = NULL;
	struct vm vm;
	struct target tgt;
	struct tracer tr;
	struct sink sink;
	struct writer w = {0};
	char err[512];
	sigset_t old;
	int sfd = -1, sig, status = EXIT_BAD_INPUT, ret;
	bool vm_made = false, tr_made = false, writing = false, profiling = false;
	struct profile prof;

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
	if (s->tracer != TRACER_NOP || s->nr_filter || s->nr_notrace) {
		if (filter_select(&g.sites, s->filter, s->nr_filter, s->notrace, s->nr_notrace, &sel,
				  &nr_sel, err, sizeof(err)) < 0) {
			cmd_error("%s", err);
			goto out;
		}
	}
	if (s->tracer == TRACER_NOP)
		nr_sel = 0;
	nr_traced = nr_sel;
	if (events_select(s, &g.sites, &sel, &nr_sel, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		goto out;
	}
	out = cmd_open_out(s->output, "-o");
	con = cmd_open_out(s->console, "--console");
	if (!out || !con)
		goto out;

	struct vm_config cfg = {.smp = s->smp, .mem_mb = s->mem_mb, .console = con};

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
	bool stub;

	if (cmd_probe_mode(s, &tgt, &g.task, NULL, &stub, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		status = EXIT_BAD_INPUT;
		goto out;
	}
	struct tracer_opts opts = {
		.stub = stub,
		.returns = s->tracer == TRACER_FUNCTION_GRAPH || s->nr_rprobes,
		.hook_all = s->tracer == TRACER_FUNCTION_GRAPH,
		.graph_filter = s->nr_graph > 0,
		.lazy = s->nr_graph > 0, /* trap probes only (tracer_init) */
		.max_depth = s->max_depth,
		.ring_records = (uint64_t)s->buffer_size_kb * 1024 / sizeof(struct hvt_record),
	};

	ret = tracer_init(&tr, &tgt, sel, nr_sel, &g.task, &opts);
	if (ret < 0) {
		cmd_error("%s", ret == -ENOTSUP ? "this target has no return trampoline"
						 : "out of memory for the trace buffers");
		goto out;
	}
	tr_made = true;
	traced = calloc(nr_sel ? nr_sel : 1, sizeof(*traced));
	for (size_t i = 0; traced && i < nr_traced; i++)
		traced[i] = true;
	if (!traced || events_bind(s, &tr, traced) < 0) {
		cmd_error("out of memory for event buffers");
		goto out;
	}
	if (cmd_mark_graph_roots(&tr, s, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		status = EXIT_BAD_INPUT;
		goto out;
	}
	if (tracer_attach(&tr, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		status = EXIT_BAD_INPUT;
		goto out;
	}
	if (s->tracer == TRACER_FUNCTION_GRAPH)
		ret = sink_graph_init(&sink, out, &g.elf.funcs, vm.nr_vcpus, s->funcgraph_retval,
				      s->funcgraph_tail);
	else
		sink_function_init(&sink, out, &g.elf.funcs, vm.nr_vcpus);
	sink.tracer = tracer_name(s->tracer);
	sink.event_of = tracer_event_of;
	sink.ret_event_of = tracer_ret_event_of;
	sink.event_ctx = &tr;
	if (s->profile) {
		if (profile_init(&prof, &tr.probes) < 0) {
			cmd_error("out of memory");
			goto out;
		}
		profiling = true;
		w.tap = profile_add;
		w.tap_ctx = &prof;
	}
	ret = writer_start(&w, tr.rings, tr.nr_rings, &sink, tracer_horizon, &tr);
	if (ret < 0) {
		cmd_error("writer thread: %s", strerror(-ret));
		goto out;
	}
	writing = true;

	if (vcpu_start_all(&vm, err, sizeof(err)) < 0) {
		cmd_error("%s", sfd < 0 ? strerror(errno) : err);
		goto out;
	}
	sig = supervise(&vm, &tr, sfd, s);
	/* Teardown: probes out with the vCPUs paused, then the VM stops. */
	if (tracer_detach(&tr) < 0)
		cmd_error("restoring the patched sites failed");
	vcpu_join_all(&vm);
	status = end_status(&vm, sig, s);
out:
	if (tr_made)
		tracer_detach(&tr);
	if (vm_made)
		vcpu_join_all(&vm);
	if (writing) {
		writer_stop(&w, tracer_lost(&tr));
		if (s->stats)
			print_stats(&vm, &tr, &w);
		if (profiling)
			profile_print(&prof, &tr, stderr);
		writer_free(&w);
	}
	if (profiling)
		profile_free(&prof);
	if (tr_made)
		tracer_free(&tr);
	if (vm_made)
		vm_destroy(&vm);
	if (sfd >= 0)
		close(sfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (out && out != stdout && fclose(out) && !status)
		status = EXIT_HOST_ERROR;
	if (con && con != stdout)
		fclose(con);
	fflush(stdout);
	free(sel);
	free(traced);
	guest_image_close(&g);
	return status;
}

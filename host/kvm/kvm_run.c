#include "host/kvm/kvm_run.h"
#include "host/hosttrace/tsc_follow.h"
#include "host/kvm/vcpu.h"
#include "host/hosttrace/host_rec.h"
#include "host/session/cmd_out.h"
#include "host/session/end_status.h"
#include "host/session/entry_sites.h"
#include "host/session/exitcode.h"
#include "host/trace/clock.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

int kvm_run_wait_for_end(struct vm *vm, int sfd, double deadline)
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

#define HOLD_POLL_S 0.002  /* backpressure: how often the drain is asked while the vCPUs run, */
#define HOLD_WAIT_S 0.0002 /* and while they are held */

/* Backpressure: holds every vCPU (paused, as for a patch) while the stub drain asks for it, up to
 * @deadline (0: none). Counted in the drain's pauses. Returns -1 when the hold ended (or the vCPUs
 * could not be paused), else as kvm_run_wait_for_end (a signal: the vCPUs run again first). */
static int hold_vcpus(struct vm *vm, struct pipeline *p, int sfd, double deadline)
{
	struct target *tgt = pipeline_target(p);
	uint64_t t0 = clock_now_ns();
	int r = -1;

	if (tgt->ops->pause(tgt) < 0)
		return -1;
	while (pipeline_drain_holding(p) && (!deadline || clock_now_s() < deadline)) {
		r = kvm_run_wait_for_end(vm, sfd, clock_now_s() + HOLD_WAIT_S);
		if (r != -1)
			break;
	}
	tgt->ops->resume(tgt);
	pipeline_count_pauses(p, 1, clock_now_ns() - t0);
	return r;
}

int kvm_run_supervise(struct vm *vm, struct pipeline *p, int sfd, const struct session *s)
{
	double start = clock_now_s();
	double timeout_at = s->timeout > 0 ? start + s->timeout : 0;
	double detach_at = s->duration > 0 ? start + s->duration : 0;
	bool bp = p && pipeline_backpressure(p);

	for (;;) {
		double deadline = timeout_at, tick = bp ? clock_now_s() + HOLD_POLL_S : 0;
		int r;

		if (detach_at && (!deadline || detach_at < deadline))
			deadline = detach_at;
		if (tick && (!deadline || tick < deadline)) {
			r = kvm_run_wait_for_end(vm, sfd, tick);
			if (r == -1 && pipeline_drain_holding(p))
				r = hold_vcpus(vm, p, sfd, deadline);
			if (r != -1)
				return r;
			if (!deadline || clock_now_s() < deadline)
				continue;
		} else {
			r = kvm_run_wait_for_end(vm, sfd, deadline);
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

void kvm_run_print_vm_stats(const struct vm *vm)
{
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		exit_stats_print(&vm->vcpus[i].xs, i, stderr);
	uint64_t moves = 0, lost = 0, old = 0;

	if (vm->follow)
		tsc_follow_counts(vm->follow, &moves, &lost, &old);
	fprintf(stderr,
		"hvtrace: stats: vm pauses %llu paused-ms %llu coalesced-pio %llu tsc-offset %s "
		"tsc-skew-us %lld tsc-follow %s tsc-moves %llu tsc-moves-lost %llu "
		"tsc-too-old %llu guest-debug %s bp-given-back %llu\n",
		(unsigned long long)vm->pauses, (unsigned long long)(vm->paused_ns / 1000000),
		(unsigned long long)vm->pio_coalesced, vm->tsc_shared ? "shared" : "per-vcpu",
		vm_tsc_skew_us(vm), vm->follow ? "on" : "off", (unsigned long long)moves,
		(unsigned long long)lost, (unsigned long long)old, vm->guest_debug ? "on" : "off",
		(unsigned long long)atomic_load(&vm->bp_reinjected));
}

void kvm_run_print_stats(const struct vm *vm, const struct pipeline *p)
{
	const unsigned long long *events = pipeline_cpu_events(p);
	const struct tracer *t = pipeline_tracer(p);
	struct tracer_stats st;

	tracer_stats(t, &st);
	fprintf(stderr,
		"hvtrace: stats: probes %zu restored-slots %llu orphan-returns %llu "
		"interrupted-returns %llu detached-at-us %lld\n",
		st.probes, st.restored_slots, st.orphan_returns, st.interrupted_returns,
		st.detached_us);
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		fprintf(stderr,
			"hvtrace: stats: cpu%u events %llu exits %llu bp-exits debug %llu "
			"emulation %llu "
			"shutdown %llu ring-stalls %llu lost %llu translations %llu cached %llu "
			"walked\n",
			i, events ? events[i] : 0, (unsigned long long)vm->vcpus[i].exits,
			(unsigned long long)vm->vcpus[i].bp_exits[VCPU_BP_DEBUG],
			(unsigned long long)vm->vcpus[i].bp_exits[VCPU_BP_EMULATION],
			(unsigned long long)vm->vcpus[i].bp_exits[VCPU_BP_SHUTDOWN],
			tracer_cpu_stalls(t, i), tracer_cpu_lost(t, i),
			(unsigned long long)vm->vcpus[i].tlb.hits,
			(unsigned long long)vm->vcpus[i].tlb.walks);
	kvm_run_print_vm_stats(vm);
	pipeline_print_stub_stats(p);
	if (st.stub_probes) {
		for (unsigned i = 0; i < vm->nr_vcpus; i++)
			fprintf(stderr, "hvtrace: stats: cpu%u stub-events %llu\n", i,
				events ? events[vm->nr_vcpus + i] : 0);
	}
}

int kvm_run_end_status(const struct vm *vm, int sig, const struct session *s)
{
	if (sig > 0) {
		return end_status_signal(sig);
	}
	if (sig < 0) {
		return end_status_timeout(s, "the guest");
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

static int kvm_run_open(void *ctx, char *err, size_t errlen)
{
	struct kvm_run_state *k = ctx;

	return k->guest->open(ctx, err, errlen);
}

static int kvm_run_prepare(void *ctx, int sfd, FILE *out, FILE *con, char *err, size_t errlen)
{
	struct kvm_run_state *k = ctx;
	const struct session *s = k->env.s;

	(void)sfd;
	/* record --host: the host's tracefs and the events asked for, before the VM is made */
	if (s->host && host_rec_check((const char *const *)s->host_events, s->nr_host_events, err,
				      errlen) < 0)
		return EXIT_BAD_INPUT;
	return k->guest->prepare(ctx, out, con, err, errlen);
}

/* Follows each vCPU's TSC offset (tsc_follow) where the host's TSC can move it, from before the
 * vCPUs first run: the host's moves of the vCPU threads @tids and of this thread, each vCPU seeded
 * with its offset now. Best effort: a host where it cannot be done gets one line, and stub records
 * keep the one anchor. While the vCPUs are parked. */
static void follow_tsc(struct vm *vm, const int *tids)
{
	int all[HOST_REC_MAX_VCPUS + 1];
	char err[256];
	uint64_t off;
	int r;

	memcpy(all, tids, vm->nr_vcpus * sizeof(*tids));
	all[vm->nr_vcpus] = (int)gettid();
	if (tsc_follow_start(&vm->follow, all, vm->nr_vcpus + 1, vm->nr_vcpus, err,
			     sizeof(err)) < 0) {
		fprintf(stderr,
			"hvtrace: the host's TSC is not stable and its moves of the vCPUs' TSC "
			"offsets cannot be followed (%s): stub timestamps may be off between "
			"vCPUs and against the host\n",
			err);
		return;
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		if ((r = vm_tsc_offset(vm, i, &off)) < 0) {
			fprintf(stderr,
				"hvtrace: the host's TSC is not stable, and vCPU %u's TSC offset "
				"cannot be read (KVM_VCPU_TSC_OFFSET, Linux 5.16 and later: %s): "
				"stub timestamps may be off between vCPUs and against the host\n",
				i, strerror(-r));
			tsc_follow_close(vm->follow);
			vm->follow = NULL;
			return;
		}
		tsc_follow_seed(vm->follow, i, off);
	}
}

/* The vCPU threads are started; with record --host, or where the vCPUs' TSC offsets are followed,
 * they park before their first KVM_RUN until the host's recording, filtered to their thread ids,
 * has begun. */
static int kvm_run_start(void *ctx, char *err, size_t errlen)
{
	struct kvm_run_state *k = ctx;
	const struct session *s = k->env.s;
	int tids[HOST_REC_MAX_VCPUS], status = 0;
	bool follow = tsc_follow_wanted();
	const char *name;

	if (!s->host && !follow)
		return vcpu_start_all(&k->vm, err, errlen) < 0 ? EXIT_HOST_ERROR : 0;
	if (k->vm.nr_vcpus > HOST_REC_MAX_VCPUS) {
		if (!s->host)
			return vcpu_start_all(&k->vm, err, errlen) < 0 ? EXIT_HOST_ERROR : 0;
		msg_fmt(err, errlen, "--host: more than %d vCPUs", HOST_REC_MAX_VCPUS);
		return EXIT_BAD_INPUT;
	}
	vcpu_pause_all(&k->vm); /* none started: they park at once */
	if (vcpu_start_all(&k->vm, err, errlen) < 0) {
		vcpu_resume_all(&k->vm);
		return EXIT_HOST_ERROR;
	}
	vcpu_pause_all(&k->vm); /* each has its thread id once parked */
	for (unsigned i = 0; i < k->vm.nr_vcpus; i++)
		tids[i] = atomic_load(&k->vm.vcpus[i].tid);
	if (follow)
		follow_tsc(&k->vm, tids);
	if (s->host) {
		name = s->guest ? s->guest : s->kernel ? s->kernel : "hvtrace";
		name = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
		status = pipeline_host_start(k->env.p, tids, k->vm.nr_vcpus, name, err, errlen);
	}
	vcpu_resume_all(&k->vm);
	vcpu_resume_all(&k->vm);
	return status;
}

static int kvm_run_wait(void *ctx, int sfd)
{
	struct kvm_run_state *k = ctx;
	const struct session *s = k->env.s;
	struct pipeline *p = k->env.p;
	bool have_p = pipeline_selected(p);
	int sig = kvm_run_supervise(&k->vm, have_p ? p : NULL, sfd, s), status = 0;

	/* from now on a signal cuts the rest of the trace short (it still ends with its trailer;
	 * without the watcher, a signal waits until the end), and a signal or --timeout is said
	 * now, not after the rest of the trace is written */
	if (have_p)
		(void)pipeline_run_ended(p, sfd);
	if (sig)
		status = kvm_run_end_status(&k->vm, sig, s);
	if (have_p)
		k->guest->ran(ctx);
	vcpu_join_all(&k->vm);
	if (!sig)
		status = kvm_run_end_status(&k->vm, sig, s);
	return status;
}

static int kvm_run_detach(void *ctx, int status)
{
	struct kvm_run_state *k = ctx;

	if (pipeline_selected(k->env.p) && !k->detached)
		pipeline_detach(k->env.p);
	if (k->vm_made)
		vcpu_join_all(&k->vm);
	return status;
}

static void kvm_run_stats(void *ctx, const struct pipeline *p)
{
	struct kvm_run_state *k = ctx;

	kvm_run_print_stats(&k->vm, p);
}

static void kvm_run_stats_alone(void *ctx)
{
	struct kvm_run_state *k = ctx;

	if (k->vm_made)
		kvm_run_print_vm_stats(&k->vm);
}

static int kvm_run_close(void *ctx)
{
	struct kvm_run_state *k = ctx;
	int con_err = 0;

	tsc_follow_close(k->vm.follow);
	k->vm.follow = NULL;
	if (k->vm_made) {
		con_err = k->vm.console_err;
		vm_destroy(&k->vm);
	}
	k->guest->close(ctx);
	free(ctx);
	return con_err;
}

static const struct backend_ops kvm_ops = {
    .open = kvm_run_open,
    .prepare = kvm_run_prepare,
    .start = kvm_run_start,
    .wait = kvm_run_wait,
    .detach = kvm_run_detach,
    .stats = kvm_run_stats,
    .stats_alone = kvm_run_stats_alone,
    .close = kvm_run_close,
};

int kvm_run_new(struct backend *b, const struct backend_env *env, const struct kvm_guest_ops *guest,
		size_t size)
{
	struct kvm_run_state *k = calloc(1, size); /* a bzImage's is large (sites, symbols) */

	if (!k)
		return -ENOMEM;
	k->env = *env;
	k->guest = guest;
	b->ops = &kvm_ops;
	b->ctx = k;
	return 0;
}

int kvm_run_refuse_entry_probes(const struct session *s, struct vmi_sites *sites,
				const struct vmi_symtab *funcs, char *err, size_t errlen)
{
	long n = entry_sites_add(arch_get(ARCH_X86_64), s, sites, funcs, NULL, NULL,
				 "a probe at its entry needs QEMU's gdbstub to step the "
				 "instruction under it (run --qemu, attach); run --kernel "
				 "cannot",
				 0, false, err, errlen);

	if (n == -ENOMEM)
		msg_fmt(err, errlen, "out of memory");
	return n == -ENOMEM ? EXIT_HOST_ERROR : n < 0 ? EXIT_BAD_INPUT : 0;
}

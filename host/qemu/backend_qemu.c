#include "host/qemu/backend_qemu.h"
#include "host/qemu/backend_qemu_int.h"
#include "host/hosttrace/host_rec.h"
#include "host/session/entry_sites.h"
#include "host/vmm/gdbstub.h"
#include "host/vmm/guardian.h"
#include "host/qemu/qemu_accel.h"
#include "host/qemu/qemu_attach.h"
#include "host/qemu/qemu_stub_place.h"
#include "host/qemu/qemu_vcpu_threads.h"
#include "host/qemu/target_qemu.h"
#include "host/vmm/tcp.h"
#include "host/session/cmd_out.h"
#include "host/session/cmd_probe.h"
#include "host/session/end_status.h"
#include "host/session/exitcode.h"
#include "host/session/kernel_isa.h"
#include "host/session/sched_boost.h"
#include "host/session/text_verify.h"
#include "host/sink/out_fail.h"
#include "host/trace/clock.h"
#include "host/trace/filter.h"
#include "vmi/vmi_linux.h"
#include "vmi/vmi_linux_find.h"
#include "host/trace/rec_filter.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define BOOT_WAIT_SEC 120 /* how long a booting kernel may take to get its ftrace sites in place   \
			   */
#define MIN_SITES	  1000 /* fewer NOP5 entries: ftrace has not converted the call sites yet */
#define QEMU_EXIT_WAIT_MS 10000
/* -g without -l: probe what the graph functions reach through direct calls, this many calls deep
 * (--max-depth lowers it). Every gdbstub breakpoint slows all of a TCG guest's translation. */
#define GRAPH_STATIC_DEPTH 3



/* The kernel reader of the scans (KASLR, sites): fails with -EINTR once a signal is pending, which
 * ends the scan at once. */
static int read_kernel_or_stop(void *ctx, uint64_t gva, void *buf, size_t len)
{
	struct linux_run *r = ctx;

	return qemu_run_signalled(r) ? -EINTR : target_qemu_read_kernel(&r->tq, gva, buf, len);
}

/* Waits (letting the guest run) until its kernel is up with ftrace's NOPs in place, then reads what
 * the tracer needs: KASLR slide, BTF offsets, sites, task layout. */
static int learn_kernel(struct linux_run *r, struct vmi_task_layout *task, char *err, size_t errlen)
{
	double give_up = clock_now_s() + BOOT_WAIT_SEC;
	size_t last = 0;
	char rel[64], line[4400];
	int ret;

	for (;;) {
		if (!r->l.slid) {
			r->l.arch = r->tq.t.arch;
			r->l.image_hint = target_qemu_kernel_pc(&r->tq);
			ret = vmi_linux_find_symbols(&r->l, r->s->system_map, r->qc.launched,
						     read_kernel_or_stop, r, err, errlen);
			if (ret == -EINVAL || ret == -EINTR || ret == -EMEDIUMTYPE)
				return ret; /* symbols no scan can use; a signal */
		}
		if (r->l.slid) {
			vmi_sites_free(&r->sites);
			ret = vmi_linux_sites(&r->l, read_kernel_or_stop, r, &r->sites);
			/* the same count twice: ftrace is not converting call sites right now;
			 * and where the kernel counts what it converted, it says it is done (on a
			 * host too loaded to give the guest CPU time, 100 ms may pass with no
			 * progress halfway through) */
			if (ret == 0 && r->sites.nr >= MIN_SITES && r->sites.nr == last &&
			    vmi_linux_ftrace_converted(&r->l, read_kernel_or_stop, r) != 0)
				break;
			last = ret == 0 ? r->sites.nr : 0;
		}
		if (clock_now_s() > give_up || qemu_run_signalled(r) ||
		    (r->timeout_at && clock_now_s() > r->timeout_at)) {
			if (!r->l.slid)
				return -ESRCH; /* err says why */
			msg_fmt(err, errlen, "the kernel has only %zu NOP5 function entries",
				r->sites.nr);
			return -ENODATA;
		}
		ret = target_qemu_run_for(&r->tq, 100);
		if (ret == -EINTR)
			return ret;
		if (ret < 0) {
			char why[256] = "";

			if (!r->l.slid) /* err holds why the symbols were not found yet */
				msg_fmt(why, sizeof(why), "%s", err);
			msg_fmt(err, errlen, "%s%s%s%s",
				r->qc.gdb.why[0] ? r->qc.gdb.why
						 : "the guest went away while booting",
				why[0] ? " before hvtrace found its symbols (" : "", why,
				why[0] ? ")" : "");
			return ret;
		}
	}
	if (vmi_linux_read_btf(&r->l, target_qemu_read_kernel, &r->tq, err, errlen) < 0)
		fprintf(stderr, "hvtrace: %s: tasks show as <unknown>-0\n", err);
	else if (vmi_linux_modules(&r->l, target_qemu_read_kernel, &r->tq, err, errlen) < 0)
		fprintf(stderr, "hvtrace: %s: module functions are not traceable\n", err);
	if (r->l.mods.nr) { /* the functions moved: sites again, with the modules' */
		vmi_sites_free(&r->sites);
		ret = vmi_linux_sites(&r->l, target_qemu_read_kernel, &r->tq, &r->sites);
		if (ret < 0) {
			msg_fmt(err, errlen, "reading the kernel text: %s", strerror(-ret));
			return ret;
		}
	}
	vmi_linux_release(&r->l, target_qemu_read_kernel, &r->tq, rel, sizeof(rel));
	vmi_linux_describe_symbols(&r->l, r->s->system_map, rel, line, sizeof(line));
	fprintf(stderr, "hvtrace: %s\n", line);
	if (vmi_linux_task_layout(&r->l, target_qemu_read_kernel, &r->tq, r->tq.t.nr_cpus, task) <
	    0)
		task->unknown = true;
	return 0;
}

/* -g without -l: the graph functions and their static callees (see GRAPH_STATIC_DEPTH), minus -n.
 */
static int select_graph_closure(struct linux_run *r, const struct vmi_site ***sel, size_t *nr_sel,
				char *err, size_t errlen)
{
	const struct session *s = r->s;
	size_t *roots = calloc(r->sites.nr, sizeof(*roots)), nr_roots = 0;
	bool *picked = calloc(r->sites.nr, sizeof(*picked));
	unsigned depth = s->max_depth ? s->max_depth - 1 : GRAPH_STATIC_DEPTH;
	long n;
	int ret = -ENOMEM;

	if (!roots || !picked)
		goto out;
	for (size_t g = 0; g < s->nr_graph; g++) {
		size_t before = nr_roots;

		for (size_t i = 0; i < r->sites.nr; i++)
			if (filter_glob_match(s->graph[g], r->sites.v[i].func->name))
				roots[nr_roots++] = i;
		if (nr_roots == before) {
			msg_fmt(err, errlen, "-g '%s': matches no traceable function", s->graph[g]);
			ret = -ENOENT;
			goto out;
		}
	}
	n = vmi_linux_callees(&r->l, target_qemu_read_kernel, &r->tq, &r->sites, roots, nr_roots,
			      depth, picked);
	if (n < 0)
		goto out;
	*sel = calloc(r->sites.nr ? r->sites.nr : 1, sizeof(**sel));
	*nr_sel = 0;
	if (!*sel)
		goto out;
	for (size_t i = 0; i < r->sites.nr; i++) {
		bool excluded = false;

		for (size_t k = 0; k < s->nr_notrace; k++)
			excluded |= filter_glob_match(s->notrace[k], r->sites.v[i].func->name);
		if (picked[i] && !excluded)
			(*sel)[(*nr_sel)++] = &r->sites.v[i];
	}
	ret = 0;
out:
	free(roots);
	free(picked);
	return ret;
}

/* Entry probes for the functions named without an fentry site (entry_sites_add): trap probes,
 * whatever --probe says. 0 or an exit status with @err. */
static int add_entry_sites(struct linux_run *r, char *err, size_t errlen)
{
	const struct session *s = r->s;
	long n = entry_sites_add(
	    vmi_linux_arch(&r->l), s, &r->sites, &r->l.funcs, target_qemu_read_kernel, &r->tq,
	    r->no_trap ? "a probe at its entry is a trap probe, and INT3 does "
			 "not exit on this host's KVM"
		       : NULL,
	    r->l.fentry, r->sites.nr == 0 /* a kernel built without ftrace */, err, errlen);

	if (n >= 0) {
		inside_sites_free(&r->inside);
		n = inside_sites_build(vmi_linux_arch(&r->l), s, &r->sites, &r->l.funcs,
				       target_qemu_read_kernel, &r->tq,
				       r->no_trap
					   ? "a probe inside a function is a trap probe, and "
					     "INT3 does not exit on this host's KVM"
					   : NULL,
				       &r->inside, err, errlen);
	}

	if (n == -ENOMEM) {
		msg_fmt(err, errlen, "out of memory");
		return EXIT_HOST_ERROR;
	}
	/* stub detours or trap probes: pipeline_build says which */
	return n < 0 ? EXIT_BAD_INPUT : 0;
}

/* Stub detours replace a function's first instructions, and under KVM a gdbstub breakpoint is an
 * INT3 in the guest's memory (under TCG QEMU keeps it out of sight): neither before the kernel has
 * patched its own text (alternatives, return thunks at __fentry__ where the return trampoline's
 * breakpoint goes, sealed ENDBR64s), which it does once, early in boot, whatever is there, and
 * after ftrace has converted its call sites (learn_kernel waits for that). The guest says when with
 * alternatives_patched (a guest without it: no wait). @what names what waits. 0, or an exit status
 * with @err. */
static int wait_text_patched(struct linux_run *r, const char *what, char *err, size_t errlen)
{
	const struct vmi_sym *a = vmi_symtab_find(&r->l.objects, "alternatives_patched");
	double give_up = clock_now_s() + BOOT_WAIT_SEC;
	int32_t done = 0;
	int ret;

	while (a && target_qemu_read_kernel(&r->tq, a->addr, &done, sizeof(done)) == 0 && !done) {
		if (clock_now_s() > give_up || qemu_run_signalled(r) ||
		    (r->timeout_at && clock_now_s() > r->timeout_at)) {
			msg_fmt(
			    err, errlen,
			    "the kernel did not patch its own text (alternatives_patched) in %d s: "
			    "%s",
			    BOOT_WAIT_SEC, what);
			return EXIT_BAD_INPUT;
		}
		ret = target_qemu_run_for(&r->tq, 100);
		if (ret < 0) {
			msg_fmt(err, errlen, "%s",
				r->qc.gdb.why[0] ? r->qc.gdb.why
						 : "the guest went away while booting");
			return ret == -EINTR ? EXIT_BAD_INPUT : EXIT_HOST_ERROR;
		}
	}
	return 0;
}

/* Stub probes write the guest's own text: hvtrace stops where the guest's ftrace is about to check
 * and rewrite its call sites, and where a kprobe reads an instruction, and hands them back there
 * (tracer_set_patchers). */
static void share_with_patchers(struct linux_run *r, bool stub)
{
	struct vmi_patcher ps[4];

	r->nr_patchers = stub ? vmi_linux_text_patchers(&r->l, ps, 4) : 0;
	if (r->nr_patchers && pipeline_set_patchers(r->p, ps, r->nr_patchers) < 0)
		r->nr_patchers = 0;
	r->has_patcher[0] = r->has_patcher[1] = false;
	for (size_t i = 0; i < r->nr_patchers; i++)
		r->has_patcher[ps[i].detours] = true;
}

/* A kind of patcher not found: one line per kind, with how many sites the guest must not touch. */
static void say_no_patchers(struct linux_run *r)
{
	struct tracer_stats st;
	size_t calls;

	tracer_stats(pipeline_tracer(r->p), &st);
	calls = st.stub_probes - st.stub_detours;
	if (calls && !r->has_patcher[0])
		fprintf(stderr,
			"hvtrace: the guest's text patchers (%s) are not in its symbols: its own "
			"tracing (ftrace, kprobes, BPF) must not be turned on while hvtrace holds "
			"these %zu sites\n",
			vmi_linux_patcher_names(false), calls);
	if (st.stub_detours && !r->has_patcher[1])
		fprintf(stderr,
			"hvtrace: the guest's kprobe patcher (%s) is not in its symbols: its own "
			"kprobes must not be placed on the %zu functions hvtrace detours\n",
			vmi_linux_patcher_names(true), st.stub_detours);
}

/* Probes in, rings and writer running. Returns an exit status on error, 0 on success. */
static int start_tracing(struct linux_run *r, const struct vmi_task_layout *task, char *err,
			 size_t errlen)
{
	const struct session *s = r->s;
	struct vmi_task_layout tl = *task;
	struct pipeline_guest pg = {
	    .tgt = &r->tq.t,
	    .task = &tl,
	    .funcs = &r->l.funcs,
	    .no_trampoline = "no __fentry__ in the System.map",
	    .btf = r->l.btf,
	    .no_trap = r->no_trap,
	    .backpressure = !s->no_backpressure,
	    .text_read = target_qemu_read_kernel,
	    .text_ctx = &r->tq,
	};
	const struct vmi_site **sel = NULL;
	size_t nr_sel = 0, nr_sites;
	char why[256] = "";
	int ret;

	tl.has_cpu_gs = vmi_linux_cpu_gs(&r->l, &tl.cpu_gs_off);
	tl.has_preempt_gs = vmi_linux_preempt_gs(&r->l, &tl.preempt_gs_off);
	/* RDTSCP's IA32_TSC_AUX, which Linux sets for vgetcpu, before %gs:cpu_number */
	vmi_linux_tsc_aux(&r->l, target_qemu_read_kernel, &r->tq, &tl.cpu_aux_mask);
	if (s->probe != PROBE_TRAP) {
		qemu_stub_place(&r->stub, &r->tq, &r->l, r->qc.launched, why, sizeof(why));
		/* "stub probes: <reason>" -> "<reason>" after "--probe stub: " */
		ret =
		    cmd_probe_mode(s, &r->tq.t, &tl,
				   *why ? why + (strncmp(why, "stub probes: ", 13) ? 0 : 13) : NULL,
				   r->no_trap, &pg.stub, err, errlen);
		if (ret < 0)
			return EXIT_BAD_INPUT;
	}
	nr_sites = r->sites.nr;
	ret = add_entry_sites(r, err, errlen);
	if (ret)
		return ret;
	if (r->sites.nr > nr_sites && pg.stub && s->cmd != CMD_LIST_FUNCTIONS) {
		ret = wait_text_patched(r, "no stub detour can go in (use --probe trap)", err,
					errlen);
		if (ret)
			return ret;
	}
	if (!r->tq.tcg && s->cmd != CMD_LIST_FUNCTIONS) {
		ret = wait_text_patched(r, "no breakpoint can go in under KVM", err, errlen);
		if (ret)
			return ret;
	}
	/* -g without -l: with stub probes every function is probed and the stub decides in the guest
	 * whether a call lies under a graph function, as set_graph_function does (calls through
	 * function pointers included); with trap probes, whose every breakpoint slows all of TCG,
	 * only what the graph functions reach by direct calls, with one line saying so */
	if (s->nr_graph && !s->nr_filter && s->tracer == TRACER_FUNCTION_GRAPH && !pg.stub) {
		ret = select_graph_closure(r, &sel, &nr_sel, err, errlen);
		if (ret < 0) {
			free(sel);
			return ret == -ENOMEM ? EXIT_HOST_ERROR : EXIT_BAD_INPUT;
		}
		fprintf(stderr,
			"hvtrace: -g with trap probes: the graph holds what its functions reach by "
			"direct calls, %u deep, not calls through function pointers (--probe stub "
			"follows every call)\n",
			s->max_depth ? s->max_depth - 1 : GRAPH_STATIC_DEPTH);
	}
	ret = pipeline_select(r->p, s, &r->sites, &r->inside.sites, sel, nr_sel, err, errlen);
	if (ret)
		return ret;
	r->tq.t.trampoline = r->l.fentry;
	r->tq.t.stack_shift = VMI_LINUX_THREAD_SHIFT;
	ret = pipeline_build(r->p, &pg, r->out, err, errlen);
	if (ret)
		return ret;
	/* record --host: the host's side starts before the first probe */
	if (s->host) {
		int tids[HOST_REC_MAX_VCPUS];
		unsigned n = 0;
		char why2[256];

		if (qemu_vcpu_threads(r->qc.qmp_cmd, r->qc.hmp_ctx, r->qc.pid, tids,
				      HOST_REC_MAX_VCPUS, &n, why2, sizeof(why2)) < 0) {
			msg_fmt(err, errlen, "--host: %s", why2);
			return EXIT_QEMU_FAILED;
		}
		ret = pipeline_host_start(
		    r->p, tids, n, s->attach.domain ? s->attach.domain : "qemu", err, errlen);
		if (ret)
			return ret;
	}
	/* the reference: the text as the kernel has made it so far, just before hvtrace's first
	 * patch */
	if (s->verify_text && text_verify_begin(&r->text, target_qemu_read_kernel, &r->tq,
						r->l.stext, r->l.etext) < 0) {
		msg_fmt(err, errlen, "--verify-text: cannot read the kernel text");
		return EXIT_QEMU_FAILED;
	}
	share_with_patchers(r, pg.stub);
	ret = pipeline_start(r->p, EXIT_QEMU_FAILED, err, errlen);
	if (ret == 0 && pg.stub)
		say_no_patchers(r);
	return ret;
}

/* Polled by target_qemu_run: whether the stub drain wants the VM held (backpressure). */
static bool drain_holds(void *ctx)
{
	struct linux_run *r = ctx;

	return pipeline_drain_holding(r->p);
}

/* Polled by target_qemu_run (before each wait and at each stop): a signal, --duration,
 * --timeout, a panic or a guest reset ends the traced part. */
static bool should_stop(void *ctx)
{
	struct linux_run *r = ctx;
	double t = clock_now_s();
	bool stop = qemu_run_signalled(r);

	if (!stop && r->timeout_at && t >= r->timeout_at) {
		r->timed_out = true;
		stop = true;
	}
	stop = stop || (r->detach_at && t >= r->detach_at) ||
	       (r->qc.launched && atomic_load(&r->qc.proc.panic));
	/* every gdbstub stop makes QEMU send a STOP and a RESUME event: take them as they come,
	 * at every stop, so that a RESET (sent before the reset vCPUs run again) is seen before
	 * the stop that may follow it in the new boot is handled */
	if (r->qc.have_qmp) {
		qmp_drain_events(&r->qc.qmp);
		if (r->qc.qmp.events & QMP_EV_RESET) {
			r->guest_reset = true;
			stop = true;
		}
	}
	/* the run ends: another signal must not cut the restore short (its waits keep their
	 * deadlines, and a gdbstub that misses one is given up) */
	if (stop)
		tcp_set_interrupt(-1);
	return stop;
}

/* --stats of the QEMU backend: QEMU's version (QMP's greeting, or asked through libvirt) and the way to guest memory (the
 * QEMU process's, or the gdbstub's), translations, then the tracer's totals with the kernel's and
 * the gdbstub's, then the stub line. */
static void qemu_stats(void *ctx, const struct pipeline *p)
{
	struct linux_run *r = ctx;
	unsigned long long hits = 0, walks = 0;
	struct tracer_stats st;

	for (unsigned i = 0; i < r->tq.t.nr_cpus; i++) {
		hits += r->tq.vm.cpu[i].tlb.hits;
		walks += r->tq.vm.cpu[i].tlb.walks;
	}
	tracer_stats(pipeline_tracer(p), &st);
	fprintf(stderr, "hvtrace: stats: qemu %s guest-memory %s regions %u\n",
		r->qc.version[0] ? r->qc.version : "unknown",
		r->tq.mem.fd >= 0 ? "process" : "gdbstub", r->tq.mem.fd >= 0 ? r->tq.mem.nr : 0);
	fprintf(stderr, "hvtrace: stats: translations %llu cached %llu walked\n", hits, walks);
	fprintf(stderr,
		"hvtrace: stats: kaslr-slide 0x%llx sites %zu probes %zu arms %llu stops %llu hits "
		"%llu "
		"restored-slots %llu orphan-returns %llu slots-above-4g %llu nop5-refused %llu "
		"held-us %llu "
		"interrupted-returns %llu steps-again %llu\n",
		(unsigned long long)r->l.slide, r->sites.nr, st.probes, st.arms,
		(unsigned long long)r->tq.stops, (unsigned long long)r->tq.hits, st.restored_slots,
		st.orphan_returns, st.slots_above_4g, (unsigned long long)r->tq.nop5_refused,
		(unsigned long long)(r->tq.held_ns / 1000), st.interrupted_returns,
		(unsigned long long)r->tq.steps_again);
	pipeline_print_stub_stats(p);
	fprintf(stderr,
		"hvtrace: stats: shared-with-guest %u yielded %llu returned %llu patchers %u "
		"patcher-stops %llu\n",
		st.shared_sites, st.yields, st.reclaims, st.patchers, st.patcher_stops);
	if (st.stub_probes && *r->stub.resv_why)
		fprintf(stderr, "hvtrace: stats: stub region not in reserved RAM: %s\n",
			r->stub.resv_why);
}

/* The run cannot go on: a pending signal is why (its status, "stopped <while>" in @err), or @err
 * is (@status). */
static int failed(struct linux_run *r, int status, const char *when, char *err, size_t errlen)
{
	if (qemu_run_signalled(r)) {
		if (out_fail_is(r->sig)) { /* the output's own line comes when it is closed */
			msg_fmt(err, errlen, "stopped %s: an output could not be written", when);
			return EXIT_HOST_ERROR;
		}
		msg_fmt(err, errlen, "stopped %s", when);
		return EXIT_SIGNAL_BASE + r->sig;
	}
	return status;
}

/* list-functions of a running VM: each traceable function on the -o stream (stdout), "name
 * [module]" for a module's (as available_filter_functions), in address order; with --entry every
 * function, those without an fentry site (entry probes) followed by " (entry)". Nothing is patched;
 * a failed write shows when the stream is closed. 0 or an exit status with @err. */
static int list_functions(struct linux_run *r, char *err, size_t errlen)
{
	int ret = r->s->entry_all ? add_entry_sites(r, err, errlen) : 0;

	for (size_t i = 0; ret == 0 && i < r->sites.nr && !ferror(r->out); i++) {
		const struct vmi_site *site = &r->sites.v[i];
		const struct vmi_module *m = vmi_modules_find(&r->l.mods, site->addr);

		fprintf(r->out, "%s%s%s%s%s\n", site->func->name, m ? " [" : "", m ? m->name : "",
			m ? "]" : "", site->entry ? " (entry)" : "");
	}
	return ret;
}

static int qemu_open(void *ctx, char *err, size_t errlen)
{
	struct linux_run *r = ctx;
	char why[512];

	/* the kernel's ISA picks the QEMU; a QEMU of another ISA is named before it starts */
	if (r->s->vmm == VMM_QEMU && r->s->kernel) {
		char other[64];
		const char *bin;

		if (kernel_isa_pick(r->s->kernel, "--kernel", KERNEL_ISA_ANY, &r->isa, err, errlen) <
		    0)
			return EXIT_BAD_INPUT;
		bin = qemu_launch_binary(r->isa);
		if (qemu_launch_other_isa(bin, r->isa, other, sizeof(other))) {
			msg_fmt(err, errlen,
				"--kernel %s is an %s kernel, and %s (%s) runs other guests; set "
				"%s to a qemu-system-%s",
				r->s->kernel, r->isa->name, bin, other,
				r->isa == arch_get(ARCH_ARM64) ? "$HVTRACE_QEMU_AARCH64"
							      : "$HVTRACE_QEMU",
				r->isa == arch_get(ARCH_ARM64) ? "aarch64" : "x86_64");
			return EXIT_BAD_INPUT;
		}
		if (r->isa == arch_get(ARCH_ARM64) && r->s->machine) {
			msg_fmt(err, errlen,
				"--machine %s is an x86 machine; arm64 guests run on QEMU's virt",
				r->s->machine);
			return EXIT_BAD_INPUT;
		}
	}
	if (r->s->system_map && vmi_linux_open(&r->l, r->s->system_map, why, sizeof(why)) < 0) {
		msg_fmt(err, errlen, "--system-map %s", why);
		return EXIT_BAD_INPUT;
	}
	return 0;
}

static int qemu_prepare(void *ctx, int sfd, FILE *out, FILE *con, char *err, size_t errlen)
{
	struct linux_run *r = ctx;
	const struct session *s = r->s;
	struct vmi_task_layout task;
	int status, kvm;

	r->sfd = sfd;
	tcp_set_interrupt(r->sfd); /* a signal ends any wait on QEMU's monitor or gdbstub */
	r->out = out;
	r->con = con;
	r->start = clock_now_s();
	r->timeout_at = s->timeout > 0 ? r->start + s->timeout : 0;

	struct qemu_attach_cfg qa = {
	    .launch = s->vmm == VMM_QEMU,
	    .qemu = {.accel = s->accel,
		     .isa = r->isa,
		     .machine = s->machine,
		     .kernel = s->kernel,
		     .initrd = s->initrd,
		     .append = s->append,
		     .smp = s->smp,
		     .mem_mb = s->mem_mb,
		     .console = r->con},
	    .domain = s->attach.domain,
	    .uri = s->attach.uri,
	    .pid = s->attach.pid,
	    .qmp = s->attach.qmp,
	};

	/* record --host: the host's tracefs and the events asked for, before QEMU starts */
	if (s->host && host_rec_check((const char *const *)s->host_events, s->nr_host_events, err,
				      errlen) < 0)
		return EXIT_BAD_INPUT;
	/* counting in the guest (--profile, hist triggers): its tables are read after its power-off,
	 * which -no-shutdown leaves QEMU (and the guest's memory) there for */
	qa.qemu.no_shutdown = s->vmm == VMM_QEMU && (s->profile || s->nr_hists);
	/* stub probes: RAM the kernel is told to keep out of use (memmap=) */
	if (s->vmm == VMM_QEMU && s->probe != PROBE_TRAP)
		qemu_stub_place_reserve(&r->stub, s, &qa.qemu);
	/* QEMU with KVM needs KVM_EXIT_DEBUG for its breakpoints: checked before QEMU starts */
	if (s->vmm == VMM_QEMU && s->accel && !strcmp(s->accel, "kvm") &&
	    r->env.check_int3(s, true, &r->no_trap, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	status = qemu_attach_open(&r->qc, &qa, err, errlen);
	/* a --qmp that names no socket is the user's input, wrong before any peer was reached */
	if (status == -ENOTSOCK || status == -ENAMETOOLONG || status == -EDESTADDRREQ ||
	    (status == -ENOENT && s->attach.qmp) ||
	    /* a --pid that is no QEMU, or whose endpoints are not its own */
	    (s->attach.pid && (status == -ENOEXEC || status == -EPERM || status == -EADDRNOTAVAIL)))
		return failed(r, EXIT_BAD_INPUT, "while connecting to QEMU", err, errlen);
	if (status < 0 ||
	    target_qemu_init(&r->tq, &r->qc.gdb, r->qc.pid, r->qc.hmp, r->qc.qmp_cmd, r->qc.hmp_ctx,
			     s->gdb_memory || r->qc.no_monitor, err, errlen) < 0)
		return failed(r, EXIT_QEMU_FAILED, "while connecting to QEMU", err, errlen);
	r->have_tq = true;
	r->tq.no_shutdown = qa.launch && qa.qemu.no_shutdown;
	/* the guest QEMU runs is of the image's ISA (a wrapper's name said nothing) */
	if (r->isa && r->tq.t.arch != r->isa) {
		msg_fmt(err, errlen, "--kernel %s is an %s kernel, and %s runs %s guests",
			s->kernel, r->isa->name, qemu_launch_binary(r->isa), r->tq.t.arch->name);
		return EXIT_BAD_INPUT;
	}
	/* attach: the vCPU count is known now, before anything is patched (run: at parse time) */
	if (rec_filter_check_cpus(&s->tasks, r->tq.t.nr_cpus, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	kvm = s->vmm == VMM_QEMU ? s->accel && !strcmp(s->accel, "kvm") : qemu_uses_kvm(&r->qc);
	target_qemu_set_tcg(&r->tq, kvm == 0);
	/* attach: a QEMU on KVM (or one that does not say) gets the same check */
	if (s->vmm != VMM_QEMU && kvm != 0 &&
	    r->env.check_int3(s, true, &r->no_trap, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	guardian_start(&r->guard, qemu_run_guardian_takeover, r);
	if (learn_kernel(r, &task, err, errlen) < 0)
		return failed(r, EXIT_BAD_INPUT, "while the kernel was booting", err, errlen);
	if (s->cmd == CMD_LIST_FUNCTIONS) {
		status = list_functions(r, err, errlen);
		return status ? failed(r, status, "while listing the functions", err, errlen)
			      : BACKEND_DONE;
	}
	/* stub probes: the drain and the writer, started now, inherit this thread's nice: ahead of
	 * the vCPUs (QEMU, started before, runs at +QEMU_STUB_NICE) and of the rest of a busy host
	 * (the autogroup's too). Not real-time; best effort. */
	if (s->probe != PROBE_TRAP && s->vmm == VMM_QEMU)
		sched_boost_begin(&r->boost);
	status = start_tracing(r, &task, err, errlen);
	if (status)
		return failed(r, status, "while attaching", err, errlen);
	/* a guardian that knows the tracer (and shares its shadow stacks), taking over from the one
	 * that watched the attach with no moment when none watches */
	guardian_handover(&r->guard, qemu_run_guardian_takeover, r);
	return 0;
}

static int qemu_start(void *ctx, char *err, size_t errlen)
{
	struct linux_run *r = ctx;

	(void)err;
	(void)errlen;
	r->detach_at = r->s->duration > 0 ? clock_now_s() + r->s->duration : 0;
	if (pipeline_backpressure(r->p))
		target_qemu_set_hold(&r->tq, drain_holds, r);
	return 0;
}

static int qemu_wait(void *ctx, int sfd)
{
	struct linux_run *r = ctx;
	enum qemu_run_end how;

	(void)sfd;
	how = target_qemu_run(&r->tq, should_stop, r);
	pipeline_count_pauses(r->p, r->tq.holds, r->tq.hold_ns);
	return qemu_run_finish(r, how);
}

static int qemu_detach(void *ctx, int status)
{
	struct linux_run *r = ctx;

	if (r->qc.have_gdb && !r->detached)
		qemu_run_detach(r);
	guardian_stop(&r->guard);
	if (pipeline_selected(r->p) && (r->text_changed || r->restore_failed) && status == 0)
		status = EXIT_HOST_ERROR;
	return status;
}

static int qemu_close(void *ctx)
{
	struct linux_run *r = ctx;
	int con_err;

	sched_boost_end(&r->boost);
	if (r->have_tq)
		target_qemu_close(&r->tq);
	qemu_attach_close(&r->qc);
	con_err = r->qc.proc.console_err;
	tcp_set_interrupt(-1);
	text_verify_free(&r->text);
	vmi_sites_free(&r->sites);
	inside_sites_free(&r->inside);
	vmi_linux_close(&r->l);
	free(r);
	return con_err;
}

static const struct backend_ops qemu_ops = {
    .open = qemu_open,
    .prepare = qemu_prepare,
    .start = qemu_start,
    .wait = qemu_wait,
    .detach = qemu_detach,
    .stats = qemu_stats,
    .close = qemu_close,
};

int backend_qemu_new(struct backend *b, const struct backend_env *env)
{
	struct linux_run *r = calloc(1, sizeof(*r)); /* large (sites, symbols) */

	if (!r)
		return -ENOMEM;
	r->env = *env;
	r->s = env->s;
	r->p = env->p;
	r->sfd = -1;
	r->guard.pid = -1;
	r->guard.fd = -1;
	b->ops = &qemu_ops;
	b->ctx = r;
	return 0;
}

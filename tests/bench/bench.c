/* make bench: the cost of a traced function call against the raw cost of an INT3 exit round trip,
 * measured side by side in one run on the bench guest (each vCPU calls bench_leaf BENCH_CALLS times);
 * given the bench guest built without -pg too, the entry probes' cost (bench_leaf has no fentry site
 * there: an INT3 whose instruction runs out of line, or a stub detour) against the fentry probes',
 * all modes interleaved in the same rounds. BENCH_SHORT=1 (make bench-nested, where an exit costs
 * ~130 us and the full set outlasted the lane's 40 minutes): 1 vCPU, only no probe, the raw round
 * trip, the function tracer and stub probes, BENCH_ROUNDS rounds (default 3): the trap event against
 * the raw INT3 round trip and stub against trap, side by side in one run. */
#include "host/trace/clock.h"
#include "host/trace/filter.h"
#include "host/kvm/guest_image.h"
#include "host/kvm/step_slots.h"
#include "host/session/detour_plan.h"
#include "host/session/entry_sites.h"
#include "host/session/session.h"
#include "host/sink/sink.h"
#include "host/kvm/target_kvm.h"
#include "host/trace/tracer.h"
#include "host/kvm/vcpu.h"
#include "host/kvm/vm.h"
#include "host/sink/writer.h"
#include "arch/x86/x86_insn.h"
#include "tests/guest/guest.h"

#include <errno.h>
#include <stdbool.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 5 /* at most; BENCH_ROUNDS may ask fewer */

/* MODE_STUB takes the CPU number where the bench guest says (%gs:hvtrace_cpu_gs), MODE_STUB_CPUID
 * from CPUID's APIC ID (a guest that says nothing, on a host without RDTSCP) */
enum mode {
	MODE_BASE,
	MODE_RAW,
	MODE_TRACE,
	MODE_GRAPH,
	MODE_STUB,
	MODE_STUB_GRAPH,
	MODE_STUB_CPUID,
	/* on the guest built without -pg: */
	MODE_NOPG_BASE,
	MODE_NOPG_TRACE, /* an entry probe: INT3, its instruction out of line */
	MODE_NOPG_STUB,	 /* a stub detour */
	NR_MODES
};
static const char *const mode_names[] = {
    "no probe",		    "raw INT3 round trip",   "function tracer",
    "function_graph",	    "function (stub)",	     "function_graph (stub)",
    "function (stub, cpuid)", "no -pg: no probe",	     "no -pg: function (trap)",
    "no -pg: function (stub)"};
#define NR_PG_MODES MODE_NOPG_BASE

/* CPU time of the whole process (vCPU threads, in-kernel emulation included, and the writer): steadier
 * than wall time on a shared machine, and what tracing costs. */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double last_wall; /* wall seconds of the last run_once */
/* where the last run_once's CPU time went, in seconds: the vCPU threads (all of it; the user-space
 * handling of breakpoint exits, KVM_RUN's return to the next entry, alone) and the writer thread */
static double last_vcpu, last_bp_user, last_writer;
static uint64_t tsc_khz; /* the host's TSC rate, for vCPU bp_cycles */

/* The least a hit can cost: recognise the probe, step over the NOP, resume. */
static int raw_hit(void *ctx, unsigned cpu, uint64_t addr, struct arch_regs *regs, uint64_t at_ns)
{
	(void)cpu, (void)at_ns;
	if (!probe_lookup(ctx, addr))
		return -ENOENT;
	regs->r[X86_RIP] = addr + X86_NOP5_LEN;
	return 0;
}

static void die(const char *what, const char *err)
{
	fprintf(stderr, "bench: %s: %s\n", what, err);
	exit(1);
}

/* One boot of the bench guest; returns CPU seconds from vCPU start to guest exit (wall in last_wall). */
static double run_once(struct guest_image *g, unsigned smp, enum mode m)
{
	struct vm vm;
	struct target tgt;
	struct tracer *tr;
	struct probe_table probes;
	struct sink sink;
	struct writer w = {0};
	FILE *devnull = fopen("/dev/null", "w");
	struct vm_config cfg = {.smp = smp, .mem_mb = 64, .console = devnull};
	char *filter[] = {"bench_leaf"};
	const struct vmi_site **sel;
	size_t nr;
	char err[256];
	double t0, t1, w0;

	if (filter_select(&g->sites, filter, 1, NULL, 0, &sel, &nr, err, sizeof(err)) < 0)
		die("filter", err);
	cfg.step_slots = step_slots_count(&g->sites);
	if (vm_create(&vm, &cfg, err, sizeof(err)) < 0 || vm_load_elf(&vm, &g->elf, err, sizeof(err)) ||
	    vm_write_step_slots(&vm, &g->sites, err, sizeof(err)) < 0)
		die("vm", err);
	target_kvm_init(&tgt, &vm);
	if (m == MODE_BASE || m == MODE_NOPG_BASE) {
	} else if (m == MODE_RAW) {
		probe_table_init(&probes, sel, nr);
		if (probe_insert_all(&probes, &tgt, err, sizeof(err)) < 0)
			die("probes", err);
		tgt.ops->set_bp_handler(&tgt, raw_hit, &probes);
		vm.bp_untimed = true; /* the least a hit costs: no clock read (a traced event's) */
	} else {
		bool graph = m == MODE_GRAPH || m == MODE_STUB_GRAPH;
		struct tracer_opts opts = {.ring_records = 1 << 18,
					   .returns = graph,
					   .hook_all = graph,
					   .stub = m == MODE_STUB || m == MODE_STUB_GRAPH ||
						   m == MODE_STUB_CPUID || m == MODE_NOPG_STUB};
		struct vmi_task_layout task = g->task;

		if (m == MODE_STUB_CPUID) {
			if (!vm.cpuid_apic_id)
				die("vm", "CPUID does not give each vCPU's index");
			task.has_cpu_gs = false;
			task.cpu_apic_id = true;
		}
		if (tracer_new(&tr, &tgt, sel, nr, &task, &opts) < 0)
			die("tracer", "init");
		if (m == MODE_NOPG_STUB) {
			struct session s = {.filter = filter, .nr_filter = 1};

			if (detour_plan(tr, &s, &g->elf.funcs, guest_image_read, g, true, stderr) !=
			    1)
				die("tracer", "bench_leaf takes no detour");
		}
		if (tracer_attach(tr, err, sizeof(err)) < 0)
			die("tracer", err);
		struct tracer_stats st;
		unsigned nr_rings;
		struct ring *rings = tracer_rings(tr, &nr_rings);

		tracer_stats(tr, &st);
		if (opts.stub && st.stub_probes != nr)
			die("tracer", "not stub probes");
		if (opts.stub && strcmp(st.stub_cpu_from, m == MODE_STUB_CPUID ? "cpuid" : "gs"))
			die("tracer", st.stub_cpu_from);
		if (graph)
			sink_graph_init(&sink, devnull, &g->elf.funcs, smp, true, false);
		else
			sink_function_init(&sink, devnull, &g->elf.funcs, smp);
		writer_start(&w, rings, nr_rings, &sink, tracer_horizon, tr);
	}
	w0 = clock_now_s();
	t0 = cpu_now();
	if (vcpu_start_all(&vm, err, sizeof(err)) < 0)
		die("start", err);
	struct pollfd pfd = {.fd = vm.event_fd, .events = POLLIN};

	poll(&pfd, 1, -1);
	t1 = cpu_now();
	last_wall = clock_now_s() - w0;
	if (vm.end != VM_END_GUEST_EXIT || vm.end_status != 0)
		die("guest", vm.end_msg);
	vcpu_join_all(&vm);
	last_vcpu = last_bp_user = last_writer = 0;
	for (unsigned i = 0; i < vm.nr_vcpus; i++) {
		last_vcpu += vm.vcpus[i].cpu_ns / 1e9;
		last_bp_user += (double)vm.vcpus[i].bp_cycles / ((double)tsc_khz * 1e3);
	}
	if (m == MODE_RAW) {
		probe_remove_all(&probes, &tgt);
		probe_table_free(&probes);
	} else if (m != MODE_BASE && m != MODE_NOPG_BASE) {
		tracer_detach(tr);
		writer_stop(&w, tracer_lost(tr));
		last_writer = w.cpu_ns / 1e9;
		if (sink.written != (unsigned long long)smp * BENCH_CALLS *
					    (m == MODE_GRAPH || m == MODE_STUB_GRAPH ? 2 : 1))
			die("tracer", "wrong number of events");
		writer_free(&w);
		tracer_free(tr);
	}
	vm_destroy(&vm);
	free(sel);
	fclose(devnull);
	return t1 - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The bench guest without -pg: bench_leaf (named, as -l bench_leaf) gets its entry site. */
static void open_nopg(struct guest_image *g, const char *path)
{
	char *filter[] = {"bench_leaf"};
	struct session s = {.filter = filter, .nr_filter = 1};
	char err[256];

	if (guest_image_open(g, path, err, sizeof(err)) < 0)
		die("guest", err);
	if (!g->no_fentry)
		die("guest", "the second guest must be built without -pg");
	if (entry_sites_add(g->arch, &s, &g->sites, &g->elf.funcs, guest_image_read, g, NULL, 0,
			    true, err, sizeof(err)) < 0 ||
	    step_slots_check(&s, &g->sites, &g->elf.funcs, guest_image_read, g, NULL, err,
			     sizeof(err)) < 0)
		die("entry sites", err);
}

/* BENCH_SHORT: 1 vCPU, the modes of the trap/raw and stub/trap ratios, @rounds interleaved rounds;
 * each mode's CPU seconds per round and the medians' ratios. 0. */
static int bench_short(struct guest_image *g, const char *path, int rounds)
{
	static const enum mode modes[] = {MODE_BASE, MODE_RAW, MODE_TRACE, MODE_STUB};
	enum { NR = sizeof(modes) / sizeof(modes[0]) };
	double v[NR][ROUNDS], t[NR];
	/* per mode and round: vCPU thread, its user-space share of breakpoint exits, writer */
	double pv[NR][ROUNDS], pu[NR][ROUNDS], pw[NR][ROUNDS];
	char err[256];

	if (guest_image_open(g, path, err, sizeof(err)) < 0)
		die("guest", err);
	printf("hvtrace bench (short): bench_leaf called %d times on 1 vCPU; %d interleaved rounds;\n"
	       "costs are CPU time of the hvtrace process\n",
	       BENCH_CALLS, rounds);
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < NR; i++) {
			v[i][r] = run_once(g, 1, modes[i]);
			pv[i][r] = last_vcpu;
			pu[i][r] = last_bp_user;
			pw[i][r] = last_writer;
			printf("  round %d: %-22s %8.3f CPU-s (%.3f s wall; vCPU thread %.3f, of "
			       "it breakpoint exits' user space %.3f; writer %.3f)\n",
			       r + 1, mode_names[modes[i]], v[i][r], last_wall, last_vcpu,
			       last_bp_user, last_writer);
			fflush(stdout);
		}
	for (int i = 0; i < NR; i++) {
		qsort(v[i], rounds, sizeof(double), cmp_double);
		qsort(pv[i], rounds, sizeof(double), cmp_double);
		qsort(pu[i], rounds, sizeof(double), cmp_double);
		qsort(pw[i], rounds, sizeof(double), cmp_double);
		t[i] = v[i][rounds / 2];
	}
	double raw = (t[1] - t[0]) / BENCH_CALLS, fn = (t[2] - t[0]) / BENCH_CALLS;
	double stub = (t[3] - t[0]) / BENCH_CALLS;

	printf("  per event (medians): raw INT3 round trip %.2f us, trap event %.2f us, stub event "
	       "%.2f us\n",
	       raw * 1e6, fn * 1e6, stub * 1e6);
	/* where a trap event's extra over the raw round trip goes (medians of each part, so they
	 * need not add up exactly) */
	printf("  per event (medians), raw / trap: vCPU thread %.2f / %.2f us, of it user space "
	       "from KVM_RUN's return to the next KVM_RUN %.2f / %.2f us; writer thread %.2f / "
	       "%.2f us\n",
	       (pv[1][rounds / 2] - pv[0][rounds / 2]) / BENCH_CALLS * 1e6,
	       (pv[2][rounds / 2] - pv[0][rounds / 2]) / BENCH_CALLS * 1e6,
	       pu[1][rounds / 2] / BENCH_CALLS * 1e6, pu[2][rounds / 2] / BENCH_CALLS * 1e6,
	       pw[1][rounds / 2] / BENCH_CALLS * 1e6, pw[2][rounds / 2] / BENCH_CALLS * 1e6);
	printf("  ratio trap event / raw INT3 round trip: %.3f\n", fn / raw);
	printf("  ratio stub / trap event: %.3f\n", stub / fn);
	guest_image_close(g);
	return 0;
}

int main(int argc, char **argv)
{
	struct guest_image g, ng;
	char err[256];
	unsigned smps[2] = {1, 2};
	double t[2][NR_MODES], wall[2];
	int nr_modes = argc == 3 ? NR_MODES : NR_PG_MODES;
	const char *short_env = getenv("BENCH_SHORT"), *rounds_env = getenv("BENCH_ROUNDS");
	bool brief = short_env && !strcmp(short_env, "1");
	int rounds = brief ? 3 : ROUNDS, nr_smps = brief ? 1 : 2;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: bench BENCH-GUEST.elf [BENCH-GUEST-WITHOUT-PG.elf]\n");
		return 2;
	}
	if (rounds_env) {
		char *end;
		long v = strtol(rounds_env, &end, 10);

		if (!*rounds_env || *end || v < 1 || v > ROUNDS) {
			fprintf(stderr, "bench: BENCH_ROUNDS: '%s' is not a number from 1 to %d\n",
				rounds_env, ROUNDS);
			return 2;
		}
		rounds = (int)v;
	}
	tsc_khz = clock_host_tsc_khz();
	if (brief)
		return bench_short(&g, argv[1], rounds);
	if (guest_image_open(&g, argv[1], err, sizeof(err)) < 0)
		die("guest", err);
	if (argc == 3)
		open_nopg(&ng, argv[2]);
	for (int s = 0; s < nr_smps; s++) {
		double v[NR_MODES][ROUNDS];

		/* interleave the modes so that machine noise hits all of them alike */
		double wv[ROUNDS];

		for (int r = 0; r < rounds; r++)
			for (int m = 0; m < nr_modes; m++) {
				v[m][r] = run_once(m < NR_PG_MODES ? &g : &ng, smps[s], m);
				if (m == MODE_TRACE)
					wv[r] = last_wall;
			}
		qsort(wv, rounds, sizeof(double), cmp_double);
		wall[s] = wv[rounds / 2];
		for (int m = 0; m < nr_modes; m++) {
			qsort(v[m], rounds, sizeof(double), cmp_double);
			t[s][m] = v[m][rounds / 2];
		}
	}
	printf("hvtrace bench: bench_leaf called %d times per vCPU; median of %d interleaved runs;\n"
	       "costs are CPU time of the hvtrace process (vCPU threads with in-kernel emulation, writer)\n",
	       BENCH_CALLS, rounds);
	for (int s = 0; s < nr_smps; s++) {
		double n = (double)smps[s] * BENCH_CALLS;
		double raw = (t[s][MODE_RAW] - t[s][MODE_BASE]) / n;
		double fn = (t[s][MODE_TRACE] - t[s][MODE_BASE]) / n;
		double graph = (t[s][MODE_GRAPH] - t[s][MODE_BASE]) / n;
		double stub = (t[s][MODE_STUB] - t[s][MODE_BASE]) / n;
		double stub_graph = (t[s][MODE_STUB_GRAPH] - t[s][MODE_BASE]) / n;
		double stub_cpuid = (t[s][MODE_STUB_CPUID] - t[s][MODE_BASE]) / n;

		printf("smp %u:\n", smps[s]);
		for (int m = 0; m < nr_modes; m++)
			printf("  %-24s %8.3f CPU-s for %.0f calls\n", mode_names[m], t[s][m], n);
		printf("  per event: raw INT3 round trip %.2f us, function tracer %.2f us\n", raw * 1e6,
		       fn * 1e6);
		printf("  ratio function tracer / raw INT3 round trip: %.3f\n", fn / raw);
		printf("  per call: function_graph (entry + return) %.2f us\n", graph * 1e6);
		printf("  ratio function_graph call / two raw INT3 round trips: %.3f\n",
		       graph / (2 * raw));
		printf("  events/s with the function tracer: %.0f (wall clock), %.0f per CPU-second\n",
		       n / wall[s], n / t[s][MODE_TRACE]);
		printf("  stub probes: per event %.2f us, per function_graph call %.2f us\n", stub * 1e6,
		       stub_graph * 1e6);
		printf("  ratio stub / trap, function tracer: %.3f; function_graph: %.3f\n", stub / fn,
		       stub_graph / graph);
		printf("  stub, CPU number from CPUID: per event %.2f us; ratio to %%gs: %.3f, to "
		       "trap: %.3f\n",
		       stub_cpuid * 1e6, stub_cpuid / stub, stub_cpuid / fn);
		if (nr_modes == NR_MODES) {
			double etrap = (t[s][MODE_NOPG_TRACE] - t[s][MODE_NOPG_BASE]) / n;
			double estub = (t[s][MODE_NOPG_STUB] - t[s][MODE_NOPG_BASE]) / n;

			printf("  entry probes (no fentry site): trap per event %.2f us, stub detour "
			       "%.2f us\n",
			       etrap * 1e6, estub * 1e6);
			printf("  ratio entry probe / fentry probe: trap %.3f; stub detour / fentry "
			       "stub %.3f (issue 25: at most 1.5)\n",
			       etrap / fn, estub / stub);
		}
	}
	if (argc == 3)
		guest_image_close(&ng);
	guest_image_close(&g);
	return 0;
}

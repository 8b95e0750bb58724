/* `hvtrace record` on the test guest in the embedded VMM: the real trace-cmd reads the trace.dat
 * with the guest's own call counts per function and vCPU, its names and values; and `hvtrace
 * report` prints the same events as `hvtrace run` on the same guest (the guest is deterministic:
 * each vCPU runs the same calls in the same order every time; timestamps and durations differ). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"
#include "host/kvm/kvm_int3_probe.h"
#include "tests/common/host_pair.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const funcs[] = {"workload_run", "fib",	 "tree_root", "tree_a",
				    "tree_b",	    "tree_leaf", "task_body", "task_step",
				    "task_leaf",    "tail_top",	 "tail_mid",  "tail_leaf",
				    "nl_outer",	    "nl_inner",	 "deep",      "ev_target"};
#define NR_FUNCS (sizeof(funcs) / sizeof(funcs[0]))

#define EV_SPEC                                                                                    \
	"ev_target(int id+0 | x32 flags+4 | string name+8[0] | s64 deep+16[0]+8[0]+0 | "           \
	"u16[4] arr+24, string label, u32[3] vals, long n)"

static char dat[128];


static char *trace_cmd_report(const char *opts)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "trace-cmd report %s -i %s 2>&1", opts, dat);
	return hv_sh("%s", cmd);
}

/* `hvtrace record -o DAT @args... GUEST`; the guest must finish cleanly. */
static void record(struct hv_result *r, const char *const *args)
{
	const char *argv[32] = {"record", "-o", dat};
	int n = 3;

	snprintf(dat, sizeof(dat), "/tmp/tdat-kvm-%d.dat", getpid());
	for (int i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n++] = hv_guest(NULL);
	argv[n] = NULL;
	hv_run(r, argv, 0, 0);
	if (r->status != 0 || !strstr(r->console, "hvt-guest: ok\n"))
		fail_msg("record: status %d, stderr: %s", r->status, r->err);
	assert_string_equal(r->err, "");
}

/* trace-cmd report lines of event @event on @cpu (-1: any) that end with @tail (NULL: any), or
 * with @contains, hold it. */
static long count_lines_of(const char *text, const char *event, int cpu, const char *tail,
			   bool contains)
{
	char key[64], cpus[16];
	long n = 0;

	snprintf(key, sizeof(key), " %s:", event);
	snprintf(cpus, sizeof(cpus), "[%03d]", cpu);
	for (const char *l = text; *l;) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l);
		char line[1024];

		snprintf(line, sizeof(line), "%.*s", (int)len, l);
		if (strstr(line, key) && (cpu < 0 || strstr(line, cpus))) {
			size_t tl = tail ? strlen(tail) : 0;

			if (!tail || (contains ? strstr(line, tail) != NULL
					       : strlen(line) >= tl &&
						     !strcmp(line + strlen(line) - tl, tail)))
				n++;
		}
		l += len + (end ? 1 : 0);
	}
	return n;
}

static long count_events(const char *text, const char *event, int cpu, const char *tail)
{
	return count_lines_of(text, event, cpu, tail, false);
}

static long count_with(const char *text, const char *event, int cpu, const char *needle)
{
	return count_lines_of(text, event, cpu, needle, true);
}

/* The lines of @text for vCPU @cpu without what differs between two runs: timestamps, durations. */
static char *cpu_lines(const char *text, unsigned cpu)
{
	size_t cap = strlen(text) + 1, len = 0;
	char *out = malloc(cap), fcpu[16], gcpu[16];

	snprintf(fcpu, sizeof(fcpu), "[%03u] ", cpu);
	snprintf(gcpu, sizeof(gcpu), " %u) ", cpu);
	out[0] = 0;
	for (const char *l = text; *l;) {
		const char *end = strchr(l, '\n');
		size_t n = end ? (size_t)(end - l) : strlen(l);
		char line[4096], *p, *q;

		snprintf(line, sizeof(line), "%.*s", (int)n, l);
		l += n + (end ? 1 : 0);
		if ((p = strstr(line, fcpu)) && (q = strstr(p, ": "))) {
			/* "comm-pid [cpu] ts: body" -> "comm-pid [cpu] body", no duration= */
			memmove(p + strlen(fcpu), q + 2, strlen(q + 2) + 1);
			if ((q = strstr(line, " duration=")))
				*q = 0;
		} else if (!strncmp(line, gcpu, strlen(gcpu)) && (q = strchr(line, '|'))) {
			/* " N) duration | body" -> " N) | body" */
			memmove(line + strlen(gcpu), q, strlen(q) + 1);
		} else {
			continue;
		}
		len += (size_t)snprintf(out + len, cap - len, "%s\n", line);
	}
	return out;
}

/* `hvtrace report` of the file prints, per vCPU, the lines `hvtrace run @args` prints. */
static void assert_report_matches_run(const char *const *args, const char *report_opt)
{
	const char *run[32] = {"run"}, *rep[] = {"report", "-i", dat, report_opt, NULL};
	struct hv_result r, p;
	int n = 1;

	for (int i = 0; args[i]; i++)
		run[n++] = args[i];
	run[n++] = hv_guest(NULL);
	run[n] = NULL;
	hv_run(&r, run, 0, 0);
	assert_int_equal(r.status, 0);
	hv_run(&p, rep, 0, 0);
	if (p.status)
		fail_msg("report: status %d: %s", p.status, p.err);
	assert_string_equal(p.err, "");
	for (unsigned c = 0; c < 2; c++) {
		char *a = cpu_lines(r.trace, c), *b = cpu_lines(p.trace, c);

		assert_true(strlen(a) > 100);
		assert_string_equal(a, b);
		free(a);
		free(b);
	}
	/* header and trailer alike */
	assert_non_null(strstr(p.trace, "# entries-written: "));
	assert_string_equal(strstr(r.trace, "# entries-written: "),
			    strstr(p.trace, "# entries-written: "));
	hv_result_free(&r);
	hv_result_free(&p);
}

static void test_function(void **state)
{
	const char *args[] = {"-p", "function", NULL};
	struct hv_result r;
	char *text;
	long total = 0;

	(void)state;
	record(&r, args);
	text = trace_cmd_report("");
	assert_non_null(strstr(text, "cpus=2\n"));
	for (size_t f = 0; f < NR_FUNCS; f++)
		for (unsigned c = 0; c < 2; c++) {
			char tail[80];
			long want = guest_count(&r, funcs[f], c), got;

			snprintf(tail, sizeof(tail), " %s", funcs[f]);
			got = count_events(text, "function", (int)c, tail);
			if (got != want)
				fail_msg("%s on cpu%u: trace-cmd shows %ld, guest counted %ld",
					 funcs[f], c, got, want);
			total += want;
		}
	assert_int_equal(count_events(text, "function", -1, NULL), total);
	/* the task names the guest gave its workers */
	assert_non_null(strstr(text, "worker1-101 "));
	free(text);
	hv_result_free(&r);
	assert_report_matches_run(args, NULL);
	unlink(dat);
}

static void test_function_graph_retval(void **state)
{
	const char *args[] = {"-p", "function_graph", "--funcgraph-retval", NULL};
	struct hv_result r;
	char *raw;

	(void)state;
	record(&r, args);
	raw = trace_cmd_report("-R");
	for (size_t f = 0; f < NR_FUNCS; f++)
		for (unsigned c = 0; c < 2; c++) {
			char ent[80], ex[80];
			long want = guest_count(&r, funcs[f], c), in, out;

			/* deep() recurses past the shadow bound: its outer 127 levels are traced
			 * (as test_kvm_graph says) */
			if (!strcmp(funcs[f], "deep")) {
				assert_int_equal(want, 150);
				want = 127;
			}

			snprintf(ent, sizeof(ent), " func=%s depth=", funcs[f]);
			snprintf(ex, sizeof(ex), " func=%s retval=", funcs[f]);
			in = count_with(raw, "funcgraph_entry", (int)c, ent);
			out = count_with(raw, "funcgraph_exit", (int)c, ex);
			/* nl_inner never returns: nl_outer longjmps over its frames */
			if (in != want || out != (strcmp(funcs[f], "nl_inner") ? want : 0))
				fail_msg("%s on cpu%u: %ld entries, %ld exits; guest counted %ld",
					 funcs[f], c, in, out, want);
		}
	/* return values (trace-cmd -R prints unsigned longs in hex): tree_a returns 5, 13, 25 in
	 * each of 3 rounds on each vCPU */
	assert_int_equal(count_text(raw, "func=tree_a retval=5 "), 6);
	assert_int_equal(count_text(raw, "func=tree_a retval=d "), 6);
	assert_int_equal(count_text(raw, "func=tree_a retval=19 "), 6);
	free(raw);
	hv_result_free(&r);
	assert_report_matches_run(args, "--funcgraph-retval");
	unlink(dat);
}

static void test_event(void **state)
{
	const char *args[] = {"-e", EV_SPEC, NULL};
	struct hv_result r;
	char *text;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	record(&r, args);
	text = trace_cmd_report("");
	/* each vCPU calls it twice: a good label, then an unmapped one (the kernel's empty string)
	 */
	for (int c = 0; c < 2; c++) {
		assert_int_equal(
		    count_events(text, "p_ev_target_0", c,
				 "id=42 flags=0xbeef name=\"objname\" deep=99 "
				 "arr={1,2,3,4} label=\"hello-events\" vals={10,20,30} n=3"),
		    1);
		assert_int_equal(count_events(text, "p_ev_target_0", c,
					      "id=42 flags=0xbeef name=\"objname\" deep=99 "
					      "arr={1,2,3,4} label=\"\" vals={10,20,30} n=3"),
				 1);
	}
	assert_int_equal(count_events(text, "p_ev_target_0", -1, NULL), 4);
	free(text);
	hv_result_free(&r);
	assert_report_matches_run(args, NULL);
	unlink(dat);
}

static void test_return_probes(void **state)
{
	const char *args[] = {"-r", "tree_a(long ret)", "-r", "tree_leaf", NULL};
	struct hv_result r;
	char *text;

	(void)state;
	record(&r, args);
	text = trace_cmd_report("");
	assert_int_equal(count_events(text, "r_tree_a_0", -1, ") ret=5"), 6);
	assert_int_equal(count_events(text, "r_tree_a_0", -1, ") ret=13"), 6);
	assert_int_equal(count_events(text, "r_tree_a_0", -1, ") ret=25"), 6);
	assert_int_equal(count_events(text, "r_tree_a_0", -1, NULL), 18);
	assert_int_equal(count_events(text, "r_tree_leaf_0", -1, ") ret=0x10"), 6);
	assert_int_equal(count_events(text, "r_tree_leaf_0", -1, NULL), 42);
	free(text);
	hv_result_free(&r);
	assert_report_matches_run(args, NULL);
	unlink(dat);
}

/* One function_graph line reduced to what both renderings print: the body after '|' without a
 * trailing comment (trace-cmd 3.1.6's plugin prints no return values) and the duration's whole
 * microseconds (-1: none). The overhead marks and decimals differ above 1 ms: trace-cmd has its own
 * thresholds and always 3 decimals, the kernel (and hvtrace) '*' above 10 ms and 8 digits in all. */
struct graph_line {
	long us;
	char body[160];
};

/* The function_graph lines of @text: trace-cmd's (`... funcgraph_entry: DUR | BODY`) when
 * @trace_cmd, else hvtrace's (` N) DUR | BODY`). Returns how many went to @out (at most @max). */
static size_t graph_lines(const char *text, bool trace_cmd, struct graph_line *out, size_t max)
{
	size_t n = 0;

	for (const char *l = text; *l && n < max;) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l);
		char line[512], *bar, *dur, *cm;

		snprintf(line, sizeof(line), "%.*s", (int)len, l);
		l += len + (end ? 1 : 0);
		bar = strchr(line, '|');
		if (trace_cmd) {
			dur = strstr(line, " funcgraph_entry:");
			if (!dur)
				dur = strstr(line, " funcgraph_exit:");
			if (!dur)
				continue;
			dur = strchr(dur + 1, ':') + 1;
		} else {
			if (line[0] == '#' || !strstr(line, ") "))
				continue;
			dur = strstr(line, ") ") + 2;
		}
		if (!bar || bar < dur)
			continue;
		*bar = 0;
		out[n].us = -1;
		for (char *d = dur; *d; d++)
			if (*d >= '0' && *d <= '9') {
				out[n].us = strtol(d, NULL, 10);
				break;
			}
		cm = strstr(bar + 1, "/*");
		if (cm)
			*cm = 0;
		for (size_t k = strlen(bar + 1); k && bar[k] == ' '; k--)
			bar[k] = 0;
		snprintf(out[n].body, sizeof(out[n].body), "%s", bar + 1);
		n++;
	}
	return n;
}

/* trace-cmd's function_graph rendering of the file and `hvtrace report`'s are the same calls, in the
 * same nesting, leaves on one line, the same durations. One vCPU: trace-cmd 3.1.6 looks for a
 * leaf's return in the next record of the whole merged stream, so with two vCPUs running tasks of
 * the same pid its leaves follow the interleaving rather than the call. */
static void test_graph_rendering_matches_trace_cmd(void **state)
{
	const char *args[] = {"--smp", "1", "-p", "function_graph", "--funcgraph-retval", NULL};
	enum { MAX = 4096 };
	struct graph_line *a = calloc(MAX, sizeof(*a)), *b = calloc(MAX, sizeof(*b));
	char cmd[300], *tc, *hv;
	size_t na, nb, leaves = 0;
	struct hv_result r;

	(void)state;
	record(&r, args);
	tc = trace_cmd_report("");
	snprintf(cmd, sizeof(cmd), "%s report -i %s", hv_binary(), dat);
	hv = hv_sh("%s", cmd);
	na = graph_lines(tc, true, a, MAX);
	nb = graph_lines(hv, false, b, MAX);
	assert_true(na > 500);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		if (a[i].us != b[i].us || strcmp(a[i].body, b[i].body))
			fail_msg("line %zu: trace-cmd '%ld|%s', hvtrace '%ld|%s'", i, a[i].us,
				 a[i].body, b[i].us, b[i].body);
		leaves += strstr(a[i].body, "();") != NULL;
	}
	assert_true(leaves > 100);
	free(a);
	free(b);
	free(tc);
	free(hv);
	hv_result_free(&r);
	unlink(dat);
}

/* A breakpoint's return of KVM_RUN to the VMM: KVM_EXIT_DEBUG (real KVM), KVM_EXIT_INTERNAL_ERROR
 * (PVM), as `trace-cmd report -R` prints kvm_userspace_exit's reason. */
static bool bp_exit(const char *line)
{
	return strstr(line, " reason=4 ") || strstr(line, " reason=17 ");
}

/* A breakpoint's kvm_exit, as `trace-cmd report -R` prints it: SVM's #BP intercept (exit code
 * 0x43), or VMX's exception exit (0) with vector 3 in its interruption info. */
static bool bp_kvm_exit(const char *line)
{
	const char *info = strstr(line, " intr_info=");
	unsigned long long v;

	if (strstr(line, " exit_reason=67 "))
		return true;
	return strstr(line, " exit_reason=0 ") && info &&
	       sscanf(info, " intr_info=%lli", &v) == 1 && (v & 0xff) == 3;
}

/* What the walk of a record --host pair found. */
struct pair_check {
	long trap_events, bp_exits, stub_events, guest_mode, runs;
	long violations;
	/* how long after its vCPU thread's last exit (kvm_exit where the host fires it, else
	 * kvm_userspace_exit) each trap event is stamped, in ns; where the host fires kvm_exit
	 * (hw), record --host gives each trap event its exit's time: @near of them within 20 us */
	uint64_t exit_gap_max, exit_gap[4096];
	long nr_gaps, near;
	bool hw;
	long moved; /* trap events hvtrace said it moved to their kvm_exit (-1: no such line) */
	/* and after its kvm_userspace_exit (KVM_RUN's return to hvtrace), where kvm_exit is the
	 * exit: what of exit_gap is hvtrace's own user space */
	uint64_t user_gap[4096];
	long nr_user_gaps;
};

/* The time of a `trace-cmd report -t` line, in ns, from the "SECONDS.NANOSECONDS:" after @at (the
 * line's "] "); 0 if none. */
static uint64_t line_ns(const char *at)
{
	unsigned long long sec, ns;

	return sscanf(at + 2, " %llu.%9llu:", &sec, &ns) == 2 ? sec * 1000000000ull + ns : 0;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Walks `trace-cmd report -R -t -i HOST -i GUEST` output @text in time order, each vCPU v's host
 * thread @tids[v]: a trap event (a guest line holding @trap_event) must sit at a breakpoint exit of
 * its vCPU's thread, the last event of that thread before it, one exit per event; any other guest
 * event (a stub probe's, where @stub) must lie in guest mode on its vCPU's thread: between its
 * kvm_entry and its next kvm_exit where the host fires those, else (PVM) inside a KVM_RUN, from the
 * thread's sys_enter_ioctl of KVM_RUN (cmd 0xae80) to its next kvm_userspace_exit. Each breach is
 * printed and counted. */
static void walk_pair(const char *text, const int *tids, unsigned nv, const char *trap_event,
		      bool stub, struct pair_check *c)
{
	bool pending[8] = {false}, in_run[8] = {false}, seen_run[8] = {false};
	bool hw[8] = {false}, in_guest[8] = {false};
	uint64_t exit_ns[8] = {0}, uexit_ns[8] = {0};

	memset(c, 0, sizeof(*c));
	for (const char *l = text; *l;) {
		const char *end = strchr(l, '\n'), *at;
		size_t len = end ? (size_t)(end - l) : strlen(l);
		char line[512];
		unsigned cpu;
		int tid;

		snprintf(line, sizeof(line), "%.*s", (int)len, l);
		l = end ? end + 1 : l + len;
		if (strstr(line, "-host.dat:")) {
			bool uexit = strstr(line, " kvm_userspace_exit:") != NULL;
			bool run = strstr(line, " sys_enter_ioctl:") && strstr(line, " cmd=0x0000ae80");
			bool entry = strstr(line, " kvm_entry:") != NULL;
			bool exit = strstr(line, " kvm_exit:") != NULL;

			if ((!uexit && !run && !entry && !exit) || !(at = strstr(line, "hvtrace-")) ||
			    sscanf(at, "hvtrace-%d", &tid) != 1)
				continue;
			for (unsigned v = 0; v < nv; v++) {
				if (tids[v] != tid)
					continue;
				if (entry || exit) {
					hw[v] = true;
					in_guest[v] = entry;
					if (!exit)
						continue;
					/* where the host fires kvm_exit, a trap event takes its
					 * exit's time (record --host): it follows the exit */
					exit_ns[v] = line_ns(strstr(line, "] "));
					if (pending[v]) {
						c->violations++;
						printf("a breakpoint exit of vCPU %u's thread "
						       "without its "
						       "event\n",
						       v);
					}
					pending[v] = bp_kvm_exit(line);
					c->bp_exits += pending[v];
					continue;
				}
				if (run) {
					in_run[v] = seen_run[v] = true;
					c->runs++;
					continue;
				}
				in_run[v] = false;
				uexit_ns[v] = line_ns(strstr(line, "] "));
				if (hw[v])
					continue; /* the kvm_exit before it was the exit */
				if (pending[v]) {
					c->violations++; /* the thread went on: an exit without its event */
					printf("a breakpoint exit of vCPU %u's thread without its event\n", v);
				}
				pending[v] = bp_exit(line);
				c->bp_exits += pending[v];
				exit_ns[v] = line_ns(strstr(line, "] "));
			}
			continue;
		}
		if (!(at = strstr(line, "] ")) || at - line < 4 || sscanf(at - 4, "[%u]", &cpu) != 1 ||
		    cpu >= nv || !strstr(at, ": "))
			continue;
		if (trap_event && strstr(line, trap_event)) {
			c->trap_events++;
			if (!pending[cpu]) {
				c->violations++;
				printf("not at a breakpoint exit of its vCPU's thread: %s\n", line);
			} else if (exit_ns[cpu] && line_ns(at) >= exit_ns[cpu]) {
				uint64_t gap = line_ns(at) - exit_ns[cpu];

				c->exit_gap_max = gap > c->exit_gap_max ? gap : c->exit_gap_max;
				if (c->nr_gaps < (long)(sizeof(c->exit_gap) / sizeof(c->exit_gap[0])))
					c->exit_gap[c->nr_gaps++] = gap;
				if (hw[cpu] && uexit_ns[cpu] >= exit_ns[cpu] && line_ns(at) >= uexit_ns[cpu] &&
				    c->nr_user_gaps < (long)(sizeof(c->user_gap) / sizeof(c->user_gap[0])))
					c->user_gap[c->nr_user_gaps++] = line_ns(at) - uexit_ns[cpu];
			}
			pending[cpu] = false;
		} else if (stub && (hw[cpu] || seen_run[cpu])) {
			c->stub_events++;
			c->guest_mode += hw[cpu];
			if (hw[cpu] ? !in_guest[cpu] : !in_run[cpu]) {
				c->violations++;
				printf("not in guest mode on its vCPU's thread (%s): %s\n",
				       hw[cpu] ? "kvm_entry .. kvm_exit" : "KVM_RUN", line);
			}
		}
	}
	for (unsigned v = 0; v < nv; v++)
		c->violations += pending[v];
	printf("trap events %ld, breakpoint exits %ld, stub events %ld (%ld checked against "
	       "kvm_entry/kvm_exit) in %ld KVM_RUNs, violations %ld\n",
	       c->trap_events, c->bp_exits, c->stub_events, c->guest_mode, c->runs, c->violations);
	c->hw = hw[0];
	if (c->nr_gaps) {
		for (long i = 0; i < c->nr_gaps; i++)
			c->near += c->exit_gap[i] <= 20000;
		qsort(c->exit_gap, (size_t)c->nr_gaps, sizeof(c->exit_gap[0]), by_u64);
		printf("trap events after their exit (%s): median %.1f us, max %.1f us, %ld "
		       "within 20 us of %ld\n",
		       hw[0] ? "kvm_exit" : "kvm_userspace_exit",
		       c->exit_gap[c->nr_gaps / 2] / 1000.0, c->exit_gap_max / 1000.0, c->near,
		       c->nr_gaps);
	}
	if (c->nr_user_gaps) {
		qsort(c->user_gap, (size_t)c->nr_user_gaps, sizeof(c->user_gap[0]), by_u64);
		printf("of which after kvm_userspace_exit (hvtrace's user space): median %.1f us, max "
		       "%.1f us, of %ld\n",
		       c->user_gap[c->nr_user_gaps / 2] / 1000.0,
		       c->user_gap[c->nr_user_gaps - 1] / 1000.0, c->nr_user_gaps);
	}
}

/* `hvtrace record --host -o DAT @args... GUEST`, then the pair walked (walk_pair). */
static void record_host_pair(const char *const *args, const char *trap_event, bool stub,
			     struct pair_check *c)
{
	const char *argv[32] = {"record", "-o", dat, "--host"};
	char host[160], said[640], *opt, *text;
	const char *moved;
	struct hv_result r;
	int tids[8], n = 4;
	unsigned nv;

	snprintf(dat, sizeof(dat), "/tmp/tdat-kvm-%d.dat", getpid());
	snprintf(host, sizeof(host), "%.*s-host.dat", (int)(strlen(dat) - 4), dat);
	for (int i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n++] = hv_guest(NULL);
	argv[n] = NULL;
	hv_run(&r, argv, 0, 0);
	if (r.status != 0 || !strstr(r.console, "hvt-guest: ok\n"))
		fail_msg("record --host: status %d, stderr: %s", r.status, r.err);
	snprintf(said, sizeof(said),
		 "hvtrace: the host's side: %s (trace-cmd report -i %s -i %s)\n", host, host, dat);
	assert_non_null(strstr(r.err, said));
	opt = hv_sh("trace-cmd dump --options -i %s 2>/dev/null", host);
	nv = hv_guest_threads(opt, tids, 8);
	assert_int_equal(nv, 2);
	text = hv_sh("trace-cmd report -R -t -i %s -i %s 2>/dev/null", host, dat);
	walk_pair(text, tids, nv, trap_event, stub, c);
	moved = strstr(r.err, "hvtrace: --host: ");
	if (!moved || sscanf(moved, "hvtrace: --host: %ld trap events at their vCPU's kvm_exit",
			     &c->moved) != 1)
		c->moved = -1;
	if (c->hw) { /* the host fires kvm_exit: every trap event at its own */
		assert_int_equal(c->moved, c->trap_events);
		assert_int_equal(c->near, c->trap_events);
	}
	free(text);
	free(opt);
	hv_result_free(&r);
	unlink(dat);
	unlink(host);
}

/* Whether the host's tracefs (where it is mounted) has kvm:@event; else, with @what, one SKIPPED
 * line. */
static bool host_has_kvm_event(const char *event, const char *what)
{
	static const char *const roots[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
	char path[160];

	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/events/kvm/%s", roots[i], event);
		if (!access(path, F_OK))
			return true;
	}
	if (what)
		printf("SKIPPED: %s: the host's tracefs has no kvm:%s\n", what, event);
	return false;
}

static bool host_has_userspace_exit(const char *what)
{
	return host_has_kvm_event("kvm_userspace_exit", what);
}

/* record --host with trap probes (issue 26): `trace-cmd report -R -i HOST -i GUEST` interleaves the
 * host's kvm_userspace_exit of each vCPU thread with the guest's events, and every trap event (entry
 * and return alike) sits at a breakpoint exit of its own vCPU's thread, 1:1: 0 violations, as many
 * events as breakpoint exits. */
static void test_host_trap_events_at_exits(void **state)
{
	const char *args[] = {"-p", "function_graph", "--probe", "trap", "-l",
			      "tree_*", "-l", "tail_*", NULL};
	struct pair_check c;

	(void)state;
	if (!needs_int3_exits(__func__) || !host_has_userspace_exit(__func__)) {
		skip();
		return;
	}
	record_host_pair(args, " funcgraph_e", false, &c);
	/* tree_root, tree_a, tree_b, tree_leaf, tail_*: 3 rounds x 2 vCPUs, entries and returns */
	assert_true(c.trap_events > 100);
	assert_int_equal(c.violations, 0);
	assert_int_equal(c.trap_events, c.bp_exits);
}

/* Stub and trap probes in one recording: every stub event in guest mode on its vCPU's thread (the
 * guest's TSC converted to the host's clock: stub records carry no host time), between kvm_entry
 * and kvm_exit where the host fires them, else inside a KVM_RUN; every trap event (-e tree_b reads
 * guest memory, so it stays a trap probe; only where INT3 exits) at a breakpoint exit of its vCPU's
 * thread. The host's sys_enter_ioctl is recorded with --host-event. */
static void test_host_stub_events_in_guest_mode(void **state)
{
	bool trap = needs_int3_exits("test_host_stub_events_in_guest_mode (its trap part)");
	const char *args[] = {"--host-event",
			      "syscalls:sys_enter_ioctl",
			      "--probe",
			      "stub",
			      "-p",
			      "function",
			      "-l",
			      "tree_*",
			      "-l",
			      "task_*",
			      trap ? "-e" : NULL,
			      "tree_b(x64 a+0[0])",
			      NULL};
	struct pair_check c;

	(void)state;
	if (!host_has_userspace_exit(__func__)) {
		skip();
		return;
	}
	record_host_pair(args, trap ? " p_tree_b_0:" : NULL, true, &c);
	assert_int_equal(c.trap_events, trap ? 6 : 0); /* tree_b: 3 rounds x 2 vCPUs */
	assert_true(c.stub_events > 100);
	assert_int_equal(c.violations, 0);
	assert_int_equal(c.trap_events, c.bp_exits);
}

/* report --exits on the embedded VMM's recording (issue 26): per function, calls, total, guest and
 * host time and exits are what trace-cmd's raw view of the same pair gives (tests/common/host_pair.c),
 * to the nanosecond. On a host whose KVM fires no kvm_exit (PVM) the exits are the vCPU threads'
 * returns of KVM_RUN to the VMM, by KVM_EXIT_ reason: here every traced call and return is one
 * (trap probes), the console's writes the others. */
static void test_host_report_exits(void **state)
{
	const char *argv[] = {"record",	 "-o", dat,  "--host", "-p",	       "function_graph",
			      "--probe", "trap", "-l", "tree_*", hv_guest(NULL), NULL};
	char host[160], label_h[170], *opt, *raw, *rep;
	struct hv_result r;
	struct hv_pair w;
	int tids[8];

	(void)state;
	if (!needs_int3_exits(__func__) || !host_has_userspace_exit(__func__)) {
		skip();
		return;
	}
	snprintf(dat, sizeof(dat), "/tmp/tdat-kvm-%d.dat", getpid());
	snprintf(host, sizeof(host), "%.*s-host.dat", (int)(strlen(dat) - 4), dat);
	snprintf(label_h, sizeof(label_h), "%s:", strrchr(host, '/') + 1);
	hv_run(&r, argv, 0, 0);
	if (r.status != 0 || !strstr(r.console, "hvt-guest: ok\n"))
		fail_msg("record --host: status %d, stderr: %s", r.status, r.err);
	opt = hv_sh("trace-cmd dump --options -i %s 2>&1", host);
	assert_int_equal(hv_guest_threads(opt, tids, 8), 2);
	raw = hv_sh("trace-cmd report -R -t -i %s -i %s 2>&1", host, dat);
	hv_pair_walk(raw, label_h, tids, 2, &w);
	rep = hv_sh("%s report --exits -i %s 2>&1", hv_binary(), dat);
	printf("%s", rep);
	assert_true(w.nfn == 4 && w.exits_total > 100);
	hv_pair_check_exits(rep, &w);
	/* a breakpoint's exit by its name, as the host's own format prints it */
	if (kvm_int3_check()->verdict == KVM_INT3_EMULATION)
		assert_non_null(strstr(rep, "KVM_EXIT_INTERNAL_ERROR"));
	free(raw);
	free(rep);
	free(opt);
	hv_result_free(&r);
	unlink(dat);
	unlink(host);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_function),
	    cmocka_unit_test(test_function_graph_retval),
	    cmocka_unit_test(test_event),
	    cmocka_unit_test(test_return_probes),
	    cmocka_unit_test(test_graph_rendering_matches_trace_cmd),
	    cmocka_unit_test(test_host_trap_events_at_exits),
	    cmocka_unit_test(test_host_stub_events_in_guest_mode),
	    cmocka_unit_test(test_host_report_exits),
	};

	kvm_require();
	if (getenv("HVT_TEST_FILTER"))
		cmocka_set_test_filter(getenv("HVT_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}

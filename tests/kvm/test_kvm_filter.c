/* KVM integration: -P, --comm and --cpu (trace-cmd's task filter, ftrace's tracing_cpumask) on the
 * test guest, trap and stub probes alike. The guest counts its calls per vCPU; each worker task
 * (comm workerN, pid 100+N) runs task_body once, task_step TASK_STEPS times and task_leaf twice a
 * step, whichever vCPUs it runs on. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/guest/guest.h"
#include "tests/kvm/kvm_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const funcs[] = {"workload_run", "fib",	 "tree_root", "tree_a",
				    "tree_b",	    "tree_leaf", "task_body", "task_step",
				    "task_leaf",    "tail_top",	 "tail_mid",  "tail_leaf",
				    "nl_outer",	    "nl_inner",	 "deep",      "ev_target"};
#define NR_FUNCS     (sizeof(funcs) / sizeof(funcs[0]))
#define WORKER_CALLS (1 + TASK_STEPS * 3) /* task_body, task_step, task_leaf twice a step */

/* --cpu 1: cpu1's lines are exactly the guest's own counts of cpu1, none of cpu0; --stats counts
 * cpu0's calls as filtered. */
static void cpu_one(const char *probe)
{
	const char *argv[] = {"run",   "--probe", probe,     "--smp",	     "2",
			      "--cpu", "1",	  "--stats", hv_guest(NULL), NULL};
	long want = 0, dropped = 0;
	struct hv_result r;

	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	for (size_t f = 0; f < NR_FUNCS; f++) {
		long got = trace_count(&r, funcs[f], 1), n = guest_count(&r, funcs[f], 1);

		if (got != n)
			fail_msg("--probe %s: %s on cpu1: %ld lines, guest counted %ld", probe,
				 funcs[f], got, n);
		want += n;
		dropped += guest_count(&r, funcs[f], 0);
	}
	assert_true(want > 0 && dropped > 0);
	assert_int_equal(trace_count(&r, NULL, 0), 0);
	assert_int_equal((long)r.nr_lines, want);
	assert_int_equal(hv_stat(r.err, "filtered", "filtered"), dropped);
	hv_result_free(&r);
}

static void test_cpu_trap(void **state)
{
	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	cpu_one("trap");
}

static void test_cpu_stub(void **state)
{
	(void)state;
	cpu_one("stub");
}

/* --cpu 0-1 and --cpu 0 --cpu 1 select both vCPUs: every call is there. */
static void test_cpu_all(void **state)
{
	const char *argv[] = {"run", "--smp",	     "2", "--cpu", "0", "--cpu",
			      "1-1", hv_guest(NULL), NULL};
	long want = 0;
	struct hv_result r;

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	for (size_t f = 0; f < NR_FUNCS; f++)
		want += guest_count_all(&r, funcs[f], 2);
	assert_int_equal((long)r.nr_lines, want);
	hv_result_free(&r);
}

/* -P 101: worker1's calls and nothing else, on whichever vCPU it ran. */
static void pid_one(const char *probe)
{
	const char *argv[] = {"run", "--probe", probe,		"--smp", "2",
			      "-P",  "101",	hv_guest(NULL), NULL};
	struct hv_result r;

	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	assert_int_equal((long)r.nr_lines, WORKER_CALLS);
	for (size_t i = 0; i < r.nr_lines; i++) {
		assert_int_equal(r.lines[i].pid, 101);
		assert_string_equal(r.lines[i].comm, "worker1");
	}
	assert_int_equal(trace_count(&r, "task_body", -1), 1);
	assert_int_equal(trace_count(&r, "task_step", -1), TASK_STEPS);
	assert_int_equal(trace_count(&r, "task_leaf", -1), 2 * TASK_STEPS);
	hv_result_free(&r);
}

static void test_pid_trap(void **state)
{
	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	pid_one("trap");
}

static void test_pid_stub(void **state)
{
	(void)state;
	pid_one("stub");
}

/* --comm takes globs; with -P a task either names is kept. */
static void test_comm_glob_and_pid(void **state)
{
	const char *argv[] = {"run", "--smp",	     "2", "--comm", "worker[34]", "-P",
			      "101", hv_guest(NULL), NULL};
	long per[5] = {0};
	struct hv_result r;

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	assert_int_equal((long)r.nr_lines, 3 * WORKER_CALLS);
	for (size_t i = 0; i < r.nr_lines; i++) {
		int w = r.lines[i].pid - 100;
		char comm[32];

		assert_true(w == 1 || w == 3 || w == 4);
		snprintf(comm, sizeof(comm), "worker%d", w);
		assert_string_equal(r.lines[i].comm, comm);
		per[w]++;
	}
	assert_int_equal(per[1], WORKER_CALLS);
	assert_int_equal(per[3], WORKER_CALLS);
	assert_int_equal(per[4], WORKER_CALLS);
	hv_result_free(&r);
}

/* function_graph with --comm: the task's entries and returns both, nesting balanced (a worker
 * migrates in the middle of task_step: its return is made on the other vCPU). Also from a session
 * file line. */
static void test_graph_comm(void **state)
{
	const char *path = "/tmp/trig-filter-session.txt";
	FILE *f = fopen(path, "w");
	struct hv_result r;

	(void)state;
	assert_non_null(f);
	fprintf(f, "tracer function_graph\ncomm worker2\n");
	fclose(f);
	const char *argv[] = {"run", "--session", path, "--smp", "2", hv_guest(NULL), NULL};

	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	assert_int_equal(count_text(r.trace, "task_body() {\n"), 1);
	assert_int_equal(count_text(r.trace, "task_step() {\n"), TASK_STEPS);
	assert_int_equal(count_text(r.trace, "task_leaf();\n"), 2 * TASK_STEPS);
	assert_int_equal(count_text(r.trace, "}\n"), 1 + TASK_STEPS);
	assert_int_equal(count_text(r.trace, "fib"), 0);
	assert_non_null(strstr(r.trace, "# entries-written: 26   lost: 0\n"));
	hv_result_free(&r);
	unlink(path);
}

static void refused(const char *opt, const char *arg, const char *line)
{
	const char *argv[] = {"run", opt, arg, hv_guest(NULL), NULL};
	struct hv_result r;

	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, line);
	assert_string_equal(r.console, "");
	hv_result_free(&r);
}

static void test_bad_input(void **state)
{
	(void)state;
	refused("--cpu", "0,3-1", "hvtrace: --cpu '0,3-1': a range must ascend at column 5\n");
	refused("--cpu", "1,,2",
		"hvtrace: --cpu '1,,2': expected a CPU number (0 to 1023) at "
		"column 3\n");
	refused("--cpu", "1024",
		"hvtrace: --cpu '1024': expected a CPU number (0 to 1023) at "
		"column 1\n");
	refused("-P", "-1", "hvtrace: -P '-1': expected a guest pid (0 to 1073741824)\n");
	refused("--comm", "",
		"hvtrace: --comm '': expected a task name or glob (1 to 63 "
		"characters)\n");
}

/* --filter-event on the fields of -e: each vCPU calls ev_target twice, with id 42, flags 0xbeef and
 * n 3, once with the label "hello-events" and once with an unmapped label (a fault). */
#define EV_SPEC	 "ev_target(int id+0 | x32 flags+4, string label, NULL, long n)"
#define EV_GOOD	 ": ev_call->ev_target(id=42, flags=beef, label=hello-events, n=3)\n"
#define EV_FAULT ": ev_call->ev_target(id=42, flags=beef, label=(fault), n=3)\n"

static void event_filter(const char *spec, const char *expr, long good, long fault)
{
	const char *argv[] = {"run", "-e",	spec,		"--filter-event",
			      expr,  "--stats", hv_guest(NULL), NULL};
	struct hv_result r;

	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	if (count_text(r.trace, EV_GOOD) != good || count_text(r.trace, EV_FAULT) != fault)
		fail_msg("'%s': %ld good, %ld fault; want %ld, %ld", expr,
			 count_text(r.trace, EV_GOOD), count_text(r.trace, EV_FAULT), good, fault);
	assert_int_equal(count_text(r.trace, ": ev_call->ev_target("), good + fault);
	assert_int_equal(hv_stat(r.err, "filtered", "filtered"), 4 - good - fault);
	hv_result_free(&r);
}

static void test_event_filter(void **state)
{
	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	event_filter(EV_SPEC, "ev_target: id == 42 && n == 3", 2, 2);
	event_filter(EV_SPEC, "ev_target: label == \"hello-*\"", 2, 0);
	event_filter(EV_SPEC, "ev_target: label ~ hello-events", 2, 0);
	/* a faulted field satisfies no comparison, so its negation holds */
	event_filter(EV_SPEC, "ev_target: !(label ~ \"hello*\")", 0, 2);
	event_filter(EV_SPEC, "ev_target: label != \"hello-events\"", 0, 0);
	event_filter(EV_SPEC, "ev_target: flags & 0x200 && (n >= 3 && n < 4)", 2, 2);
	event_filter(EV_SPEC, "ev_target: flags & 0x100 || id <= 41 || id > 42", 0, 0);
	event_filter(EV_SPEC, "ev_target: id > -1 && (n == 2 || label == hello-events)", 2, 0);
}

/* Stub probes: the filter applies where the drain turns guest records into host records. */
static void test_event_filter_stub(void **state)
{
	const char *argv[] = {"run",
			      "--probe",
			      "stub",
			      "-e",
			      "ev_target(NULL, NULL, NULL, long n)",
			      "--filter-event",
			      "ev_target: n != 3",
			      "--stats",
			      hv_guest(NULL),
			      NULL};
	struct hv_result r;

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	assert_int_equal(count_text(r.trace, "ev_target"), 0);
	assert_int_equal(hv_stat(r.err, "filtered", "filtered"), 4);
	assert_true(hv_stat(r.err, "stub probes ", "stub probes") == 1);
	hv_result_free(&r);
	argv[6] = "ev_target: n == 3";
	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	assert_int_equal(count_text(r.trace, ": ev_call->ev_target(n=3)\n"), 4);
	assert_int_equal(hv_stat(r.err, "filtered", "filtered"), 0);
	hv_result_free(&r);
}

static void refused_filter(const char *expr, const char *line)
{
	const char *argv[] = {"run", "-e", EV_SPEC, "--filter-event", expr, hv_guest(NULL), NULL};
	struct hv_result r;

	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, line);
	assert_string_equal(r.console, "");
	hv_result_free(&r);
}

static void test_event_filter_refused(void **state)
{
	(void)state;
	refused_filter("ev_target: nosuch == 1",
		       "hvtrace: --filter-event 'ev_target: nosuch == 1': "
		       "nosuch: no such field of the -e event at column 12\n");
	refused_filter("ev_target: label > 3",
		       "hvtrace: --filter-event 'ev_target: label > 3': "
		       "label: a string field takes == != ~ at column 12\n");
	refused_filter("ev_target: id ~ 4*", "hvtrace: --filter-event 'ev_target: id ~ 4*': id: a "
					     "number field takes a number and == != < > <= >= & at "
					     "column 12\n");
	refused_filter("fib: n == 1",
		       "hvtrace: --filter-event 'fib: n == 1': fib has no -e event\n");
	refused_filter("ev_target: (id == 1", "hvtrace: --filter-event 'ev_target: (id == 1': "
					      "unclosed '(' at column 12\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cpu_trap),
	    cmocka_unit_test(test_cpu_stub),
	    cmocka_unit_test(test_cpu_all),
	    cmocka_unit_test(test_pid_trap),
	    cmocka_unit_test(test_pid_stub),
	    cmocka_unit_test(test_comm_glob_and_pid),
	    cmocka_unit_test(test_graph_comm),
	    cmocka_unit_test(test_bad_input),
	    cmocka_unit_test(test_event_filter),
	    cmocka_unit_test(test_event_filter_stub),
	    cmocka_unit_test(test_event_filter_refused),
	};

	kvm_require();
	return cmocka_run_group_tests_name("kvm_filter", tests, NULL, NULL);
}

/* KVM integration: --trigger (ftrace's function commands) and --tracing-off on the test guest,
 * whose call sequence is known: on one vCPU, workload_run calls fib (the guest counts its calls),
 * then tree_root TREE_ROUNDS times (tree_a(1), tree_a(2), tree_b(3); tree_a calls tree_leaf
 * twice, tree_b calls tree_a then tree_leaf), then tail_top, nl_outer, deep (DEEP_CALLS deep),
 * ev_call (ev_target twice); then the worker tasks run task_body, task_step and task_leaf. */
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

/* traceoff at the first tree_root: the trace is workload_run, every fib call, that tree_root,
 * and nothing after it. Trap probes, and stub probes for every function but tree_root. */
static void traceoff(const char *probe)
{
	const char *argv[] = {
	    "run",	    "--probe", probe, "--smp", "1", "--trigger", "tree_root:traceoff",
	    hv_guest(NULL), NULL};
	struct hv_result r;

	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	assert_int_equal((long)r.nr_lines, 1 + guest_count(&r, "fib", 0) + 1);
	assert_string_equal(r.lines[0].func, "workload_run");
	for (size_t i = 1; i + 1 < r.nr_lines; i++)
		assert_string_equal(r.lines[i].func, "fib");
	assert_string_equal(r.lines[r.nr_lines - 1].func, "tree_root");
	hv_result_free(&r);
}

static void test_traceoff_trap(void **state)
{
	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	traceoff("trap");
}

static void test_traceoff_stub(void **state)
{
	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	traceoff("stub");
}

/* Two vCPUs: nothing is recorded after the first tree_root of either, on any vCPU. */
static void test_traceoff_smp2(void **state)
{
	const char *argv[] = {"run",	      "--smp", "2", "--trigger", "tree_root:traceoff",
			      hv_guest(NULL), NULL};
	struct hv_result r;
	double off;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	assert_true(r.nr_lines > 1);
	assert_int_equal(trace_count(&r, "tree_root", -1), 1);
	off = 0;
	for (size_t i = 0; i < r.nr_lines; i++)
		if (!strcmp(r.lines[i].func, "tree_root"))
			off = r.lines[i].ts;
	for (size_t i = 0; i < r.nr_lines; i++)
		assert_true(r.lines[i].ts <= off);
	assert_int_equal(trace_count(&r, "tree_a", -1), 0);
	hv_result_free(&r);
}

/* --tracing-off, traceon at the first deep: from that call on, everything (from a session file). */
static void test_traceon(void **state)
{
	const char *path = "/tmp/trig-trigger-session.txt";
	const char *const after[] = {"deep", "ev_target", "task_body", "task_step", "task_leaf"};
	FILE *f = fopen(path, "w");
	struct hv_result r;
	long want = 0;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	assert_non_null(f);
	fprintf(f, "# tracing starts at the first deep\ntracing-off\ntrigger deep:traceon:1\n");
	fclose(f);
	const char *argv[] = {"run", "--session", path, "--smp", "1", hv_guest(NULL), NULL};

	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	for (size_t i = 0; i < sizeof(after) / sizeof(after[0]); i++) {
		assert_int_equal(trace_count(&r, after[i], 0), guest_count(&r, after[i], 0));
		want += guest_count(&r, after[i], 0);
	}
	assert_int_equal((long)r.nr_lines, want);
	assert_string_equal(r.lines[0].func, "deep");
	assert_string_equal(r.lines[0].parent, "workload_run");
	hv_result_free(&r);
	unlink(path);
}

/* --tracing-off alone could only give an empty trace: refused before the guest runs (issue 37;
 * tests/kvm/test_kvm_bad_input.c has the other such sets). */
static void test_tracing_off(void **state)
{
	const char *argv[] = {"run", "--smp", "2", "--tracing-off", hv_guest(NULL), NULL};
	struct hv_result r;

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err,
			    "hvtrace: --tracing-off: no --trigger FUNC:traceon turns tracing "
			    "on (the trace would be empty)\n");
	assert_string_equal(r.console, "");
	hv_result_free(&r);
}

/* The lines of the first <stack trace> block from @from on, names only (up to the '+'). */
static void stack_names(const char *from, char *out, size_t len)
{
	const char *p = strstr(from, "<stack trace>\n");
	size_t n = 0;

	assert_non_null(p);
	out[0] = 0;
	p = strchr(p, '\n') + 1;
	while (!strncmp(p, " => ", 4)) {
		const char *plus = strchr(p, '+');

		assert_non_null(plus);
		n += (size_t)snprintf(out + n, len - n, "%.*s,", (int)(plus - p - 4), p + 4);
		assert_true(strncmp(plus, "+0x", 3) == 0);
		p = strchr(p, '\n') + 1;
	}
}

/* stacktrace:1 on tree_leaf: its first call's chain, right after its line, once. */
static void test_stacktrace(void **state)
{
	const char *argv[] = {
	    "run",	    "--smp", "1", "-l", "tree_*", "--trigger", "tree_leaf:stacktrace:1",
	    hv_guest(NULL), NULL};
	struct hv_result r;
	char names[256];
	const char *leaf;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	assert_int_equal(count_text(r.trace, "<stack trace>\n"), 1);
	leaf = strstr(r.trace, ": tree_leaf <-tree_a\n");
	assert_non_null(leaf);
	/* the block follows that line, with its context */
	assert_true(strstr(r.trace, "<stack trace>\n") > leaf);
	assert_non_null(strstr(r.trace, "            cpu0-0       [000] "));
	stack_names(leaf, names, sizeof(names));
	assert_string_equal(names, "tree_leaf,tree_a,tree_root,workload_run,guest_entry,");
	assert_non_null(strstr(r.trace, "\n => tree_leaf+0x0/0x"));
	/* the trace itself is whole: every call, as the guest counts them */
	assert_int_equal(trace_count(&r, "tree_leaf", 0), guest_count(&r, "tree_leaf", 0));
	hv_result_free(&r);
}

/* function_graph, where each traced caller's return address is hooked: the chain is the real one
 * (tree_b in the first tree_root's third call), and :3 fires three times. */
static void test_stacktrace_graph(void **state)
{
	const char *argv[] = {"run",
			      "--smp",
			      "1",
			      "-p",
			      "function_graph",
			      "-l",
			      "tree_*",
			      "--trigger",
			      "tree_b:stacktrace:3",
			      hv_guest(NULL),
			      NULL};
	struct hv_result r;
	char names[256];
	const char *p;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	assert_int_equal(count_text(r.trace, "<stack trace>\n"), TREE_ROUNDS);
	p = r.trace;
	for (int k = 0; k < TREE_ROUNDS; k++) {
		p = strstr(p, "tree_b() {\n");
		assert_non_null(p);
		stack_names(p, names, sizeof(names));
		assert_string_equal(names, "tree_b,tree_root,workload_run,guest_entry,");
		p++;
	}
	hv_result_free(&r);
}

/* With -P, a trigger fires only for the calls the filter keeps: worker3's first task_leaf, whose
 * chain is its task's (task_step, task_body, task_main). */
static void test_stacktrace_pid(void **state)
{
	const char *argv[] = {
	    "run",	    "--smp", "2", "-P", "103", "--trigger", "task_leaf:stacktrace:1",
	    hv_guest(NULL), NULL};
	struct hv_result r;
	char names[256];
	const char *p;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	assert_int_equal(count_text(r.trace, "<stack trace>\n"), 1);
	p = strstr(r.trace, "<stack trace>\n");
	/* its context line names worker3 */
	const char *line = p;

	while (line > r.trace && line[-1] != '\n')
		line--;
	assert_true(!strncmp(line, "         worker3-103     [00", 28));
	stack_names(line, names, sizeof(names));
	assert_string_equal(names, "task_leaf,task_step,task_body,task_main,");
	hv_result_free(&r);
}

/* snapshot:2 on tree_root: FILE.snapshot-1 and -2 hold exactly the trace up to the first and the
 * second tree_root; there is no third. */
static void test_snapshot(void **state)
{
	const char *out = "/tmp/trig-trigger-snap.txt";
	const char *argv[] = {"run", "--smp",	     "1", "--trigger", "tree_root:snapshot:2", "-o",
			      out,   hv_guest(NULL), NULL};
	char path[128], *trace, *snap;
	struct hv_result r;
	const char *at;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	hv_run(&r, argv, 0, 0);
	assert_ran(&r);
	snprintf(path, sizeof(path), "cat %s", out);
	trace = hv_command_output(path);
	assert_non_null(trace);
	at = trace;
	for (int k = 1; k <= 2; k++) {
		at = strstr(at, ": tree_root <-workload_run\n");
		assert_non_null(at);
		at = strchr(at, '\n') + 1;
		snprintf(path, sizeof(path), "cat %s.snapshot-%d", out, k);
		snap = hv_command_output(path);
		assert_non_null(snap);
		assert_int_equal(strlen(snap), (size_t)(at - trace));
		assert_memory_equal(snap, trace, strlen(snap));
		free(snap);
		snprintf(path, sizeof(path), "%s.snapshot-%d", out, k);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s.snapshot-3", out);
	assert_int_equal(access(path, F_OK), -1);
	free(trace);
	unlink(out);
	hv_result_free(&r);
}

static void refused(const char *const *args, const char *line)
{
	const char *argv[12] = {"run"};
	struct hv_result r;
	size_t n = 1;

	while (*args)
		argv[n++] = *args++;
	argv[n++] = hv_guest(NULL);
	argv[n] = NULL;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, line);
	assert_string_equal(r.console, "");
	hv_result_free(&r);
}

/* Where INT3 does not exit (the INT3 check's verdict of a nested SVM under TCG, given by its test
 * hook), a probe with a trigger, always a trap probe, is refused in one line before the guest runs:
 * its INT3 would go to the guest's IDT and crash the guest. */
static void test_trigger_needs_int3_exits(void **state)
{
	const char *argv[] = {"run",	      "--probe", "stub", "--trigger", "tree_root:traceoff",
			      hv_guest(NULL), NULL};
	struct hv_result r;

	(void)state;
	setenv("HVTRACE_TEST_INT3", "guest-idt", 1);
	hv_run(&r, argv, 0, 0);
	unsetenv("HVTRACE_TEST_INT3");
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, "hvtrace: trap probes: INT3 in a guest does not exit on this "
				   "host's KVM, and the --trigger on tree_root needs one\n");
	assert_string_equal(r.console, "");
	hv_result_free(&r);
}

static void test_refused(void **state)
{
	(void)state;
	refused((const char *[]){"--trigger", "fib:dump", NULL},
		"hvtrace: --trigger 'fib:dump': unknown command (traceon, traceoff, stacktrace, "
		"snapshot, hist)\n");
	refused((const char *[]){"--trigger", "fib:traceoff:0", NULL},
		"hvtrace: --trigger 'fib:traceoff:0': expected a count from 1 to 2147483647 after "
		"the command\n");
	refused((const char *[]){"--trigger", "fib", NULL},
		"hvtrace: --trigger 'fib': expected FUNC:COMMAND[:N]\n");
	refused(
	    (const char *[]){"-l", "fib", "--trigger", "tree_root:traceoff", NULL},
	    "hvtrace: --trigger tree_root:traceoff: tree_root is not a traced function (-l, -g, "
	    "-e)\n");
	/* snapshot without -o (the trace on standard output): refused */
	char cmd[512], *out;

	snprintf(cmd, sizeof(cmd),
		 "%s run --trigger fib:snapshot --console /dev/null %s 2>&1; echo $?", hv_binary(),
		 hv_guest(NULL));
	out = hv_command_output(cmd);
	assert_non_null(out);
	assert_string_equal(out, "hvtrace: --trigger fib:snapshot: needs -o FILE (snapshots are "
				 "FILE.snapshot-N)\n2\n");
	free(out);
	/* record: stacktrace has no place in trace.dat */
	snprintf(
	    cmd, sizeof(cmd),
	    "%s record -o /tmp/trig-refused.dat --trigger fib:stacktrace --console /dev/null %s "
	    "2>&1; echo $?",
	    hv_binary(), hv_guest(NULL));
	out = hv_command_output(cmd);
	assert_non_null(out);
	assert_string_equal(out,
			    "hvtrace: --trigger fib:stacktrace: not with record (trace.dat)\n2\n");
	free(out);
	assert_int_equal(access("/tmp/trig-refused.dat", F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_traceoff_trap),
	    cmocka_unit_test(test_traceoff_stub),
	    cmocka_unit_test(test_traceoff_smp2),
	    cmocka_unit_test(test_traceon),
	    cmocka_unit_test(test_tracing_off),
	    cmocka_unit_test(test_stacktrace),
	    cmocka_unit_test(test_stacktrace_graph),
	    cmocka_unit_test(test_stacktrace_pid),
	    cmocka_unit_test(test_snapshot),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_trigger_needs_int3_exits),
	};

	kvm_require();
	return cmocka_run_group_tests_name("kvm_trigger", tests, NULL, NULL);
}

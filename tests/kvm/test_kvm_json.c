/* KVM integration for `run --format jsonl` (and `--format json`: Chrome's JSON) and the progress
 * line, on the test guest (which counts its own calls, tests/guest/workloads.c) and on the
 * hostile-data guest (a task name with a newline, a forged line and an escape sequence): jq
 * parses every line of the JSON Lines, the entries per function and vCPU equal the guest's own
 * counts, function_graph's exits carry the return values the guest's source fixes, -e events
 * their fields; the progress line shows on a pseudo-terminal (tests/common/pty_stderr.py) and
 * never in the trace, and not at all with --quiet or without a terminal. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TRACE "/tmp/json-kvm-trace.jsonl"
#define PTY_OUT "/tmp/json-kvm-pty-stdout.txt"
#define SMP 2
#define BEGIN "{\"type\":\"begin\",\"tracer\":\"function\",\"cpus\":2}\n"
#define TREE_VALUE 243 /* tests/guest/guest.h: what tree_root returns */

/* Runs hvtrace with @argv, exit status 0, nothing on stderr; its JSON Lines go to TRACE, and jq
 * must parse every line as one object with a type. */
static void run_jsonl(struct hv_result *r, const char *const *argv)
{
	char *out;

	hv_run(r, argv, 0, 0);
	if (r->status) /* the guest's side of a failure (the lane saw a guest fault once) */
		fprintf(stderr, "status %d, stderr: %s\nconsole tail: %s\n", r->status, r->err,
			r->console && strlen(r->console) > 1000
			    ? r->console + strlen(r->console) - 1000
			    : r->console);
	assert_int_equal(r->status, 0);
	assert_string_equal(r->err, "");
	hv_write_text(TRACE, r->trace);
	/* jq -e fails on a line that does not parse, and on one whose .type is missing */
	out = hv_sh("jq -e -c '.type' " TRACE " | sort | uniq -c | awk '{print $2}' | tr -d '\"' | "
		 "sort | tr '\\n' ' '");
	assert_non_null(strstr(out, "begin "));
	assert_non_null(strstr(out, "end "));
	free(out);
	out = hv_sh("jq -c . " TRACE " | wc -l");
	assert_int_equal(atol(out), count_lines(r->trace));
	free(out);
}

/* The number jq program @prog prints for TRACE. */
static long jq_num(const char *prog)
{
	char *out = hv_sh("jq -s '%s' " TRACE, prog);
	long v = atol(out);

	free(out);
	return v;
}

/* For every "hvt-guest: count F cpu C = N" of the console with F starting with @prefix: the
 * trace's @type lines of F on vCPU C number exactly N. Returns how many counts were compared. */
static unsigned assert_guest_counts(const struct hv_result *r, const char *type, const char *prefix)
{
	unsigned compared = 0;

	for (const char *p = r->console; (p = strstr(p, "hvt-guest: count ")); p++) {
		char func[64], prog[256];
		unsigned cpu;
		long n;

		if (sscanf(p, "hvt-guest: count %63s cpu %u = %ld", func, &cpu, &n) != 3 ||
		    strncmp(func, prefix, strlen(prefix)))
			continue;
		snprintf(prog, sizeof(prog),
			 "map(select(.type==\"%s\" and .func==\"%s\" and .cpu==%u)) | length", type,
			 func, cpu);
		if (jq_num(prog) != n)
			fail_msg("%s on cpu %u: %ld %s lines in the JSON, the guest counted %ld", func,
				 cpu, jq_num(prog), type, n);
		compared++;
	}
	return compared;
}

/* The function tracer on every function: one entry per call the guest counted, per vCPU; the
 * first line names the tracer, the last one counts what was written. */
static void test_function_counts(void **state)
{
	const char *argv[] = {"run", "--format", "jsonl", hv_guest(NULL), NULL};
	struct hv_result r;

	(void)state;
	run_jsonl(&r, argv);
	assert_non_null(strstr(r.console, "hvt-guest: ok\n"));
	assert_int_equal(strncmp(r.trace, BEGIN, sizeof(BEGIN) - 1), 0);
	/* every function the guest counts, on both vCPUs */
	assert_int_equal(assert_guest_counts(&r, "entry", ""), 2 * 16);
	assert_true(guest_count_all(&r, "fib", SMP) > 100);
	/* written = the entry lines; nothing lost */
	assert_int_equal(jq_num("map(select(.type==\"end\"))[0].written"),
			 jq_num("map(select(.type==\"entry\")) | length"));
	assert_int_equal(jq_num("map(select(.type==\"end\"))[0].lost"), 0);
	/* the context of a known call: tree_root called by workload_run, its comm and pid */
	assert_int_equal(jq_num("map(select(.func==\"tree_root\" and .parent==\"workload_run\" and "
				".comm==(\"cpu\"+(.cpu|tostring)) and .pid==0)) | length"),
			 guest_count_all(&r, "tree_root", SMP));
	/* ts is ts_ns rounded to the microsecond, as ftrace prints it */
	assert_int_equal(jq_num("map(select(.type==\"entry\" and "
				"((.ts*1000000|round) != ((.ts_ns+500)/1000|floor)))) | length"),
			 0);
	hv_result_free(&r);
}

/* function_graph: each call an entry and an exit, their counts the guest's, tree_root's return
 * value the one its source fixes, every duration > 0. */
static void test_graph_exits(void **state)
{
	const char *argv[] = {"run", "--format", "jsonl", "-p", "function_graph", "-l", "tree_*",
			      hv_guest(NULL), NULL};
	struct hv_result r;
	char prog[256];

	(void)state;
	run_jsonl(&r, argv);
	assert_int_equal(assert_guest_counts(&r, "entry", "tree_"), 2 * 4);
	assert_int_equal(assert_guest_counts(&r, "exit", "tree_"), 2 * 4);
	snprintf(prog, sizeof(prog),
		 "map(select(.type==\"exit\" and .func==\"tree_root\" and .retval==\"0x%x\" and "
		 ".depth==0)) | length",
		 TREE_VALUE);
	assert_int_equal(jq_num(prog), guest_count_all(&r, "tree_root", SMP));
	assert_int_equal(jq_num("map(select(.type==\"exit\" and (.duration_ns|type)==\"number\" "
				"and .duration_ns > 0)) | length"),
			 jq_num("map(select(.type==\"exit\")) | length"));
	/* workloads.c: tree_root -> tree_a -> tree_leaf (depth 2, 4 a tree), tree_root -> tree_b ->
	 * tree_a -> tree_leaf (depth 3, 2 a tree), tree_root -> tree_b -> tree_leaf (depth 2, 1) */
	assert_int_equal(jq_num("map(select(.type==\"entry\" and .func==\"tree_leaf\" and "
				".parent==\"tree_a\" and .depth==2)) | length"),
			 4 * guest_count_all(&r, "tree_root", SMP));
	assert_int_equal(jq_num("map(select(.type==\"entry\" and .func==\"tree_leaf\" and "
				".parent==\"tree_a\" and .depth==3)) | length"),
			 2 * guest_count_all(&r, "tree_root", SMP));
	assert_int_equal(jq_num("map(select(.type==\"exit\" and .func==\"tree_leaf\" and "
				".parent==\"tree_b\" and .depth==2)) | length"),
			 guest_count_all(&r, "tree_root", SMP));
	hv_result_free(&r);
}

/* -e: the event's fields as args: numbers as numbers, strings as strings, a string the guest's
 * memory could not give as null (tests/guest/runtime.c: ev_call passes a bad pointer once). */
static void test_event_args(void **state)
{
	const char *argv[] = {"run",
			      "--format",
			      "jsonl",
			      "-e",
			      "ev_target(int id+0 | x32 flags+4 | string name+8[0], string label)",
			      hv_guest(NULL),
			      NULL};
	struct hv_result r;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	run_jsonl(&r, argv);
	assert_int_equal(jq_num("map(select(.type==\"event\")) | length"),
			 guest_count_all(&r, "ev_target", SMP));
	assert_int_equal(
	    jq_num("map(select(.type==\"event\" and .func==\"ev_target\" and .parent==\"ev_call\" "
		   "and .args.id==42 and .args.flags==\"beef\" and .args.name==\"objname\" and "
		   ".args.label==\"hello-events\")) | length"),
	    SMP);
	assert_int_equal(jq_num("map(select(.type==\"event\" and .args.id==42 and "
				"(.args|has(\"label\")) and .args.label==null)) | length"),
			 SMP);
	hv_result_free(&r);
}

/* The hostile-data guest's task "x\n[000] forged\e[2J" (the first 15 bytes are its comm): every
 * line still parses, and jq reads the name back byte for byte. */
static void test_hostile_comm(void **state)
{
	const char *argv[] = {"run", "--format", "jsonl", "-p", "function_graph", "--probe", "trap",
			      hv_guest("hostile-data"), NULL};
	struct hv_result r;
	char *out;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	run_jsonl(&r, argv);
	assert_non_null(strstr(r.trace, "\"comm\":\"x\\u000a[000] forged\\u001b\",\"pid\":66,"));
	out = hv_sh("jq -s -j 'map(select(.pid==66) | .comm) | unique | .[]' " TRACE
		 " | od -An -c | tr -s ' '");
	assert_string_equal(out, " x \\n [ 0 0 0 ] f o r g e d 033\n");
	free(out);
	assert_int_equal(jq_num("map(select(.type==\"end\"))[0].written"), 269);
	hv_result_free(&r);
}

/* Bad --format values are refused before the guest starts, naming the choice, and a format the
 * command does not write names the command. */
static void test_format_refused(void **state)
{
	const char *a1[] = {"run", "--format", "xml", hv_guest(NULL), NULL};
	const char *a2[] = {"record", "--format", "jsonl", hv_guest(NULL), NULL};
	struct hv_result r;

	(void)state;
	hv_run(&r, a1, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, "hvtrace: --format 'xml': expected text, graph, json, jsonl, "
				   "folded or tracedat\n");
	assert_string_equal(r.console, "");
	hv_result_free(&r);
	hv_run(&r, a2, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, "hvtrace: --format jsonl: record does not write it (run, attach, "
				   "report do)\n");
	hv_result_free(&r);
}

/* run --format json is Chrome's trace-event JSON, as report --format json writes it: one document
 * jq parses, function_graph's calls as B/E slices, as many tree_root slices on the task tracks
 * as the guest counted calls, each closed. */
static void test_run_json_is_chrome(void **state)
{
	const char *argv[] = {"run", "--format", "json", "-p", "function_graph", "-l", "tree_*",
			      hv_guest(NULL), NULL};
	struct hv_result r;
	long calls;

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	hv_write_text(TRACE, r.trace);
	calls = guest_count_all(&r, "tree_root", SMP);
	assert_true(calls > 0);
	assert_int_equal(jq_num(".[0].otherData.tracer == \"function_graph\" | if . then 1 else 0 "
				"end"),
			 1);
	assert_int_equal(jq_num(".[0].traceEvents | map(select(.ph==\"B\" and .name==\"tree_root\" "
				"and .pid==2)) | length"),
			 calls);
	assert_int_equal(jq_num(".[0].traceEvents | map(select(.ph==\"E\" and .pid==2)) | length"),
			 jq_num(".[0].traceEvents | map(select(.ph==\"B\" and .pid==2)) | length"));
	hv_result_free(&r);
}

/* ./hvtrace @args on the never-ending guest for 1.6 s (exit 124) with its stderr on a pty: what
 * the terminal got (pty_stderr.py's escaped form); the trace file must hold only trace lines. */
static char *run_on_pty(const char *args)
{
	char *out, *trace;

	out =
	    hv_sh("tests/common/pty_stderr.py " PTY_OUT " %s run --probe %s %s --timeout 1.6 -o " TRACE
	       " --console /dev/null %s; echo \" status=$?\"",
	       hv_binary(), test_probe(), args, hv_guest("loop"));
	trace = hv_sh("cat " TRACE);
	/* never in the trace: no status text, no carriage return, no escape sequence */
	assert_null(strstr(trace, "hvtrace"));
	assert_null(strchr(trace, '\r'));
	assert_null(strchr(trace, '\033'));
	assert_true(count_text(trace, " <-") > 1000);
	free(trace);
	trace = hv_sh("cat " PTY_OUT);
	assert_string_equal(trace, ""); /* the guest's console went to /dev/null */
	free(trace);
	return out;
}

/* On a terminal: the line "hvtrace: N events (R/s), L lost, T s" rewritten in place about twice a
 * second (three times in 1.6 s), T growing, N never shrinking and growing over the run; erased as the run ends, and the --timeout message
 * on a line of its own after it. With --quiet, only the message. */
static void test_progress_pty(void **state)
{
	char *out;
	const char *p;
	long last = -1, first = -1;
	unsigned lines = 0;
	double at = 0;

	(void)state;
	out = run_on_pty("");
	for (p = out; (p = strstr(p, "\\x0d\\x1b[Khvtrace: ")); p++) {
		long events, lost;
		double elapsed;
		char rate[32];

		if (sscanf(p, "\\x0d\\x1b[Khvtrace: %ld events (%31[0-9]/s), %ld lost, %lf s", &events,
			   rate, &lost, &elapsed) != 4)
			continue; /* the --timeout message */
		/* never fewer; the same where no event came in half a second (a guest still
		 * booting, or a starved host: the nested lane's L1 once) */
		assert_true(events >= last);
		assert_int_equal(lost, 0);
		assert_true(elapsed > at);
		if (first < 0)
			first = events;
		last = events;
		at = elapsed;
		lines++;
	}
	/* twice a second of the run */
	if (lines < 2 || lines > (unsigned)(2 * at + 0.5) + 1)
		fail_msg("%u progress lines on the terminal: %s", lines, out);
	if (last <= first)
		fail_msg("the event count did not grow over the run (%ld to %ld): %s", first, last,
			 out);
	/* the line erased as the run ends, then the message (before the rest of the trace is
	 * written), nothing after it */
	assert_non_null(strstr(out, "\\x0d\\x1b[Khvtrace: --timeout 1.6: the guest was stopped after "
				    "1.6 s\\x0d\\x0a status=124\n"));
	free(out);

	out = run_on_pty("--quiet");
	assert_string_equal(out, "hvtrace: --timeout 1.6: the guest was stopped after 1.6 "
				 "s\\x0d\\x0a status=124\n");
	free(out);
}

/* The trace itself printed on the terminal (no -o): no progress line over it. */
static void test_progress_not_over_trace(void **state)
{
	char *out;

	(void)state;
	out = hv_sh("tests/common/pty_stderr.py - %s run --probe %s --timeout 1.2 --console /dev/null "
		 "%s; echo \" status=$?\"",
		 hv_binary(), test_probe(), hv_guest("loop"));
	assert_true(count_text(out, " <-") > 1000);
	assert_int_equal(count_text(out, " events ("), 0);
	assert_null(strstr(out, "\\x1b"));
	/* the message and the trace's end (stdout and stderr share the terminal: in either order,
	 * and a write of one may land inside a line of the other) */
	assert_non_null(strstr(out, "hvtrace: --timeout 1.2: the guest was stopped after 1.2 s"));
	assert_non_null(strstr(out, "# entries-in-buffer/entries-written: "));
	assert_non_null(strstr(out, "   lost: 0\\x0d\\x0a"));
	assert_non_null(strstr(out, " status=124\n"));
	free(out);
}

/* Without a terminal (stderr a file, as hv_run makes it): no progress line. */
static void test_progress_not_a_tty(void **state)
{
	const char *argv[] = {"run", "--timeout", "1.2", hv_guest("loop"), NULL};
	struct hv_result r;

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 124);
	assert_string_equal(r.err, "hvtrace: --timeout 1.2: the guest was stopped after 1.2 s\n");
	hv_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_function_counts), cmocka_unit_test(test_graph_exits),
	    cmocka_unit_test(test_event_args),	    cmocka_unit_test(test_hostile_comm),
	    cmocka_unit_test(test_format_refused),  cmocka_unit_test(test_run_json_is_chrome),
	    cmocka_unit_test(test_progress_pty),
	    cmocka_unit_test(test_progress_not_a_tty), cmocka_unit_test(test_progress_not_over_trace),
	};

	kvm_require();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

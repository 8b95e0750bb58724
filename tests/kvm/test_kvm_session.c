/* KVM integration for session files (`run --session FILE`): a session file gives exactly the trace the
 * same options give on the command line (one vCPU: the test guest runs the same way every time; only
 * the timestamps differ), from a file or from standard input, the command line after it wins, and a
 * bad line is refused with its file and line before the guest starts. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SESSION "/tmp/sess-kvm-session.txt"
#define EVENT "ev_target(int n+0, NULL, NULL, long n2)"

/* @trace with every timestamp ("12.345678:") replaced by "TS:" (malloc'd). */
static char *mask_ts(const char *trace)
{
	char *out = malloc(strlen(trace) + 1), *o = out;

	assert_non_null(out);
	for (const char *p = trace; *p;) {
		const char *q = p;

		while (isdigit((unsigned char)*q))
			q++;
		if (q > p && *q == '.' && isdigit((unsigned char)q[1]) &&
		    (p == trace || !isdigit((unsigned char)p[-1]))) {
			const char *d = q + 1;

			while (isdigit((unsigned char)*d))
				d++;
			if (d - q == 7 && *d == ':') {
				o += sprintf(o, "TS:");
				p = d + 1;
				continue;
			}
		}
		*o++ = *p++;
	}
	*o = 0;
	return out;
}

/* The command line's trace: function tracer minus fib, one event, one vCPU. */
static char *reference_trace(void)
{
	const char *argv[] = {"run", "-p", "function", "-n", "fib", "-e", EVENT, "--smp", "1",
			      hv_guest(NULL), NULL};
	struct hv_result r;
	char *t;

	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	/* a real trace: the guest's own counts, the event's values */
	assert_int_equal(count_text(r.trace, ": tree_root <-workload_run\n"),
			 guest_count_all(&r, "tree_root", 1));
	assert_true(guest_count_all(&r, "tree_root", 1) > 0);
	assert_int_equal(count_text(r.trace, ": ev_call->ev_target(n=42, n2=3)\n"), 2);
	assert_int_equal(count_text(r.trace, " fib <-"), 0);
	t = mask_ts(r.trace);
	hv_result_free(&r);
	return t;
}

static void assert_same_trace(const char *want, const char *trace)
{
	char *got = mask_ts(trace);

	if (strcmp(want, got)) {
		size_t i = 0;

		while (want[i] == got[i])
			i++;
		fail_msg("traces differ at byte %zu: want ...%.80s..., got ...%.80s...", i,
			 want + (i > 40 ? i - 40 : 0), got + (i > 40 ? i - 40 : 0));
	}
	free(got);
}

/* A session file with comments, blank lines and quotes gives the command line's trace exactly. */
static void test_file_reproduces_command_line(void **state)
{
	const char *argv[] = {"run", "--session", SESSION, hv_guest(NULL), NULL};
	char *want;
	struct hv_result r;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	want = reference_trace();
	hv_write_text(SESSION, "# the reference session\n"
			    "tracer function\n"
			    "\n"
			    "notrace 'fib'\n"
			    "  event " EVENT "   \n"
			    "smp=1\n");
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	assert_same_trace(want, r.trace);
	hv_result_free(&r);
	free(want);
	unlink(SESSION);
}

/* The same from standard input; options after --session override the file's. */
static void test_stdin_and_override(void **state)
{
	const char *argv[] = {"run",	  "--session", SESSION, "-p",	  "function",
			      "--smp", "1",	    "-e",	EVENT, hv_guest(NULL), NULL};
	char *want, *out, cmd[1024];
	struct hv_result r;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	want = reference_trace();
	/* the file says nop and 2 vCPUs; the command line after it says function and 1 */
	hv_write_text(SESSION, "tracer nop\nsmp 2\nnotrace fib\n");
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	assert_same_trace(want, r.trace);
	hv_result_free(&r);

	hv_write_text(SESSION, "tracer function\nnotrace fib\nevent " EVENT "\nsmp 1\n");
	snprintf(cmd, sizeof(cmd), "%s run --console /dev/null --session - %s < %s", hv_binary(),
		 hv_guest(NULL), SESSION);
	out = hv_command_output(cmd);
	assert_non_null(out);
	assert_same_trace(want, out);
	free(out);
	free(want);
	unlink(SESSION);
}

/* A bad line: one error naming file and line, exit 2, the guest never started. */
static void test_bad_line(void **state)
{
	const char *argv[] = {"run", "--session", SESSION, hv_guest(NULL), NULL};
	struct hv_result r;

	(void)state;
	hv_write_text(SESSION, "tracer function\n# fine so far\ntracr nop\n");
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, "hvtrace: " SESSION ":3: unknown option 'tracr'\n");
	assert_string_equal(r.trace, "");
	assert_string_equal(r.console, "");
	hv_result_free(&r);
	unlink(SESSION);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_file_reproduces_command_line),
	    cmocka_unit_test(test_stdin_and_override),
	    cmocka_unit_test(test_bad_line),
	};

	kvm_require();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

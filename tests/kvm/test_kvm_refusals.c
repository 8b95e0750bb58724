/* Issue 37, classes 6, 10 and 13: bad input refused before the guest starts (and before /dev/kvm is
 * opened, so these run on any host), with one line that keeps its reason whatever the size of the
 * value it echoes (6), option sets that could only give an empty trace (10), and wording that says
 * what is wrong (13). Each: exit 2, stderr exactly one line, the guest never started. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/hv_expect.h"
#include "tests/kvm/kvm_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A refusal: exit 2, stderr exactly @line, the guest never started, no trace. */
#define REFUSED(line) {.status = 2, .err_is = (line), .console_is = "", .no_lines = true}

/* In a case's args: the test guest. */
#define GUEST "<guest>"

static const char *arg(const char *a)
{
	return strcmp(a, GUEST) ? a : hv_guest(NULL);
}

static void play(const struct hv_run_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++)
		hv_case_play(&cases[i], arg);
}

/* @n bytes of @c, NUL-terminated (malloc'd). */
static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memset(s, c, n);
	s[n] = 0;
	return s;
}

/* hvtrace @argv; its stderr is one line, exit @status, and the line ends with @tail. */
static void expect_tail(const char *const *argv, int status, const char *tail)
{
	struct hv_result r;
	size_t n, t = strlen(tail);

	hv_run(&r, argv, 0, 0);
	n = strlen(r.err);
	assert_int_equal(r.status, status);
	assert_int_equal(count_lines(r.err), 1);
	if (n < t || strcmp(r.err + n - t, tail))
		fail_msg("stderr does not end with \"%s\": \"%s\"", tail, r.err);
	assert_true(n < 1024); /* the echoed value was shortened */
	assert_memory_equal(r.err, "hvtrace: ", 9);
	hv_result_free(&r);
}

/* Class 6: a 100 KB -l glob, a 10 KB --qmp path and a 500-character --filter-event print their
 * reason; the value is shortened to its head and its length. */
static void test_long_values_keep_reason(void **state)
{
	char *glob = repeat('a', 100000), *name = repeat('n', 10000), *fe = repeat('x', 480);
	char expr[600];

	(void)state;
	{
		const char *argv[] = {"run", "-l", glob, hv_guest(NULL), NULL};

		expect_tail(argv, 2, "aaaa...(100000 bytes)': matches no traceable function\n");
	}
	{
		const char *argv[] = {"attach", "--qmp", name, NULL};

		expect_tail(argv, 2, "nnnn...(10000 bytes): longer than 127 bytes\n");
	}
	snprintf(expr, sizeof(expr), "fib: n == 1 && %s == 2", fe); /* 500 characters */
	{
		const char *argv[] = {"run", "-e", "fib(int n)", "--filter-event", expr,
				      hv_guest(NULL), NULL};

		expect_tail(argv, 2, "xxxx...(500 bytes)': field name too long at column 16\n");
	}
	free(glob);
	free(name);
	free(fe);
}

/* Class 10: what can only give an empty trace is refused, as --max-depth without function_graph. */
static void test_empty_trace_refused(void **state)
{
	static const struct hv_run_case c[] = {
	    {"-p nop -l fib",
	     {"run", "-p", "nop", "-l", "fib", GUEST},
	     REFUSED("hvtrace: -l: -p nop traces no function (use -p function or function_graph)\n")},
	    {"-p nop -n fib",
	     {"run", "-p", "nop", "-n", "fib", "-e", "fib(int n)", GUEST},
	     REFUSED("hvtrace: -n: -p nop traces no function (use -p function or function_graph)\n")},
	    {"--tracing-off without traceon",
	     {"run", "--tracing-off", "--trigger", "fib:traceoff", GUEST},
	     REFUSED("hvtrace: --tracing-off: no --trigger FUNC:traceon turns tracing on (the trace "
		     "would be empty)\n")},
	    {"--cpu 99 of 2",
	     {"run", "--cpu", "99", GUEST},
	     REFUSED("hvtrace: --cpu: CPU 99: the guest has 2 vCPUs (0-1)\n")},
	    {"--cpu 0-1 of 1",
	     {"run", "--smp", "1", "--cpu", "0-1", GUEST},
	     REFUSED("hvtrace: --cpu: CPU 1: the guest has 1 vCPU (0)\n")},
	    {"--cpu 3 of 2",
	     {"run", "--smp", "2", "--cpu", "3", GUEST},
	     REFUSED("hvtrace: --cpu: CPU 3: the guest has 2 vCPUs (0-1)\n")},
	};

	(void)state;
	play(c, ARRAY_LEN(c));
}

/* Class 13: a --qmp that is empty, a directory or a regular file; report inputs that are missing or
 * directories; a --filter-event number out of 64 bits. */
static void test_wording(void **state)
{
	char dir[] = "/tmp/hvt-refusals-XXXXXX", file[64], want[256];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/plain", dir);
	hv_write_text(file, "not a socket\n");
	{
		const struct hv_run_case c[] = {
		    {"--qmp ''",
		     {"attach", "--qmp", ""},
		     {.status = 2,
		      .err_is = "hvtrace: qmp: an empty address (unix:PATH, PATH or tcp:HOST:PORT)\n"}},
		    {"--filter-event number out of 64 bits",
		     {"run", "-e", "fib(int n)", "--filter-event", "fib: n > 99999999999999999999",
		      GUEST},
		     REFUSED("hvtrace: --filter-event 'fib: n > 99999999999999999999': a number out of "
			     "range (64 bits) at column 10\n")},
		};

		play(c, ARRAY_LEN(c));
	}
	{
		const char *argv[] = {"attach", "--qmp", dir, NULL};

		snprintf(want, sizeof(want), "hvtrace: qmp %s: a directory, not a socket\n", dir);
		expect_tail(argv, 2, want);
	}
	{
		const char *argv[] = {"attach", "--qmp", file, NULL};

		snprintf(want, sizeof(want), "hvtrace: qmp %s: a regular file, not a socket\n", file);
		expect_tail(argv, 2, want);
	}
	{
		const char *argv[] = {"report", "-i", dir, NULL};

		snprintf(want, sizeof(want), "hvtrace: report: %s: a directory, not a trace.dat\n",
			 dir);
		expect_tail(argv, 2, want);
	}
	unlink(file);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_long_values_keep_reason),
	    cmocka_unit_test(test_empty_trace_refused),
	    cmocka_unit_test(test_wording),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

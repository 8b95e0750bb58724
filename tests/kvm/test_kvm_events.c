/* KVM integration for function-based events (-e): a function taking a struct pointer, a string, an
 * array and a pointer chain, traced with seed 003's forms; the values must equal the guest's printout;
 * a bad pointer prints (fault); a bad spec is refused with a caret under the fault. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "kvm_common.h"

#include <stdio.h>
#include <string.h>

#define SPEC                                                                                        \
	"ev_target(int id+0 | x32 flags+4 | string name+8[0] | s64 deep+16[0]+8[0]+0 | "        \
	"u16[4] arr+24, string label, u32[3] vals, long n)"

static long count_text(const char *s, const char *what)
{
	long n = 0;

	for (; (s = strstr(s, what)); s++)
		n++;
	return n;
}

static void test_event_values(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run", "-e", SPEC, hv_guest(NULL), NULL};
	const char *good = ": ev_call->ev_target(id=42, flags=beef, name=objname, deep=99, "
			   "arr=1,2,3,4, label=hello-events, vals=10,20,30, n=3)\n";
	const char *bad = ": ev_call->ev_target(id=42, flags=beef, name=objname, deep=99, "
			  "arr=1,2,3,4, label=(fault), vals=10,20,30, n=3)\n";

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	/* what the guest itself printed about the same data */
	assert_non_null(strstr(r.console, "hvt-guest: ev id=42 flags=beef name=objname deep=99 "
					  "arr=1,2,3,4 label=hello-events vals=10,20,30\n"));
	/* each vCPU calls it twice: once with a good label, once with an unmapped pointer */
	assert_int_equal(count_text(r.trace, good), 2);
	assert_int_equal(count_text(r.trace, bad), 2);
	assert_non_null(strstr(r.trace, "            cpu0-0       [000] "));
	assert_non_null(strstr(r.trace, "            cpu1-0       [001] "));
	assert_non_null(strstr(r.trace, "# entries-written: 4   lost: 0\n"));
	hv_result_free(&r);
}

/* With the function tracer on too, the event's function prints as the event, the rest as functions. */
static void test_event_with_function_tracer(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run", "-p", "function", "-l", "ev_target", "-l", "tree_root", "-e",
			      "ev_target(int n+0, NULL, NULL, long n2)", hv_guest(NULL), NULL};

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(count_text(r.trace, ": ev_call->ev_target(n=42, n2=3)\n"), 4);
	assert_int_equal(count_text(r.trace, ": tree_root <-workload_run\n"), 6);
	assert_int_equal(count_text(r.trace, "ev_target <-"), 0);
	hv_result_free(&r);
}

static void test_bad_spec(void **state)
{
	struct hv_result r;
	const char *a1[] = {"run", "-e", "ev_target(int id, strin label)", hv_guest(NULL), NULL};
	const char *a2[] = {"run", "-e", "nosuch(int a)", hv_guest(NULL), NULL};

	(void)state;
	hv_run(&r, a1, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, "hvtrace: -e: unknown type 'strin'\n"
				   "  ev_target(int id, strin label)\n"
				   "                    ^\n");
	assert_string_equal(r.console, "");
	hv_result_free(&r);
	hv_run(&r, a2, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, "hvtrace: -e nosuch(...): nosuch is not a traceable function\n");
	assert_string_equal(r.console, "");
	hv_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_values),
		cmocka_unit_test(test_event_with_function_tracer),
		cmocka_unit_test(test_bad_spec),
	};

	if (!kvm_available())
		return 0;
	return cmocka_run_group_tests_name("kvm_events", tests, NULL, NULL);
}

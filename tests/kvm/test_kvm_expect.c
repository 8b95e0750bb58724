/* KVM integration for the boot-test verdicts: --expect-call counts, --expect-return, --expect-order
 * and --expect-no-call on the test guest, whose calls and return values are fixed by its source
 * (tests/guest/guest.h, workloads.c) and which counts its own calls; the exit status; --summary read
 * by jq and python's json.tool; --junit checked against tests/common/junit.xsd by xmllint and read by
 * junitparser (tests/common/junit_cases.py). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/junit.h"
#include "tests/kvm/kvm_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* tests/guest/guest.h and workloads.c: each vCPU runs TREE_ROUNDS trees; a tree_root calls tree_a
 * three times and tree_leaf seven times and returns TREE_VALUE; nl_outer returns NL_VALUE */
#define SMP 2
#define TREE_ROUNDS 3
#define TREE_VALUE 243
#define NL_VALUE 7
#define SUMMARY "/tmp/sess-kvm-expect-summary.json"
#define JUNIT "/tmp/sess-kvm-expect-junit.xml"

static void assert_sh(const char *want, const char *fmt, const char *arg)
{
	char *got = hv_sh(fmt, arg, arg);

	assert_string_equal(got, want);
	free(got);
}

static void test_all_met(void **state)
{
	char tree_root[32], tree_a[32], tree_leaf_gt[32], tree_leaf_le[32], ret_root[32], ret_nl[32];
	struct hv_result r;

	(void)state;
	snprintf(tree_root, sizeof(tree_root), "tree_root=%d", SMP * TREE_ROUNDS);
	snprintf(tree_a, sizeof(tree_a), "tree_a==%d", SMP * TREE_ROUNDS * 3);
	snprintf(tree_leaf_gt, sizeof(tree_leaf_gt), "tree_leaf>%d", SMP * TREE_ROUNDS * 7 - 1);
	snprintf(tree_leaf_le, sizeof(tree_leaf_le), "tree_leaf<=%d", SMP * TREE_ROUNDS * 7);
	snprintf(ret_root, sizeof(ret_root), "tree_root==%d", TREE_VALUE);
	snprintf(ret_nl, sizeof(ret_nl), "nl_outer=%d", NL_VALUE);

	const char *argv[] = {"run", "-p", "function_graph", "--smp", "2",
			      "--expect-call", tree_root, "--expect-call", tree_a,
			      "--expect-call", tree_leaf_gt, "--expect-call", tree_leaf_le,
			      "--expect-call", "workload_run", "--expect-call", "fib!=0",
			      "--expect-return", ret_root, "--expect-return", ret_nl,
			      "--expect-return", "tree_leaf!=-1",
			      "--expect-order", "workload_run,fib,tree_root",
			      "--summary", SUMMARY, "--junit", JUNIT, hv_guest(NULL), NULL};

	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	/* the guest agrees with what the expectations assumed */
	assert_int_equal(guest_count_all(&r, "tree_root", SMP), SMP * TREE_ROUNDS);
	assert_int_equal(guest_count_all(&r, "tree_leaf", SMP), SMP * TREE_ROUNDS * 7);

	/* the summary: valid JSON; its counts are the guest's */
	free(hv_sh("python3 -m json.tool %s", SUMMARY));
	assert_sh("0\n\"ok\"\n\"function_graph\"\n0\n0\n10\ntrue\n",
		  "jq '.exit_status, .exit_reason, .tracer, .lost, .unmet, (.expectations | length), "
		  "all(.expectations[]; .passed)' %s",
		  SUMMARY);
	for (int i = 0; i < 3; i++) {
		static const char *const f[] = {"tree_root", "fib", "task_step"};
		char want[64], *got = hv_sh("jq '.functions[] | select(.name == \"%s\") | .calls, .returns' "
					 "%s",
					 f[i], SUMMARY);

		snprintf(want, sizeof(want), "%ld\n%ld\n", guest_count_all(&r, f[i], SMP),
			 guest_count_all(&r, f[i], SMP));
		assert_string_equal(got, want);
		free(got);
	}
	assert_sh("\"--expect-return\"\n\"tree_root==243\"\n\"tree_root returned 243 6 times\"\n",
		  "jq '.expectations[6] | .option, .spec, .detail' %s", SUMMARY);
	assert_junit(JUNIT, "hvtrace|hvtrace.expect|--expect-call tree_root=6|passed\n"
		     "hvtrace|hvtrace.expect|--expect-call tree_a==18|passed\n"
		     "hvtrace|hvtrace.expect|--expect-call tree_leaf>41|passed\n"
		     "hvtrace|hvtrace.expect|--expect-call tree_leaf<=42|passed\n"
		     "hvtrace|hvtrace.expect|--expect-call workload_run|passed\n"
		     "hvtrace|hvtrace.expect|--expect-call fib!=0|passed\n"
		     "hvtrace|hvtrace.expect|--expect-return tree_root==243|passed\n"
		     "hvtrace|hvtrace.expect|--expect-return nl_outer=7|passed\n"
		     "hvtrace|hvtrace.expect|--expect-return tree_leaf!=-1|passed\n"
		     "hvtrace|hvtrace.expect|--expect-order workload_run,fib,tree_root|passed\n");
	hv_result_free(&r);
	unlink(SUMMARY);
	unlink(JUNIT);
}

/* One met, the others unmet: exit 7, one line each, the same in the summary and the JUnit report. */
static void test_some_unmet(void **state)
{
	const char *argv[] = {"run", "-p", "function_graph", "--smp", "2",
			      "--expect-call", "tree_root=6", "--expect-call", "tree_root>6",
			      "--expect-return", "nl_outer==6", "--expect-order", "tree_root,fib",
			      "--expect-no-call", "nl_inner",
			      "--summary", SUMMARY, "--junit", JUNIT, hv_guest(NULL), NULL};
	struct hv_result r;
	char want[1024];
	long nl_inner;

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 7);
	nl_inner = guest_count_all(&r, "nl_inner", SMP);
	assert_true(nl_inner > 0);
	snprintf(want, sizeof(want),
		 "hvtrace: --expect-call tree_root>6: the guest called tree_root 6 times\n"
		 "hvtrace: --expect-return nl_outer==6: nl_outer returned 0x7 (7) in 2 of 2 returns\n"
		 "hvtrace: --expect-order tree_root,fib: fib was first called before tree_root\n"
		 "hvtrace: --expect-no-call nl_inner: the guest called it %ld times\n",
		 nl_inner);
	assert_string_equal(r.err, want);
	assert_sh("7\n\"expect-unmet\"\n4\n[true,false,false,false,false]\n",
		  "jq -c '.exit_status, .exit_reason, .unmet, [.expectations[].passed]' %s", SUMMARY);
	snprintf(want, sizeof(want),
		 "hvtrace|hvtrace.expect|--expect-call tree_root=6|passed\n"
		 "hvtrace|hvtrace.expect|--expect-call tree_root>6|failure|expect-call|the guest "
		 "called tree_root 6 times\n"
		 "hvtrace|hvtrace.expect|--expect-return nl_outer==6|failure|expect-return|nl_outer "
		 "returned 0x7 (7) in 2 of 2 returns\n"
		 "hvtrace|hvtrace.expect|--expect-order tree_root,fib|failure|expect-order|fib was "
		 "first called before tree_root\n"
		 "hvtrace|hvtrace.expect|--expect-no-call nl_inner|failure|expect-no-call|the guest "
		 "called it %ld times\n",
		 nl_inner);
	assert_junit(JUNIT, want);
	hv_result_free(&r);
	unlink(SUMMARY);
	unlink(JUNIT);
}

/* Return values through return probes (-r) alone, with the tracer nop. */
static void test_return_probes(void **state)
{
	char ret_root[32], ret_nl[32], want[512];
	struct hv_result r;

	(void)state;
	snprintf(ret_root, sizeof(ret_root), "tree_root==%d", TREE_VALUE);
	snprintf(ret_nl, sizeof(ret_nl), "nl_outer==%d", NL_VALUE + 1);

	const char *argv[] = {"run", "-r", "tree_root", "-r", "nl_outer(long ret)", "--smp", "2",
			      "--expect-return", ret_root, "--expect-return", ret_nl,
			      "--summary", SUMMARY, hv_guest(NULL), NULL};

	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 7);
	snprintf(want, sizeof(want),
		 "hvtrace: --expect-return %s: nl_outer returned 0x%x (%d) in %d of %d returns\n",
		 ret_nl, NL_VALUE, NL_VALUE, SMP, SMP);
	assert_string_equal(r.err, want);
	snprintf(want, sizeof(want), "[true,false]\n\"tree_root returned %d %d times\"\n", TREE_VALUE,
		 SMP * TREE_ROUNDS);
	assert_sh(want, "jq -c '[.expectations[].passed], .expectations[0].detail' %s", SUMMARY);
	/* the trace shows the same values */
	snprintf(want, sizeof(want), "r_tree_root: (workload_run+");
	assert_int_equal(count_text(r.trace, want), SMP * TREE_ROUNDS);
	hv_result_free(&r);
	unlink(SUMMARY);
}

/* Refused before the guest starts: exit 2, one line, no file written. */
static void test_refused(void **state)
{
	static const struct {
		const char *argv[10];
		const char *err;
	} cases[] = {
	    {{"run", "--expect-call", "fib>=x", NULL},
	     "hvtrace: --expect-call 'fib>=x': expected a count (a decimal number) after the "
	     "comparison\n"},
	    {{"run", "--expect-return", "tree_root==243", NULL},
	     "hvtrace: --expect-return tree_root==243: needs tree_root's return values: trace it "
	     "with -p function_graph or -r tree_root\n"},
	    {{"run", "-r", "tree_root(int ret+1)", "--expect-return", "tree_root==244", NULL},
	     "hvtrace: --expect-return tree_root==244: needs tree_root's return values: its -r spec "
	     "must be RAX itself ('tree_root' or 'tree_root(long ret)')\n"},
	    {{"run", "-l", "fib", "--expect-order", "fib,tree_root", NULL},
	     "hvtrace: --expect-order fib,tree_root: tree_root is not traced (check -l/-n and the "
	     "guest's symbols)\n"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[16];
		struct hv_result r;
		size_t n = 0;

		for (; cases[i].argv[n]; n++)
			argv[n] = cases[i].argv[n];
		argv[n++] = "--summary";
		argv[n++] = SUMMARY;
		argv[n++] = hv_guest(NULL);
		argv[n] = NULL;
		unlink(SUMMARY);
		hv_run(&r, argv, 0, 0);
		assert_int_equal(r.status, 2);
		assert_string_equal(r.err, cases[i].err);
		assert_string_equal(r.console, "");
		assert_int_equal(access(SUMMARY, F_OK), -1);
		hv_result_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_all_met),
	    cmocka_unit_test(test_some_unmet),
	    cmocka_unit_test(test_return_probes),
	    cmocka_unit_test(test_refused),
	};

	kvm_require();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

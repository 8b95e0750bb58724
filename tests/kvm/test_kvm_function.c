/* KVM integration: boot the test guest in the embedded VMM under the function tracer and compare the
 * trace with the guest's own call counts, per function and per vCPU, exactly. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const funcs[] = {"workload_run", "fib",	   "tree_root", "tree_a",
				    "tree_b",	    "tree_leaf",   "task_body", "task_step",
				    "task_leaf",    "tail_top",	   "tail_mid",	"tail_leaf",
				    "nl_outer",	    "nl_inner",	   "deep",	"ev_target"};
#define NR_FUNCS (sizeof(funcs) / sizeof(funcs[0]))

static bool is_traced(const char *f, const char *const *only, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(only[i], f))
			return true;
	return false;
}

/* Every traced function: trace lines per vCPU == the guest's count; untraced: no line. */
static void assert_counts(const struct hv_result *r, unsigned smp, const char *const *traced,
			  size_t nr_traced)
{
	long total = 0;

	for (size_t f = 0; f < NR_FUNCS; f++) {
		for (unsigned c = 0; c < smp; c++) {
			long want = is_traced(funcs[f], traced, nr_traced) ?
					    guest_count(r, funcs[f], c) : 0;
			long got = trace_count(r, funcs[f], (int)c);

			if (got != want)
				fail_msg("%s on cpu%u: trace has %ld lines, guest counted %ld", funcs[f],
					 c, got, want);
			total += want;
		}
	}
	assert_int_equal(trace_count(r, NULL, -1), total);
	assert_int_equal((long)r->nr_lines, total);
}

static void assert_guest_ok(const struct hv_result *r)
{
	if (r->status != 0 || !strstr(r->console, "hvt-guest: ok\n"))
		fail_msg("status %d, stderr: %s, console tail: %s", r->status, r->err,
			 r->console + (strlen(r->console) > 200 ? strlen(r->console) - 200 : 0));
	assert_string_equal(r->err, "");
}

static void run_all_functions(unsigned smp)
{
	char smp_s[16];
	struct hv_result r;

	snprintf(smp_s, sizeof(smp_s), "%u", smp);
	const char *argv[] = {"run", "-p", "function", "--smp", smp_s, hv_guest(NULL), NULL};

	hv_run(&r, argv, 0, 0);
	assert_guest_ok(&r);
	assert_counts(&r, smp, funcs, NR_FUNCS);

	/* the trailer counts what was written, nothing lost */
	char trailer[96];

	snprintf(trailer, sizeof(trailer), "# entries-written: %zu   lost: 0\n", r.nr_lines);
	assert_non_null(strstr(r.trace, trailer));

	for (size_t i = 0; i < r.nr_lines; i++) {
		const struct trace_line *l = &r.lines[i];

		/* tasks: workers run task_*, the vCPU boot contexts (cpu<N>-0) run the rest */
		if (!strncmp(l->func, "task_", 5)) {
			assert_true(!strncmp(l->comm, "worker", 6));
			assert_int_equal(l->pid, 100 + atoi(l->comm + 6));
		} else {
			char want[16];

			snprintf(want, sizeof(want), "cpu%u", l->cpu);
			assert_string_equal(l->comm, want);
			assert_int_equal(l->pid, 0);
		}
		/* parents follow the guest's call tree */
		if (!strcmp(l->func, "fib"))
			assert_true(!strcmp(l->parent, "fib") || !strcmp(l->parent, "workload_run"));
		else if (!strcmp(l->func, "tree_leaf"))
			assert_true(!strcmp(l->parent, "tree_a") || !strcmp(l->parent, "tree_b"));
		else if (!strcmp(l->func, "tree_a"))
			assert_true(!strcmp(l->parent, "tree_root") || !strcmp(l->parent, "tree_b"));
		else if (!strcmp(l->func, "task_step"))
			assert_string_equal(l->parent, "task_body");
		else if (!strcmp(l->func, "task_leaf"))
			assert_string_equal(l->parent, "task_step");
		else if (!strcmp(l->func, "workload_run"))
			assert_string_equal(l->parent, "guest_entry");
		else if (!strcmp(l->func, "task_body"))
			assert_string_equal(l->parent, "task_main");
		/* per-vCPU time order */
		for (size_t j = i; j-- > 0;)
			if (r.lines[j].cpu == l->cpu) {
				assert_true(r.lines[j].ts <= l->ts);
				break;
			}
	}
	/* with several vCPUs, workers migrate in the middle of task_step: each shows up on 2+ vCPUs */
	if (smp > 1) {
		for (int w = 1; w <= 4; w++) {
			char comm[16];
			unsigned seen = 0;

			snprintf(comm, sizeof(comm), "worker%d", w);
			for (size_t i = 0; i < r.nr_lines; i++)
				if (!strcmp(r.lines[i].comm, comm))
					seen |= 1u << r.lines[i].cpu;
			assert_true(__builtin_popcount(seen) >= 2);
		}
		assert_non_null(strstr(r.console, "hvt-guest: switches 20 migrations 16\n"));
	}
	hv_result_free(&r);
}

static void test_all_functions_smp1(void **state)
{
	(void)state;
	run_all_functions(1);
}

static void test_all_functions_smp2(void **state)
{
	(void)state;
	run_all_functions(2);
}

static void test_all_functions_smp3(void **state)
{
	(void)state;
	run_all_functions(3);
}

static void test_filter_fib(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run", "-p", "function", "-l", "fib", hv_guest(NULL), NULL};
	const char *traced[] = {"fib"};

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_guest_ok(&r);
	assert_counts(&r, 2, traced, 1);
	/* fib(12) on cpu0 and fib(13) on cpu1: 465 + 753 calls */
	assert_int_equal(trace_count(&r, "fib", -1), 465 + 753);
	hv_result_free(&r);
}

static void test_filter_and_notrace(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run",	  "-l", "tree_*", "-l", "task_?eaf", "-n",
			      "tree_leaf", "-n", "tree_b", hv_guest(NULL), NULL};
	const char *traced[] = {"tree_root", "tree_a", "task_leaf"};

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_guest_ok(&r);
	assert_counts(&r, 2, traced, 3);
	hv_result_free(&r);
}

static void test_nop_tracer(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run", "-p", "nop", hv_guest(NULL), NULL};

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_guest_ok(&r);
	assert_int_equal(r.nr_lines, 0);
	assert_non_null(strstr(r.trace, "# entries-written: 0   lost: 0\n"));
	hv_result_free(&r);
}

static void test_list_functions(void **state)
{
	struct hv_result r;
	const char *argv[] = {"list-functions", hv_guest(NULL), NULL};

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(count_lines(r.trace), NR_FUNCS);
	for (size_t f = 0; f < NR_FUNCS; f++) {
		char line[80];

		snprintf(line, sizeof(line), "%s\n", funcs[f]);
		assert_non_null(strstr(r.trace, line));
	}
	assert_null(strstr(r.trace, "guest_entry"));
	hv_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_functions_smp1), cmocka_unit_test(test_all_functions_smp2),
		cmocka_unit_test(test_all_functions_smp3), cmocka_unit_test(test_filter_fib),
		cmocka_unit_test(test_filter_and_notrace), cmocka_unit_test(test_nop_tracer),
		cmocka_unit_test(test_list_functions),
	};

	kvm_require();
	return cmocka_run_group_tests_name("kvm_function", tests, NULL, NULL);
}

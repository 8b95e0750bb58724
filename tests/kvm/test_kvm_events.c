/* KVM integration for function-based events (-e): a function taking a struct pointer, a string, an
 * array and a pointer chain, traced with seed 003's forms; the values must equal the guest's printout;
 * a bad pointer prints (fault); a bad spec is refused with a caret under the fault. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC                                                                                        \
	"ev_target(int id+0 | x32 flags+4 | string name+8[0] | s64 deep+16[0]+8[0]+0 | "        \
	"u16[4] arr+24, string label, u32[3] vals, long n)"

static void test_event_values(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run", "-e", SPEC, hv_guest(NULL), NULL};
	const char *good = ": ev_call->ev_target(id=42, flags=beef, name=objname, deep=99, "
			   "arr=1,2,3,4, label=hello-events, vals=10,20,30, n=3)\n";
	const char *bad = ": ev_call->ev_target(id=42, flags=beef, name=objname, deep=99, "
			  "arr=1,2,3,4, label=(fault), vals=10,20,30, n=3)\n";

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
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
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
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

/* Two -e on one function: both are recorded at each call and printed in their order, in the function
 * tracer's lines and as function_graph comments; a fourth is refused with one line. */
static void test_two_events_one_function(void **state)
{
	struct hv_result r;
	const char *a1[] = {"run", "-e", "ev_target(int id+0)", "-e", "ev_target(NULL, string label)",
			    hv_guest(NULL), NULL};
	const char *a2[] = {"run", "-p", "function_graph", "-g", "ev_target", "-e",
			    "ev_target(int id+0)", "-e", "ev_target(NULL, string label)", hv_guest(NULL),
			    NULL};
	const char *a3[] = {"run", "-e", "ev_target(int a)", "-e", "ev_target(int b)", "-e",
			    "ev_target(int c)", "-e", "ev_target(int d)", hv_guest(NULL), NULL};

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	hv_run(&r, a1, 0, 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(count_text(r.trace, ": ev_call->ev_target(id=42)\n"), 4);
	assert_int_equal(count_text(r.trace, ": ev_call->ev_target(label=hello-events)\n"), 2);
	assert_int_equal(count_text(r.trace, ": ev_call->ev_target(label=(fault))\n"), 2);
	/* the second line of each call right after the first, same task, CPU and time */
	for (const char *p = r.trace; (p = strstr(p, ": ev_call->ev_target(id=42)\n"));) {
		const char *l = p, *next = strchr(p, '\n') + 1;

		while (l > r.trace && l[-1] != '\n')
			l--;
		assert_memory_equal(l, next, (size_t)(p - l));
		assert_true(!strncmp(next + (p - l), ": ev_call->ev_target(label=", 27));
		p = next;
	}
	assert_non_null(strstr(r.trace, "# entries-written: 4   lost: 0\n"));
	hv_result_free(&r);
	hv_run(&r, a2, 0, 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(count_text(r.trace, "|  ev_target() {\n"), 4);
	assert_int_equal(count_text(r.trace, "|  ev_target() {\n"
					     " 0)               |  /* ev_target: id=42 */\n"
					     " 0)               |  /* ev_target: label="),
			 2);
	assert_int_equal(count_text(r.trace, "|  /* ev_target: id=42 */\n"), 4);
	assert_int_equal(count_text(r.trace, "|  /* ev_target: label=hello-events */\n"), 2);
	assert_int_equal(count_text(r.trace, "|  /* ev_target: label=(fault) */\n"), 2);
	hv_result_free(&r);
	hv_run(&r, a3, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, "hvtrace: -e ev_target: at most 3 events on one function\n");
	assert_string_equal(r.console, "");
	hv_result_free(&r);
}

/* size_t and a direct address (seed 003: "type name=ADDR", a global, no argument position): the guest's
 * ev_object.id read at its address from the ELF's symbols. */
static void test_direct_address(void **state)
{
	struct hv_result r;
	char cmd[600], spec[128], line[128];
	unsigned long long addr = 0;
	FILE *nm;
	const char *argv[] = {"run", "-e", spec, hv_guest(NULL), NULL};

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	snprintf(cmd, sizeof(cmd), "nm '%s'", hv_guest(NULL));
	nm = popen(cmd, "r");
	assert_non_null(nm);
	while (fgets(line, sizeof(line), nm))
		if (strstr(line, " ev_object\n"))
			addr = strtoull(line, NULL, 16);
	pclose(nm);
	assert_true(addr != 0);
	snprintf(spec, sizeof(spec), "ev_target(int gid=0x%llx, NULL, NULL, NULL, size_t n)", addr);
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(count_text(r.trace, ": ev_call->ev_target(gid=42, n=3)\n"), 4);
	assert_non_null(strstr(r.trace, "# entries-written: 4   lost: 0\n"));
	hv_result_free(&r);
}

static int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* kprobe_profile line "<name> <hits> <misses>" of --profile. */
static void assert_kprobe_profile(const char *err, const char *name, long hits, long misses)
{
	char key[128];
	const char *p;
	long h, m;

	snprintf(key, sizeof(key), "\n  %s ", name);
	p = strstr(err, key);
	if (!p)
		fail_msg("no profile line for %s in: %s", name, err);
	assert_int_equal(sscanf(p + strlen(key), " %ld %ld", &h, &m), 2);
	/* the last such line is the kprobe_profile one (the function table comes first) */
	while ((p = strstr(p + 1, key)))
		assert_int_equal(sscanf(p + strlen(key), " %ld %ld", &h, &m), 2);
	assert_int_equal(h, hits);
	assert_int_equal(m, misses);
}

/* -r: returns of tree_a with a typed value and of tree_leaf in hex; no entry lines for them. */
static void test_return_probes(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run", "-r", "tree_a(long ret)", "-r", "tree_leaf", "--profile",
			      hv_guest(NULL), NULL};

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	/* 3 rounds x 2 vCPUs of tree_root: tree_a returns 5, 13, 25; tree_leaf 1 4 4 9 9 16 9 */
	assert_int_equal(count_text(r.trace, " <- tree_a) ret=5 duration="), 6);
	assert_int_equal(count_text(r.trace, " <- tree_a) ret=13 duration="), 6);
	assert_int_equal(count_text(r.trace, " <- tree_a) ret=25 duration="), 6);
	assert_int_equal(count_text(r.trace, ": r_tree_a: (tree_root+0x"), 12);
	assert_int_equal(count_text(r.trace, ": r_tree_a: (tree_b+0x"), 6);
	assert_int_equal(count_text(r.trace, " <- tree_leaf) ret=10 duration="), 6); /* 16 in hex */
	assert_int_equal(count_text(r.trace, ": r_tree_leaf: ("), 42);
	assert_int_equal(count_text(r.trace, "tree_a <-"), 0);
	assert_kprobe_profile(r.err, "r_tree_a_0", 18, 0);
	assert_kprobe_profile(r.err, "r_tree_leaf_0", 42, 0);
	hv_result_free(&r);
}

/* The trace's lines without what differs between two runs of the same guest: the timestamp and the
 * duration's value. Sorted (vCPU timing orders them differently); @n set to their number. */
static char **return_lines(const char *trace, size_t *n)
{
	size_t cap = (size_t)count_lines(trace) + 1;
	char **v = calloc(cap, sizeof(*v));
	const char *p = trace;

	assert_non_null(v);
	*n = 0;
	while (*p) {
		const char *eol = strchr(p, '\n'), *cpu, *ts, *dur;

		eol = eol ? eol : p + strlen(p);
		cpu = memchr(p, ']', (size_t)(eol - p));
		ts = cpu ? memmem(cpu, (size_t)(eol - cpu), ": ", 2) : NULL;
		dur = ts ? memmem(ts, (size_t)(eol - ts), " duration=", 10) : NULL;
		if (*p != '#' && dur) {
			assert_true(*n < cap);
			assert_true(asprintf(&v[*n], "%.*s%.*s", (int)(cpu + 1 - p), p,
					     (int)(dur - ts), ts) > 0);
			(*n)++;
		}
		p = *eol ? eol + 1 : eol;
	}
	qsort(v, *n, sizeof(*v), strcmp_ptr);
	return v;
}

static void free_lines(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* --probe stub -r: plain and typed return probes whose value is RAX run in the stub (no VM exit
 * for them) and print exactly the return lines the trap path prints. */
static void test_return_probes_stub(void **state)
{
	struct hv_result trap, stub;
	const char *targv[] = {"run", "--probe", "trap", "-r", "tree_a(long ret)", "-r", "tree_leaf",
			       "--stats", hv_guest(NULL), NULL};
	const char *sargv[] = {"run", "--probe", "stub", "-r", "tree_a(long ret)", "-r", "tree_leaf",
			       "--stats", hv_guest(NULL), NULL};
	char **a, **b;
	size_t na, nb;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	hv_run(&trap, targv, 0, 0);
	hv_run(&stub, sargv, 0, 0);
	assert_int_equal(trap.status, 0);
	assert_int_equal(stub.status, 0);
	/* trap: every entry and return an exit; stub: none, 2 x (18 + 42) stub records */
	assert_int_equal(hv_cpu_stat(trap.err, 0, "events") + hv_cpu_stat(trap.err, 1, "events"),
			 120);
	assert_int_equal(hv_cpu_stat(stub.err, 0, "events"), 0);
	assert_int_equal(hv_cpu_stat(stub.err, 1, "events"), 0);
	assert_int_equal(hv_stat(stub.err, "stub probes", "stub probes"), 2);
	assert_int_equal(hv_stat(stub.err, "stub probes", "records"), 120);
	assert_int_equal(hv_stat(stub.err, "stub probes", "lost"), 0);
	assert_int_equal(hv_stat(stub.err, "cpu0 stub-events", "stub-events"), 60);
	assert_int_equal(hv_stat(stub.err, "cpu1 stub-events", "stub-events"), 60);
	assert_null(strstr(stub.err, "stay trap probes"));
	a = return_lines(trap.trace, &na);
	b = return_lines(stub.trace, &nb);
	assert_int_equal(na, 60);
	assert_int_equal(nb, 60);
	for (size_t i = 0; i < na; i++)
		assert_string_equal(a[i], b[i]);
	assert_int_equal(count_text(stub.trace, " <- tree_a) ret=25 duration="), 6);
	assert_int_equal(count_text(stub.trace, " <- tree_leaf) ret=10 duration="), 6);
	assert_non_null(strstr(stub.trace, "# entries-written: 60   lost: 0\n"));
	free_lines(a, na);
	free_lines(b, nb);
	hv_result_free(&trap);
	hv_result_free(&stub);
}

/* A typed return reading guest memory stays a trap probe under --probe stub, said in one line; the
 * other -r is still a stub probe. */
static void test_return_probe_memory_stays_trap(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run", "--probe", "stub", "-r", "tree_a(long ret+0)", "-r",
			      "tree_leaf", "--stats", hv_guest(NULL), NULL};

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(count_text(r.err, "hvtrace: --probe stub: these read guest memory at the "
					   "call and stay trap probes: -r tree_a\n"),
			 1);
	/* tree_a: 9 calls per vCPU, entry and return each a trap */
	assert_int_equal(hv_cpu_stat(r.err, 0, "events"), 18);
	assert_int_equal(hv_cpu_stat(r.err, 1, "events"), 18);
	assert_int_equal(hv_stat(r.err, "stub probes", "stub probes"), 1);
	assert_int_equal(hv_stat(r.err, "stub probes", "records"), 84);
	assert_int_equal(count_text(r.trace, ": r_tree_a: ("), 18);
	assert_int_equal(count_text(r.trace, ": r_tree_leaf: ("), 42);
	hv_result_free(&r);
}

static void test_event_profile(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run", "-e", "ev_target(int id+0)", "--profile", hv_guest(NULL), NULL};

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(count_text(r.trace, ": ev_call->ev_target(id=42)\n"), 4);
	assert_kprobe_profile(r.err, "ev_target", 4, 0);
	hv_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_values),
		cmocka_unit_test(test_event_with_function_tracer),
		cmocka_unit_test(test_bad_spec),
		cmocka_unit_test(test_two_events_one_function),
		cmocka_unit_test(test_direct_address),
		cmocka_unit_test(test_return_probes),
		cmocka_unit_test(test_return_probes_stub),
		cmocka_unit_test(test_return_probe_memory_stays_trap),
		cmocka_unit_test(test_event_profile),
	};

	kvm_require();
	return cmocka_run_group_tests_name("kvm_events", tests, NULL, NULL);
}

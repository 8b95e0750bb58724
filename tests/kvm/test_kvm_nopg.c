/* KVM integration (issue 25): the test guest built without -pg (build/guest/guest-nopg.elf) and
 * with ENDBR64 at every function (guest-nopg-ibt.elf) has no fentry site at all, so every function
 * is probed at its first instruction: with trap probes a breakpoint whose instruction runs out of
 * line (host/kvm/step_slots.c), with stub probes an exit-free detour. The same workloads as the -pg
 * guest: the trace must match the guest's own counts exactly, and function_graph must print what it
 * prints on the -pg guest, line for line (tail calls and longjmp included). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const funcs[] = {"workload_run", "fib",	 "tree_root", "tree_a",
				    "tree_b",	    "tree_leaf", "task_body", "task_step",
				    "task_leaf",    "tail_top",	 "tail_mid",  "tail_leaf",
				    "nl_outer",	    "nl_inner",	 "deep",      "ev_target"};
#define NR_FUNCS (sizeof(funcs) / sizeof(funcs[0]))

static const char *const guests[] = {"build/guest/guest-nopg.elf",
				     "build/guest/guest-nopg-ibt.elf"};
#define NR_GUESTS (sizeof(guests) / sizeof(guests[0]))

/* The probe kinds this host can run: trap probes only where INT3 exits. */
static size_t first_probe(const char *what)
{
	return needs_int3_exits(what) ? 0 : 1;
}
static const char *const probes[] = {"trap", "stub"};

/* argv for `run` of @guest with @probe over the workloads (-l each), then @extra (NULL-ended). */
static void build_argv(const char **argv, size_t cap, const char *guest, const char *probe,
		       const char *const *extra)
{
	size_t n = 0;

	argv[n++] = "run";
	argv[n++] = "--probe";
	argv[n++] = probe;
	argv[n++] = "--stats";
	for (size_t f = 0; f < NR_FUNCS; f++) {
		argv[n++] = "-l";
		argv[n++] = funcs[f];
	}
	for (size_t i = 0; extra && extra[i]; i++)
		argv[n++] = extra[i];
	argv[n++] = guest;
	argv[n] = NULL;
	assert_true(n < cap);
}

/* vCPU @c's breakpoint exits by every path (--stats' bp-exits): KVM_EXIT_DEBUG on real KVM, the
 * emulation failure or the shutdown on PVM. */
static long bp_exits(const struct hv_result *r, unsigned c)
{
	return hv_cpu_stat(r->err, c, "debug") + hv_cpu_stat(r->err, c, "emulation") +
	       hv_cpu_stat(r->err, c, "shutdown");
}

static void assert_guest_ok(const struct hv_result *r, const char *guest, const char *probe)
{
	if (r->status != 0 || !strstr(r->console, "hvt-guest: ok\n"))
		fail_msg("%s, %s probes: status %d, stderr: %s", guest, probe, r->status, r->err);
}

/* Stub probes: every workload through a detour, and not one VM exit for a breakpoint. */
static void assert_all_detoured(const struct hv_result *r, const char *guest)
{
	char line[128];

	snprintf(line, sizeof(line),
		 "hvtrace: %zu functions without an fentry site probed at their entry through "
		 "stub detours\n",
		 NR_FUNCS);
	if (!strstr(r->err, line))
		fail_msg("%s: no line '%s' in: %s", guest, line, r->err);
	for (unsigned c = 0; c < 2; c++)
		assert_int_equal(bp_exits(r, c), 0);
}

/* function: each workload's lines per vCPU == the guest's own count, nothing else traced. */
static void test_function_counts(void **state)
{
	(void)state;
	for (size_t g = 0; g < NR_GUESTS; g++)
		for (size_t k = first_probe("test_function_counts (trap)"); k < 2; k++) {
			const char *argv[64], *extra[] = {"-p", "function", NULL};
			struct hv_result r;
			long total = 0;

			build_argv(argv, 64, guests[g], probes[k], extra);
			hv_run(&r, argv, 0, 0);
			assert_guest_ok(&r, guests[g], probes[k]);
			for (size_t f = 0; f < NR_FUNCS; f++)
				for (unsigned c = 0; c < 2; c++) {
					long want = guest_count(&r, funcs[f], c);
					long got = trace_count(&r, funcs[f], (int)c);

					if (want <= 0 || got != want)
						fail_msg(
						    "%s, %s probes: %s on cpu%u: %ld lines, the "
						    "guest counted %ld",
						    guests[g], probes[k], funcs[f], c, got, want);
					total += want;
				}
			assert_int_equal((long)r.nr_lines, total);
			if (k == 1)
				assert_all_detoured(&r, guests[g]);
			else
				assert_int_equal(bp_exits(&r, 0) + bp_exits(&r, 1), total);
			hv_result_free(&r);
		}
}

static int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A function_graph trace's lines without CPU and duration (everything up to the bar), sorted: the
 * two vCPUs' lines interleave differently from run to run. malloc'd, one string. */
static char *graph_lines(const char *trace)
{
	size_t n = 0, cap = (size_t)count_lines(trace) + 1, len = 0;
	char **v = calloc(cap, sizeof(*v)), *out;

	assert_non_null(v);
	for (const char *l = trace; *l;) {
		const char *end = strchr(l, '\n'), *bar;

		end = end ? end + 1 : l + strlen(l);
		bar = memchr(l, '|', (size_t)(end - l));
		if (*l != '#' && *l != '\n' && bar) {
			assert_true(n < cap);
			v[n] = strndup(bar, (size_t)(end - bar));
			len += strlen(v[n++]);
		}
		l = end;
	}
	qsort(v, n, sizeof(*v), strcmp_ptr);
	out = calloc(1, len + 1);
	assert_non_null(out);
	for (size_t i = 0; i < n; i++) {
		strcat(out, v[i]);
		free(v[i]);
	}
	free(v);
	return out;
}

/* The graph of -pg guest with @probe and @extra, as graph_lines gives it. */
static char *reference_graph(const char *probe, const char *const *extra)
{
	const char *argv[64];
	struct hv_result r;
	char *lines;

	build_argv(argv, 64, hv_guest(NULL), probe, extra);
	hv_run(&r, argv, 0, 0);
	assert_guest_ok(&r, hv_guest(NULL), probe);
	lines = graph_lines(r.trace);
	hv_result_free(&r);
	return lines;
}

/* function_graph with return values, whole and under -g tree_b: the same lines as the -pg guest's
 * (tail_top -> tail_mid -> tail_leaf share one return slot; nl_inner's frames are abandoned by
 * longjmp), with trap and stub probes. */
static void test_graph_as_with_fentry(void **state)
{
	static const char *const whole[] = {"-p", "function_graph", "--funcgraph-retval", NULL};
	static const char *const rooted[] = {"-p", "function_graph", "--funcgraph-retval",
					     "-g", "tree_b",	     NULL};
	static const char *const *const extras[] = {whole, rooted};

	(void)state;
	for (size_t k = first_probe("test_graph_as_with_fentry (trap)"); k < 2; k++)
		for (size_t e = 0; e < 2; e++) {
			char *want = reference_graph(probes[k], extras[e]);

			assert_non_null(strstr(want, e ? "|  tree_b() {\n" : "  tail_top() {\n"));
			for (size_t g = 0; g < NR_GUESTS; g++) {
				const char *argv[64];
				struct hv_result r;
				char *got;

				build_argv(argv, 64, guests[g], probes[k], extras[e]);
				hv_run(&r, argv, 0, 0);
				assert_guest_ok(&r, guests[g], probes[k]);
				got = graph_lines(r.trace);
				if (strcmp(got, want))
					fail_msg(
					    "%s, %s probes, %s: the graph differs from the -pg "
					    "guest's:\n%s\n--- want ---\n%s",
					    guests[g], probes[k], e ? "-g tree_b" : "whole", got,
					    want);
				if (k == 1)
					assert_all_detoured(&r, guests[g]);
				free(got);
				hv_result_free(&r);
			}
			free(want);
		}
}

/* -r: typed and plain return probes on functions without an fentry site, values as the guest
 * computes them (tree_a returns 5, 13, 25 per round; tree_leaf 1 4 4 9 9 16 9). */
static void test_return_probes(void **state)
{
	(void)state;
	for (size_t g = 0; g < NR_GUESTS; g++)
		for (size_t k = first_probe("test_return_probes (trap)"); k < 2; k++) {
			const char *argv[] = {"run",	   "--probe",	       probes[k],
					      "-r",	   "tree_a(long ret)", "-r",
					      "tree_leaf", guests[g],	       NULL};
			struct hv_result r;

			hv_run(&r, argv, 0, 0);
			assert_guest_ok(&r, guests[g], probes[k]);
			assert_int_equal(count_text(r.trace, " <- tree_a) ret=5 duration="), 6);
			assert_int_equal(count_text(r.trace, " <- tree_a) ret=13 duration="), 6);
			assert_int_equal(count_text(r.trace, " <- tree_a) ret=25 duration="), 6);
			assert_int_equal(count_text(r.trace, ": r_tree_a: (tree_root+0x"), 12);
			assert_int_equal(count_text(r.trace, ": r_tree_a: (tree_b+0x"), 6);
			assert_int_equal(count_text(r.trace, " <- tree_leaf) ret=10 duration="), 6);
			assert_int_equal(count_text(r.trace, ": r_tree_leaf: ("), 42);
			hv_result_free(&r);
		}
}

/* list-functions: every function of the symbol table, each marked as an entry probe; the runtime's
 * too (nothing in a guest without fentry sites says notrace). */
static void test_list_functions(void **state)
{
	(void)state;
	for (size_t g = 0; g < NR_GUESTS; g++) {
		const char *argv[] = {"list-functions", guests[g], NULL};
		struct hv_result r;
		char *syms = hv_sh("readelf -sW %s | awk '$4 == \"FUNC\"' | wc -l", guests[g]);

		hv_run(&r, argv, 0, 0);
		assert_int_equal(r.status, 0);
		assert_int_equal(count_lines(r.trace), atoi(syms));
		assert_int_equal(count_text(r.trace, " (entry)\n"), atoi(syms));
		for (size_t f = 0; f < NR_FUNCS; f++) {
			char line[80];

			snprintf(line, sizeof(line), "\n%s (entry)\n", funcs[f]);
			assert_non_null(strstr(r.trace, line));
		}
		assert_non_null(strstr(r.trace, "\ncount_call (entry)\n"));
		free(syms);
		hv_result_free(&r);
	}
}

/* Functions selected by a glob that a breakpoint cannot serve are left out with one line; a
 * function named exactly that way is refused, naming it. The runtime's asm-free C functions all
 * can: the whole guest traced with no filter at all, trap probes, ends well. */
static void test_everything_traced(void **state)
{
	(void)state;
	if (!needs_int3_exits("test_everything_traced (trap)"))
		skip();
	for (size_t g = 0; g < NR_GUESTS; g++) {
		const char *argv[] = {"run", "-p", "function_graph", guests[g], NULL};
		struct hv_result r;

		hv_run(&r, argv, 0, 0);
		assert_guest_ok(&r, guests[g], "trap");
		/* the runtime's own calls are traced too: count_call once per workload call */
		assert_true(count_text(r.trace, "count_call();\n") > 1000);
		assert_string_equal(r.err, "");
		hv_result_free(&r);
	}
}

/* The offset in @guest of the instruction after tree_a's first one (its ENDBR64 not counted: that
 * one is the function's own entry site), from objdump. */
static unsigned second_insn(const char *guest)
{
	char *out = hv_sh("objdump -d --no-show-raw-insn %s | grep -A3 '<tree_a>:' | "
			  "grep -v endbr64 | sed -n '2,3p' | cut -d: -f1",
			  guest);
	unsigned long first = strtoul(out, NULL, 16), second;
	char *nl = strchr(out, '\n');

	assert_non_null(nl);
	second = strtoul(nl + 1, NULL, 16);
	free(out);
	out = hv_sh("nm %s | grep ' tree_a$' | cut -d' ' -f1", guest);
	first = strtoul(out, NULL, 16);
	free(out);
	assert_true(second > first && second - first < 16);
	return (unsigned)(second - first);
}

/* -e 'tree_a+OFF(u64 x=%rdi)' at the instruction after tree_a's entry: one event per call of
 * tree_a on each vCPU, with the argument the call passed (1, 2, 3 per round), trap and stub
 * (detour: no exit). */
static void test_inside_event(void **state)
{
	(void)state;
	for (size_t g = 0; g < NR_GUESTS; g++)
		for (size_t k = first_probe("test_inside_event (trap)"); k < 2; k++) {
			char spec[64], label[32];
			unsigned off = second_insn(guests[g]);
			const char *argv[] = {"run", "--probe", probes[k], "--stats",
					      "-e",  spec,	guests[g], NULL};
			struct hv_result r;

			snprintf(spec, sizeof(spec), "tree_a+0x%x(u64 x=%%rdi)", off);
			snprintf(label, sizeof(label), ": tree_a+0x%x(x=", off);
			hv_run(&r, argv, 0, 0);
			assert_guest_ok(&r, guests[g], probes[k]);
			assert_int_equal(count_text(r.trace, label),
					 guest_count_all(&r, "tree_a", 2));
			for (unsigned x = 1; x <= 3; x++) {
				char v[48];

				snprintf(v, sizeof(v), "%s%u)\n", label + 2, x);
				assert_int_equal(count_text(r.trace, v) > 0, 1);
			}
			assert_int_equal(count_text(r.trace, label), 18);
			if (k == 1)
				for (unsigned c = 0; c < 2; c++)
					assert_int_equal(bp_exits(&r, c), 0);
			hv_result_free(&r);
		}
}

/* Where INT3 does not exit (the nested lane; here the INT3 check's test hook says so), stub probes
 * alone: the whole guest without -pg is refused with one line naming the function no detour can
 * serve, and runs, every traced function through a detour and no breakpoint, once it is left out. */
static void test_no_trap_host(void **state)
{
	(void)state;
	setenv("HVTRACE_TEST_INT3", "guest-idt", 1);
	for (size_t g = 0; g < NR_GUESTS; g++) {
		const char *argv[] = {"run", "--probe", "stub", "--stats", "-p", "function", guests[g],
				      NULL};
		const char *key = "and no stub detour (its first bytes cannot be moved): leave it out "
				  "with -n\n";
		char name[64] = "", *p;
		struct hv_result r;

		hv_run(&r, argv, 0, 0);
		assert_int_equal(r.status, 2);
		p = strstr(r.err, "does not exit on this host's KVM, and ");
		if (!p || !strstr(p, key) ||
		    sscanf(p + strlen("does not exit on this host's KVM, and "), "%63s", name) != 1)
			fail_msg("%s: %s", guests[g], r.err);
		hv_result_free(&r);

		const char *argv2[] = {"run", "--probe", "stub", "--stats", "-p", "function",
				       "-n", name, guests[g], NULL};

		hv_run(&r, argv2, 0, 0);
		assert_guest_ok(&r, guests[g], "stub");
		for (unsigned c = 0; c < 2; c++)
			assert_int_equal(bp_exits(&r, c), 0);
		assert_true(trace_count(&r, "tree_leaf", -1) == guest_count_all(&r, "tree_leaf", 2));
		hv_result_free(&r);
	}
	unsetenv("HVTRACE_TEST_INT3");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_function_counts),   cmocka_unit_test(test_graph_as_with_fentry),
	    cmocka_unit_test(test_return_probes),     cmocka_unit_test(test_list_functions),
	    cmocka_unit_test(test_everything_traced), cmocka_unit_test(test_inside_event),
	    cmocka_unit_test(test_no_trap_host),
	};

	kvm_require();
	return cmocka_run_group_tests_name("kvm_nopg", tests, NULL, NULL);
}

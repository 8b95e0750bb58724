/* KVM integration for stub probes (--probe stub|auto): sites become CALLs into the in-guest stub,
 * no event takes a VM exit, and the trace is the trap probes' trace: the same counts, the same
 * values. (The embedded-VMM suites also run whole with --probe auto; this checks that stubs really
 * were used, and where trap probes must stay.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "guest-stub/stub_abi.h"
#include "tests/kvm/kvm_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const funcs[] = {"fib",	 "tree_root", "tree_a",	   "tree_b",   "tree_leaf",
				    "task_body", "task_step", "task_leaf", "tail_top", "tail_mid",
				    "tail_leaf", "nl_outer",  "nl_inner",  "deep",     "ev_target"};
#define NR_FUNCS (sizeof(funcs) / sizeof(funcs[0]))

static long stub_probes(const char *err)
{
	return hv_stat(err, "stub probes ", "stub probes ");
}

static long bp_exits(const char *err)
{
	long n = 0;

	/* every vCPU that has a stats line */
	for (unsigned c = 0; hv_cpu_stat(err, c, "exits ") >= 0; c++)
		n += hv_cpu_stat(err, c, "emulation ") + hv_cpu_stat(err, c, "debug ") +
		     hv_cpu_stat(err, c, "shutdown ");
	return n;
}

/* --probe auto on the embedded VMM: every probe is a stub probe, nothing exits, and the function
 * tracer's entries equal the guest's own counts, with the task names of the switching scheduler. */
static void test_auto_uses_stubs(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run", "--probe", "auto", "--stats", hv_guest(NULL), NULL};

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(stub_probes(r.err), (long)NR_FUNCS + 1 /* workload_run */);
	assert_int_equal(bp_exits(r.err), 0);
	for (size_t f = 0; f < NR_FUNCS; f++)
		for (unsigned c = 0; c < 2; c++)
			assert_int_equal(trace_count(&r, funcs[f], (int)c),
					 guest_count(&r, funcs[f], c));
	assert_true(count_text(r.trace, "  worker1-101   ") > 0);
	assert_non_null(strstr(r.trace, "lost: 0\n"));
	hv_result_free(&r);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The event lines of a trace, timestamps cut, sorted: comparable between two runs. */
static char *event_lines(const char *trace, const char *what)
{
	size_t n = 0, cap = 64, len = 0;
	char **v = malloc(cap * sizeof(*v)), *out;

	for (const char *p = trace; (p = strstr(p, what)); p++) {
		const char *eol = strchr(p, '\n');

		if (n == cap)
			v = realloc(v, (cap *= 2) * sizeof(*v));
		v[n++] = strndup(p, eol ? (size_t)(eol - p) : strlen(p));
	}
	qsort(v, n, sizeof(*v), cmp_str);
	for (size_t i = 0; i < n; i++)
		len += strlen(v[i]) + 1;
	out = calloc(1, len + 1);
	for (size_t i = 0; i < n; i++) {
		strcat(strcat(out, v[i]), "\n");
		free(v[i]);
	}
	free(v);
	return out;
}

/* An event whose fields are argument registers only is a stub probe: the stub saved the registers,
 * the host decodes them, and the lines equal the trap probe's. */
static void test_register_event_on_stub(void **state)
{
	struct hv_result trap, stub;
	const char *spec = "ev_target(x64 obj, NULL, s32 vals_lo, long n)";
	const char *a1[] = {"run", "--probe", "trap",	      "-p", "nop",
			    "-e",  spec,      hv_guest(NULL), NULL};
	const char *a2[] = {"run", "--probe", "stub", "--stats",      "-p",
			    "nop", "-e",      spec,   hv_guest(NULL), NULL};
	char *l1, *l2;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	hv_run(&trap, a1, 0, 0);
	hv_run(&stub, a2, 0, 0);
	assert_int_equal(trap.status, 0);
	assert_int_equal(stub.status, 0);
	assert_int_equal(stub_probes(stub.err), 1);
	assert_int_equal(bp_exits(stub.err), 0);
	l1 = event_lines(trap.trace, "ev_call->ev_target(");
	l2 = event_lines(stub.trace, "ev_call->ev_target(");
	assert_int_equal(count_text(l1, ", n=3)\n"), 4);
	assert_string_equal(l1, l2);
	free(l1);
	free(l2);
	hv_result_free(&trap);
	hv_result_free(&stub);
}

/* An event that dereferences guest memory must read it at the call: it stays a trap probe, the rest
 * are stubs. Exactly its four calls exit. */
static void test_memory_event_stays_trap(void **state)
{
	struct hv_result r;
	const char *argv[] = {
	    "run",	    "--probe", "stub", "--stats", "-p",
	    "function",	    "-l",      "fib",  "-e",	  "ev_target(int id+0, string label)",
	    hv_guest(NULL), NULL};

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(stub_probes(r.err), 1);
	assert_int_equal(bp_exits(r.err), 4);
	assert_int_equal(count_text(r.trace, ": ev_call->ev_target(id=42, label=hello-events)\n"),
			 2);
	assert_int_equal(count_text(r.trace, ": ev_call->ev_target(id=42, label=(fault))\n"), 2);
	for (unsigned c = 0; c < 2; c++)
		assert_int_equal(trace_count(&r, "fib", (int)c), guest_count(&r, "fib", c));
	hv_result_free(&r);
}

static void test_probe_errors(void **state)
{
	struct hv_result r;
	const char *a1[] = {"run", "--probe", "fast", hv_guest(NULL), NULL};

	(void)state;
	hv_run(&r, a1, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, "hvtrace: --probe 'fast': expected trap, stub or auto\n");
	assert_null(strstr(r.console, "hvt-guest: ok"));
	hv_result_free(&r);
}

/* set_graph_function with stub probes: the stub itself keeps calls outside a tree_root call out (no
 * record, no hook) and counts depth from the root; the graph equals the trap probes' one. */
static void test_graph_function_on_stubs(void **state)
{
	struct hv_result trap, stub;
	const char *a1[] = {"run",	    "--probe", "trap", "-p", "function_graph", "-g", "tree_root",
			    "--funcgraph-retval", hv_guest(NULL), NULL};
	const char *a2[] = {"run",	    "--probe", "stub", "--stats", "-p", "function_graph", "-g",
			    "tree_root", "--funcgraph-retval", hv_guest(NULL), NULL};
	char *l1, *l2;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	hv_run(&trap, a1, 0, 0);
	hv_run(&stub, a2, 0, 0);
	assert_int_equal(trap.status, 0);
	assert_int_equal(stub.status, 0);
	assert_true(stub_probes(stub.err) > 0);
	assert_int_equal(bp_exits(stub.err), 0);
	/* the lines without their CPU and duration columns, sorted */
	l1 = event_lines(trap.trace, "|  ");
	l2 = event_lines(stub.trace, "|  ");
	assert_true(count_text(l1, "|  tree_root() {\n") == 6);
	assert_true(count_text(l1, "tree_leaf(); /* ret=0x9 */\n") > 0);
	assert_null(strstr(l1, "fib"));
	assert_string_equal(l1, l2);
	free(l1);
	free(l2);
	hv_result_free(&trap);
	hv_result_free(&stub);
}

/* A guest that defines no hvtrace_* symbol (no hvtrace_cpu_gs, no hvtrace_current), traced with
 * --probe stub on @smp vCPUs: every probe is a stub probe, nothing exits, and the function tracer's
 * entries per function and per CPU column equal the guest's own counts per vCPU (fib's depth differs
 * by vCPU, so a wrong CPU number shows) and the trap probes' counts. The CPU number comes from RDTSCP
 * where KVM offers it (IA32_TSC_AUX = the vCPU's index), else (this machine's PVM, which has no
 * RDTSCP: docs/pvm-cpu.md) from CPUID's APIC ID, which the VMM also sets to the vCPU's index. */
static void stub_without_guest_cpu_number(const char *smp, unsigned nr_cpus)
{
	struct hv_result r, trap;
	const char *stub[] = {"run", "--probe", "stub", "--stats", "--smp", smp, hv_guest("bare"), NULL};
	const char *traps[] = {"run", "--probe", "trap", "--stats", "--smp", smp, hv_guest("bare"), NULL};
	const char *from = kvm_offers_rdtscp() ? " cpu-from rdtscp " : " cpu-from cpuid ";
	long total = 0;
	bool with_trap;

	hv_run(&r, stub, 0, 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(stub_probes(r.err), (long)NR_FUNCS + 1 /* workload_run */);
	assert_non_null(strstr(r.err, from));
	assert_int_equal(bp_exits(r.err), 0);
	assert_int_equal(hv_stat(r.err, "stub probes ", " rejected "), 0);
	/* the trap probes' counts beside them where INT3 exits (not in the nested AMD lane) */
	with_trap = needs_int3_exits("the trap run to compare with");
	if (with_trap) {
		hv_run(&trap, traps, 0, 0);
		assert_int_equal(trap.status, 0);
		assert_int_equal(stub_probes(trap.err), -1);
	}
	for (size_t f = 0; f < NR_FUNCS; f++)
		for (unsigned c = 0; c < nr_cpus; c++) {
			long n = trace_count(&r, funcs[f], (int)c);

			assert_true(guest_count(&r, funcs[f], c) > 0 || !strcmp(funcs[f], "ev_target"));
			assert_int_equal(n, guest_count(&r, funcs[f], c));
			if (with_trap) {
				assert_int_equal(trace_count(&trap, funcs[f], (int)c),
						 guest_count(&trap, funcs[f], c));
				assert_int_equal(n, trace_count(&trap, funcs[f], (int)c));
			}
			total += n;
		}
	/* every entry is in one of the vCPUs' columns, none elsewhere */
	assert_int_equal(trace_count(&r, "fib", -1), guest_count_all(&r, "fib", nr_cpus));
	assert_true(total > 0);
	assert_non_null(strstr(r.trace, "lost: 0\n"));
	if (with_trap)
		hv_result_free(&trap);
	hv_result_free(&r);
}

static void test_stub_without_guest_cpu_number(void **state)
{
	(void)state;
	stub_without_guest_cpu_number("2", 2);
}

static void test_stub_without_guest_cpu_number_4cpus(void **state)
{
	(void)state;
	stub_without_guest_cpu_number("4", 4);
}

/* Rings sized by need: the default is at least ftrace's 1408 KiB per CPU (4096 KiB: the session's
 * default --buffer-size-kb), --buffer-size-kb N gives rings of N KiB per CPU in a memslot of
 * exactly the stub's size, and a size the identity map cannot hold is one error line naming it and
 * where, with nothing traced. */
static void test_ring_size_asked(void **state)
{
	struct hv_result r;
	const char *dflt[] = {"run", "--probe", "stub", "--stats", hv_guest(NULL), NULL};
	const char *asked[] = {"run",	"--probe",	"stub", "--stats", "--buffer-size-kb",
			       "16384", hv_guest(NULL), NULL};
	const char *huge[] = {"run",	 "--probe",	 "stub",
			      "--mem",	 "3072",	 "--buffer-size-kb",
			      "1048576", hv_guest(NULL), NULL};

	(void)state;
	hv_run(&r, dflt, 0, 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(hv_stat(r.err, "stub probes ", " ring "), 65536);
	assert_true(65536 * 64 >= 1441792);
	assert_int_equal(hv_stat(r.err, "stub probes ", " lost "), 0);
	hv_result_free(&r);

	hv_run(&r, asked, 0, 0);
	assert_int_equal(r.status, 0);
	/* 16 MiB of 64-byte records per CPU; code, header and ring headers ahead of them (16 KiB
	 * since the code has two pages) */
	assert_int_equal(hv_stat(r.err, "stub probes ", " ring "), 262144);
	assert_int_equal(STUB_RINGS_OFF, 16 << 10);
	assert_int_equal(hv_stat(r.err, "stub probes ", " region "), 16 + 2 * 16384);
	assert_int_equal(hv_stat(r.err, "stub probes ", " lost "), 0);
	assert_int_equal(hv_stat(r.err, "stub probes ", " guest-reported-lost "), 0);
	for (size_t f = 0; f < NR_FUNCS; f++)
		for (unsigned c = 0; c < 2; c++)
			assert_int_equal(trace_count(&r, funcs[f], (int)c),
					 guest_count(&r, funcs[f], c));
	hv_result_free(&r);

	hv_run(&r, huge, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err,
			    "hvtrace: stub probes: rings of 1048576 KiB per CPU (2097168 KiB "
			    "for 2 CPUs with the stub) cannot be placed: the guest's identity "
			    "map ends at 4 GiB, 1048576 KiB above its RAM at guest-physical "
			    "0xc0000000\n");
	assert_null(strstr(r.console, "hvt-guest:"));
	hv_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_auto_uses_stubs),
	    cmocka_unit_test(test_register_event_on_stub),
	    cmocka_unit_test(test_memory_event_stays_trap),
	    cmocka_unit_test(test_probe_errors),
	    cmocka_unit_test(test_graph_function_on_stubs),
	    cmocka_unit_test(test_stub_without_guest_cpu_number),
	    cmocka_unit_test(test_stub_without_guest_cpu_number_4cpus),
	    cmocka_unit_test(test_ring_size_asked),
	};

	kvm_require();
	return cmocka_run_group_tests_name("kvm_stub", tests, NULL, NULL);
}

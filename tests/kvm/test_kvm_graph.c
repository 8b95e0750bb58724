/* KVM integration for function_graph: every entry has its return (but the frames the guest abandons by
 * design), every return value is what the guest computed, the nesting of every task equals the guest's
 * call tree even though tasks migrate between vCPUs mid-function, tail calls get all their returns. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FUNCS 16
#define MAX_TASKS 16
#define MAX_VALUES 4096

static const char *const funcs[] = {"workload_run", "fib",	 "tree_root", "tree_a",
				    "tree_b",	    "tree_leaf", "task_body", "task_step",
				    "task_leaf",    "tail_top",	 "tail_mid",  "tail_leaf",
				    "nl_outer",	    "nl_inner",	   "deep",	"ev_target"};
#define NR_FUNCS (sizeof(funcs) / sizeof(funcs[0]))

struct frame {
	char func[64];
};

struct task_state {
	char name[40]; /* "comm-pid" */
	struct frame stack[256];
	int depth;
	unsigned cpus; /* vCPUs it was seen on */
};

struct graph {
	struct task_state tasks[MAX_TASKS];
	int nr_tasks;
	long entries[NR_FUNCS], returns[NR_FUNCS], abandoned[NR_FUNCS];
	long values[NR_FUNCS][MAX_VALUES]; /* return values */
	long nr_values[NR_FUNCS];
	long markers;
	long records;
};

static int func_index(const char *f)
{
	for (size_t i = 0; i < NR_FUNCS; i++)
		if (!strcmp(funcs[i], f))
			return (int)i;
	fail_msg("unknown function '%s' in the trace", f);
	return -1;
}

static struct task_state *task(struct graph *g, const char *name)
{
	for (int i = 0; i < g->nr_tasks; i++)
		if (!strcmp(g->tasks[i].name, name))
			return &g->tasks[i];
	assert_true(g->nr_tasks < MAX_TASKS);
	snprintf(g->tasks[g->nr_tasks].name, sizeof(g->tasks[0].name), "%s", name);
	return &g->tasks[g->nr_tasks++];
}

static void add_value(struct graph *g, int f, long v)
{
	assert_true(g->nr_values[f] < MAX_VALUES);
	g->values[f][g->nr_values[f]++] = v;
}

/* Replays the trace per task: the running task of each vCPU comes from the switch markers (the boot
 * context cpu<N>-0 runs first), nesting is checked against each line's indentation. */
static void parse_graph(struct graph *g, const char *trace, unsigned smp)
{
	char *copy = strdup(trace), *save;
	struct task_state *cur[8];

	memset(g, 0, sizeof(*g));
	for (unsigned c = 0; c < smp; c++) {
		char n[16];

		snprintf(n, sizeof(n), "cpu%u-0", c);
		cur[c] = task(g, n);
	}
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *bar, *text, name[64], a[40], b[40];
		unsigned cpu;
		int indent = 0, f;
		unsigned long long v;
		struct task_state *t;

		if (l[0] == '#' || !strncmp(l, " ------------------------------------------", 43))
			continue;
		/* the kernel's context-switch block (verif_pid): dashes, " N) prev => next", dashes */
		if (sscanf(l, " %u) %39s => %39s", &cpu, a, b) == 3) {
			assert_true(cpu < smp);
			assert_string_equal(a, cur[cpu]->name);
			cur[cpu] = task(g, b);
			g->markers++;
			continue;
		}
		if (sscanf(l, " %u) ", &cpu) != 1 || cpu >= smp)
			fail_msg("bad line: '%s'", l);
		bar = strchr(l, '|');
		assert_non_null(bar);
		text = bar + 3;
		while (text[indent] == ' ')
			indent++;
		text += indent;
		t = cur[cpu];
		t->cpus |= 1u << cpu;
		if (text[0] == '}') {
			if (sscanf(text, "} /* %63s ret=0x%llx */", name, &v) != 2 &&
			    sscanf(text, "} /* %63s ret=%lld */", name, (long long *)&v) != 2)
				fail_msg("bad closing line: '%s'", l);
			/* frames the guest abandoned (non-local exit) are only ever nl_inner */
			while (t->depth > 0 && strcmp(t->stack[t->depth - 1].func, name)) {
				assert_string_equal(t->stack[t->depth - 1].func, "nl_inner");
				g->abandoned[func_index("nl_inner")]++;
				t->depth--;
			}
			if (t->depth == 0)
				fail_msg("%s: return from %s with no open call: '%s'", t->name, name, l);
			t->depth--;
			assert_int_equal(indent, 2 * t->depth);
			f = func_index(name);
			g->returns[f]++;
			add_value(g, f, (long)v);
			g->records++;
			continue;
		}
		assert_int_equal(indent, 2 * t->depth);
		if (sscanf(text, "%63[^(]() {", name) == 1 && strstr(text, "() {")) {
			f = func_index(name);
			g->entries[f]++;
			snprintf(t->stack[t->depth++].func, sizeof(t->stack[0].func), "%s", name);
			g->records++;
		} else if (sscanf(text, "%63[^(](); /* ret=0x%llx */", name, &v) == 2 ||
			   sscanf(text, "%63[^(](); /* ret=%lld */", name, (long long *)&v) == 2) {
			f = func_index(name);
			g->entries[f]++;
			g->returns[f]++;
			add_value(g, f, (long)v);
			g->records += 2;
		} else {
			fail_msg("bad line: '%s'", l);
		}
	}
	free(copy);
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

/* The return values of @func are exactly the multiset @want. */
static void assert_values(struct graph *g, const char *func, long *want, long n)
{
	int f = func_index(func);

	if (g->nr_values[f] != n)
		fail_msg("%s: %ld return values, expected %ld", func, g->nr_values[f], n);
	qsort(g->values[f], n, sizeof(long), cmp_long);
	qsort(want, n, sizeof(long), cmp_long);
	for (long i = 0; i < n; i++)
		if (g->values[f][i] != want[i])
			fail_msg("%s: return value %ld, expected %ld", func, g->values[f][i], want[i]);
}

static long fib_values(long n, long *out, long k)
{
	long v = n < 2 ? n : 0;

	if (n >= 2) {
		k = fib_values(n - 1, out, k);
		v += out[k - 1];
		k = fib_values(n - 2, out, k);
		v += out[k - 1];
	}
	out[k++] = v;
	return k;
}

static void check_all_values(struct graph *g, unsigned smp)
{
	static long want[MAX_VALUES];
	long n = 0;

	for (unsigned c = 0; c < smp; c++)
		n = fib_values(12 + c % 4, want, n);
	assert_values(g, "fib", want, n);
	n = 0;
	for (unsigned r = 0; r < 3 * smp; r++) {
		long leaf[] = {1, 4, 4, 9, 9, 16, 9};

		for (int i = 0; i < 7; i++)
			want[n++] = leaf[i];
	}
	assert_values(g, "tree_leaf", want, n);
	n = 0;
	for (unsigned r = 0; r < 3 * smp; r++) {
		want[n++] = 5;
		want[n++] = 13;
		want[n++] = 25;
	}
	assert_values(g, "tree_a", want, n);
	for (const char *const *f = (const char *const[]){"tree_b", "tree_root", "tail_top", "tail_mid",
							   "tail_leaf", "nl_outer", "workload_run",
							   NULL};
	     *f; f++) {
		long v = !strcmp(*f, "tree_b")	      ? 225
			 : !strcmp(*f, "tree_root")   ? 243
			 : !strcmp(*f, "nl_outer")    ? 7
			 : !strcmp(*f, "workload_run") ? 0
						      : 6;

		n = !strcmp(*f, "tree_b") || !strcmp(*f, "tree_root") ? 3 * smp : smp;
		for (long i = 0; i < n; i++)
			want[i] = v;
		assert_values(g, *f, want, n);
	}
	/* task_step(t, i) = a + (3a + 1) with a = 3 (i + pid) + 1; task_leaf returns a and 3a + 1 */
	long steps[16], leaves[32], ns = 0, nl = 0;

	for (int pid = 101; pid <= 104; pid++)
		for (int i = 0; i < 4; i++) {
			long a = 3 * (i + pid) + 1;

			steps[ns++] = a + 3 * a + 1;
			leaves[nl++] = a;
			leaves[nl++] = 3 * a + 1;
		}
	assert_values(g, "task_step", steps, ns);
	assert_values(g, "task_leaf", leaves, nl);
	n = 0;
	for (unsigned c = 0; c < smp; c++)
		for (long v = 24; v <= 150; v++)
			want[n++] = v;
	assert_values(g, "deep", want, n);
}

static void run_graph(unsigned smp)
{
	char smp_s[16];
	struct hv_result r;
	struct graph *g = calloc(1, sizeof(*g));
	long total = 0;

	snprintf(smp_s, sizeof(smp_s), "%u", smp);
	const char *argv[] = {"run", "-p", "function_graph", "--funcgraph-retval", "--smp", smp_s,
			      hv_guest(NULL), NULL};

	hv_run(&r, argv, 0, 0);
	if (r.status != 0 || !strstr(r.console, "hvt-guest: ok\n"))
		fail_msg("status %d: %s", r.status, r.err);
	parse_graph(g, r.trace, smp);
	for (size_t f = 0; f < NR_FUNCS; f++) {
		long want = guest_count_all(&r, funcs[f], smp);
		bool abandons = !strcmp(funcs[f], "nl_inner");

		/* deep() recurses past the shadow bound: the outer 127 levels (below workload_run) are
		 * traced, the deeper 23 are misses, and the graph stays balanced */
		if (!strcmp(funcs[f], "deep")) {
			assert_int_equal(want, 150 * smp);
			want = 127 * smp;
		}

		if (g->entries[f] != want)
			fail_msg("%s: %ld entries, guest counted %ld", funcs[f], g->entries[f], want);
		if (g->returns[f] != (abandons ? 0 : want))
			fail_msg("%s: %ld returns for %ld entries", funcs[f], g->returns[f], want);
		assert_int_equal(g->abandoned[f], abandons ? want : 0);
		total += g->entries[f] + g->returns[f];
	}
	/* nothing left open but what the guest abandoned */
	for (int i = 0; i < g->nr_tasks; i++)
		assert_int_equal(g->tasks[i].depth, 0);
	check_all_values(g, smp);

	char trailer[96];

	assert_int_equal(g->records, total);
	snprintf(trailer, sizeof(trailer), "# entries-written: %ld   lost: 0\n", total);
	assert_non_null(strstr(r.trace, trailer));
	/* the task switches happened and were marked, and workers migrated mid-function */
	assert_true(g->markers >= 20);
	for (int w = 1; w <= 4; w++) {
		char name[32];

		snprintf(name, sizeof(name), "worker%d-%d", w, 100 + w);
		if (smp > 1)
			assert_true(__builtin_popcount(task(g, name)->cpus) >= 2);
		else
			assert_int_equal(task(g, name)->cpus, 1);
	}
	hv_result_free(&r);
	free(g);
}

static void test_graph_smp1(void **state)
{
	(void)state;
	run_graph(1);
}

static void test_graph_smp2(void **state)
{
	(void)state;
	run_graph(2);
}

static void test_graph_smp3(void **state)
{
	(void)state;
	run_graph(3);
}

/* set_graph_function: only tree_b and what it calls; depth counts from tree_b. */
static void test_graph_function(void **state)
{
	struct hv_result r;
	struct graph *g = calloc(1, sizeof(*g));
	const char *argv[] = {"run", "-p", "function_graph", "--funcgraph-retval", "-g", "tree_b",
			      hv_guest(NULL), NULL};

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	parse_graph(g, r.trace, 2);
	for (size_t f = 0; f < NR_FUNCS; f++) {
		long want = !strcmp(funcs[f], "tree_b")	   ? 6
			    : !strcmp(funcs[f], "tree_a")    ? 6
			    : !strcmp(funcs[f], "tree_leaf") ? 18
							     : 0;

		assert_int_equal(g->entries[f], want);
		assert_int_equal(g->returns[f], want);
	}
	assert_non_null(strstr(r.trace, "|  tree_b() {\n"));
	assert_non_null(strstr(r.trace, "|    tree_a() {\n"));
	assert_non_null(strstr(r.trace, "|      tree_leaf(); /* ret=0x9 */\n"));
	assert_non_null(strstr(r.trace, "|    tree_leaf(); /* ret=0x9 */\n"));
	assert_non_null(strstr(r.trace, "|  } /* tree_b ret=0xe1 */\n"));
	hv_result_free(&r);
	free(g);
}

/* Removes from @trace the comment lines whose text (after the bar and indentation) starts with
 * "/ * @tag"; each must follow a line ending in @after (NULL: any), and counts them into *@n. */
static char *strip_comments(const char *trace, const char *tag, const char *after, long *n)
{
	char *out = calloc(1, strlen(trace) + 1), *o = out, key[64];
	const char *l = trace, *prev = NULL, *prev_end = NULL;

	assert_non_null(out);
	snprintf(key, sizeof(key), "/* %s", tag);
	*n = 0;
	while (*l) {
		const char *end = strchr(l, '\n'), *bar = strchr(l, '|'), *text;

		end = end ? end + 1 : l + strlen(l);
		text = bar && bar < end ? bar + 1 : end;
		while (text < end && *text == ' ')
			text++;
		if (!strncmp(text, key, strlen(key))) {
			size_t a = after ? strlen(after) : 0;

			if (after && (!prev || (size_t)(prev_end - prev) < a + 1 ||
				      strncmp(prev_end - 1 - a, after, a)))
				fail_msg("'%.*s' does not follow a line ending in '%s'",
					 (int)(end - l - 1), l, after);
			(*n)++;
		} else {
			memcpy(o, l, (size_t)(end - l));
			o += end - l;
		}
		prev = l;
		prev_end = end;
		l = end;
	}
	return out;
}

/* -r in function_graph: every graph line stays as without it (f's own entry and closing brace), and
 * each return adds its r_ event as the kernel prints trace events there: a comment at the return. */
static void test_graph_rprobe(void **state)
{
	struct hv_result r;
	struct graph *g = calloc(1, sizeof(*g));
	/* trap probes: a return probe is one (stub_drain_capable), and with stubs for the rest the
	 * return-probed calls inside a stub graph are not recorded at all (before this change too; a
	 * separate gap of the stub/trap mix) */
	const char *argv[] = {"run", "--probe", "trap", "-p", "function_graph", "--funcgraph-retval",
			      "-g", "tree_b", "-r", "tree_a", "-r", "tree_leaf", hv_guest(NULL), NULL};
	char *a, *b;
	long na, nb;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	a = strip_comments(r.trace, "r_tree_a: (tree_b+0x", "|    } /* tree_a ret=0x19 */", &na);
	assert_int_equal(na, 6);
	b = strip_comments(a, "r_tree_leaf: (tree_", NULL, &nb);
	assert_int_equal(nb, 18);
	assert_int_equal(count_text(r.trace, "               |  /* r_tree_a: (tree_b+0x"), 6);
	assert_int_equal(count_text(r.trace, " <- tree_a) ret=19 */\n"), 6);
	/* tree_leaf(3) and tree_leaf(4) in tree_a(3), tree_leaf(3) in tree_b(3) */
	assert_int_equal(count_text(r.trace, "|      tree_leaf(); /* ret=0x9 */\n"), 6);
	assert_int_equal(count_text(r.trace, "|      tree_leaf(); /* ret=0x10 */\n"), 6);
	assert_int_equal(count_text(r.trace, "|    tree_leaf(); /* ret=0x9 */\n"), 6);
	assert_int_equal(count_text(r.trace, "               |      /* r_tree_leaf: (tree_a+0x"), 12);
	assert_int_equal(count_text(r.trace, "               |  /* r_tree_leaf: (tree_b+0x"), 6);
	assert_int_equal(count_text(r.trace, " <- tree_leaf) ret=9 */\n"), 12);
	assert_int_equal(count_text(r.trace, " <- tree_leaf) ret=10 */\n"), 6);
	assert_int_equal(count_text(r.trace, "tree_a() {\n"), 6);
	parse_graph(g, b, 2);
	for (size_t f = 0; f < NR_FUNCS; f++) {
		long want = !strcmp(funcs[f], "tree_b")	   ? 6
			    : !strcmp(funcs[f], "tree_a")    ? 6
			    : !strcmp(funcs[f], "tree_leaf") ? 18
							     : 0;

		assert_int_equal(g->entries[f], want);
		assert_int_equal(g->returns[f], want);
	}
	assert_int_equal(count_text(r.trace, "|  } /* tree_b ret=0xe1 */\n"), 6);
	/* records: an entry and a return per call, the comments are no records of their own */
	assert_non_null(strstr(r.trace, "# entries-written: 60   lost: 0\n"));
	free(a);
	free(b);
	hv_result_free(&r);
	free(g);
}

/* -e in function_graph: the event's fields as a comment inside its call, as the kernel prints them. */
static void test_graph_event(void **state)
{
	struct hv_result r;
	struct graph *g = calloc(1, sizeof(*g));
	const char *argv[] = {"run", "-p", "function_graph", "--funcgraph-retval", "-g", "ev_target",
			      "-e", "ev_target(int id+0, string label)", hv_guest(NULL), NULL};
	char *rest;
	long n;

	(void)state;
	if (!needs_int3_exits(__func__)) {
		free(g);
		skip();
		return;
	}
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	rest = strip_comments(r.trace, "ev_target: id=42, label=", "|  ev_target() {", &n);
	assert_int_equal(n, 4);
	assert_int_equal(count_text(r.trace,
				    "               |  /* ev_target: id=42, label=hello-events */\n"),
			 2);
	assert_int_equal(count_text(r.trace, "               |  /* ev_target: id=42, label=(fault) */\n"),
			 2);
	parse_graph(g, rest, 2);
	for (size_t f = 0; f < NR_FUNCS; f++) {
		long want = !strcmp(funcs[f], "ev_target") ? 4 : 0;

		assert_int_equal(g->entries[f], want);
		assert_int_equal(g->returns[f], want);
	}
	assert_int_equal(count_text(r.trace, "|  } /* ev_target ret=0x2d */\n"), 4);
	free(rest);
	hv_result_free(&r);
	free(g);
}

/* --max-depth 2 below workload_run: it and its direct callees only (tail_mid, tail-called by tail_top,
 * counts one level deeper). */
static void test_max_depth(void **state)
{
	struct hv_result r;
	struct graph *g = calloc(1, sizeof(*g));
	const char *argv[] = {"run",	      "-p", "function_graph", "--funcgraph-retval", "-g",
			      "workload_run", "--max-depth", "2", hv_guest(NULL), NULL};

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	parse_graph(g, r.trace, 2);
	for (size_t f = 0; f < NR_FUNCS; f++) {
		long want = !strcmp(funcs[f], "workload_run") ? 2
			    : !strcmp(funcs[f], "fib")	      ? 2
			    : !strcmp(funcs[f], "tree_root")  ? 6
			    : !strcmp(funcs[f], "tail_top")   ? 2
			    : !strcmp(funcs[f], "nl_outer")   ? 2
			    : !strcmp(funcs[f], "deep")	      ? 2
			    : !strcmp(funcs[f], "ev_target")  ? 4
							      : 0;

		assert_int_equal(g->entries[f], want);
		assert_int_equal(g->returns[f], want);
	}
	long fibs[] = {144, 233}; /* fib(12) on cpu0, fib(13) on cpu1 */

	assert_values(g, "fib", fibs, 2);
	hv_result_free(&r);
	free(g);
}

static long profile_field(const char *err, const char *func, int col)
{
	char key[64];
	const char *p;
	long v[4];

	snprintf(key, sizeof(key), "\n  %s ", func);
	p = strstr(err, key);
	if (!p || sscanf(p + strlen(key), " %ld %ld %ld %ld", &v[0], &v[1], &v[2], &v[3]) != 4)
		return -1;
	return v[col];
}

/* --profile: hits, returns, misses (only past the shadow bound) and unwound frames per function,
 * exactly. */
static void test_profile(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run", "-p", "function_graph", "--profile", hv_guest(NULL), NULL};

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	for (size_t f = 0; f < NR_FUNCS; f++) {
		long want = guest_count_all(&r, funcs[f], 2);
		bool abandons = !strcmp(funcs[f], "nl_inner");
		long misses = !strcmp(funcs[f], "deep") ? 2 * 23 : 0;

		assert_true(want > 0);
		want -= misses;
		assert_int_equal(profile_field(r.err, funcs[f], 0), want);
		assert_int_equal(profile_field(r.err, funcs[f], 1), abandons ? 0 : want);
		assert_int_equal(profile_field(r.err, funcs[f], 2), misses);
		assert_int_equal(profile_field(r.err, funcs[f], 3), abandons ? want : 0);
	}
	hv_result_free(&r);
}

/* --duration: tracing stops early, every hooked return slot is put back, and the guest finishes its
 * workloads with correct results. */
static void test_duration_then_guest_finishes(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run", "-p", "function_graph", "--duration", "0.02", hv_guest(NULL),
			      NULL};

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.console, "hvt-guest: ok\n"));
	assert_string_equal(r.err, "");
	hv_result_free(&r);
}

/* The lines of a function_graph trace without their CPU and duration columns: an irq marker as
 * ">" or "<", a context-switch block's middle line as is, every other line from after its "|  ". */
static char *graph_shape(const char *trace)
{
	char *out = calloc(1, strlen(trace) + 1), *o = out;

	assert_non_null(out);
	for (const char *l = trace; *l;) {
		const char *end = strchr(l, '\n'), *bar;

		end = end ? end + 1 : l + strlen(l);
		bar = memchr(l, '|', (size_t)(end - l));
		if (*l == '#' || *l == '\n') {
			/* header, trailer, the empty line after a block */
		} else if (!strncmp(l, " 0)   ==========> |\n", 20)) {
			*o++ = '>';
			*o++ = '\n';
		} else if (!strncmp(l, " 0)   <========== |\n", 20)) {
			*o++ = '<';
			*o++ = '\n';
		} else if (bar && bar[1] == ' ' && bar[2] == ' ') {
			memcpy(o, bar + 3, (size_t)(end - bar - 3));
			o += end - bar - 3;
		} else {
			fail_msg("unexpected line '%.*s'", (int)(end - l - 1), l);
		}
		l = end;
	}
	return out;
}

/* A guest with a .irqentry.text (tests/guest/irqentry.c): "==========>" before each call into it and
 * "<==========" after its return, a leaf's included, as print_graph_irq prints them; with trap and
 * stub probes alike. An errno return (ie_irq_leaf(0) = -1) in decimal. */
static void test_graph_irq_markers(void **state)
{
	static const char *const probes[] = {"trap", "stub"};
	char want[4096] = "", round[512];

	(void)state;
	for (long i = 0; i < 3; i++) {
		snprintf(round, sizeof(round),
			 "ie_outer() {\n>\n  ie_irq() {\n    ie_leaf(); /* ret=0x%lx */\n"
			 "  } /* ie_irq ret=0x%lx */\n<\n  ie_leaf(); /* ret=0x%lx */\n>\n"
			 "  ie_irq_leaf(); /* ret=%s%lx */\n<\n} /* ie_outer ret=0x%lx */\n",
			 i + 1, 2 * (i + 1), i + 1, i ? "0x" : "-", i ? i - 1 : 1,
			 2 * (i + 1) + (i + 1) + (i - 1));
		strcat(want, round);
	}
	for (size_t k = needs_int3_exits("test_graph_irq_markers (trap probes)") ? 0 : 1; k < 2;
	     k++) {
		struct hv_result r;
		const char *argv[] = {"run",	 "--probe",	       probes[k],
				      "-p",	 "function_graph",     "--funcgraph-retval",
				      "--stats", hv_guest("irqentry"), NULL};
		char *shape;

		hv_run(&r, argv, 0, 0);
		assert_int_equal(r.status, 0);
		assert_non_null(strstr(r.console, "hvt-irqentry: ok\n"));
		shape = graph_shape(r.trace);
		assert_string_equal(shape, want);
		assert_non_null(strstr(r.trace, "\n# entries-written: 30   lost: 0\n"));
		/* the stub run's records all came through the stub's rings: the 30 events, and the
		 * one announcement of vCPU 0's one task (hvtrace_current, named: STUB_REC_TASK) before
		 * the first of them, counted apart */
		if (k == 1) {
			assert_int_equal(hv_stat(r.err, "stub probes ", "records "), 30);
			assert_int_equal(hv_stat(r.err, "stub probes ", "tasks-announced "), 1);
		}
		free(shape);
		hv_result_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_graph_smp1),     cmocka_unit_test(test_graph_smp2),
		cmocka_unit_test(test_graph_smp3),     cmocka_unit_test(test_graph_function),
		cmocka_unit_test(test_graph_rprobe),     cmocka_unit_test(test_graph_event),
		cmocka_unit_test(test_max_depth),      cmocka_unit_test(test_profile),
		cmocka_unit_test(test_duration_then_guest_finishes),
		cmocka_unit_test(test_graph_irq_markers),
	};

	kvm_require();
	return cmocka_run_group_tests_name("kvm_graph", tests, NULL, NULL);
}

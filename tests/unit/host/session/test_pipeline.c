/* host/session/pipeline.c: one session's pipeline over a fake target, as a backend drives it
 * (select, build, start, hits, run ended, detach, finish, free), and the refusals of its build. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/session/exitcode.h"
#include "host/session/pipeline.h"
#include "tests/common/fake_target.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT   0x100000ull /* three functions and the return trampoline */
#define TRAMP  (TEXT + 0xf0)
#define STACK  0x200000ull
#define CALLER (TEXT + 0xd0) /* a return address in no function */
#define NOP5   "\x0f\x1f\x44\x00\x00"

static const char *const names[] = {"func_a", "func_b", "func_c"};
enum { NR = 3 };

struct fixture {
	struct fake_target f;
	uint8_t text[0x100], stack[0x1000];
	struct vmi_symtab syms;
	struct vmi_sites sites;
	struct vmi_task_layout task;
	struct session s;
	char *filter[2];
	struct pipeline *p;
	target_bp_fn hit; /* what tracer_attach handed the target */
	void *hit_ctx;
	FILE *out;
	unsigned stats_calls;
};

static struct fixture *fx(struct target *t)
{
	return (struct fixture *)fake_target_of(t);
}

static void set_bp_handler(struct target *t, target_bp_fn fn, void *ctx)
{
	fx(t)->hit = fn;
	fx(t)->hit_ctx = ctx;
}

static const struct target_ops ops = {
    .read_virt = fake_target_read_virt,
    .write_virt = fake_target_write_virt,
    .read_phys = fake_target_read_phys,
    .write_phys = fake_target_write_phys,
    .translate = fake_target_translate,
    .insert_bp = fake_target_insert_bp,
    .remove_bp = fake_target_remove_bp,
    .pause = fake_target_pause,
    .resume = fake_target_resume,
    .set_bp_handler = set_bp_handler,
};

static uint64_t site(unsigned i)
{
	return TEXT + 0x10 + i * 0x30;
}

static int setup(void **state)
{
	struct fixture *x = calloc(1, sizeof(*x));
	uint64_t addrs[NR], ret = CALLER;

	assert_non_null(x);
	fake_target_init(&x->f, &ops, 1);
	x->f.t.trampoline = TRAMP;
	x->f.t.stack_shift = 12;
	memset(x->text, 0x90, sizeof(x->text));
	x->text[TRAMP - TEXT] = 0xc3;
	for (unsigned i = 0; i < NR; i++) {
		memcpy(x->text + (site(i) - TEXT), NOP5, 5);
		assert_int_equal(vmi_symtab_add(&x->syms, site(i), 0x30, names[i]), 0);
		addrs[i] = site(i);
	}
	memcpy(x->stack + 0x800, &ret, 8); /* a return address at RSP */
	fake_mem_map(&x->f.mem, TEXT, x->text, sizeof(x->text));
	fake_mem_map(&x->f.mem, STACK, x->stack, sizeof(x->stack));
	vmi_symtab_sort(&x->syms);
	assert_int_equal(vmi_sites_build(&x->sites, addrs, NR, &x->syms), 0);
	x->task.unknown = true;
	session_init(&x->s);
	x->s.quiet = true;
	x->s.buffer_size_kb = 64;
	x->out = tmpfile();
	assert_non_null(x->out);
	assert_int_equal(pipeline_new(&x->p), 0);
	assert_false(pipeline_selected(x->p));
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *x = *state;

	pipeline_free(x->p);
	fclose(x->out);
	vmi_sites_free(&x->sites);
	vmi_symtab_free(&x->syms);
	free(x);
	return 0;
}

static struct pipeline_guest guest(struct fixture *x)
{
	return (struct pipeline_guest){
	    .tgt = &x->f.t,
	    .task = &x->task,
	    .funcs = &x->syms,
	    .no_trampoline = "no trampoline here",
	};
}

/* vCPU 0 stops at @addr, as the target reports a breakpoint hit; what the tracer says. */
static int hit(struct fixture *x, uint64_t addr)
{
	struct arch_regs regs = {0};

	arch_regs_set_ip(arch_default(), &regs, addr);
	arch_regs_set_sp(arch_default(), &regs, STACK + 0x800);

	assert_non_null(x->hit);
	return x->hit(x->hit_ctx, 0, addr, &regs, 0);
}

static void count_stats(void *ctx, const struct pipeline *p)
{
	struct fixture *x = ctx;

	assert_ptr_equal(p, x->p);
	assert_non_null(pipeline_cpu_events(p));
	x->stats_calls++;
}

/* The whole trace, read back from the sink's file. */
static char *output(struct fixture *x)
{
	long n;
	char *buf;

	fflush(x->out);
	n = ftell(x->out);
	assert_true(n >= 0);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	rewind(x->out);
	assert_int_equal(fread(buf, 1, (size_t)n, x->out), (size_t)n);
	return buf;
}

static void select_ok(struct fixture *x)
{
	char err[256] = "";

	assert_int_equal(pipeline_select(x->p, &x->s, &x->sites, NULL, NULL, 0, err, sizeof(err)),
			 0);
	assert_true(pipeline_selected(x->p));
}

/* -l picks the sites; the nop tracer picks none; a backend's own choice is taken as it is. */
static void test_select(void **state)
{
	struct fixture *x = *state;
	const struct vmi_site *const *sel;
	const struct vmi_site **own;
	size_t nr;
	char err[256] = "";

	x->filter[0] = "func_[ac]";
	x->s.filter = x->filter;
	x->s.nr_filter = 1;
	select_ok(x);
	sel = pipeline_selection(x->p, &nr);
	assert_int_equal(nr, 2);
	assert_string_equal(sel[0]->func->name, "func_a");
	assert_string_equal(sel[1]->func->name, "func_c");
	assert_false(pipeline_has_tracer(x->p));
	pipeline_free(x->p);

	assert_int_equal(pipeline_new(&x->p), 0);
	x->s.tracer = TRACER_NOP;
	x->s.nr_filter = 0;
	select_ok(x);
	pipeline_selection(x->p, &nr);
	assert_int_equal(nr, 0);
	pipeline_free(x->p);

	assert_int_equal(pipeline_new(&x->p), 0);
	x->s.tracer = TRACER_FUNCTION;
	own = calloc(1, sizeof(*own));
	assert_non_null(own);
	own[0] = &x->sites.v[1];
	assert_int_equal(pipeline_select(x->p, &x->s, &x->sites, NULL, own, 1, err, sizeof(err)),
			 0);
	sel = pipeline_selection(x->p, &nr);
	assert_int_equal(nr, 1);
	assert_ptr_equal(sel[0], &x->sites.v[1]);
}

/* The run a backend drives: the build touches no guest, the start patches every selected site
 * (and nothing else), each hit on one is a record in the sink's output, the detach puts the bytes
 * back, and the finish stops the writer and calls the backend's stats for --stats. */
static void test_run(void **state)
{
	struct fixture *x = *state;
	struct pipeline_guest g = guest(x);
	char err[256] = "", *text;

	x->filter[0] = "func_a";
	x->filter[1] = "func_b";
	x->s.filter = x->filter;
	x->s.nr_filter = 2;
	x->s.stats = true;
	select_ok(x);
	assert_int_equal(pipeline_build(x->p, &g, x->out, err, sizeof(err)), 0);
	assert_true(pipeline_has_tracer(x->p));
	assert_ptr_equal(pipeline_target(x->p), &x->f.t);
	assert_false(pipeline_backpressure(x->p));
	assert_int_equal(probe_count(tracer_probes(pipeline_tracer(x->p))), 2);
	assert_int_equal(x->f.inserts, 0);
	assert_memory_equal(x->text + (site(0) - TEXT), NOP5, 5);

	assert_int_equal(pipeline_start(x->p, EXIT_BAD_INPUT, err, sizeof(err)), 0);
	assert_int_equal(x->text[site(0) - TEXT], 0xcc);
	assert_int_equal(x->text[site(1) - TEXT], 0xcc);
	assert_int_equal(x->text[site(2) - TEXT], 0x0f); /* not selected */
	assert_int_equal(hit(x, site(0)), 0);
	assert_int_equal(hit(x, site(1)), 0);
	assert_int_equal(hit(x, site(0)), 0);
	assert_int_equal(hit(x, site(2)), -ENOENT); /* no probe there */

	assert_int_equal(pipeline_run_ended(x->p, -1), 0);
	assert_int_equal(pipeline_detach(x->p), 0);
	assert_int_equal(pipeline_detach(x->p), 0); /* idempotent */
	for (unsigned i = 0; i < NR; i++)
		assert_memory_equal(x->text + (site(i) - TEXT), NOP5, 5);
	assert_int_equal(pipeline_finish(x->p, 0, count_stats, x), 0);
	assert_int_equal(x->stats_calls, 1);
	assert_int_equal(pipeline_sink_err(x->p), 0);

	text = output(x);
	{
		unsigned a = 0, b = 0;

		for (const char *s = text; (s = strstr(s, "func_a")); s++)
			a++;
		for (const char *s = text; (s = strstr(s, "func_b")); s++)
			b++;
		assert_int_equal(a, 2);
		assert_int_equal(b, 1);
	}
	assert_null(strstr(text, "func_c"));
	free(text);
}

/* A status the run already has is kept by the finish, and nothing is asked of the backend's stats
 * without --stats. */
static void test_finish_keeps_status(void **state)
{
	struct fixture *x = *state;
	struct pipeline_guest g = guest(x);
	char err[256] = "";

	select_ok(x);
	assert_int_equal(pipeline_build(x->p, &g, x->out, err, sizeof(err)), 0);
	assert_int_equal(pipeline_start(x->p, EXIT_BAD_INPUT, err, sizeof(err)), 0);
	assert_int_equal(pipeline_detach(x->p), 0);
	assert_int_equal(pipeline_finish(x->p, EXIT_GUEST_FAULT, count_stats, x), EXIT_GUEST_FAULT);
	assert_int_equal(x->stats_calls, 0);
}

/* The build refuses, with one line naming the option: a -g glob that matches no traced function,
 * a --trigger on a function that is not traced, and returns on a target without a trampoline. */
static void test_build_refusals(void **state)
{
	struct fixture *x = *state;
	struct pipeline_guest g = guest(x);
	char err[256] = "", *graph[1] = {"nomatch*"};
	struct trigger trig;

	x->s.tracer = TRACER_FUNCTION_GRAPH;
	x->s.graph = graph;
	x->s.nr_graph = 1;
	select_ok(x);
	assert_int_equal(pipeline_build(x->p, &g, x->out, err, sizeof(err)), EXIT_BAD_INPUT);
	assert_non_null(strstr(err, "-g 'nomatch*'"));
	pipeline_free(x->p);

	assert_int_equal(pipeline_new(&x->p), 0);
	x->s.tracer = TRACER_FUNCTION;
	x->s.nr_graph = 0;
	x->filter[0] = "func_a";
	x->s.filter = x->filter;
	x->s.nr_filter = 1;
	assert_int_equal(trigger_parse("func_c:traceoff", &trig, err, sizeof(err)), 0);
	x->s.triggers = &trig;
	x->s.nr_triggers = 1;
	select_ok(x);
	err[0] = 0;
	assert_int_equal(pipeline_build(x->p, &g, x->out, err, sizeof(err)), EXIT_BAD_INPUT);
	assert_non_null(strstr(err, "--trigger func_c:traceoff"));
	pipeline_free(x->p);

	assert_int_equal(pipeline_new(&x->p), 0);
	x->s.nr_triggers = 0;
	x->s.tracer = TRACER_FUNCTION_GRAPH;
	x->f.t.trampoline = 0;
	select_ok(x);
	err[0] = 0;
	assert_int_equal(pipeline_build(x->p, &g, x->out, err, sizeof(err)), EXIT_BAD_INPUT);
	assert_string_equal(err, "no trampoline here");
	assert_false(pipeline_has_tracer(x->p));
	assert_int_equal(x->f.inserts, 0);
}

/* Freeing: NULL, and a pipeline never selected, are nothing to free. */
static void test_free_unused(void **state)
{
	struct pipeline *p;

	(void)state;
	pipeline_free(NULL);
	assert_int_equal(pipeline_new(&p), 0);
	assert_false(pipeline_selected(p));
	assert_false(pipeline_has_tracer(p));
	pipeline_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_select, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_run, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_finish_keeps_status, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_build_refusals, setup, teardown),
	    cmocka_unit_test(test_free_unused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

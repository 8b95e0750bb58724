/* host/session/events.c: -e / -r functions added to a selection, their specs completed and
 * chained, and bound to the tracer's probes by function name (over a fake target). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/session/events.h"
#include "host/trace/tracer.h"
#include "tests/common/fake_target.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TEXT 0x100000ull
#define NOP5 "\x0f\x1f\x44\x00\x00"

static const char *const names[] = {"func_a", "func_b", "func_c"};
enum { NR = 3 };

struct fixture {
	struct fake_target f;
	uint8_t text[0x100];
	struct vmi_symtab syms;
	struct vmi_sites sites;
	struct session s;
	struct fe_spec ev[4], rp[2];
	struct fe_spec *events, *rprobes; /* events_resolve's */
	struct tracer *tr;
};

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
};

static uint64_t site(unsigned i)
{
	return TEXT + 0x10 + i * 0x40;
}

static int setup(void **state)
{
	struct fixture *x = calloc(1, sizeof(*x));
	uint64_t addrs[NR];

	assert_non_null(x);
	fake_target_init(&x->f, &ops, 1);
	x->f.t.trampoline = TEXT + 0xf0;
	x->f.t.stack_shift = 14;
	memset(x->text, 0x90, sizeof(x->text));
	for (unsigned i = 0; i < NR; i++) {
		memcpy(x->text + (site(i) - TEXT), NOP5, 5);
		assert_int_equal(vmi_symtab_add(&x->syms, site(i), 0x30, names[i]), 0);
		addrs[i] = site(i);
	}
	fake_mem_map(&x->f.mem, TEXT, x->text, sizeof(x->text));
	vmi_symtab_sort(&x->syms);
	assert_int_equal(vmi_sites_build(&x->sites, addrs, NR, &x->syms), 0);
	session_init(&x->s);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *x = *state;

	tracer_free(x->tr);
	free(x->events);
	free(x->rprobes);
	vmi_sites_free(&x->sites);
	vmi_symtab_free(&x->syms);
	free(x);
	return 0;
}

static void parse(struct fe_spec *spec, const char *text)
{
	char err[128];
	size_t pos;

	assert_int_equal(fe_parse(text, spec, err, sizeof(err), &pos), 0);
}

static const struct vmi_site *site_named(struct fixture *x, const char *name)
{
	for (size_t i = 0; i < x->sites.nr; i++)
		if (!strcmp(x->sites.v[i].func->name, name))
			return &x->sites.v[i];
	fail_msg("no site %s", name);
	return NULL;
}

/* With no -e and no -r nothing is selected (no array made); with them, each event and return
 * probe function is added once, to a fresh selection or after what is already there. */
static void test_select(void **state)
{
	struct fixture *x = *state;
	const struct vmi_site **sel = NULL;
	size_t nr = 0;
	char err[256] = "";

	assert_int_equal(events_select(&x->s, &x->sites, NULL, &sel, &nr, err, sizeof(err)), 0);
	assert_null(sel);
	assert_int_equal(nr, 0);

	parse(&x->ev[0], "func_c(int a)");
	parse(&x->ev[1], "func_c(int b)");
	parse(&x->rp[0], "func_b(long ret)");
	x->s.events = x->ev;
	x->s.nr_events = 2;
	x->s.rprobes = x->rp;
	x->s.nr_rprobes = 1;
	assert_int_equal(events_select(&x->s, &x->sites, NULL, &sel, &nr, err, sizeof(err)), 0);
	assert_int_equal(nr, 2);
	assert_ptr_equal(sel[0], site_named(x, "func_c"));
	assert_ptr_equal(sel[1], site_named(x, "func_b"));

	/* an existing selection (room for every site) that already holds func_b keeps it once */
	sel[0] = site_named(x, "func_b");
	nr = 1;
	assert_int_equal(events_select(&x->s, &x->sites, NULL, &sel, &nr, err, sizeof(err)), 0);
	assert_int_equal(nr, 2);
	assert_ptr_equal(sel[0], site_named(x, "func_b"));
	assert_ptr_equal(sel[1], site_named(x, "func_c"));
	free(sel);
}

/* An -e of a function that is no site, and an -e inside a function where the backend has no
 * inside sites, are refused with one line naming them. */
static void test_select_refused(void **state)
{
	struct fixture *x = *state;
	const struct vmi_site **sel = NULL;
	size_t nr = 0;
	char err[256] = "";

	parse(&x->ev[0], "nosuch(int a)");
	x->s.events = x->ev;
	x->s.nr_events = 1;
	assert_int_equal(events_select(&x->s, &x->sites, NULL, &sel, &nr, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "nosuch"));
	assert_non_null(strstr(err, "not a traceable function"));
	free(sel);
	sel = NULL;
	nr = 0;

	parse(&x->ev[0], "func_a+0x4(u64 a=%rdi)");
	err[0] = 0;
	assert_int_equal(events_select(&x->s, &x->sites, NULL, &sel, &nr, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "func_a+0x4"));
	assert_null(sel);
}

/* Resolved without BTF, typed specs are copied as they are; two -e of one function are chained
 * after the first; a fourth on one function is one too many. */
static void test_resolve_chains(void **state)
{
	struct fixture *x = *state;
	char err[256] = "";

	parse(&x->ev[0], "func_a(int a)");
	parse(&x->ev[1], "func_b(int b)");
	parse(&x->ev[2], "func_a(int c)");
	parse(&x->rp[0], "func_b(long ret)");
	x->s.events = x->ev;
	x->s.nr_events = 3;
	x->s.rprobes = x->rp;
	x->s.nr_rprobes = 1;
	assert_int_equal(events_resolve(&x->s, NULL, &x->events, &x->rprobes, err, sizeof(err)), 0);
	assert_string_equal(x->events[0].func, "func_a");
	assert_ptr_equal(x->events[0].next, &x->events[2]);
	assert_null(x->events[1].next);
	assert_null(x->events[2].next);
	assert_string_equal(x->rprobes[0].func, "func_b");
	assert_int_equal(x->rprobes[0].nr_fields, 1);
	free(x->events);
	free(x->rprobes);
	x->events = x->rprobes = NULL;

	for (unsigned i = 0; i < 4; i++)
		parse(&x->ev[i], "func_a(int a)");
	x->s.nr_events = 4;
	assert_int_equal(events_resolve(&x->s, NULL, &x->events, &x->rprobes, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "at most"));
}

/* Binding: the -e event goes to the probe of its function (found by name), a second -e of that
 * function rides on the first's chain; -r makes its probe a return probe, whose entries are quiet
 * when the tracer's own selection does not trace it; the other probes are left alone. */
static void test_bind(void **state)
{
	struct fixture *x = *state;
	struct tracer_opts opts = {.returns = true, .ring_records = 64};
	struct vmi_task_layout task = {.unknown = true};
	const struct vmi_site *sel[NR];
	const struct probe_table *probes;
	const struct probe *a, *b, *c;
	bool traced[NR] = {true, false,
			   false}; /* func_a: the tracer's own; func_b, func_c: -e/-r */
	char err[256] = "";

	for (unsigned i = 0; i < NR; i++)
		sel[i] = &x->sites.v[i];
	parse(&x->ev[0], "func_a(int a)");
	parse(&x->ev[1], "func_a(int b)");
	parse(&x->rp[0], "func_b(long ret)");
	parse(&x->rp[1], "func_a(long ret)");
	x->s.events = x->ev;
	x->s.nr_events = 2;
	x->s.rprobes = x->rp;
	x->s.nr_rprobes = 2;
	assert_int_equal(events_resolve(&x->s, NULL, &x->events, &x->rprobes, err, sizeof(err)), 0);
	assert_int_equal(tracer_new(&x->tr, &x->f.t, sel, NR, &task, &opts), 0);
	assert_int_equal(events_bind(&x->s, x->events, x->rprobes, x->tr, traced), 0);

	probes = tracer_probes(x->tr);
	a = probe_find(probes, "func_a");
	b = probe_find(probes, "func_b");
	c = probe_find(probes, "func_c");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	assert_ptr_equal(a->event, &x->events[0]);
	assert_ptr_equal(a->event->next, &x->events[1]);
	assert_true(a->ret_probe);
	assert_false(a->quiet_entry); /* traced, and it has an -e */
	assert_ptr_equal(a->ret_event, &x->rprobes[1]);
	assert_null(b->event);
	assert_true(b->ret_probe);
	assert_true(b->quiet_entry); /* only there for -r */
	assert_ptr_equal(b->ret_event, &x->rprobes[0]);
	assert_null(c->event);
	assert_false(c->ret_probe);
	assert_false(c->quiet_entry);
}

/* Without return hooks in the tracer, -r cannot be bound: the error comes back. */
static void test_bind_return_needs_returns(void **state)
{
	struct fixture *x = *state;
	struct tracer_opts opts = {.ring_records = 64};
	struct vmi_task_layout task = {.unknown = true};
	const struct vmi_site *sel[1] = {site_named(x, "func_b")};
	char err[256] = "";

	parse(&x->rp[0], "func_b(long ret)");
	x->s.rprobes = x->rp;
	x->s.nr_rprobes = 1;
	assert_int_equal(events_resolve(&x->s, NULL, &x->events, &x->rprobes, err, sizeof(err)), 0);
	assert_int_equal(tracer_new(&x->tr, &x->f.t, sel, 1, &task, &opts), 0);
	assert_int_equal(events_bind(&x->s, x->events, x->rprobes, x->tr, NULL), -ENOTSUP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_select, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_select_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_resolve_chains, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bind, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bind_return_needs_returns, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Aggregation where the probe fires: which hist triggers the stub can count (and the mode each
 * needs), and which probes of a session agg_plan_apply marks, counted by the stub or not. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "guest-stub/stub_abi.h"
#include "host/session/agg_plan.h"
#include "tests/common/fake_target.h"

#include <stdlib.h>
#include <string.h>

/* The mode hist @text needs, or -1 when the stub cannot count it. */
static int mode_of(const char *text)
{
	struct hist_spec h;
	char err[256];
	unsigned mode = 99;

	assert_int_equal(hist_parse(text, &h, err, sizeof(err)), 0);
	return agg_plan_hist_countable(&h, &mode) ? (int)mode : -1;
}

static void test_countable(void **state)
{
	(void)state;
	assert_int_equal(mode_of("f:hist:keys=common_pid.execname"), STUB_AGG_PID);
	assert_int_equal(mode_of("f:hist:keys=common_pid.hex"), STUB_AGG_PID);
	assert_int_equal(mode_of("f:hist:keys=common_cpu"), 0);
	assert_int_equal(mode_of("f:hist:keys=ip.sym"), 0);
	assert_int_equal(mode_of("f:hist:keys=common_pid.execname,duration.log2"),
			 STUB_AGG_PID | STUB_AGG_RET | STUB_AGG_LOG2);
	assert_int_equal(mode_of("f:hist:keys=common_cpu:vals=duration"), STUB_AGG_RET);
	/* what the stub does not keep: exact durations, their usecs summed, the caller, fields */
	assert_int_equal(mode_of("f:hist:keys=duration"), -1);
	assert_int_equal(mode_of("f:hist:keys=duration.buckets=1000"), -1);
	assert_int_equal(mode_of("f:hist:keys=common_cpu:vals=duration.usecs"), -1);
	assert_int_equal(mode_of("f:hist:keys=parent_ip.sym"), -1);
	assert_int_equal(mode_of("f:hist:keys=len"), -1);
	assert_int_equal(mode_of("f:hist:keys=common_cpu:vals=common_pid"), -1);
}

/* A session over four probes under -p nop with stub probes: f (a countable hist keyed by pid), g
 * (a hist on parent_ip: recorded), h (nothing but --profile), e (an -e event: recorded). */
static struct vmi_symtab syms;
static struct vmi_site sites[4];
static struct fake_target ft;
static const struct target_ops ops = {.read_phys = fake_target_read_phys};

static struct tracer *new_tracer(bool returns)
{
	const struct vmi_site *sel[4] = {&sites[0], &sites[1], &sites[2], &sites[3]};
	struct tracer_opts opts = {.stub = true, .returns = returns};
	static struct vmi_task_layout task;
	struct tracer *tr = NULL;

	vmi_symtab_free(&syms); /* the previous case's */
	vmi_symtab_add(&syms, 0x1000, 0x100, "f");
	vmi_symtab_add(&syms, 0x2000, 0x100, "g");
	vmi_symtab_add(&syms, 0x3000, 0x100, "h");
	vmi_symtab_add(&syms, 0x4000, 0x100, "e");
	vmi_symtab_sort(&syms);
	for (unsigned i = 0; i < 4; i++)
		sites[i] = (struct vmi_site){.addr = 0x1000 * (i + 1), .func = &syms.syms[i]};
	fake_target_init(&ft, &ops, 2);
	ft.t.trampoline = 0x9000;
	assert_int_equal(tracer_new(&tr, &ft.t, sel, 4, &task, &opts), 0);
	return tr;
}

static void test_apply(void **state)
{
	struct hist_spec hists[2];
	struct session s;
	struct tracer *tr;
	char err[256];
	static struct fe_spec ev;
	size_t pos;
	const struct probe_table *pt;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.tracer = TRACER_NOP;
	s.profile = true;
	assert_int_equal(hist_parse("f:hist:keys=common_pid.execname,duration.log2", &hists[0], err,
				    sizeof(err)),
			 0);
	assert_int_equal(hist_parse("g:hist:keys=parent_ip.sym", &hists[1], err, sizeof(err)), 0);
	s.hists = hists;
	s.nr_hists = 2;
	tr = new_tracer(true);
	assert_int_equal(fe_parse("e(u64 a)", &ev, err, sizeof(err), &pos), 0);
	assert_int_equal(tracer_set_event(tr, 3, &ev), 0);
	assert_int_equal(agg_plan_apply(tr, &s, true), 2);
	pt = tracer_probes(tr);
	assert_true(pt->v[0].agg && pt->v[0].agg_count);
	assert_int_equal(pt->v[0].agg_mode, STUB_AGG_PID | STUB_AGG_RET | STUB_AGG_LOG2);
	assert_true(pt->v[1].agg); /* the profile's times: returns hooked, recorded */
	assert_false(pt->v[1].agg_count);
	assert_int_equal(pt->v[1].agg_mode, STUB_AGG_RET);
	assert_true(pt->v[2].agg && pt->v[2].agg_count);
	assert_int_equal(pt->v[2].agg_mode, STUB_AGG_RET);
	assert_false(pt->v[3].agg);
	tracer_free(tr);

	/* trap probes: marked (so their returns are hooked), none counted by the stub */
	tr = new_tracer(true);
	assert_int_equal(agg_plan_apply(tr, &s, false), 0);
	assert_true(tracer_probes(tr)->v[0].agg);
	assert_false(tracer_probes(tr)->v[0].agg_count);
	tracer_free(tr);

	/* another tracer, a task filter, an expectation: records are wanted, nothing is marked */
	tr = new_tracer(true);
	s.tracer = TRACER_FUNCTION;
	assert_int_equal(agg_plan_apply(tr, &s, true), 0);
	s.tracer = TRACER_NOP;
	s.nr_expects = 1;
	assert_int_equal(agg_plan_apply(tr, &s, true), 0);
	assert_false(tracer_probes(tr)->v[2].agg);
	tracer_free(tr);

	/* without --profile, h is no one's: not marked; without returns, a duration cannot be */
	s.nr_expects = 0;
	s.profile = false;
	tr = new_tracer(false);
	s.nr_hists = 1;
	hists[0].nr_keys = 1; /* common_pid.execname alone */
	assert_int_equal(agg_plan_apply(tr, &s, true), 1);
	assert_int_equal(tracer_probes(tr)->v[0].agg_mode, STUB_AGG_PID);
	assert_false(tracer_probes(tr)->v[2].agg);
	tracer_free(tr);
	vmi_symtab_free(&syms);
}

/* The last case's symbols. */
static int free_syms(void **state)
{
	(void)state;
	vmi_symtab_free(&syms);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_countable),
	    cmocka_unit_test(test_apply),
	};

	return cmocka_run_group_tests_name("agg_plan", tests, NULL, free_syms);
}

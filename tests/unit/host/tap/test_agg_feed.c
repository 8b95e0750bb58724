/* What the stub counted, into the hists and the profile: calls to the hists of calls and returns
 * to those of returns, each key from the item (pid with its task name, CPU, function, the log2
 * bucket as counted), a duration value as the durations' sum, the tables' overflow as Dropped of
 * the counted functions' hists, frames unwound to their probe's counter. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "guest-stub/stub_abi.h"
#include "host/tap/agg_feed.h"

#include <stdlib.h>
#include <string.h>

static struct vmi_symtab syms;
static struct vmi_site sites[2];
static struct probe_table probes;

/* The entry of @h with keys @k0, @k1 (the first key alone when @h has one), or NULL. */
static const struct hist_entry *find(const struct hist *h, uint64_t k0, uint64_t k1)
{
	for (uint32_t i = 0; i < h->nr_elts; i++)
		if (h->elts[i].key[0] == k0 && (h->spec.nr_keys < 2 || h->elts[i].key[1] == k1))
			return &h->elts[i];
	return NULL;
}

static void test_feed(void **state)
{
	const struct vmi_site *sel[2] = {&sites[0], &sites[1]};
	static const char *texts[] = {
	    "f:hist:keys=common_pid.execname",
	    "f:hist:keys=common_pid,duration.log2:vals=duration",
	    "f:hist:keys=common_cpu,ip.sym",
	    "g:hist:keys=common_cpu",
	};
	struct hist_spec specs[4];
	struct hist_set hs;
	struct profile prof;
	char err[256];
	struct stub_agg_item items[] = {
	    {.probe = 0, .cpu = 0, .has_pid = true, .pid = 42, .hits = 50, .comm = "dd"},
	    {.probe = 0, .cpu = 1, .has_pid = true, .pid = 42, .hits = 5, .comm = "dd"},
	    {.probe = 0, .cpu = 1, .has_pid = true, .pid = 7, .hits = 2, .comm = "cat"},
	    {.probe = 0,
	     .cpu = 0,
	     .has_pid = true,
	     .pid = 42,
	     .is_return = true,
	     .has_log2 = true,
	     .log2 = 11,
	     .hits = 40,
	     .sum_ns = 60000,
	     .sumsq_ns = 90000000,
	     .max_ns = 2000,
	     .comm = "dd"},
	    {.probe = 0,
	     .cpu = 1,
	     .has_pid = true,
	     .pid = 42,
	     .is_return = true,
	     .has_log2 = true,
	     .log2 = 12,
	     .hits = 15,
	     .sum_ns = 45000,
	     .max_ns = 4000,
	     .comm = "dd"},
	    {.probe = 0, .cpu = 1, .is_unwound = true, .hits = 3},
	    {.probe = 1, .cpu = 1, .pid = -1, .hits = 9},
	};
	struct stub_agg a = {.v = items, .nr = 7, .dropped = 4, .read = true};
	const struct hist_entry *e;

	(void)state;
	memset(&syms, 0, sizeof(syms));
	vmi_symtab_add(&syms, 0x1000, 0x100, "f");
	vmi_symtab_add(&syms, 0x2000, 0x100, "g");
	vmi_symtab_sort(&syms);
	for (unsigned i = 0; i < 2; i++)
		sites[i] = (struct vmi_site){.addr = 0x1000 * (i + 1), .func = &syms.syms[i]};
	assert_int_equal(probe_table_init(&probes, sel, 2), 0);
	/* f counted by the stub (pid, returns in log2 buckets); g counted on the host */
	probes.v[0].stub = probes.v[0].agg = probes.v[0].agg_count = true;
	probes.v[0].agg_mode = STUB_AGG_RET | STUB_AGG_PID | STUB_AGG_LOG2;
	probes.v[1].agg = true;
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(hist_parse(texts[i], &specs[i], err, sizeof(err)), 0);
	assert_int_equal(hist_set_init(&hs, specs, 4, &probes, false, err, sizeof(err)), 0);
	assert_int_equal(profile_init(&prof, &probes), 0);
	assert_int_equal(profile_set_cpus(&prof, 2), 0);

	agg_feed(&a, &hs, &prof, &probes);

	/* by pid: dd's 55 calls on both CPUs in one entry, named; cat's 2 */
	assert_int_equal(hs.v[0].nr_elts, 2);
	e = find(&hs.v[0], 42, 0);
	assert_non_null(e);
	assert_int_equal(e->sum[0], 55);
	assert_string_equal(e->comm, "dd");
	assert_int_equal(find(&hs.v[0], 7, 0)->sum[0], 2);
	assert_int_equal(hs.v[0].hits, 57);
	assert_int_equal(hs.v[0].dropped, 4);
	/* the latency histogram: the returns by bucket, their durations summed */
	assert_int_equal(hs.v[1].nr_elts, 2);
	e = find(&hs.v[1], 42, 11);
	assert_int_equal(e->sum[0], 40);
	assert_int_equal(e->sum[1], 60000);
	assert_int_equal(find(&hs.v[1], 42, 12)->sum[1], 45000);
	assert_int_equal(hs.v[1].hits, 55);
	/* by CPU and function */
	assert_int_equal(find(&hs.v[2], 0, 0x1000)->sum[0], 50);
	assert_int_equal(find(&hs.v[2], 1, 0x1000)->sum[0], 7);
	/* g: its item fed as any (stub_agg_parse keeps counted sites only); the stub's Dropped goes
	 * to the counted functions' hists alone */
	assert_int_equal(hs.v[3].nr_elts, 1);
	assert_int_equal(hs.v[3].dropped, 0);
	/* the profile, per CPU and merged; the unwound frames on f's counter */
	assert_int_equal(prof.v[0].hits, 57);
	assert_int_equal(prof.v[0].returns, 55);
	assert_int_equal(prof.v[0].total_ns, 105000);
	assert_int_equal(prof.v[0].max_ns, 4000);
	assert_int_equal(prof.cpu_v[0].hits, 50);
	assert_int_equal(prof.cpu_v[2 + 0].hits, 7);
	assert_int_equal(prof.cpu_v[2 + 1].hits, 9);
	assert_int_equal(atomic_load(&probes.v[0].n.unwound), 3);
	profile_free(&prof);
	hist_set_free(&hs);
	probe_table_free(&probes);
	vmi_symtab_free(&syms);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_feed),
	};

	return cmocka_run_group_tests_name("agg_feed", tests, NULL, NULL);
}

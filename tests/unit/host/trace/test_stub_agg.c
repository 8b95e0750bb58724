/* Aggregation in the guest against a guest that writes anything into the stub's tables: counting
 * sites get the counting routine of their mode and the header its tables; at the stop the host
 * reads each CPU's table within its own bounds, whatever the guest scribbled over the header,
 * keeps what the stub can have written (the guest's word on its own counts, however large) and
 * rejects the rest: another site, a key or bucket its probe's mode does not make, sums that
 * contradict their count or their maximum. Guest memory is a host buffer (GVA = GPA). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/stub_agg.h"
#include "host/trace/stub_drain.h"
#include "tests/common/fake_target.h"
#include "vmi/vmi_linux.h"

#include <stdlib.h>
#include <string.h>

#define GUEST_MEM (8u << 20)
#define STUB_AT	  0x400000ull
#define F_COUNT	  0x1000ull /* counted by pid, its returns in log2 buckets */
#define F_PLAIN	  0x2000ull /* counted: calls alone */
#define F_TRAP	  0x3000ull /* a trap probe */
#define MODE_FULL (STUB_AGG_RET | STUB_AGG_PID | STUB_AGG_LOG2)

static uint8_t *guest;
static struct fake_target ft;
static struct vmi_symtab syms;
static struct vmi_site sites[3];
static struct probe_table probes;
static struct ring rings[2];
static struct vmi_task_layout task = {.cpu_gs_off = 8};
static struct stub_drain d;

static int place(struct target *t, uint64_t lo, uint64_t hi, uint64_t min, uint64_t want,
		 struct target_region *out, char *err, size_t errlen)
{
	(void)t, (void)lo, (void)hi, (void)min, (void)err, (void)errlen;
	*out = (struct target_region){
	    .gva = STUB_AT, .gpa = STUB_AT, .size = want < (4u << 20) ? want : (4u << 20)};
	return 0;
}

static void drop(struct target *t, const struct target_region *r)
{
	(void)t, (void)r;
}

/* One guest TSC tick is one nanosecond... at 2 GHz: 2,000,000 kHz. */
static int clock_2ghz(struct target *t, uint64_t *tsc, uint64_t *ns, uint64_t *khz)
{
	(void)t;
	*tsc = *ns = 0;
	*khz = 2000000;
	return 0;
}

static int vcpu_regs(struct target *t, unsigned cpu, struct arch_regs *regs)
{
	(void)t, (void)cpu;
	memset(regs, 0, sizeof(*regs));
	return 0;
}

static int pause_nop(struct target *t)
{
	(void)t;
	return 0;
}

static void resume_nop(struct target *t)
{
	(void)t;
}

static int kernel_read(struct target *t, uint64_t gva, void *buf, size_t len)
{
	return fake_target_read_phys(t, gva, buf, len);
}

static const struct target_ops guest_ops = {
    .read_virt = fake_target_read_virt,
    .write_virt = fake_target_write_virt,
    .read_phys = fake_target_read_phys,
    .write_phys = fake_target_write_phys,
    .write_text = fake_target_write_text,
    .translate = fake_target_translate,
    .kernel_gpa = fake_target_kernel_gpa,
    .stub_map = place,
    .stub_unmap = drop,
    .tsc_sync = clock_2ghz,
    .get_regs = vcpu_regs,
    .pause = pause_nop,
    .resume = resume_nop,
    .read_kernel = kernel_read,
};

static uint64_t hdr(unsigned field)
{
	uint64_t v;

	memcpy(&v, guest + STUB_AT + STUB_HDR_OFF + field, 8);
	return v;
}

static void set_hdr(unsigned field, uint64_t v)
{
	memcpy(guest + STUB_AT + STUB_HDR_OFF + field, &v, 8);
}

/* Attaches the drain over two CPUs: F_COUNT and F_PLAIN counting sites, F_TRAP a trap probe. */
static int setup(void **state)
{
	struct stub_drain_cfg cfg = {.tgt = &ft.t,
				     .probes = &probes,
				     .rings = rings,
				     .nr_cpus = 2,
				     .task = &task,
				     .returns = true,
				     .max_records = 64};
	const struct vmi_site *sel[3] = {&sites[0], &sites[1], &sites[2]};
	char err[256];

	(void)state;
	guest = calloc(1, GUEST_MEM);
	fake_target_init(&ft, &guest_ops, 2);
	ft.t.stack_shift = 16;
	fake_mem_map(&ft.mem, 0, guest, GUEST_MEM);
	memset(&syms, 0, sizeof(syms));
	vmi_symtab_add(&syms, F_COUNT, 0x100, "f_count");
	vmi_symtab_add(&syms, F_PLAIN, 0x100, "f_plain");
	vmi_symtab_add(&syms, F_TRAP, 0x100, "f_trap");
	vmi_symtab_sort(&syms);
	for (unsigned i = 0; i < 3; i++) {
		sites[i] = (struct vmi_site){.addr = F_COUNT + 0x1000 * i, .func = &syms.syms[i]};
		memcpy(guest + sites[i].addr, "\x0f\x1f\x44\x00\x00", 5);
	}
	assert_int_equal(probe_table_init(&probes, sel, 3), 0);
	assert_int_equal(probe_verify_all(&probes, &ft.t, err, sizeof(err)), 0);
	probes.v[0].stub = probes.v[1].stub = true;
	probes.v[0].agg = probes.v[1].agg = true;
	probes.v[0].agg_count = probes.v[1].agg_count = true;
	probes.v[0].agg_mode = MODE_FULL;
	probes.v[0].hooks_return = true;
	probes.v[2].agg = true; /* a trap probe: never counted by the stub, whatever it says */
	for (unsigned c = 0; c < 2; c++)
		assert_int_equal(ring_init(&rings[c], 64), 0);
	stub_drain_init(&d);
	assert_int_equal(stub_drain_attach(&d, &cfg, err, sizeof(err)), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	stub_drain_detach(&d);
	stub_agg_free(&d.agg);
	for (unsigned c = 0; c < 2; c++)
		ring_free(&rings[c]);
	probe_table_free(&probes);
	vmi_symtab_free(&syms);
	free(guest);
	return 0;
}

/* The CALL rel32 at @site goes to @to. */
static void assert_calls(uint64_t site, uint64_t to)
{
	int32_t rel;

	assert_int_equal(guest[site], 0xe8);
	memcpy(&rel, guest + site + 1, 4);
	assert_int_equal(site + 5 + (int64_t)rel, to);
}

/* Entry @i of CPU @cpu's table, in guest memory (where the host placed it). */
static struct stub_agg_ent *ent(unsigned cpu, uint64_t i)
{
	uint64_t off = hdr(H_AGG) - STUB_AT + (cpu * d.stub.agg_entries + i) * STUB_AGG_SIZE;

	return (struct stub_agg_ent *)(guest + STUB_AT + off);
}

static void put(unsigned cpu, uint64_t i, struct stub_agg_ent e)
{
	memcpy(ent(cpu, i), &e, sizeof(e));
}

/* The sites call their mode's counting routine; the header says where the tables are, how big,
 * and how the stub turns ticks into ns (2 GHz: half a nanosecond a tick). */
static void test_counting_sites_placed(void **state)
{
	(void)state;
	assert_int_not_equal(d.stub.agg_entries, 0);
	assert_true(d.stub.agg_entries >= STUB_AGG_ENTRIES_MIN);
	assert_calls(F_COUNT, d.stub.agg[MODE_FULL]);
	assert_calls(F_PLAIN, d.stub.agg[0]);
	assert_int_not_equal(d.stub.agg[MODE_FULL], d.stub.agg[0]);
	assert_int_equal(hdr(H_AGG_MASK), d.stub.agg_entries - 1);
	assert_true(hdr(H_AGG) >= hdr(H_STACKS));
	assert_int_equal(hdr(H_NS_SHIFT), 32);
	assert_int_equal(hdr(H_NS_MULT), 1ull << 31);
	/* the counting routines run with interrupts on: a task may be interrupted anywhere in them */
	assert_true(stub_interruptible_at(&d.stub, d.stub.agg[0]));
	assert_true(stub_interruptible_at(&d.stub, d.stub.agg[MODE_FULL] + 1));
	assert_true(stub_interruptible_at(&d.stub, d.stub.agg[0] + 2));
}

/* What the stub writes passes, its counts taken as the guest gives them, however large; every
 * entry it cannot have written is rejected and counted. */
static void test_forged_entries_rejected(void **state)
{
	const char dd[16] = "dd";
	uint64_t big = UINT64_MAX / 2;

	(void)state;
	/* good: dd's 50 calls of f_count, its 50 returns of 1025..2048 ns; f_plain's calls */
	put(0, 3, (struct stub_agg_ent){.ip = F_COUNT, .pid = 42, .bucket = 0, .hits = 50});
	memcpy(ent(0, 3)->comm, dd, 16);
	put(0, 9,
	    (struct stub_agg_ent){
		.ip = F_COUNT, .pid = 42, .bucket = 2 + 11, .hits = 50, .sum = 75000, .max = 2000});
	put(1, 0, (struct stub_agg_ent){.ip = F_PLAIN, .pid = STUB_AGG_NOPID, .hits = big});
	put(1, 1,
	    (struct stub_agg_ent){
		.ip = F_COUNT, .pid = STUB_AGG_NOPID, .bucket = STUB_AGG_UNWOUND, .hits = 3});
	/* forged: */
	put(0, 20, (struct stub_agg_ent){.ip = F_TRAP, .pid = STUB_AGG_NOPID, .hits = 1});
	put(0, 21, (struct stub_agg_ent){.ip = F_COUNT + 1, .pid = 42, .hits = 1});
	put(0, 22, (struct stub_agg_ent){.ip = 0xdead0000, .pid = 42, .hits = 1});
	put(0, 23, (struct stub_agg_ent){.ip = F_COUNT, .pid = STUB_AGG_NOPID, .hits = 1});
	put(0, 24, (struct stub_agg_ent){.ip = F_PLAIN, .pid = 7, .hits = 1});
	put(0, 25, (struct stub_agg_ent){.ip = F_COUNT, .pid = STUB_AGG_PID_MAX + 1, .hits = 1});
	put(0, 26, (struct stub_agg_ent){.ip = F_COUNT, .pid = 1, .hits = 1, .sum = 5});
	put(0, 27, (struct stub_agg_ent){.ip = F_COUNT, .pid = 1, .bucket = 1, .hits = 1});
	put(0, 28,
	    (struct stub_agg_ent){
		.ip = F_PLAIN, .pid = STUB_AGG_NOPID, .bucket = 1, .hits = 1, .sum = 1, .max = 1});
	put(0, 29,
	    (struct stub_agg_ent){.ip = F_COUNT,
				  .pid = 1,
				  .bucket = 2 + 11,
				  .hits = 2,
				  .sum = 1000,
				  .max = 2000}); /* max > sum */
	put(0, 30,
	    (struct stub_agg_ent){.ip = F_COUNT,
				  .pid = 1,
				  .bucket = 2 + 11,
				  .hits = 2,
				  .sum = 5000,
				  .max = 2000}); /* sum > hits * max */
	put(0, 31,
	    (struct stub_agg_ent){.ip = F_COUNT,
				  .pid = 1,
				  .bucket = 2 + 5,
				  .hits = 1,
				  .sum = 2000,
				  .max = 2000}); /* max not in its bucket */
	put(0, 32,
	    (struct stub_agg_ent){
		.ip = F_COUNT, .pid = 1, .bucket = 2 + 65, .hits = 1, .sum = 2000, .max = 2000});
	put(0, 33,
	    (struct stub_agg_ent){.ip = F_COUNT,
				  .pid = 1,
				  .bucket = STUB_AGG_UNWOUND,
				  .hits = 1}); /* an unwound frame has no pid */
	put(0, 34,
	    (struct stub_agg_ent){.ip = F_PLAIN,
				  .pid = STUB_AGG_NOPID,
				  .bucket = STUB_AGG_UNWOUND,
				  .hits = 1}); /* no return */
	/* not counted yet (claimed, no hit): skipped, not rejected */
	put(1, 5, (struct stub_agg_ent){.ip = F_COUNT, .pid = 9});
	/* the guest's overflow counts, summed saturating */
	memcpy(guest + STUB_AT + STUB_RINGHDR_OFF + RH_AGG_DROP, &big, 8);
	memcpy(guest + STUB_AT + STUB_RINGHDR_OFF + STUB_RINGHDR_SIZE + RH_AGG_DROP, &big, 8);
	memcpy(guest + STUB_AT + STUB_RINGHDR_OFF + STUB_RINGHDR_SIZE + RH_AGG_DROP + 7, "\xff", 1);

	stub_drain_stop(&d);
	assert_true(d.agg.read);
	assert_int_equal(d.agg.nr, 4);
	assert_int_equal(d.agg.rejected, 15);
	assert_int_equal(d.agg.dropped, UINT64_MAX);
	assert_int_equal(d.agg.v[0].probe, 0);
	assert_int_equal(d.agg.v[0].cpu, 0);
	assert_true(d.agg.v[0].has_pid);
	assert_int_equal(d.agg.v[0].pid, 42);
	assert_false(d.agg.v[0].is_return);
	assert_int_equal(d.agg.v[0].hits, 50);
	assert_string_equal(d.agg.v[0].comm, "dd");
	assert_true(d.agg.v[1].is_return);
	assert_true(d.agg.v[1].has_log2);
	assert_int_equal(d.agg.v[1].log2, 11);
	assert_int_equal(d.agg.v[1].sum_ns, 75000);
	assert_int_equal(d.agg.v[2].probe, 1);
	assert_int_equal(d.agg.v[2].cpu, 1);
	assert_false(d.agg.v[2].has_pid);
	assert_int_equal(d.agg.v[2].hits, big);
	assert_true(d.agg.v[3].is_unwound);
	assert_false(d.agg.v[3].is_return);
	assert_false(d.agg.v[3].has_pid);
	assert_int_equal(d.agg.v[3].hits, 3);
	/* read once: a second stop changes nothing */
	put(0, 40, (struct stub_agg_ent){.ip = F_PLAIN, .pid = STUB_AGG_NOPID, .hits = 1});
	stub_drain_stop(&d);
	assert_int_equal(d.agg.nr, 4);
}

/* A guest that scribbles over the header (where its tables are, how big, how many CPUs) and fills
 * every entry: the host reads its own bounds, every entry once, and keeps at most them all. */
static void test_scribbled_header_full_tables(void **state)
{
	uint64_t n = d.stub.agg_entries;
	char comm[16];

	(void)state;
	for (unsigned c = 0; c < 2; c++)
		for (uint64_t i = 0; i < n; i++) {
			put(c, i,
			    (struct stub_agg_ent){.ip = F_COUNT, .pid = (uint32_t)i, .hits = 1});
			memset(ent(c, i)->comm, 'x', 16); /* no NUL */
		}
	set_hdr(H_AGG, 0xffffffffffff0000ull);
	set_hdr(H_AGG_MASK, UINT64_MAX);
	set_hdr(H_NR_CPUS, 0xffffffff);
	stub_drain_stop(&d);
	assert_true(d.agg.read);
	assert_int_equal(d.agg.nr, 2 * n);
	assert_int_equal(d.agg.rejected, 0);
	memset(comm, 'x', 15);
	comm[15] = 0;
	assert_string_equal(d.agg.v[2 * n - 1].comm, comm);
	assert_int_equal(d.agg.v[2 * n - 1].pid, (int32_t)(n - 1));
}

/* The same with the guest's preempt count known: the header turns on the profiler's short path
 * (prof.S); without it (every other test here) it stays off. */
static int setup_preempt(void **state)
{
	task.valid = true;
	task.has_preempt_gs = true;
	task.preempt_gs_off = 0x40;
	return setup(state);
}

static int teardown_preempt(void **state)
{
	task.valid = false;
	task.has_preempt_gs = false;
	task.preempt_gs_off = 0;
	return teardown(state);
}

static void test_short_path_header(void **state)
{
	(void)state;
	assert_int_equal(hdr(H_PREEMPT_GS), 0x40);
	assert_int_equal(hdr(H_FAST), 1);
}

static void test_no_short_path_without_preempt_count(void **state)
{
	(void)state;
	assert_int_equal(hdr(H_PREEMPT_GS), 0);
	assert_int_equal(hdr(H_FAST), 0);
}

/* An STUB_AGG_BOTH entry (the short path's: calls in A_HITS, returns in the u64 at A_COMM, their
 * durations) gives two items, its calls and its returns, for a probe of mode STUB_AGG_RET alone;
 * anything else in that bucket is rejected. */
static void test_both_entries(void **state)
{
	struct stub_agg_ent raw[9];
	struct stub_agg_item items[16];
	struct stub_agg a = {.v = items, .cap = 16};
	uint64_t rets = 7, two = 2;

	(void)state;
	probes.v[1].agg_mode = STUB_AGG_RET;
	probes.v[1].hooks_return = true;
	memset(raw, 0, sizeof(raw));
	for (unsigned i = 0; i < 9; i++)
		raw[i] = (struct stub_agg_ent){
		    .ip = F_PLAIN, .pid = STUB_AGG_NOPID, .bucket = STUB_AGG_BOTH, .hits = 8};
	/* good: 8 calls, 7 returns of 100..400 ns */
	raw[0].sum = 1000, raw[0].sumsq = 190000, raw[0].max = 400;
	memcpy(raw[0].comm, &rets, 8);
	/* good: calls only (none returned yet) */
	/* forged: returns without durations' room (sum > returns * max) */
	raw[2].sum = 5000, raw[2].max = 400;
	memcpy(raw[2].comm, &rets, 8);
	/* forged: durations and no return */
	raw[3].sum = 10, raw[3].max = 10;
	/* forged: a pid */
	raw[4].pid = 42;
	/* forged: the comm's second half written */
	raw[5].comm[12] = 'x';
	/* forged: max above the sum */
	raw[6].sum = 10, raw[6].max = 20;
	memcpy(raw[6].comm, &two, 8);
	/* forged: the bucket at a probe of another mode (f_count: pid, log2) */
	raw[7].ip = F_COUNT;
	/* forged: a trap probe's site */
	raw[8].ip = F_TRAP;
	stub_agg_parse(&a, raw, 9, 1, &probes);
	assert_int_equal(a.nr, 3);
	assert_int_equal(a.rejected, 7);
	assert_false(items[0].is_return);
	assert_false(items[0].has_pid);
	assert_int_equal(items[0].hits, 8);
	assert_int_equal(items[0].cpu, 1);
	assert_int_equal(items[0].sum_ns, 0);
	assert_true(items[1].is_return);
	assert_false(items[1].has_log2);
	assert_int_equal(items[1].hits, 7);
	assert_int_equal(items[1].sum_ns, 1000);
	assert_int_equal(items[1].sumsq_ns, 190000);
	assert_int_equal(items[1].max_ns, 400);
	assert_false(items[2].is_return);
	assert_int_equal(items[2].hits, 8);
	/* a table with room for one item more: the calls kept, the returns counted rejected */
	a = (struct stub_agg){.v = items, .cap = 1};
	stub_agg_parse(&a, raw, 1, 0, &probes);
	assert_int_equal(a.nr, 1);
	assert_int_equal(a.rejected, 1);
	/* returns alone (arm64: calls made on another CPU, their returns counted here): one item,
	 * the returns'; an entry with neither is nothing */
	raw[0].hits = 0;
	raw[1].hits = 0;
	a = (struct stub_agg){.v = items, .cap = 16};
	stub_agg_parse(&a, raw, 2, 0, &probes);
	assert_int_equal(a.nr, 1);
	assert_int_equal(a.rejected, 0);
	assert_true(items[0].is_return);
	assert_int_equal(items[0].hits, 7);
	assert_int_equal(items[0].sum_ns, 1000);
}

/* stub_agg_parse alone: a table past its capacity counts the rest rejected. */
static void test_parse_bounded(void **state)
{
	struct stub_agg_ent raw[4];
	struct stub_agg_item items[2];
	struct stub_agg a = {.v = items, .cap = 2};

	(void)state;
	for (unsigned i = 0; i < 4; i++)
		raw[i] = (struct stub_agg_ent){.ip = F_PLAIN, .pid = STUB_AGG_NOPID, .hits = i + 1};
	stub_agg_parse(&a, raw, 4, 1, &probes);
	assert_int_equal(a.nr, 2);
	assert_int_equal(a.rejected, 2);
	assert_int_equal(items[1].hits, 2);
	assert_int_equal(stub_agg_log2(0), 0);
	assert_int_equal(stub_agg_log2(1), 0);
	assert_int_equal(stub_agg_log2(2), 1);
	assert_int_equal(stub_agg_log2(3), 2);
	assert_int_equal(stub_agg_log2(2048), 11);
	assert_int_equal(stub_agg_log2(2049), 12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_counting_sites_placed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_forged_entries_rejected, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_scribbled_header_full_tables, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_parse_bounded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_short_path_header, setup_preempt, teardown_preempt),
	    cmocka_unit_test_setup_teardown(test_no_short_path_without_preempt_count, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_both_entries, setup, teardown),
	};

	return cmocka_run_group_tests_name("stub_agg", tests, NULL, NULL);
}

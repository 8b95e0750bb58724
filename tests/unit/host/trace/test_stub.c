/* host/stub.c against a target that is plain memory (GVA = GPA): where the stub's header, code and
 * rings go, the CALL rel32 it patches and takes back, reading committed records only, and handing
 * the hooked return slots back from the guest-memory shadow stacks. (The stub's code itself runs in
 * the KVM tests, and natively in tests/unit/guest-stub/x86/test_stub.c.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/stub.h"
#include "tests/common/fake_target.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MEM	 (8u << 20)
#define REGION	 0x400000ull
#define SITE	 0x1000ull
#define FAR_SITE (0x100000000ull + 0x2000) /* more than 2 GiB from the region */

extern const uint8_t hvt_stub_entry_root[], hvt_stub_entry_root_args[];
extern const uint8_t hvt_stub_start[], hvt_stub_entry[], hvt_stub_entry_ret[],
    hvt_stub_entry_args[], hvt_stub_entry_ret_args[], hvt_stub_ret[], hvt_stub_end[],
    hvt_stub_count[], hvt_stub_ret_end[];

static uint8_t *mem, far_page[0x1000];
static bool unmapped;
static struct fake_target ft;

static uint8_t *at(uint64_t a)
{
	uint8_t *p = fake_mem_at(&ft.mem, a, 1);

	assert_non_null(p);
	return p;
}

static int map(struct target *t, uint64_t lo, uint64_t hi, uint64_t min, uint64_t want,
	       struct target_region *out, char *err, size_t errlen)
{
	(void)t, (void)lo, (void)hi, (void)err, (void)errlen;
	out->gva = out->gpa = REGION;
	out->size = want < (2u << 20) ? want : (2u << 20);
	assert_true(out->size >= min);
	return 0;
}

static void unmap(struct target *t, const struct target_region *r)
{
	(void)t, (void)r;
	unmapped = true;
}

static const struct target_ops ops = {
    .read_virt = fake_target_read_virt,
    .write_virt = fake_target_write_virt,
    .read_phys = fake_target_read_phys,
    .write_phys = fake_target_write_phys,
    .write_text = fake_target_write_text,
    .kernel_gpa = fake_target_kernel_gpa,
    .stub_map = map,
    .stub_unmap = unmap,
};
static struct stub s;

static uint64_t u64(uint64_t a)
{
	uint64_t v;

	memcpy(&v, at(a), 8);
	return v;
}

static void put64(uint64_t a, uint64_t v)
{
	memcpy(at(a), &v, 8);
}

static int setup(void **state)
{
	static struct vmi_task_layout task = {.valid = true};
	struct stub_guest g = {.cpu_gs_off = 8, .task = &task, .stack_shift = 16, .max_depth = 128};
	char err[128];

	(void)state;
	mem = calloc(1, MEM);
	memset(far_page, 0, sizeof(far_page));
	unmapped = false;
	fake_target_init(&ft, &ops, 2);
	ft.t.name = "memory";
	fake_mem_map(&ft.mem, 0, mem, MEM);
	fake_mem_map(&ft.mem, FAR_SITE & ~0xfffull, far_page, sizeof(far_page));
	task.current_slot[0] = 0x5000;
	task.current_slot[1] = 0x5008;
	task.has_preempt_gs = true; /* the counting and return routines pin by %gs:0x1234 */
	task.preempt_gs_off = 0x1234;
	memcpy(at(SITE), "\x0f\x1f\x44\x00\x00", 5);
	memcpy(at(FAR_SITE), "\x0f\x1f\x44\x00\x00", 5);
	assert_int_equal(stub_place(&s, &ft.t, 2, true, &g, SITE, SITE, err, sizeof(err)), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(mem);
	return 0;
}

static void test_place(void **state)
{
	uint64_t h = REGION + STUB_HDR_OFF, records = u64(h + H_RING_MASK) + 1;

	(void)state;
	assert_true(s.placed);
	assert_memory_equal(at(REGION), hvt_stub_start, (size_t)(hvt_stub_end - hvt_stub_start));
	assert_int_equal(u64(h + H_MAGIC), STUB_MAGIC);
	assert_int_equal(u64(h + H_NR_CPUS), 2);
	assert_int_equal(records & (records - 1), 0);
	assert_true(records >= STUB_RING_RECORDS_MIN && records <= STUB_RING_RECORDS_MAX);
	assert_int_equal(records, s.ring_records);
	assert_int_equal(u64(h + H_CPU_GS_OFF), 8);
	assert_int_equal(u64(h + H_AUX_MASK), 0);
	assert_int_equal(u64(h + H_CPUID), 0);
	assert_string_equal(s.cpu_from, "gs");
	assert_int_equal(u64(h + H_RINGS), REGION + STUB_RINGS_OFF);
	assert_int_equal(u64(h + H_STACK_SHIFT), 16);
	assert_int_equal(u64(h + H_MAX_DEPTH), 128);
	assert_int_equal(u64(h + H_GRAPH), 0);
	assert_int_equal(u64(h + H_RET), REGION + (uint64_t)(hvt_stub_ret - hvt_stub_start));
	assert_int_equal(u64(h + H_CUR_GS_ON), 0); /* the slots, not %gs, without has_task_gs */
	assert_int_equal(u64(h + H_PREEMPT_GS), 0x1234);
	assert_int_equal(u64(h + H_CUR_SLOTS), 0x5000);
	assert_int_equal(u64(h + H_CUR_SLOTS + 8), 0x5008);
	assert_int_equal(u64(h + H_CUR_SLOTS + 16), 0);
	/* the shadow stacks lie past the rings, inside the region */
	assert_true(u64(h + H_STACKS) >= REGION + STUB_RINGS_OFF + 2 * records * STUB_REC_SIZE);
	assert_true(u64(h + H_STACKS) + (u64(h + H_STACKS_MASK) + 1) * STUB_STACK_SIZE <=
		    REGION + s.reg.size);
	stub_unplace(&s);
	assert_true(unmapped);
	assert_false(s.placed);
}

static const uint8_t nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

/* Where the stub takes its CPU number: RDTSCP when IA32_TSC_AUX holds it, else CPUID's APIC ID
 * when asked for, else %gs:offset; the header says the one in force. */
static void test_cpu_source(void **state)
{
	static const struct {
		uint32_t aux;
		bool cpuid;
		uint64_t h_aux, h_cpuid;
		const char *from;
	} c[] = {
	    {0xfff, false, 0xfff, 0, "rdtscp"},
	    {0xfff, true, 0xfff, 0, "rdtscp"},
	    {0, true, 0, 1, "cpuid"},
	    {0, false, 0, 0, "gs"},
	};
	static struct vmi_task_layout task = {.valid = true};
	uint64_t h = REGION + STUB_HDR_OFF;
	char err[128];

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct stub_guest g = {.cpu_gs_off = 8,
				       .cpu_aux_mask = c[i].aux,
				       .cpu_cpuid = c[i].cpuid,
				       .task = &task,
				       .stack_shift = 16,
				       .max_depth = 128};

		memset(mem, 0, MEM);
		memcpy(at(SITE), "\x0f\x1f\x44\x00\x00", 5);
		assert_int_equal(stub_place(&s, &ft.t, 2, true, &g, SITE, SITE, err, sizeof(err)),
				 0);
		assert_int_equal(u64(h + H_AUX_MASK), c[i].h_aux);
		assert_int_equal(u64(h + H_CPUID), c[i].h_cpuid);
		assert_string_equal(s.cpu_from, c[i].from);
	}
}

static void test_patch(void **state)
{
	int32_t rel;

	(void)state;
	/* the routine for each combination of return hook, argument registers and graph root (a root
	 * always hooks its return) */
	const uint8_t *const routines[8] = {
		hvt_stub_entry,		 hvt_stub_entry_ret,	  hvt_stub_entry_args,
		hvt_stub_entry_ret_args, hvt_stub_entry_root,	  hvt_stub_entry_root,
		hvt_stub_entry_root_args, hvt_stub_entry_root_args};

	assert_int_equal(stub_patch(&s, SITE, SITE, nop5, false, false, false), 0);
	assert_int_equal(*at(SITE), 0xe8);
	memcpy(&rel, at(SITE + 1), 4);
	assert_int_equal(SITE + 5 + rel, s.entry[0]);
	/* the site no longer holds the NOP5 verified at attach: patching twice is refused, and
	 * nothing is written */
	assert_int_equal(stub_patch(&s, SITE, SITE, nop5, true, false, false), -ESTALE);
	assert_int_equal(SITE + 5 + rel, s.entry[0]);
	/* what it is asked to replace must be a NOP5 */
	assert_int_equal(stub_patch(&s, SITE, SITE, at(SITE), true, false, false), -EILSEQ);
	assert_int_equal(stub_unpatch(&s, SITE, SITE, nop5), 0);
	assert_memory_equal(at(SITE), nop5, 5);
	/* no CALL of ours there any more: nothing to put back */
	assert_int_equal(stub_unpatch(&s, SITE, SITE, nop5), -ESTALE);
	for (unsigned k = 0; k < 8; k++) {
		assert_int_equal(stub_patch(&s, SITE, SITE, nop5, k & 1, k & 2, k & 4), 0);
		memcpy(&rel, at(SITE + 1), 4);
		assert_int_equal(SITE + 5 + rel, REGION + (uint64_t)(routines[k] - hvt_stub_start));
		assert_int_equal(stub_unpatch(&s, SITE, SITE, nop5), 0);
	}
	/* out of CALL rel32 reach: refused, unchanged */
	assert_int_equal(stub_patch(&s, FAR_SITE, FAR_SITE, nop5, false, false, false), -ERANGE);
	assert_memory_equal(at(FAR_SITE), nop5, 5);
	assert_true(stub_owns_rip(&s, s.ret));
	assert_false(stub_owns_rip(&s, SITE));
}

/* The CALL goes to the site's guest-physical address (the relative target computed from where the
 * site executes), and comes back out only where the guest left it. */
static void test_patch_by_gpa(void **state)
{
	uint64_t gpa = SITE + 0x2000;
	int32_t rel;

	(void)state;
	memcpy(at(gpa), nop5, 5);
	assert_int_equal(stub_patch(&s, SITE, gpa, nop5, true, false, false), 0);
	assert_memory_equal(at(SITE), nop5, 5); /* the site's address itself is not written */
	assert_int_equal(*at(gpa), 0xe8);
	memcpy(&rel, at(gpa + 1), 4);
	assert_int_equal(SITE + 5 + rel, s.entry[1]);
	/* a CALL that does not lead into the stub is not ours */
	memcpy(at(gpa + 1), &(int32_t){rel + 1}, 4);
	assert_int_equal(stub_unpatch(&s, SITE, gpa, nop5), -ESTALE);
	memcpy(at(gpa + 1), &rel, 4);
	/* the guest rewrote the site: left as it wrote it */
	memcpy(at(gpa), "\x66\x66\x90\x66\x90", 5);
	assert_int_equal(stub_unpatch(&s, SITE, gpa, nop5), -ESTALE);
	assert_memory_equal(at(gpa), "\x66\x66\x90\x66\x90", 5);
	memcpy(at(gpa), "\xe8", 1);
	memcpy(at(gpa + 1), &rel, 4);
	assert_int_equal(stub_unpatch(&s, SITE, gpa, nop5), 0);
	assert_memory_equal(at(gpa), nop5, 5);
	assert_memory_equal(at(SITE), nop5, 5);
}

static struct stub_rec *rec(unsigned cpu, uint64_t idx)
{
	return (struct stub_rec *)at(REGION + STUB_RINGS_OFF +
				     (cpu * s.ring_records + (idx & (s.ring_records - 1))) *
					 STUB_REC_SIZE);
}

static void test_read_committed_only(void **state)
{
	uint64_t rh = REGION + STUB_RINGHDR_OFF + STUB_RINGHDR_SIZE; /* CPU 1 */
	struct stub_rec buf[8];

	(void)state;
	assert_int_equal(stub_read(&s, 1, buf, 8), 0);
	for (uint64_t i = 0; i < 3; i++) {
		rec(1, i)->ip = 0x100 + i;
		rec(1, i)->seq = i < 2 ? i + 1 : 0; /* the third is reserved, not committed yet */
	}
	put64(rh + RH_HEAD, 3);
	assert_int_equal(stub_read(&s, 1, buf, 8), 2);
	assert_int_equal(buf[0].ip, 0x100);
	assert_int_equal(buf[1].ip, 0x101);
	assert_int_equal(stub_read(&s, 1, buf, 1), 1);
	assert_int_equal(stub_consume(&s, 1, 2), 0);
	assert_int_equal(u64(rh + RH_TAIL), 2);
	assert_int_equal(stub_read(&s, 1, buf, 8), 0);
	rec(1, 2)->seq = 3;
	assert_int_equal(stub_read(&s, 1, buf, 8), 1);
	assert_int_equal(buf[0].ip, 0x102);
	/* a stale record from the previous lap does not count as the next one */
	assert_int_equal(stub_consume(&s, 1, 1), 0);
	rec(1, 3)->seq = (uint32_t)(4 - s.ring_records);
	put64(rh + RH_HEAD, 4);
	assert_int_equal(stub_read(&s, 1, buf, 8), 0);
	assert_int_equal(stub_read(&s, 0, buf, 8), 0);
	/* across the end of the ring: the last record, then the first */
	s.tail[1] = 3 * s.ring_records - 1;
	rec(1, s.tail[1])->seq = (uint32_t)(s.tail[1] + 1);
	rec(1, s.tail[1])->ip = 0xaaa;
	rec(1, s.tail[1] + 1)->seq = (uint32_t)(s.tail[1] + 2);
	rec(1, s.tail[1] + 1)->ip = 0xbbb;
	put64(rh + RH_HEAD, s.tail[1] + 2);
	assert_int_equal(stub_read(&s, 1, buf, 8), 2);
	assert_int_equal(buf[0].ip, 0xaaa);
	assert_int_equal(buf[1].ip, 0xbbb);
}

static void test_restore_slots(void **state)
{
	uint64_t stacks = u64(REGION + STUB_HDR_OFF + H_STACKS), st = stacks + 3 * STUB_STACK_SIZE;
	struct stub_frame f[3] = {
	    {.slot = 0x7ff8, .orig = 0x1111, .ip = SITE},
	    {.slot = 0x7f00, .orig = 0x2222, .ip = SITE},
	    {.slot = 0x7f00, .orig = s.ret, .ip = SITE}, /* a tail call on the same slot */
	};
	struct stub_counters c;

	(void)state;
	put64(st + S_KEY, (0x7ff8 >> 16) + 1);
	put64(st + S_NR, 3);
	memcpy(at(st + S_E), f, sizeof(f));
	put64(0x7ff8, s.ret);
	put64(0x7f00, s.ret);
	put64(0x7e00, s.ret); /* no frame for it: left alone */
	assert_int_equal(stub_restore_slots(&s, false), 0);
	assert_int_equal(u64(0x7ff8), 0x1111);
	assert_int_equal(u64(0x7f00), 0x2222);
	assert_int_equal(u64(0x7e00), s.ret);
	assert_int_equal(s.restored_slots, 3); /* three returns: the tail call's two share a slot */
	assert_int_equal(u64(st + S_NR), 3);   /* kept until no vCPU can be inside the stub */
	assert_int_equal(stub_restore_slots(&s, true), 0);
	assert_int_equal(s.restored_slots, 3);
	assert_int_equal(u64(st + S_KEY), 0);
	assert_int_equal(u64(st + S_NR), 0);

	put64(REGION + STUB_RINGHDR_OFF + RH_LOST, 5);
	put64(REGION + STUB_RINGHDR_OFF + STUB_RINGHDR_SIZE + RH_LOST, 2);
	put64(REGION + STUB_HDR_OFF + H_BAD_CPU, 1);
	put64(REGION + STUB_HDR_OFF + H_NO_STACK, 4);
	stub_counters(&s, &c);
	assert_int_equal(c.lost, 7);
	assert_int_equal(c.bad_cpu, 1);
	assert_int_equal(c.no_stack, 4);
}

/* Where a context interrupted inside the stub may resume: each entry routine's instructions before
 * its CLI (the bytes there are what stub_interruptible_at assumes: PUSHF, CLI), nowhere after it;
 * anywhere in the counting routines and the return routine (SUB $8, PUSHF, then pushes: no CLI),
 * which run with interrupts on, up to the end of the return routine. */
static void test_interruptible(void **state)
{
	const uint8_t *const entries[] = {hvt_stub_entry, hvt_stub_entry_ret, hvt_stub_entry_args,
					  hvt_stub_entry_ret_args, hvt_stub_entry_root,
					  hvt_stub_entry_root_args};
	uint64_t ret = REGION + (uint64_t)(hvt_stub_ret - hvt_stub_start);
	uint64_t count = REGION + (uint64_t)(hvt_stub_count - hvt_stub_start);
	uint64_t ret_end = REGION + (uint64_t)(hvt_stub_ret_end - hvt_stub_start);

	(void)state;
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		uint64_t e = REGION + (uint64_t)(entries[i] - hvt_stub_start);

		assert_memory_equal(at(e), "\x9c\xfa", 2);
		assert_true(stub_interruptible_at(&s, e));
		assert_true(stub_interruptible_at(&s, e + 1));
		assert_false(stub_interruptible_at(&s, e + 2));
		assert_false(stub_interruptible_at(&s, e - 1));
	}
	assert_memory_equal(at(ret), "\x48\x83\xec\x08", 4); /* SUB $8, %rsp, then H_FAST looked at */
	assert_true(stub_interruptible_at(&s, ret));
	assert_true(stub_interruptible_at(&s, ret + 6));
	assert_true(stub_interruptible_at(&s, count));
	assert_true(stub_interruptible_at(&s, count + 2));
	assert_false(stub_interruptible_at(&s, count - 1));
	assert_true(stub_interruptible_at(&s, ret_end - 1));
	assert_false(stub_interruptible_at(&s, ret_end));
	assert_false(stub_interruptible_at(&s, SITE));
	stub_unplace(&s);
	assert_false(stub_interruptible_at(&s, ret));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_place, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cpu_source, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_patch, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_patch_by_gpa, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_committed_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restore_slots, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_interruptible, setup, teardown),
	};

	return cmocka_run_group_tests_name("stub", tests, NULL, NULL);
}

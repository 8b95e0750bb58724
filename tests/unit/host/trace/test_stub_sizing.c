/* host/trace/stub.c's ring sizing: records per CPU for what --buffer-size-kb asks (a power of two,
 * at least ftrace's default 1408 KiB per CPU when nothing is asked), the region that takes, what a
 * target that places less gives (as many as fit, or one error line naming the size and where when
 * the size was asked for), and ring reads bounded by the host's ring size whatever head the guest
 * writes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/stub.h"
#include "tests/common/fake_target.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEM    (64u << 20)
#define REGION 0x100000ull
#define SITE   0x1000ull

static uint8_t *mem;
static struct fake_target ft;
static uint64_t room;		       /* what the fake target places at most */
static uint64_t asked_min, asked_want; /* what stub_place asked it */
static bool unmapped;

static int map(struct target *t, uint64_t lo, uint64_t hi, uint64_t min, uint64_t want,
	       struct target_region *out, char *err, size_t errlen)
{
	(void)t, (void)lo, (void)hi;
	asked_min = min;
	asked_want = want;
	if (min > room) {
		snprintf(err, errlen, "stub probes: %llu KiB free at guest-physical 0x%llx",
			 (unsigned long long)room >> 10, REGION);
		return -ENOSPC;
	}
	out->gva = out->gpa = REGION;
	out->size = want < room ? want : room;
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

static struct vmi_task_layout task = {.valid = true};

static int setup(void **state)
{
	(void)state;
	mem = calloc(1, MEM);
	assert_non_null(mem);
	fake_target_init(&ft, &ops, 2);
	ft.t.name = "memory";
	fake_mem_map(&ft.mem, 0, mem, MEM);
	room = MEM - REGION;
	unmapped = false;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(mem);
	return 0;
}

static int place(struct stub *s, unsigned cpus, bool returns, uint64_t records, bool exact,
		 char *err, size_t errlen)
{
	struct stub_guest g = {.cpu_gs_off = 8,
			       .task = &task,
			       .stack_shift = 14,
			       .max_depth = 64,
			       .max_records = records,
			       .exact = exact};

	return stub_place(s, &ft.t, cpus, returns, &g, SITE, SITE, err, errlen);
}

static uint64_t hdr(uint64_t field)
{
	uint64_t v;

	memcpy(&v, mem + REGION + STUB_HDR_OFF + field, 8);
	return v;
}

static void test_records_for(void **state)
{
	(void)state;
	/* nothing asked: ftrace's default 1408 KiB per CPU, rounded up to 2 MiB of 64-byte records
	 */
	assert_int_equal(stub_ring_records_for(0), 32768);
	assert_true(stub_ring_records_for(0) * STUB_REC_SIZE >= 1441792);
	/* --buffer-size-kb 1408: 22528 records of 64 bytes, rounded up */
	assert_int_equal(stub_ring_records_for(1408 * 1024 / 64), 32768);
	assert_int_equal(stub_ring_records_for(65536), 65536);
	assert_int_equal(stub_ring_records_for(65537), 131072);
	assert_int_equal(stub_ring_records_for(1), STUB_RING_RECORDS_MIN);
	assert_int_equal(stub_ring_records_for(4 * 1024 / 64), STUB_RING_RECORDS_MIN);
	/* --buffer-size-kb 1048576 (1 GiB) and anything beyond: the bound */
	assert_int_equal(stub_ring_records_for((1ull << 30) / 64), STUB_RING_RECORDS_MAX);
	assert_int_equal(stub_ring_records_for(UINT64_MAX), STUB_RING_RECORDS_MAX);
}

static void test_region_bytes(void **state)
{
	(void)state;
	/* code, header and ring headers take STUB_RINGS_OFF (0x4000); rings; shadow stacks page-aligned after them
	 */
	assert_int_equal(stub_region_bytes(0, 0, 0), STUB_RINGS_OFF);
	assert_int_equal(stub_region_bytes(2, 32768, 0), STUB_RINGS_OFF + 2 * 32768 * 64);
	assert_int_equal(stub_region_bytes(2, 32768, 256), STUB_RINGS_OFF + 2 * 32768 * 64 + 256 * 8192);
	assert_int_equal(stub_region_bytes(64, STUB_RING_RECORDS_MAX, 256),
			 STUB_RINGS_OFF + 64ull * (1ull << 30) + (2ull << 20));
	/* 3 rings of 64 records end mid-page: the stacks start at the next page */
	assert_int_equal(stub_region_bytes(3, 64, 16), STUB_RINGS_OFF + 0x3000 + 16 * 8192);
}

/* Room for everything: exactly the rings asked for and the full set of shadow stacks. */
static void test_place_default_and_asked(void **state)
{
	struct stub s;
	char err[256] = "";

	(void)state;
	assert_int_equal(place(&s, 2, true, 0, false, err, sizeof(err)), 0);
	assert_int_equal(s.ring_records, 32768);
	assert_int_equal(s.nr_stacks, STUB_STACKS_MAX);
	assert_int_equal(s.reg.size, stub_region_bytes(2, 32768, STUB_STACKS_MAX));
	assert_int_equal(hdr(H_RING_MASK), 32767);
	assert_int_equal(hdr(H_STACKS), REGION + STUB_RINGS_OFF + 2 * 32768 * 64);
	assert_int_equal(hdr(H_STACKS_MASK), STUB_STACKS_MAX - 1);
	stub_unplace(&s);
	memset(mem + REGION, 0, STUB_RINGS_OFF); /* a target gives back memory as it was */

	/* --buffer-size-kb 8192 on 3 CPUs, no returns: 131072 records each, no stacks */
	assert_int_equal(place(&s, 3, false, 8192 * 1024 / 64, true, err, sizeof(err)), 0);
	assert_int_equal(s.ring_records, 131072);
	assert_int_equal(s.nr_stacks, 0);
	assert_int_equal(asked_min, asked_want);
	assert_int_equal(s.reg.size, STUB_RINGS_OFF + 3 * 131072 * 64);
	assert_int_equal(hdr(H_RING_MASK), 131071);
	stub_unplace(&s);
}

/* Less room than wanted and nothing asked: as many records as fit (a power of two), the stacks
 * taking at most a quarter. */
static void test_place_what_fits(void **state)
{
	struct stub s;
	char err[256] = "";

	(void)state;
	room = 600 << 10; /* about what the first MiB of a Linux guest leaves */
	assert_int_equal(place(&s, 2, true, 0, false, err, sizeof(err)), 0);
	assert_int_equal(asked_min, stub_region_bytes(2, STUB_RING_RECORDS_MIN, STUB_STACKS_MIN));
	assert_int_equal(asked_want, stub_region_bytes(2, 32768, STUB_STACKS_MAX));
	assert_int_equal(s.reg.size, 600 << 10);
	assert_int_equal(s.nr_stacks, 16);
	assert_int_equal(s.ring_records, 2048);
	assert_true(stub_region_bytes(2, s.ring_records, s.nr_stacks) <= s.reg.size);
	assert_int_equal(hdr(H_RING_MASK), 2047);
	stub_unplace(&s);
}

/* Asked for and not placeable: one line naming the size per CPU, the total and the target's
 * reason (where), nothing placed. */
static void test_place_asked_too_big(void **state)
{
	struct stub s;
	char err[256] = "";

	(void)state;
	room = 600 << 10;
	unmapped = false;
	assert_int_equal(place(&s, 2, false, 4096 * 1024 / 64, true, err, sizeof(err)), -ENOSPC);
	assert_string_equal(err,
			    "stub probes: rings of 4096 KiB per CPU (8208 KiB for 2 CPUs with "
			    "the stub) cannot be placed: 600 KiB free at guest-physical 0x100000");
	assert_false(s.placed);
	assert_null(strchr(err, '\n'));
}

/* A target that places more or less than it was asked is not trusted with the layout. */
static int map_liar(struct target *t, uint64_t lo, uint64_t hi, uint64_t min, uint64_t want,
		    struct target_region *out, char *err, size_t errlen)
{
	(void)t, (void)lo, (void)hi, (void)min, (void)err, (void)errlen;
	out->gva = out->gpa = REGION;
	out->size = want + 4096;
	return 0;
}

static void test_place_target_overshoots(void **state)
{
	struct target_ops liar = ops;
	struct stub s;
	char err[256] = "";

	(void)state;
	liar.stub_map = map_liar;
	ft.t.ops = &liar;
	unmapped = false;
	assert_int_equal(place(&s, 1, false, 64, false, err, sizeof(err)), -ERANGE);
	assert_true(unmapped);
	assert_string_equal(err, "stub probes: the memory target placed 24 KiB (20-20 KiB asked)");
	ft.t.ops = &ops;
}

static void set_ringhdr(unsigned cpu, uint64_t field, uint64_t v)
{
	memcpy(mem + REGION + STUB_RINGHDR_OFF + cpu * STUB_RINGHDR_SIZE + field, &v, 8);
}

/* Commits records [from, to) of CPU @cpu's ring as the stub would (sequence number index + 1). */
static void commit(const struct stub *s, unsigned cpu, uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++) {
		uint8_t *r = mem + REGION + STUB_RINGS_OFF +
			     (cpu * s->ring_records + (i & (s->ring_records - 1))) * STUB_REC_SIZE;
		uint32_t seq = (uint32_t)(i + 1);

		memcpy(r + R_SEQ, &seq, 4);
	}
}

/* Whatever head the guest writes (far ahead, behind the host's tail, wrapped), a read takes at most
 * one ring of committed records from the host's own tail, and writes only within the buffer. */
static void test_hostile_head(void **state)
{
	struct stub s;
	char err[256] = "";
	unsigned max = 4096 + 16;
	struct stub_rec *buf = calloc(max + 1, sizeof(*buf));
	static const uint64_t heads[] = {UINT64_MAX, 1ull << 40, 4096 + 1, 0x8000000000000000ull};

	(void)state;
	assert_non_null(buf);
	assert_int_equal(place(&s, 2, false, 4096, true, err, sizeof(err)), 0);
	assert_int_equal(s.ring_records, 4096);
	commit(&s, 0, 0, 4096); /* the whole ring committed */
	memset(&buf[max], 0xa5, sizeof(buf[max]));
	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		set_ringhdr(0, RH_HEAD, heads[i]);
		/* never more than one ring from the host's tail */
		assert_int_equal(stub_read(&s, 0, buf, max), 4096);
		assert_int_equal(buf[0].seq, 1);
		assert_int_equal(buf[4095].seq, 4096);
		assert_int_equal(buf[max].seq, 0xa5a5a5a5);
	}
	/* a head behind the host's tail reads as a full ring: still only the committed records
	 * from the host's tail on (100..4095; 4096.. hold stale sequence numbers) */
	assert_int_equal(stub_consume(&s, 0, 100), 0);
	set_ringhdr(0, RH_HEAD, 50);
	assert_int_equal(stub_read(&s, 0, buf, max), 3996);
	assert_int_equal(buf[0].seq, 101);
	/* the guest rewriting the tail the host keeps changes nothing: the host's own copy counts
	 */
	set_ringhdr(0, RH_TAIL, 0);
	set_ringhdr(0, RH_HEAD, 100 + 8);
	assert_int_equal(stub_read(&s, 0, buf, max), 8);
	assert_int_equal(buf[0].seq, 101);
	/* the other CPU's ring is its own: nothing committed there */
	set_ringhdr(1, RH_HEAD, UINT64_MAX);
	assert_int_equal(stub_read(&s, 1, buf, max), 0);
	stub_unplace(&s);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_records_for),
	    cmocka_unit_test(test_region_bytes),
	    cmocka_unit_test_setup_teardown(test_place_default_and_asked, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_place_what_fits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_place_asked_too_big, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_place_target_overshoots, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hostile_head, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

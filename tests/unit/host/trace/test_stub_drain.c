/* The stub drain's pure policies: backpressure's hysteresis between the watermarks
 * (stub_drain_hold_next), the drain's sleep between passes (stub_drain_sleep_ns: bounded both ways,
 * shorter at higher rates, doubling while idle), and the autogroup line the scheduling boost reads
 * (sched_boost_parse_autogroup). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/session/sched_boost.h"
#include "host/trace/stub_drain.h"

#include <errno.h>

#define RING 65536ull

static void test_watermarks(void **state)
{
	(void)state;
	assert_int_equal(STUB_HOLD_HIGH(RING), 16384);
	assert_int_equal(STUB_HOLD_LOW(RING), 4096);
	/* running: held from the high watermark on, not below it */
	assert_false(stub_drain_hold_next(false, 0, RING));
	assert_false(stub_drain_hold_next(false, 16383, RING));
	assert_true(stub_drain_hold_next(false, 16384, RING));
	assert_true(stub_drain_hold_next(false, RING, RING));
	/* held: stays held above the low watermark, let go at it */
	assert_true(stub_drain_hold_next(true, 16383, RING));
	assert_true(stub_drain_hold_next(true, 4097, RING));
	assert_false(stub_drain_hold_next(true, 4096, RING));
	assert_false(stub_drain_hold_next(true, 0, RING));
	/* the smallest ring still has a gap between the two */
	assert_true(stub_drain_hold_next(false, 16, 64));
	assert_true(stub_drain_hold_next(true, 5, 64));
	assert_false(stub_drain_hold_next(true, 4, 64));
}

static void test_sleep_bounds(void **state)
{
	(void)state;
	/* idle from the start: the minimum, then doubling, up to 1 ms before the first record */
	assert_int_equal(stub_drain_sleep_ns(0, 1000000, RING, 0, 0), STUB_DRAIN_SLEEP_MIN_NS);
	assert_int_equal(stub_drain_sleep_ns(0, 1000000, RING, 0, 300000), 600000);
	assert_int_equal(stub_drain_sleep_ns(0, 1000000, RING, 0, 600000), 1000000);
	/* idle after records came at a modest peak: doubling up to the maximum, never beyond */
	assert_int_equal(stub_drain_sleep_ns(0, 1000000, RING, 100, 1000000), 2000000);
	assert_int_equal(stub_drain_sleep_ns(0, 1000000, RING, 100, STUB_DRAIN_SLEEP_MAX_NS),
			 STUB_DRAIN_SLEEP_MAX_NS);
	/* a trickle (1 record in 1 ms would take 16 s for a quarter ring): the maximum */
	assert_int_equal(stub_drain_sleep_ns(1, 1000000, RING, 1, 0), STUB_DRAIN_SLEEP_MAX_NS);
	/* a quarter ring in 1048576 ns: as long again (the peak rate, 15625 records/ms, agrees) */
	assert_int_equal(stub_drain_sleep_ns(16384, 1048576, RING, 15625, 0), 1048576);
	/* a flood (a quarter ring in 10 us): never below the minimum, never spinning */
	assert_int_equal(stub_drain_sleep_ns(16384, 10000, RING, 1638400, 0),
			 STUB_DRAIN_SLEEP_MIN_NS);
	/* a slow pass after a fast peak: the peak bounds it (a quarter ring at 32768/ms) */
	assert_int_equal(stub_drain_sleep_ns(100, 1000000, RING, 32768, 0), 500000);
}

static void test_autogroup_line(void **state)
{
	int nice = 99;

	(void)state;
	assert_int_equal(sched_boost_parse_autogroup("/autogroup-4 nice 0\n", &nice), 0);
	assert_int_equal(nice, 0);
	assert_int_equal(sched_boost_parse_autogroup("/autogroup-12 nice -10\n", &nice), 0);
	assert_int_equal(nice, -10);
	assert_int_equal(sched_boost_parse_autogroup("/autogroup-1 nice 19", &nice), 0);
	assert_int_equal(nice, 19);
	nice = 99;
	assert_int_equal(sched_boost_parse_autogroup("/autogroup-1 nice 20\n", &nice), -EINVAL);
	assert_int_equal(sched_boost_parse_autogroup("/autogroup-1 nice -21\n", &nice), -EINVAL);
	assert_int_equal(sched_boost_parse_autogroup("/autogroup-1 nice x\n", &nice), -EINVAL);
	assert_int_equal(sched_boost_parse_autogroup("/autogroup-1 nice 3x\n", &nice), -EINVAL);
	assert_int_equal(sched_boost_parse_autogroup("/autogroup-1\n", &nice), -EINVAL);
	assert_int_equal(sched_boost_parse_autogroup("", &nice), -EINVAL);
	assert_int_equal(nice, 99);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_watermarks),
	    cmocka_unit_test(test_sleep_bounds),
	    cmocka_unit_test(test_autogroup_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

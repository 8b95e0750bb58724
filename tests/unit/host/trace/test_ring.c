/* host/trace/ring.h: the per-vCPU SPSC ring of records. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/record.h"
#include "host/trace/ring.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ring ----------------------------------------------------------------------------------- */

static void push(struct ring *r, uint64_t seq)
{
	struct hvt_record *rec = ring_reserve(r);

	if (!rec) {
		fail_msg("ring full at record %llu", (unsigned long long)seq);
		return;
	}
	memset(rec, 0, sizeof(*rec));
	rec->ts = seq;
	rec->ip = ~seq;
	ring_commit(r);
}

static void pop_expect(struct ring *r, uint64_t seq)
{
	const struct hvt_record *rec = ring_peek(r);

	assert_non_null(rec);
	assert_int_equal(rec->ts, seq);
	assert_int_equal(rec->ip, ~seq);
	ring_pop(r);
}

/* Capacity is the requested size rounded up to a power of two. */
static void test_ring_init_rounds_up(void **state)
{
	static const struct {
		uint64_t want, slots;
	} cases[] = {{2, 2},	   {3, 4},	 {4, 4},       {5, 8},
		     {1000, 1024}, {1024, 1024}, {1025, 2048}, {65536, 65536}};
	struct ring r;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(ring_init(&r, cases[i].want), 0);
		assert_non_null(r.buf);
		assert_int_equal(r.mask + 1, cases[i].slots);
		assert_int_equal((uintptr_t)r.buf % 64, 0);
		assert_null(ring_peek(&r));
		ring_free(&r);
		assert_null(r.buf);
	}
}

/* A request whose buffer size (records * 64 bytes) does not fit in 64 bits cannot be allocated: it
 * must fail with -ENOMEM rather than succeed with a wrapped-around, too small buffer. */
static void test_ring_init_too_large(void **state)
{
	struct ring r;
	int ret;

	(void)state;
	ret = ring_init(&r, 1ull << 58); /* 2^58 * 64 bytes = 2^64 */
	if (ret == 0)
		ring_free(&r);
	assert_int_equal(ret, -ENOMEM);
}

/* Records come out in the order they were committed; a reserved but uncommitted slot is invisible;
 * peek without pop returns the same record. */
static void test_ring_fifo(void **state)
{
	struct ring r;
	struct hvt_record *rec;

	(void)state;
	assert_int_equal(ring_init(&r, 8), 0);
	assert_null(ring_peek(&r));
	for (uint64_t i = 0; i < 5; i++)
		push(&r, i);
	assert_ptr_equal(ring_peek(&r), ring_peek(&r));

	rec = ring_reserve(&r); /* not committed yet */
	assert_non_null(rec);
	rec->ts = 99;
	for (uint64_t i = 0; i < 5; i++)
		pop_expect(&r, i);
	assert_null(ring_peek(&r));

	rec->ip = ~99ull;
	ring_commit(&r);
	pop_expect(&r, 99);
	assert_null(ring_peek(&r));
	ring_free(&r);
}

/* A ring of N slots takes exactly N records, then refuses until the consumer frees one. */
static void test_ring_full(void **state)
{
	struct ring r;

	(void)state;
	assert_int_equal(ring_init(&r, 13), 0);
	assert_int_equal(r.mask + 1, 16);
	for (uint64_t i = 0; i < 16; i++)
		push(&r, i);
	assert_null(ring_reserve(&r));
	assert_null(ring_reserve(&r));

	pop_expect(&r, 0);
	push(&r, 16);
	assert_null(ring_reserve(&r));
	for (uint64_t i = 1; i <= 16; i++)
		pop_expect(&r, i);
	assert_null(ring_peek(&r));
	assert_non_null(ring_reserve(&r));
	ring_free(&r);
}

/* Many cycles with varying fill levels wrap the indices around the buffer many times. */
static void test_ring_wraparound(void **state)
{
	struct ring r;
	uint64_t in = 0, out = 0;

	(void)state;
	assert_int_equal(ring_init(&r, 8), 0);
	for (unsigned cycle = 0; cycle < 5000; cycle++) {
		unsigned n_in = 1 + cycle % 8; /* 1..8: sometimes fills the ring exactly */

		for (unsigned k = 0; k < n_in; k++)
			push(&r, in++);
		if (n_in == 8)
			assert_null(ring_reserve(&r));
		while (out < in)
			pop_expect(&r, out++);
		assert_null(ring_peek(&r));
	}
	assert_true(in > 20000);
	ring_free(&r);
}

/* One producer and one consumer thread: every record arrives once, in order. */
#define SPSC_COUNT 300000

static void *spsc_producer(void *arg)
{
	struct ring *r = arg;

	for (uint64_t i = 0; i < SPSC_COUNT; i++) {
		struct hvt_record *rec;

		while (!(rec = ring_reserve(r)))
			;
		rec->ts = i;
		rec->ip = ~i;
		ring_commit(r);
	}
	return NULL;
}

static void test_ring_two_threads(void **state)
{
	struct ring r;
	pthread_t th;
	uint64_t next = 0, bad = 0;

	(void)state;
	assert_int_equal(ring_init(&r, 64), 0);
	assert_int_equal(pthread_create(&th, NULL, spsc_producer, &r), 0);
	while (next < SPSC_COUNT) {
		const struct hvt_record *rec = ring_peek(&r);

		if (!rec)
			continue;
		if (rec->ts != next || rec->ip != ~next)
			bad++;
		ring_pop(&r);
		next++;
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(bad, 0);
	assert_null(ring_peek(&r));
	ring_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ring_init_rounds_up),
	    cmocka_unit_test(test_ring_init_too_large),
	    cmocka_unit_test(test_ring_fifo),
	    cmocka_unit_test(test_ring_full),
	    cmocka_unit_test(test_ring_wraparound),
	    cmocka_unit_test(test_ring_two_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* host/trace/emit_gate.h: the one gate of both producers (trap path and stub drain): tracing on and
 * off, the record filter, and each producer's policy for a full ring. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/emit_gate.h"

#include <errno.h>
#include <string.h>

static struct hvt_record rec_at(uint64_t ts, unsigned cpu, int32_t pid)
{
	struct vmi_task task = {.pid = pid};
	struct hvt_record r;

	hvt_record_entry(&r, ts, cpu, 0x1000, 0x2000, &task);
	return r;
}

static size_t drain(struct ring *r, struct hvt_record *out, size_t max)
{
	const struct hvt_record *rec;
	size_t n = 0;

	while ((rec = ring_peek(r))) {
		if (n < max)
			out[n] = *rec;
		n++;
		ring_pop(r);
	}
	return n;
}

/* Tracing off drops records made while it was off (by their own time), but never a loss or
 * snapshot mark; the filter drops what it rejects and counts it; the rest is published as is. */
static void test_gate_tracing_and_filter(void **state)
{
	struct tracing_state ts;
	struct rec_filter keep = {0};
	_Atomic uint64_t filtered = 0;
	struct emit_gate g = {.tracing = &ts, .keep = &keep, .filtered = &filtered};
	struct hvt_record out[8], r;
	struct ring ring;
	char err[128];

	(void)state;
	assert_int_equal(ring_init(&ring, 16), 0);
	tracing_state_init(&ts, true);
	assert_true(tracing_state_set(&ts, false, 100));
	assert_int_equal(rec_filter_add_pid(&keep, "7", err, sizeof(err)), 0);

	r = rec_at(50, 0, 7); /* before the traceoff: kept */
	assert_int_equal(emit_gate(&g, &ring, 0, NULL, &r, NULL, 0), 0);
	r = rec_at(150, 0, 7); /* after it: dropped, not counted as filtered */
	assert_int_equal(emit_gate(&g, &ring, 0, NULL, &r, NULL, 0), 0);
	r.type = HVT_REC_SNAPSHOT; /* a mark passes while tracing is off */
	assert_int_equal(emit_gate(&g, &ring, 0, NULL, &r, NULL, 0), 0);
	r = rec_at(60, 0, 8); /* another task: filtered and counted */
	assert_int_equal(emit_gate(&g, &ring, 0, NULL, &r, NULL, 0), 0);
	assert_int_equal(atomic_load(&filtered), 1);

	assert_int_equal(drain(&ring, out, 8), 2);
	assert_int_equal(out[0].ts, 50);
	assert_int_equal(out[0].pid, 7);
	assert_int_equal(out[0].type, HVT_REC_ENTRY);
	assert_int_equal(out[1].type, HVT_REC_SNAPSHOT);

	/* no tracing state and no filter: everything passes */
	g = (struct emit_gate){.filtered = &filtered};
	r = rec_at(150, 0, 8);
	assert_int_equal(emit_gate(&g, &ring, 0, NULL, &r, NULL, 0), 0);
	assert_int_equal(drain(&ring, out, 8), 1);
	assert_int_equal(atomic_load(&filtered), 1);
	rec_filter_free(&keep);
	ring_free(&ring);
}

/* A full ring: the stub drain's gate (no wait) gives up and publishes nothing; the trap path's
 * gate, once the tracer is no longer active, counts the record lost and marks it in the stream
 * before the next record that fits. */
static void test_gate_full_ring(void **state)
{
	_Atomic uint64_t filtered = 0;
	atomic_int active = 0;
	struct emit_gate stub = {.filtered = &filtered};
	struct emit_gate trap = {.filtered = &filtered, .wait_while = &active};
	unsigned long long lost = 0;
	struct hvt_record out[8], r;
	struct ring ring;
	size_t n = 0;

	(void)state;
	assert_int_equal(ring_init(&ring, 4), 0);
	for (;;) {
		r = rec_at(n, 3, 1);
		if (emit_gate(&stub, &ring, 3, NULL, &r, NULL, 0) < 0)
			break;
		n++;
		assert_true(n <= 4);
	}
	assert_int_equal(n, 4);
	r = rec_at(10, 3, 1);
	assert_int_equal(emit_gate(&stub, &ring, 3, NULL, &r, NULL, 0), -ENOSPC);
	assert_int_equal(emit_gate(&trap, &ring, 3, &lost, &r, NULL, 0), 0);
	assert_int_equal(lost, 1);
	assert_int_equal(drain(&ring, out, 8), 4);

	r = rec_at(11, 3, 1);
	assert_int_equal(emit_gate(&trap, &ring, 3, &lost, &r, NULL, 0), 0);
	assert_int_equal(drain(&ring, out, 8), 2);
	assert_int_equal(out[0].type, HVT_REC_LOST);
	assert_int_equal(out[0].value, 1);
	assert_int_equal(out[0].cpu, 3);
	assert_int_equal(out[1].ts, 11);
	assert_int_equal(lost, 1);
	assert_int_equal(atomic_load(&filtered), 0);
	ring_free(&ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gate_tracing_and_filter),
	    cmocka_unit_test(test_gate_full_ring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

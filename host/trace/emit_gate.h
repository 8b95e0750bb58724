/* The one gate between a producer of host records and its ring, for both producers: the trap path
 * (tracer.c, on the vCPU threads) and the stub drain (stub_drain.c, on its thread). It applies
 * tracing on/off (--tracing-off, traceon/traceoff), the record filter (-P, --comm, --cpu,
 * --filter-event) and the producer's policy for a full ring. Header-only: it is the hot path. */
#ifndef HVT_EMIT_GATE_H
#define HVT_EMIT_GATE_H

#include "host/trace/rec_filter.h"
#include "host/trace/record.h"
#include "host/trace/ring.h"
#include "host/trace/trigger.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* What a producer's records go through; everything borrowed from the producer's owner. */
struct emit_gate {
	/* records made while tracing was off are dropped; NULL: always on */
	const struct tracing_state *tracing;
	const struct rec_filter *keep; /* records it rejects are dropped; NULL: all kept */
	_Atomic uint64_t *filtered;    /* counts the records @keep dropped */
	/* A full ring: the producer waits (yields) for the writer while *@wait_while is nonzero,
	 * then loses the record (counted and marked in the ring's stream: the trap path, whose vCPU
	 * stays stopped meanwhile). NULL: gives up at once and keeps the record (the stub drain,
	 * which leaves it in the guest's ring for its next pass). */
	const atomic_int *wait_while;
};

/* Publishes @rec (and @len bytes of @payload) in @ring, vCPU @cpu's, unless tracing was off at
 * @rec's time (lost-events and snapshot marks always pass) or @g's filter rejects it (counted):
 * 0 then too, as when the ring was full and the record was lost (counted in *@lost, which only a
 * gate with wait_while uses). -ENOSPC: the ring is full and the gate does not wait (nothing done).
 * The producer's thread; allocation- and format-free. */
static inline int emit_gate(const struct emit_gate *g, struct ring *ring, unsigned cpu,
			    unsigned long long *lost, const struct hvt_record *rec,
			    const void *payload, size_t len)
{
	if (g->tracing && rec->type != HVT_REC_LOST && rec->type != HVT_REC_SNAPSHOT &&
	    !tracing_state_at(g->tracing, rec->ts))
		return 0;
	if (g->keep && !rec_filter_keep(g->keep, rec, payload, len)) {
		atomic_fetch_add_explicit(g->filtered, 1, memory_order_relaxed);
		return 0;
	}
	while (!ring_emit(ring, rec, payload, len)) {
		if (!g->wait_while)
			return -ENOSPC;
		if (!atomic_load_explicit(g->wait_while, memory_order_relaxed)) {
			(*lost)++;
			ring_lost(ring, 1, cpu);
			return 0;
		}
		sched_yield();
	}
	return 0;
}

#endif

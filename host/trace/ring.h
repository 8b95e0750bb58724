/* Single-producer single-consumer ring of records, read by the writer thread. One per vCPU for trap
 * probes, written by the thread that handles that vCPU's hits (its own thread in the embedded VMM, the
 * main thread under QEMU), and one per vCPU for stub probes, written by the stub drain thread.
 * Lock-free; no allocation after ring_init. */
#ifndef HVT_RING_H
#define HVT_RING_H

#include "host/trace/record.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct ring {
	struct hvt_record *buf;
	uint64_t mask;
	_Alignas(64) _Atomic uint64_t head; /* next slot the producer writes */
	_Alignas(64) _Atomic uint64_t tail; /* next slot the consumer reads */
	uint64_t stalls; /* producer: times it found the ring full; producer thread only */
	/* producer: events lost since the last record published, to go out as one HVT_REC_LOST
	 * record of vCPU @lost_cpu before the next record (ring_emit), or at the end (writer) */
	uint64_t lost_pending;
	uint16_t lost_cpu;
};

/* Reserves room for at least @nr records (rounded up to a power of two; memory is taken as records
 * land, not up-front). Returns 0 or -ENOMEM. */
int ring_init(struct ring *r, uint64_t nr);
void ring_free(struct ring *r);

/* Producer: the slot to fill, or NULL if the ring is full. */
static inline struct hvt_record *ring_reserve(struct ring *r)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	if (head - atomic_load_explicit(&r->tail, memory_order_acquire) > r->mask)
		return NULL;
	return &r->buf[head & r->mask];
}

/* Producer: publishes the slot ring_reserve returned. */
static inline void ring_commit(struct ring *r)
{
	atomic_store_explicit(&r->head, atomic_load_explicit(&r->head, memory_order_relaxed) + 1,
			      memory_order_release);
}

/* Producer: true if @n slots are free; they are then ring_slot(r, 0..n-1), published together by
 * ring_commit_n. */
static inline bool ring_reserve_n(struct ring *r, uint64_t n)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	return head + n - atomic_load_explicit(&r->tail, memory_order_acquire) <= r->mask + 1;
}

static inline struct hvt_record *ring_slot(struct ring *r, uint64_t k)
{
	return &r->buf[(atomic_load_explicit(&r->head, memory_order_relaxed) + k) & r->mask];
}

static inline void ring_commit_n(struct ring *r, uint64_t n)
{
	atomic_store_explicit(&r->head, atomic_load_explicit(&r->head, memory_order_relaxed) + n,
			      memory_order_release);
}

/* Producer: copies the @len bytes of @payload into slots 1.. of a reservation made with
 * ring_reserve_n (slot 0 holds the event record they follow). */
static inline void ring_put_payload(struct ring *r, const uint8_t *payload, size_t len)
{
	for (uint64_t k = 1; k <= hvt_record_payload_slots(len); k++) {
		size_t off = (k - 1) * sizeof(struct hvt_record);
		size_t n = len - off < sizeof(struct hvt_record) ? len - off : sizeof(struct hvt_record);

		memcpy(ring_slot(r, k), payload + off, n);
	}
}

/* Producer: counts @n events of vCPU @cpu lost at this point of the ring's stream (saturating).
 * Allocation- and format-free. */
static inline void ring_lost(struct ring *r, uint64_t n, unsigned cpu)
{
	r->lost_pending = r->lost_pending + n < n ? UINT64_MAX : r->lost_pending + n;
	r->lost_cpu = (uint16_t)cpu;
}

/* Producer: publishes @rec followed by the @len bytes of @payload (raw, in the records after it), all
 * or nothing, preceded by an HVT_REC_LOST record (stamped with @rec's time) when ring_lost counted
 * some since the last one. False, with the stall counted, when the ring has no room for them now.
 * The one way records enter a ring; allocation- and format-free. */
static inline bool ring_emit(struct ring *r, const struct hvt_record *rec, const void *payload,
			     size_t len)
{
	uint64_t slots = 1 + hvt_record_payload_slots(len);

	if (!ring_reserve_n(r, slots + (r->lost_pending != 0))) {
		r->stalls++;
		return false;
	}
	if (r->lost_pending) {
		hvt_record_lost(ring_slot(r, 0), rec->ts, r->lost_cpu, r->lost_pending);
		r->lost_pending = 0;
		ring_commit_n(r, 1);
	}
	*ring_slot(r, 0) = *rec;
	if (len)
		ring_put_payload(r, payload, len);
	ring_commit_n(r, slots);
	return true;
}

/* Consumer: the @k-th unread record, or NULL if fewer are there. */
static inline const struct hvt_record *ring_peek_at(struct ring *r, uint64_t k)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	if (atomic_load_explicit(&r->head, memory_order_acquire) - tail <= k)
		return NULL;
	return &r->buf[(tail + k) & r->mask];
}

/* Consumer: the oldest unread record, or NULL. Valid until ring_pop. */
static inline const struct hvt_record *ring_peek(struct ring *r)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	if (tail == atomic_load_explicit(&r->head, memory_order_acquire))
		return NULL;
	return &r->buf[tail & r->mask];
}

/* Consumer: the record after the oldest unread one, or NULL. */
static inline const struct hvt_record *ring_peek_next(struct ring *r)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	if (atomic_load_explicit(&r->head, memory_order_acquire) - tail < 2)
		return NULL;
	return &r->buf[(tail + 1) & r->mask];
}

/* Consumer: releases the record ring_peek returned. */
static inline void ring_pop(struct ring *r)
{
	atomic_store_explicit(&r->tail, atomic_load_explicit(&r->tail, memory_order_relaxed) + 1,
			      memory_order_release);
}

#endif

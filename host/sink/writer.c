#include "host/sink/writer.h"
#include "host/trace/probe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long an entry may wait for the next record of its vCPU (to be printed as a leaf): output is
 * held back meanwhile, so this bounds the delay a quiet vCPU adds. */
#define LOOKAHEAD_NS 1000000000ull

/* The writer's sleep when the rings are drained: from IDLE_MIN_US, doubled after each wake that
 * found every ring under 1/IDLE_GROW of its size, up to IDLE_MAX_US, and back to IDLE_MIN_US after
 * a wake that found one over 1/IDLE_SHRINK. Each wake costs a timer, two context switches and a
 * flush (23 us of CPU on a virtualized 2-CPU host, 89 us in the nested lane's L1): at a few
 * thousand events a second, a wake every 0.5 ms cost as much as formatting the events. A busy
 * trace never sleeps; a burst after a quiet spell waits at most IDLE_MAX_US for the writer. */
#define IDLE_MIN_US 500u
#define IDLE_MAX_US 8000u
#define IDLE_GROW   32u
#define IDLE_SHRINK 8u

/* Whether @r is an event the sinks count as written (lost marks, trigger records and payload are
 * not). */
static bool is_event(const struct hvt_record *r)
{
	return r->type == HVT_REC_ENTRY || r->type == HVT_REC_RETURN || r->type == HVT_REC_EVENT ||
	       r->type == HVT_REC_EVENT_ALONE || r->type == HVT_REC_RETURN_EVENT ||
	       r->type == HVT_REC_STACK; /* a hist's stacktrace key goes by its probe */
}

/* @rec's spec and probe, for a record at the head of ring @i or just after it: looked up once per
 * record, the ring's last lookup kept (@w->seen) until its record is popped, so an entry that waits
 * for its successor, or a record seen first as @next, is not looked up again. */
static void look_up(struct writer *w, unsigned i, struct sink_rec *rec)
{
	struct writer_seen *c = &w->seen[i];

	if (!w->lookup || !is_event(rec->r))
		return;
	if (c->r == rec->r) {
		rec->spec = c->spec;
		rec->probe = c->probe;
		return;
	}
	w->lookup(w->lookup_ctx, rec);
	w->lookups++;
	*c = (struct writer_seen){.r = rec->r, .spec = rec->spec, .probe = rec->probe};
}

/* Copies the @slots payload records of ring @ring after position @at into @buf. False if they are
 * not all there (cannot happen: an event is published with its payload). */
static bool gather(struct ring *ring, unsigned at, unsigned slots, uint8_t *buf)
{
	if (!ring_peek_at(ring, at + slots))
		return false;
	for (unsigned k = 1; k <= slots; k++)
		memcpy(buf + (k - 1) * sizeof(struct hvt_record), ring_peek_at(ring, at + k),
		       sizeof(struct hvt_record));
	return true;
}

/* Emits up to @budget records, oldest first across rings, none at or past the horizon (when @final,
 * everything). Returns how many. */
static unsigned drain(struct writer *w, unsigned budget, bool final)
{
	uint64_t horizon = final ? UINT64_MAX : w->horizon(w->horizon_ctx);
	unsigned done = 0;

	while (done < budget && !atomic_load_explicit(&w->cut, memory_order_relaxed)) {
		const struct hvt_record *best = NULL, *next;
		unsigned best_i = 0, used;

		for (unsigned i = 0; i < w->nr; i++) {
			const struct hvt_record *r = ring_peek(&w->rings[i]);

			if (r && (!best || r->ts < best->ts)) {
				best = r;
				best_i = i;
			}
		}
		if (!best || best->ts >= horizon)
			break;
		struct ring *ring = &w->rings[best_i];
		struct sink_rec rec = {.r = best}, ahead = {0};
		/* an event carries its payload in the records after it: they go together */
		unsigned n = 1;

		if (hvt_record_has_payload(best)) {
			n = 1 + hvt_record_payload_slots(best->value);
			if (best->value > WRITER_PAYLOAD_MAX || !gather(ring, 0, n - 1, w->payload))
				break; /* cannot happen: published together, bounded by fe_payload_size */
			rec.payload = w->payload;
		}
		look_up(w, best_i, &rec);
		/* a sink that looks ahead gets the next record too, with its payload (a return with
		 * typed fields closes a leaf): it is popped with that record */
		next = w->sink->ops->lookahead ? ring_peek_at(ring, n) : NULL;
		unsigned m = 0;

		if (next) {
			ahead.r = next;
			if (hvt_record_has_payload(next)) {
				m = hvt_record_payload_slots(next->value);
				if (next->value > WRITER_PAYLOAD_MAX ||
				    !gather(ring, n, m, w->next_payload))
					break; /* cannot happen: published together, bounded as above */
				ahead.payload = w->next_payload;
			}
			look_up(w, best_i, &ahead);
		}
		if (w->sink->ops->lookahead && best->type != HVT_REC_RETURN &&
		    best->type != HVT_REC_RETURN_EVENT && best->type != HVT_REC_LOST && !next &&
		    !final && horizon - best->ts < LOOKAHEAD_NS)
			break;
		w->last_ts = best->ts;
		used = sink_record(w->sink, &rec, next ? &ahead : NULL);
		if (w->tap) {
			w->tap(w->tap_ctx, &rec);
			if (used > 1)
				w->tap(w->tap_ctx, &ahead);
		}
		used = used > 1 ? n + 1 + m : n;
		/* what the ring's lookup kept is popped with @best, or with @next when that went too */
		if (w->seen[best_i].r == best || used > n)
			w->seen[best_i].r = NULL;
		for (unsigned k = 0; k < used; k++)
			ring_pop(ring);
		w->events[best_i] += used;
		done += used;
	}
	return done;
}

/* Drops every record the rings hold, an event with its payload, each event counted in
 * not_written; the lost marks' counts are kept for the end (dropped_lost). Returns how many
 * records. */
static unsigned discard(struct writer *w)
{
	unsigned done = 0;

	for (unsigned i = 0; i < w->nr; i++) {
		struct ring *ring = &w->rings[i];
		const struct hvt_record *r;

		w->seen[i].r = NULL;
		while ((r = ring_peek(ring))) {
			uint64_t n = 1;

			if (hvt_record_has_payload(r)) {
				n += hvt_record_payload_slots(r->value);
				if (r->value > WRITER_PAYLOAD_MAX || !ring_peek_at(ring, n - 1))
					n = 1; /* cannot happen: published together */
			}
			w->not_written += is_event(r);
			if (r->type == HVT_REC_LOST) {
				/* its count still goes out, at the end (pending_losses) */
				struct hvt_record *m = &w->dropped_lost[i];

				m->value = m->value + r->value < m->value ? UINT64_MAX
									  : m->value + r->value;
				m->cpu = r->cpu;
			}
			for (uint64_t k = 0; k < n; k++)
				ring_pop(ring);
			done += (unsigned)n;
		}
	}
	return done;
}

/* Whether some ring holds more than 1/@frac of its size unread. Writer thread. */
static bool backlog_over(struct writer *w, uint64_t frac)
{
	for (unsigned i = 0; i < w->nr; i++) {
		struct ring *r = &w->rings[i];
		uint64_t unread = atomic_load_explicit(&r->head, memory_order_acquire) -
				  atomic_load_explicit(&r->tail, memory_order_relaxed);

		if (unread > (r->mask + 1) / frac)
			return true;
	}
	return false;
}

/* The next idle sleep after a sleep of @us, from what the rings hold now (IDLE_MIN_US). */
static unsigned next_idle_us(struct writer *w, unsigned us)
{
	if (backlog_over(w, IDLE_SHRINK))
		return IDLE_MIN_US;
	if (!backlog_over(w, IDLE_GROW))
		return us * 2 > IDLE_MAX_US ? IDLE_MAX_US : us * 2;
	return us;
}

static void *writer_thread(void *arg)
{
	struct writer *w = arg;
	bool unflushed = false;
	unsigned idle_us = IDLE_MIN_US;
	struct timespec ts;

	while (!atomic_load(&w->stop)) {
		if (w->poll)
			w->poll(w->poll_ctx);
		if (atomic_load_explicit(&w->cut, memory_order_relaxed) ? discard(w)
									: drain(w, 4096, false)) {
			unflushed = true;
			continue;
		}
		/* idle: what was written goes out now, so a reader sees it and a closed pipe or a
		 * full disk shows at once (sink_write's failure ends the run), not when the
		 * buffer would have filled */
		if (unflushed)
			sink_flush(w->sink);
		unflushed = false;
		usleep(idle_us);
		idle_us = next_idle_us(w, idle_us);
	}
	while (drain(w, 4096, true))
		;
	/* cut short, or (cannot happen) a record the sink could not be handed: what is left is
	 * counted, not left unsaid */
	discard(w);
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
		w->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return NULL;
}

int writer_start(struct writer *w, struct ring *rings, unsigned nr, struct sink *sink,
		 writer_horizon_fn horizon, void *horizon_ctx)
{
	int e;

	w->rings = rings;
	w->nr = nr;
	w->sink = sink;
	w->horizon = horizon;
	w->horizon_ctx = horizon_ctx;
	atomic_store(&w->stop, 0);
	atomic_store(&w->cut, false);
	w->not_written = 0;
	w->cpu_ns = 0;
	w->events = calloc(nr, sizeof(*w->events));
	w->dropped_lost = calloc(nr, sizeof(*w->dropped_lost));
	w->seen = calloc(nr, sizeof(*w->seen));
	w->lookups = 0;
	w->payload = malloc(2 * (WRITER_PAYLOAD_MAX + 64));
	w->next_payload = w->payload ? w->payload + WRITER_PAYLOAD_MAX + 64 : NULL;
	if (!w->events || !w->dropped_lost || !w->seen || !w->payload) {
		writer_free(w);
		return -ENOMEM;
	}
	sink->ops->begin(sink);
	e = pthread_create(&w->thread, NULL, writer_thread, w);
	if (e) {
		writer_free(w);
		return -e;
	}
	return 0;
}

/* Losses counted after the last record a ring took (ring_lost with no ring_emit since), and those
 * of the lost marks a cut dropped: one HVT_REC_LOST record per ring, at the end of the stream. */
static void pending_losses(struct writer *w)
{
	for (unsigned i = 0; i < w->nr; i++) {
		struct ring *ring = &w->rings[i];
		struct hvt_record r;
		struct sink_rec rec = {.r = &r};
		uint64_t dropped = w->dropped_lost[i].value;

		if (!ring->lost_pending && !dropped)
			continue;
		hvt_record_lost(&r, w->last_ts,
				ring->lost_pending ? ring->lost_cpu : w->dropped_lost[i].cpu,
				ring->lost_pending + dropped < dropped ? UINT64_MAX
								       : ring->lost_pending + dropped);
		ring->lost_pending = 0;
		w->dropped_lost[i].value = 0;
		sink_record(w->sink, &rec, NULL);
		if (w->tap)
			w->tap(w->tap_ctx, &rec);
	}
}

void writer_cut(struct writer *w)
{
	atomic_store_explicit(&w->cut, true, memory_order_relaxed);
}

void writer_stop(struct writer *w, unsigned long long lost)
{
	atomic_store(&w->stop, 1);
	pthread_join(w->thread, NULL);
	pending_losses(w);
	w->sink->not_written = w->not_written;
	w->sink->lost = lost + w->not_written < lost ? ~0ull : lost + w->not_written;
	w->sink->ops->end(w->sink);
}

void writer_free(struct writer *w)
{
	free(w->events);
	free(w->dropped_lost);
	free(w->seen);
	free(w->payload);
	w->dropped_lost = NULL;
	w->seen = NULL;
	w->events = NULL;
	w->payload = NULL;
	w->next_payload = NULL;
}

void writer_lookup_probes(const void *ctx, struct sink_rec *rec)
{
	const struct probe *p = probe_lookup(ctx, rec->r->ip);

	rec->probe = p;
	if (!p)
		rec->spec = NULL;
	else if (rec->r->type == HVT_REC_EVENT || rec->r->type == HVT_REC_EVENT_ALONE)
		rec->spec = p->event;
	else if (rec->r->type == HVT_REC_RETURN_EVENT)
		rec->spec = p->ret_event;
	else
		rec->spec = NULL;
}

/* The writer thread: drains the per-vCPU rings in timestamp order into one sink. */
#ifndef HVT_WRITER_H
#define HVT_WRITER_H

#include "host/sink/sink.h"
#include "host/trace/ring.h"

#include <pthread.h>
#include <stdatomic.h>

/* The largest event payload the writer gathers (fe_payload_size is bounded well below). */
#define WRITER_PAYLOAD_MAX (32u << 10)

/* Timestamp below which every record is visible in the rings (tracer_horizon). */
typedef uint64_t (*writer_horizon_fn)(void *ctx);

/* A ring's last lookup (writer.c look_up): the record it was for, and what was found. */
struct writer_seen {
	const struct hvt_record *r;
	const struct fe_spec *spec;
	const struct probe *probe;
};

struct writer {
	struct ring *rings; /* borrowed, @nr of them */
	unsigned nr;
	struct sink *sink; /* borrowed */
	writer_horizon_fn horizon;
	void *horizon_ctx;
	/* optional: fills each entry's, return's, event's and stack's spec and probe, once per record;
	 * without it they stay NULL */
	sink_lookup_fn lookup;
	const void *lookup_ctx;
	/* optional: sees every record the sink does, after it, with what was looked up */
	void (*tap)(void *ctx, const struct sink_rec *rec);
	void *tap_ctx;
	/* optional: called by the writer thread at each pass of its loop (between batches of
	 * records, and every 0.5 to 8 ms when idle): work that must not race the tap (SIGUSR1's dump of
	 * the hists); keep it to an atomic load when there is nothing to do */
	void (*poll)(void *ctx);
	void *poll_ctx;
	pthread_t thread;
	atomic_int stop;
	atomic_bool cut; /* writer_cut: the rest is dropped, not written */
	unsigned long long not_written; /* events dropped unwritten (writer_cut, or a record the
					 * sink could not be handed); writer thread, then final */
	unsigned long long *events; /* per ring, records delivered */
	struct hvt_record *dropped_lost; /* per ring, the lost marks a cut dropped (value: summed) */
	struct writer_seen *seen;	 /* per ring, its last lookup */
	unsigned long long lookups;	 /* calls of @lookup (writer thread, then final) */
	uint8_t *payload;	    /* an event's payload, gathered from its records */
	uint8_t *next_payload;	    /* the looked-ahead record's payload (inside @payload's block) */
	uint64_t last_ts;	    /* of the last record handed to the sink */
	uint64_t cpu_ns;	    /* the writer thread's CPU time, set as it ends */
};

/* Calls the sink's begin() and starts the thread. Records are emitted in timestamp order across rings,
 * each only once @horizon has passed it. Returns 0 or -errno. */
int writer_start(struct writer *w, struct ring *rings, unsigned nr, struct sink *sink,
		 writer_horizon_fn horizon, void *horizon_ctx);

/* From now on, the records still in the rings (and any that come) are dropped instead of written,
 * each event counted in not_written: the trace is cut short but still ends with its trailer. For a
 * second SIGINT while a backlog is being written. Any thread; idempotent. */
void writer_cut(struct writer *w);

/* Drains every ring to the end (or drops it all, once cut), hands the sink an HVT_REC_LOST record
 * for each ring's losses counted after its last record, calls the sink's end() with @lost plus the
 * events not written (sink->not_written says how many of them), joins. Call once no producer runs. */
void writer_stop(struct writer *w, unsigned long long lost);

/* Frees the per-ring counters (after writer_stop). */
void writer_free(struct writer *w);

/* A sink_lookup_fn over the probe table @ctx (a struct probe_table): one probe_lookup of the
 * record's ip, the spec its type asks for from that probe. */
void writer_lookup_probes(const void *ctx, struct sink_rec *rec);

#endif

/* Stub probes in the tracer: patching the probes marked `stub` in and out with every vCPU stopped,
 * and the drain thread that turns the guest rings' records into the same host records trap probes
 * write, so every sink works unchanged. Knows the probes, the host rings it fills and the stub; not
 * the tracer that owns them. */
#ifndef HVT_STUB_DRAIN_H
#define HVT_STUB_DRAIN_H

#include "host/trace/emit_gate.h"
#include "host/trace/probe.h"
#include "host/trace/rec_filter.h"
#include "host/trace/ring.h"
#include "host/trace/stub.h"
#include "host/trace/stub_agg.h"
#include "host/trace/target.h"
#include "host/trace/trigger.h"
#include "vmi/vmi_task.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the drain works with; everything borrowed from its owner, which outlives it. */
struct stub_drain_cfg {
	struct target *tgt;
	struct probe_table *probes; /* the ones with `stub` set are the drain's */
	struct ring *rings;	    /* nr_cpus host rings only the drain thread writes */
	unsigned nr_cpus;
	const struct vmi_task_layout *task;
	bool returns;	      /* returns are hooked (function_graph, -r) */
	bool graph;	      /* set_graph_function: only calls below a graph-root probe */
	unsigned max_depth;   /* with returns: calls this deep are not recorded (0 = no limit) */
	uint64_t max_records; /* per guest ring wanted (0: the default; stub_ring_records_for) */
	bool exact_records;   /* fewer is an error (else as many as fit) */
	size_t max_payload;   /* largest event payload of the stub probes */
	uint64_t t0;	      /* host CLOCK_MONOTONIC ns that record timestamps count from */
	const struct rec_filter *keep; /* records it rejects are dropped, counted in `filtered` */
	const struct tracing_state *tracing; /* records made while tracing was off are dropped */
	bool backpressure; /* ask for the vCPUs to be held (stub_drain_holding) while a guest ring
			    * is too full for the drain to keep up, rather than lose records */
};

struct stub_drain {
	struct stub_drain_cfg c;
	struct stub stub;
	size_t nr_probes; /* stub probes */
	/* the stub probes through detours, by detour slot (stub_detour_index); NULL: none */
	struct probe **detour_probe;
	unsigned nr_detours;
	pthread_t thread;
	bool running;
	atomic_int stop;
	atomic_bool cut;		   /* stub_drain_cut: the final drain gives up on the rest */
	_Atomic uint64_t horizon;	   /* ts below which every stub record has been drained */
	uint64_t tsc_ref, ns_ref, tsc_khz; /* guest TSC tsc_ref was current at host ns ns_ref */
	bool clock_anchored;
	/* no clock from the target (QEMU): the guest's TSC runs as the host's plus an offset,
	 * learnt from the records (host_offset_of) */
	bool clock_learnt, have_offset;
	bool host_counter; /* the guest clock runs with CLOCK_MONOTONIC at tsc_khz (target counter_khz) */
	int64_t tsc_offset; /* guest TSC - host TSC, the largest seen at a drain */
	/* the target follows each vCPU's TSC offset (tsc_update said so at the last pass): a record's
	 * guest TSC is converted to the host's TSC, and that to host ns by a host TSC read beside the
	 * monotonic clock at each update (host_ref at host_ns_ref) at tsc_khz (no TSC scaling) */
	bool follow;
	uint64_t host_ref, host_ns_ref;
	uint64_t offset_since; /* host ns of the first record (the clock's warm-up starts) */
	uint64_t records;    /* records drained from the guest, announcements included */
	uint64_t announced;  /* ... of which task announcements (STUB_REC_TASK), no event */
	uint64_t lost;	     /* what the host itself knows was lost: records reserved but never
			      * committed ahead of committed ones, records left when the host
			      * rings stayed full at the end */
	uint64_t guest_lost; /* guest-reported, once stopped: events its rings could not take and
			      * calls on CPU numbers out of range, as its counters say */
	uint64_t rejected;   /* records the stub cannot have written (forged): dropped */
	struct stub_agg agg; /* the counting sites' tables, read and validated at the stop */
	bool agg_unread;     /* ... which could not be read (a guest that is gone) */
	uint64_t tasks_changed; /* records whose task had another identity when read (named as
				 * it is now; see task_of in stub_drain.c) */
	/* the detach's looks at the guest's kernel stacks for a task preempted inside the stub, and
	 * the stacks the last one scanned */
	unsigned leave_scans;
	long leave_hooked; /* hooked returns (in a register) still out when the detach gave up waiting */
	long leave_hooked_first; /* and when the sites were put back */
	unsigned long long leave_hooked_ms; /* the detach's wait for them */
	unsigned long leave_stacks;
	_Atomic uint64_t filtered; /* records cfg.keep rejected (-P, --comm, --cpu) */
	struct emit_gate gate;	   /* cfg.tracing, cfg.keep into `filtered`; a full ring waits */
	uint64_t guest_seen[STUB_MAX_CPUS]; /* each guest ring's lost count already marked in the
					     * stream (HVT_REC_LOST) */
	atomic_bool hold;   /* backpressure: the drain wants the vCPUs held (stub_drain_holding) */
	uint64_t pauses;    /* backpressure: times the owner held the vCPUs for the drain, */
	uint64_t paused_ns; /* and for how long in all (stub_drain_count_pauses) */
	/* the drain thread's buffers, from stub_drain_attach until the thread takes them */
	void *buf, *tc, *scratch;
};

/* Backpressure watermarks, in records of one guest ring of @ring records: the vCPUs are held
 * once a ring still holds STUB_HOLD_HIGH(ring) records after a drain pass (the host rings are
 * full: the writer is behind), and let go once every ring is at STUB_HOLD_LOW(ring) or below. */
#define STUB_HOLD_HIGH(ring) ((ring) / 4)
#define STUB_HOLD_LOW(ring)  ((ring) / 16)

/* Whether the vCPUs should be held after a drain pass that left at most @fill records in any
 * guest ring of @ring records, given whether they are held now (@held): hysteresis between the
 * watermarks above. Pure. */
bool stub_drain_hold_next(bool held, uint64_t fill, uint64_t ring);

/* How long the drain sleeps after a pass that took @taken records @cycle_ns after the one before,
 * given the session's peak rate @peak (records per ms), rings of @ring records and the last sleep
 * @prev (0: the pass took records): see stub_drain.c. Never below STUB_DRAIN_SLEEP_MIN_NS nor above
 * STUB_DRAIN_SLEEP_MAX_NS. Pure. */
#define STUB_DRAIN_SLEEP_MIN_NS 100000ull
#define STUB_DRAIN_SLEEP_MAX_NS 2000000ull
uint64_t stub_drain_sleep_ns(uint64_t taken, uint64_t cycle_ns, uint64_t ring, uint64_t peak,
			     uint64_t prev);

/* Whether probe @p can be a stub probe: events reading guest memory, and typed returns whose fields
 * are more than RAX itself (strings, dereferences, members), need trap probes. Pure. */
bool stub_drain_capable(const struct probe *p);

/* An idle drain: no stub placed, horizon open. */
void stub_drain_init(struct stub_drain *d);

/* With the target paused: places the stub, patches every probe of @cfg marked `stub` and starts the
 * drain thread. 0 (also with no stub probe) or -errno with @err naming the site. On error every
 * CALL is put back (the bytes checked first) and the stub unmapped, except sites the target would
 * not restore then (a stop asked): those stay `patched`, and the stub mapped (stub.placed), for
 * stub_drain_detach. Main thread. */
int stub_drain_attach(struct stub_drain *d, const struct stub_drain_cfg *cfg, char *err,
		      size_t errlen);

/* With the target paused: puts every CALL back, hands every hooked return slot back (counted in
 * stub.restored_slots), lets vCPUs inside a stub routine leave it, stops the drain and unmaps the
 * stub. 0 or -errno (-EBUSY: a vCPU stayed inside, the stub is left mapped). Main thread. */
int stub_drain_detach(struct stub_drain *d);

/* With every vCPU stopped: puts the guest's bytes back at stub probe @p's site (the guest's
 * patcher is about to check it): the NOP under a CALL of ours, the instructions under a detour's
 * JMP (no context can be inside a JMP; one inside the detour's copy of them goes on there and
 * jumps back to the same bytes); the stub stays (a vCPU inside it, or a hooked return, finishes
 * there). 0, -ESTALE (the guest rewrote it: marked, nothing written), -EINVAL (not patched),
 * -errno. Main thread. */
int stub_drain_yield(struct stub_drain *d, struct probe *p);

/* With every vCPU stopped, after the guest's patcher is done: a site stub_drain_yield handed back
 * that holds the guest's NOP again (the guest took its hook away) gets the stub's CALL back, as
 * attach wrote it. 0 (p->patched set), -EBUSY (the site holds something else: still the guest's,
 * nothing written), -EINVAL (not a yielded stub site, or no stub), -EFAULT, -errno of the write.
 * Main thread. */
int stub_drain_reclaim(struct stub_drain *d, struct probe *p);

/* The counting sites' tables as they are now, read (through the target, as the drain thread
 * reads the rings: the VM may be running) and validated into @a (zeroed first; stub_agg_free it):
 * what SIGUSR1 shows mid-run. 0 (also without tables: @a->read false), -ENOMEM or the read's
 * -errno. Any one thread at a time, while the stub is placed. */
int stub_drain_read_agg(struct stub_drain *d, struct stub_agg *a);

/* Drains the guest rings one last time, as far as they can still be read, and stops the drain
 * thread; `lost` and `guest_lost` are then final (the guest's figure as it last said if it is
 * gone). For a guest that went away without a detach; idempotent. Main thread. */
void stub_drain_stop(struct stub_drain *d);

/* The trace is being cut short (a second SIGINT while the backlog is written): the final drain,
 * now or when it comes, stops waiting for room in the host rings and counts what the guest rings
 * still hold as lost. Any thread; idempotent. */
void stub_drain_cut(struct stub_drain *d);

/* In a forked process (the guardian): the drain thread does not exist there. */
void stub_drain_forget_thread(struct stub_drain *d);

/* Timestamp below which every stub record has reached the host rings. Any thread. */
static inline uint64_t stub_drain_horizon(struct stub_drain *d)
{
	return atomic_load(&d->horizon);
}

/* Whether the drain asks for the vCPUs to be held now (backpressure; always false without it or
 * once the drain is stopping). The owner polls it from the thread that runs the target and
 * pauses/resumes the vCPUs accordingly. Any thread. */
static inline bool stub_drain_holding(struct stub_drain *d)
{
	return atomic_load_explicit(&d->hold, memory_order_relaxed);
}

/* The owner held the vCPUs @n more times, @ns in all. Owner's thread. */
void stub_drain_count_pauses(struct stub_drain *d, uint64_t n, uint64_t ns);

/* Host-ring stalls of the drain (records that had to wait in a guest ring). After it stopped. */
unsigned long long stub_drain_stalls(const struct stub_drain *d);

#endif

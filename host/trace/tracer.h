/* The tracer core: owns the probes, the per-vCPU rings and the shadow stacks, handles every breakpoint
 * hit on the hitting vCPU's thread, and detaches leaving the guest as it found it. Works on any target. */
#ifndef HVT_TRACER_H
#define HVT_TRACER_H

#include "host/trace/fevent.h"
#include "host/trace/probe.h"
#include "host/trace/ring.h"
#include "host/trace/shadow.h"
#include "host/trace/stub.h"
#include "host/trace/target.h"
#include "vmi/vmi_task.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct tracer_opts {
	bool returns;	    /* return hooks through the trampoline are possible (function_graph, -r) */
	bool hook_all;	    /* with returns: every probe hooks its return (function_graph); otherwise
			     * only the return probes (tracer_set_return) */
	bool graph_filter;  /* only calls below a probe marked graph_root (set_graph_function) */
	unsigned max_depth; /* with returns: do not trace deeper than this (0 = no limit) */
	bool lazy;	    /* with graph_filter: only graph-root probes stay inserted; the others are
			     * inserted while a root call is live (for targets where every inserted
			     * breakpoint costs, such as QEMU's gdbstub under TCG) */
	uint64_t ring_records; /* per vCPU */
	bool stub; /* stub probes wherever they can do the job (tracer_init says which cannot) */
};

/* Per-probe counters kept on the vCPU threads (rare events only; hits and returns are in the records). */
struct probe_counters {
	_Atomic uint64_t misses;  /* could not be traced: shadow stack full, unreadable slot, no room */
	_Atomic uint64_t unwound; /* hooked frames abandoned without returning (non-local exit) */
	_Atomic uint64_t hooked;  /* entries whose return was hooked */
};

struct tracer_cpu {
	_Alignas(64) _Atomic uint64_t busy_since; /* ts of the record being built, UINT64_MAX if none */
	unsigned long long lost;		   /* events not recorded (detach while the ring was full) */
};

struct tracer {
	struct target *tgt; /* borrowed */
	struct tracer_opts opts;
	struct probe_table probes;
	struct probe_counters *counters; /* per probe */
	bool *graph_root;		 /* per probe: set_graph_function matched it */
	struct shadow shadow;
	struct ring *rings; /* one per vCPU */
	struct tracer_cpu *cpu;
	unsigned nr_cpus;
	struct vmi_task_layout task;
	uint64_t trampoline; /* 0 unless opts.returns */
	uint8_t trampoline_orig;
	bool trampoline_inserted;
	uint64_t t0;	   /* clock at attach; record timestamps count from here */
	atomic_int active; /* 0 once detached: hits on old probes are only emulated */
	bool attached;
	_Atomic uint64_t orphan_returns; /* trampoline hits with no shadow entry (must stay 0) */
	const struct fe_spec **events; /* per probe: its function-based event, or NULL; borrowed */
	bool *ret_probe;	       /* per probe: a return probe (-r) */
	bool *quiet_entry;	       /* per probe: its entries are not recorded (only there for -r) */
	const struct fe_spec **ret_events; /* per probe: typed return fields of RAX, or NULL */
	size_t max_payload;	       /* largest event payload */
	uint8_t **scratch;	       /* per vCPU: capture buffer of max_payload bytes */
	pthread_mutex_t arm_lock;	 /* lazy: live_roots and the callee probes' insertion */
	unsigned live_roots;		 /* lazy: hooked graph-root frames not yet returned */
	uint64_t arms;			 /* lazy: times the callee probes were inserted */
	uint64_t restored_slots; /* hooked returns handed back at detach (slots, vCPUs on the trampoline) */
	unsigned nr_rings;	 /* nr_cpus, and as many again for the stub's records with stub probes */

	/* stub probes (tracer_stub.c) */
	struct stub stub;
	size_t nr_stub_probes;
	pthread_t drain;
	bool drain_running;
	atomic_int drain_stop;
	_Atomic uint64_t stub_horizon; /* ts below which every stub record has been drained */
	uint64_t tsc_ref, ns_ref, tsc_khz; /* guest TSC tsc_ref was current at host ns ns_ref */
	bool clock_anchored;
	uint64_t stub_records; /* records drained from the guest */
	uint64_t stub_lost;    /* events the guest rings could not take, at detach */
};

/* Prepares probes for the @n selected sites, rings and (with returns) shadow stacks. Returns 0, -ENOMEM,
 * or -ENOTSUP if returns are asked of a target without a trampoline. Nothing touches the guest yet. */
int tracer_init(struct tracer *t, struct target *tgt, const struct vmi_site *const *sites, size_t n,
		const struct vmi_task_layout *task, const struct tracer_opts *opts);

/* Gives the probe of @id a function-based event (@spec, which must outlive the tracer): its entries
 * then carry the captured fields. Before tracer_attach. Returns 0 or -ENOMEM. */
int tracer_set_event(struct tracer *t, uint32_t id, const struct fe_spec *spec);

/* Makes probe @id a return probe (kretprobe without maxactive): its returns are recorded with RAX and
 * the duration, or with the typed fields of @spec (evaluated with RAX as argument 0) if not NULL.
 * @quiet: do not record its entries. Before tracer_attach; needs opts.returns. 0 or -errno. */
int tracer_set_return(struct tracer *t, uint32_t id, const struct fe_spec *spec, bool quiet);

/* The typed return spec of the probe at @ip, or NULL (for sinks; any thread). */
const struct fe_spec *tracer_ret_event_of(void *ctx, uint64_t ip);

/* The event spec of the probe at @ip, or NULL (for sinks; any thread). */
const struct fe_spec *tracer_event_of(void *ctx, uint64_t ip);

/* Verifies and patches every site (and the trampoline), and takes over breakpoint hits. On error nothing
 * stays patched and @err names the site. Main thread. */
int tracer_attach(struct tracer *t, char *err, size_t errlen);

/* With all vCPUs paused: removes every probe, writes the original return address back into every guest
 * stack slot still holding the trampoline (and moves any vCPU about to execute it), then removes the
 * trampoline. Later hits on old probes are emulated. Idempotent; main thread. Returns 0 or an error. */
int tracer_detach(struct tracer *t);

/* The breakpoint callback (target_bp_fn): records the entry or the return and resumes the vCPU. */
int tracer_hit(void *ctx, unsigned cpu, uint64_t addr, struct x86_regs *regs);

/* Timestamp below which every record is already visible in the rings (for in-order merging). Any
 * thread. */
uint64_t tracer_horizon(void *ctx);

/* Sum of lost over vCPUs. */
unsigned long long tracer_lost(const struct tracer *t);

/* Whether probe @id hooks the returns of its calls (function_graph, or a return probe). Any thread. */
static inline bool tracer_hooks_return(const struct tracer *t, uint32_t id)
{
	return t->opts.returns && (t->opts.hook_all || t->ret_probe[id]);
}

/* Whether probe @id may be a stub probe in this tracer's configuration (events reading guest memory,
 * typed return fields and set_graph_function need trap probes). */
bool tracer_stub_capable(const struct tracer *t, uint32_t id);

/* tracer_stub.c, for tracer.c: with the target paused, places the stub, patches the stub probes and
 * starts the drain thread (0 or -errno with @err; nothing stays patched on error) / undoes it all. */
int tracer_stub_attach(struct tracer *t, char *err, size_t errlen);
int tracer_stub_detach(struct tracer *t);

/* Drains the guest rings one last time, as far as they can still be read, and stops the drain thread;
 * the events the guest could not record are then in stub_lost (as the guest last said if it is gone).
 * For a guest that went away without a detach; idempotent. Main thread. */
void tracer_stub_stop(struct tracer *t);

/* Frees everything; the tracer must be detached. */
void tracer_free(struct tracer *t);

#endif

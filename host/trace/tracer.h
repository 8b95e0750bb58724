/* The tracer core: owns the probes, the per-vCPU rings and the shadow stacks, handles every
 * breakpoint hit on the hitting vCPU's thread, and detaches leaving the guest as it found it. Works
 * on any target. An opaque handle: tracer_new makes it, tracer_free frees it. */
#ifndef HVT_TRACER_H
#define HVT_TRACER_H

#include "host/trace/fevent.h"
#include "host/trace/probe.h"
#include "host/trace/stub_agg.h"
#include "host/trace/ring.h"
#include "host/trace/target.h"
#include "host/trace/trigger.h"
#include "host/trace/tracer_opts.h"
#include "vmi/vmi_patcher.h"
#include "vmi/vmi_task.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The tracer (tracer_int.h holds its fields, for tracer*.c alone). */
struct tracer;

/* What a session did, for --stats and the profile; a copy, taken on the main thread once the writer
 * has stopped (counters of live vCPU threads may still move otherwise). */
struct tracer_stats {
	size_t probes;
	unsigned long long restored_slots, orphan_returns, arms, lost;
	unsigned long long interrupted_returns; /* in an interrupt's frame (tracer_attach.c) */
	unsigned long long slots_above_4g; /* hooked return slots at guest-physical >= 4 GiB */
	unsigned text_rewritten; /* sites the guest rewrote over a patch: reported, left alone */
	/* us after t0 at which the detach had every vCPU stopped (every hit is stamped before it);
	 * -1: not detached (yet) */
	long long detached_us;
	/* stub probes (all 0 without) */
	size_t stub_probes;
	size_t stub_detours; /* of them, entry probes through a detour */
	/* stub_records: the guest's event records drained (its task announcements are
	 * stub_announced) */
	unsigned long long stub_records, stub_announced, stub_lost, stub_ring_records,
	    stub_region_bytes;
	const char *stub_region_where; /* target_region.where */
	const char *stub_region_perm;  /* target_region.perm (NULL: the ISA has one way) */
	const char *stub_cpu_from; /* the stub's CPU number: "rdtscp", "gs" or "cpuid" (stub.h) */
	unsigned long long stub_guest_lost; /* guest-reported: what the stub's counters say */
	unsigned long long stub_rejected;   /* forged records dropped */
	unsigned long long stub_host_stalls;
	unsigned long long stub_pauses, stub_paused_ns; /* backpressure: vCPUs held for the drain */
	unsigned long long stub_waits;	       /* backpressure: the stub's waits for room (guest's) */
	unsigned long long stub_wait_timeouts; /* ... of which the host saw this many time out */
	unsigned long long stub_tasks_changed; /* records whose task changed (exec, exit and reuse)
						* before the drain read its name: named as it is
						* now */
	unsigned stub_leave_scans;	   /* the detach's looks for tasks preempted inside the stub */
	unsigned long stub_leave_stacks; /* the kernel stacks the last look scanned */
	/* returns hooked in a register (arm64) out when the sites were put back, and how long the
	 * detach let the guest run for them to come back */
	long stub_leave_hooked;
	unsigned long long stub_leave_hooked_ms;
	bool stub_backpressure;
	bool stub_mapped; /* the stub is still in guest memory */
	unsigned long long filtered; /* records -P, --comm, --cpu dropped (trap and stub paths) */
	/* sharing with the guest's own patchers (tracer_yield.c) */
	unsigned shared_sites;	  /* sites traced alongside a call of the guest's: at attach, or
				   * handed back to its patcher since */
	unsigned patchers;	  /* patcher breakpoints put in at attach */
	unsigned yielded_sites;	  /* distinct stub sites handed back */
	unsigned long long yields;	/* hand-backs (a site each time) */
	unsigned long long reclaims;	/* yielded sites that got the stub back */
	unsigned long long patcher_stops;
};

/* A new tracer in *@out (the caller's, freed with tracer_free) over @tgt (borrowed, outlives it):
 * probes for the @n selected sites, rings and (with returns) shadow stacks. Returns 0, -ENOMEM, or
 * -ENOTSUP if returns are asked of a target without a trampoline (*@out NULL then). Nothing
 * touches the guest yet. Main thread. */
int tracer_new(struct tracer **out, struct target *tgt, const struct vmi_site *const *sites,
	       size_t n, const struct vmi_task_layout *task, const struct tracer_opts *opts);

/* Gives the probe of @id a function-based event (@spec, which must outlive the tracer): its entries
 * then carry the captured fields. Before tracer_attach. Returns 0 or -ENOMEM. */
int tracer_set_event(struct tracer *t, uint32_t id, const struct fe_spec *spec);

/* Gives probe @id the trigger @trig (which must outlive the tracer): fired at each of its entries
 * (trap probes only: a probe with a trigger is never a stub probe), whether or not the call is
 * recorded. Before tracer_attach. 0, -EINVAL for a bad id, or -ENOMEM. */
int tracer_add_trigger(struct tracer *t, uint32_t id, const struct trigger *trig);
/* Whether probe @p has a --trigger (and so is a trap probe whatever --probe says), a hist's
 * stacktrace key among them. Pure. */
bool tracer_has_trigger(const struct tracer *t, const struct probe *p);

/* A hist keyed by stacktrace watches probe @id: at each of its calls the stack is walked and
 * recorded for the hist alone (HVT_REC_STACK, parent HVT_STACK_FOR_HIST), which makes it a trap
 * probe. Before tracer_attach. 0, or -EINVAL for a bad id. */
int tracer_set_stack_key(struct tracer *t, uint32_t id);

/* Makes probe @id a return probe (kretprobe without maxactive): its returns are recorded with RAX and
 * the duration, or with the typed fields of @spec (evaluated with RAX as argument 0) if not NULL.
 * @quiet: do not record its entries. Before tracer_attach; needs opts.returns. 0 or -errno. */
int tracer_set_return(struct tracer *t, uint32_t id, const struct fe_spec *spec, bool quiet);

/* Only aggregations want probe @id's events (hist triggers, the profile): with STUB_AGG_RET in
 * @mode its returns are hooked (and timed). With @count, as a stub probe it is counted in the guest
 * by the counting routine of @mode (STUB_AGG_*), never recorded; otherwise (and as a trap probe)
 * it records as usual. Before tracer_attach. 0, -EINVAL (an entry site, an -e event, no such
 * mode), -ENOTSUP (returns asked without opts.returns, or of an entry that may not be a call). */
int tracer_set_agg(struct tracer *t, uint32_t id, unsigned mode, bool count);

/* The counting sites' tables as read at the end (the stub's, validated), or NULL when no table
 * was placed; ->read false: they could not be read (the guest was gone). After the detach or
 * tracer_stop_drain; main thread. */
const struct stub_agg *tracer_stub_agg(const struct tracer *t);

/* The counting sites' tables as they are now (stub_drain_read_agg), into @a (stub_agg_free it): 0
 * (@a->read false without tables), -ENOMEM or -errno. One thread at a time, between attach and
 * detach. */
int tracer_stub_agg_now(struct tracer *t, struct stub_agg *a);

/* Entries per CPU of the stub's aggregation tables (0: none placed). Any thread after attach. */
unsigned long long tracer_stub_agg_entries(const struct tracer *t);

/* Verifies and patches every site (and the trampoline), and takes over breakpoint hits. On error
 * @err names the site and nothing stays patched, except stub probe sites the target would not
 * restore then (a stop asked): the tracer then stays attached, to be detached (tracer_detach) as
 * usual, which restores them. Main thread. */
int tracer_attach(struct tracer *t, char *err, size_t errlen);

/* With all vCPUs paused: removes every probe, writes the original return address back into every
 * guest stack slot still holding the trampoline (and moves any vCPU about to execute it), then
 * removes the trampoline. Every write goes to the guest-physical address resolved when the patch
 * was made, and only where the bytes are still the ones hvtrace wrote: a site the guest rewrote is
 * left as it is, counted (text_rewritten) and named in one line on stderr. Later hits on old probes
 * are emulated. Idempotent; main thread. Returns 0 or an error (a rewritten site is not one). */
int tracer_detach(struct tracer *t);

/* With all vCPUs paused, before tracer_detach: the guest freed the memory of [@lo, @hi) (Linux's
 * .init.text), so its stub probes are no longer hvtrace's to restore: they are marked unpatched and
 * nothing is written there. Returns how many. Main thread. */
size_t tracer_forget_range(struct tracer *t, uint64_t lo, uint64_t hi);

/* The breakpoint callback (target_bp_fn): records the entry or the return, stamped @at_ns (now if
 * 0), and resumes the vCPU. */
int tracer_hit(void *ctx, unsigned cpu, uint64_t addr, struct arch_regs *regs, uint64_t at_ns);

/* Timestamp below which every record is already visible in the rings (for in-order merging). Any
 * thread. */
uint64_t tracer_horizon(void *ctx);

/* Sum of lost over vCPUs. */
unsigned long long tracer_lost(const struct tracer *t);

/* set_graph_function: marks probe @id as a graph root. Before tracer_attach; -EINVAL for a bad id. */
int tracer_set_graph_root(struct tracer *t, uint32_t id);

/* Lets entry probe @id be a stub probe through a detour made from @plan (copied). Before
 * tracer_attach; -EINVAL for a bad id or a probe with an fentry site, -ENOMEM. */
int tracer_set_detour(struct tracer *t, uint32_t id, const struct arch_reloc_plan *plan);

/* Entry probe @id is not known to be entered by a CALL (asm code: an interrupt or exception entry,
 * a jump target): its returns are never hooked, whatever the tracer. Before tracer_attach;
 * -EINVAL for a bad id or a probe with an fentry site. */
int tracer_set_no_return(struct tracer *t, uint32_t id);

/* The probes, in id order (each with its function and counters). Borrowed; any thread. */
const struct probe_table *tracer_probes(const struct tracer *t);

/* The ISA of the traced guest (its target's). Any thread. */
const struct arch *tracer_arch(const struct tracer *t);

/* The record rings the writer drains (*@nr of them). Borrowed; any thread. */
struct ring *tracer_rings(struct tracer *t, unsigned *nr);

/* Per vCPU: times its ring was full, and events it could not record. Main thread, after the writer. */
unsigned long long tracer_cpu_stalls(const struct tracer *t, unsigned cpu);
unsigned long long tracer_cpu_lost(const struct tracer *t, unsigned cpu);

/* The target the tracer works on (borrowed), its return trampoline's address (0: none), whether
 * returns are traced (opts.returns), and the clock at attach that record timestamps count from.
 * Pure; any thread. */
struct target *tracer_target(const struct tracer *t);
uint64_t tracer_trampoline(const struct tracer *t);
bool tracer_returns(const struct tracer *t);
uint64_t tracer_t0(const struct tracer *t);

/* Stub probes with backpressure (opts.stub_backpressure and at least one stub probe): the owner
 * holds the vCPUs while tracer_drain_holding says so. Main thread, after tracer_attach. */
bool tracer_backpressure(const struct tracer *t);
/* Whether the stub drain asks for the vCPUs to be held now (stub_drain_holding). Any thread. */
bool tracer_drain_holding(struct tracer *t);
/* The owner held the vCPUs @n more times, @ns in all (stub_drain_count_pauses). Owner's thread. */
void tracer_count_pauses(struct tracer *t, uint64_t n, uint64_t ns);

/* The backend's last look at the guest before the detach puts anything back (e.g.
 * tracer_forget_range): @fn(@ctx) runs in tracer_detach with the target
 * paused; NULL: none. Before tracer_attach; main thread. */
void tracer_set_before_detach(struct tracer *t, void (*fn)(void *ctx), void *ctx);

/* The per-CPU slots of the current task and preempt count moved (e.g. after a kernel's boot): the
 * tracer's copy, the one the stub's detach looks at, takes @current and @preempt (VMI_MAX_CPUS each).
 * Target paused (before_detach); main thread. */
void tracer_set_task_slots(struct tracer *t, const uint64_t *current, const uint64_t *preempt);

/* The guest's text patchers: @n (at most 4) functions where the guest is about to check and
 * rewrite its text (vmi_linux_text_patchers). The tracer stops there with a breakpoint of its own
 * and puts the guest's bytes back first: at every fentry stub probe site at an ftrace patcher
 * (traced by a breakpoint that lets what the guest writes there run, until the guest puts its NOP
 * back: then the stub's CALL returns), at every detour at a kprobe patcher (traced by a breakpoint
 * from then on). Before tracer_attach; -ENOTSUP on a target whose hits do not stop every vCPU
 * (hit_all_stopped) or cannot run an instruction in place, -EINVAL for too many. Main thread. */
int tracer_set_patchers(struct tracer *t, const struct vmi_patcher *ps, size_t n);

/* A copy of the session's counters (see struct tracer_stats). Main thread. */
void tracer_stats(const struct tracer *t, struct tracer_stats *out);

/* For a guest that went away without a detach: drains what the stub's rings still hold and stops the
 * drain, so that the lost count is final. Idempotent; main thread. */
void tracer_stop_drain(struct tracer *t);

/* The trace is being cut short (stub_drain_cut): the final drain stops waiting for the writer and
 * counts what the stub's rings still hold as lost. Any thread; idempotent. */
void tracer_cut(struct tracer *t);

/* In a process forked from the tracing one (the guardian), after the tracing process died: detaches as
 * tracer_detach does, with shadow-stack locks a dead vCPU thread may have held broken and no drain
 * thread (threads do not survive a fork). The target must already be usable from this process. */
int tracer_takeover_detach(struct tracer *t);

/* Frees everything tracer_new made, @t itself included (NULL: nothing); the tracer must be
 * detached. Main thread. */
void tracer_free(struct tracer *t);

#endif

/* The tracer's fields, shared by tracer.c (the hit path, counters), tracer_setup.c (new, free,
 * probe settings, accessors) and tracer_attach.c (attach, detach), and private to them: everyone
 * else holds an opaque struct tracer (tracer.h). */
#ifndef HVT_TRACER_INT_H
#define HVT_TRACER_INT_H

#include "host/trace/emit_gate.h"
#include "host/trace/probe.h"
#include "host/trace/ring.h"
#include "host/trace/ret_sites.h"
#include "host/trace/shadow.h"
#include "host/trace/stub_drain.h"
#include "host/trace/target.h"
#include "host/trace/tracer_opts.h"
#include "host/trace/trigger.h"
#include "vmi/vmi_task.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRACER_MAX_PATCHERS 4

/* A --trigger on a probe (tracer_add_trigger). */
struct tracer_trigger {
	const struct trigger *trig; /* borrowed */
	uint32_t probe;
	_Atomic long left; /* firings left; -1: unlimited */
};

struct tracer_cpu {
	/* ts of the record being built, UINT64_MAX if none */
	_Alignas(64) _Atomic uint64_t busy_since;
	unsigned long long lost; /* events not recorded (detach while the ring was full) */
};

/* The tracer's state: read and written by tracer*.c alone (and white-box tests of them).
 */
struct tracer {
	struct target *tgt; /* borrowed */
	struct tracer_opts opts;
	struct probe_table probes; /* each probe holds what was asked of it and its counters */
	struct shadow shadow;
	struct ring *rings; /* nr_cpus for trap probes, then nr_cpus for the stub's records */
	struct tracer_cpu *cpu;
	unsigned nr_cpus;
	unsigned nr_rings; /* nr_cpus, and as many again with stub probes */
	struct vmi_task_layout task;
	uint64_t trampoline;	 /* 0 unless opts.returns */
	uint64_t trampoline_gpa; /* resolved at attach */
	uint8_t trampoline_orig;
	bool trampoline_inserted;
	uint64_t t0;	   /* clock at attach; record timestamps count from here */
	atomic_int active; /* 0 once detached: hits on old probes are only emulated */
	bool attached;
	_Atomic uint64_t orphan_returns; /* trampoline hits with no shadow entry (must stay 0) */
	_Atomic uint64_t slots_above_4g; /* hooked return slots at guest-physical >= 4 GiB */
	size_t max_payload;		 /* largest event payload */
	uint8_t **scratch;		 /* per vCPU: capture buffer of max_payload bytes */
	pthread_mutex_t arm_lock;	 /* lazy: live_roots and the callee probes' insertion */
	unsigned live_roots;		 /* lazy: hooked graph-root frames not yet returned */
	uint64_t arms;			 /* lazy: times the callee probes were inserted */
	uint64_t restored_slots;      /* hooked returns handed back at detach (slots, vCPUs on the
					 trampoline) */
	uint64_t interrupted_returns; /* of those: returns an interrupt caught on the trampoline */
	unsigned text_rewritten; /* patched sites (and trampoline) the guest rewrote: left alone */
	uint64_t paused_to_detach_ns; /* host ns at which tracer_detach had every vCPU stopped: no
				       * hit is stamped later (0: never detached) */
	struct stub_drain stub;	 /* stub probes */
	_Atomic uint64_t filtered; /* trap-path records opts.keep rejected */
	struct emit_gate
	    gate; /* tracing, opts.keep into filtered; a full ring waits while active */
	struct tracing_state tracing; /* tracing_on over time (--tracing-off, traceon/traceoff) */
	struct tracer_trigger *triggers;
	size_t nr_triggers;
	_Atomic uint64_t snapshots; /* snapshot triggers fired */
	/* The backend's last look at the guest before the detach puts anything back, called by
	 * tracer_detach with the target paused (e.g. tracer_forget_range); NULL: none. */
	/* target.trampoline_page: the page the trampoline lives in while mapped */
	struct target_region tramp_reg;
	bool tramp_mapped;
	void (*before_detach)(void *ctx);
	void *before_detach_ctx;
	/* The guest's text patchers (tracer_yield.c): internal breakpoints of hvtrace's own, never
	 * probes, at which the stub sites are handed back to the guest. */
	struct tracer_patcher {
		uint64_t addr, gpa;
		uint8_t orig;
		bool inserted;
		bool detours; /* kprobes': detours go back, for good; else fentry stub sites */
	} patchers[TRACER_MAX_PATCHERS];
	unsigned nr_patchers;
	unsigned patchers_armed; /* of them, inserted at attach */
	uint64_t patcher_stops; /* hits on them (main thread: hit_all_stopped targets only) */
	/* The return of the outermost patcher call (the instruction after its CALL, read from the
	 * stack at the patcher's entry): a one-shot breakpoint at which yielded sites the guest left
	 * as NOPs get the stub back. */
	struct tracer_patcher ret_bp;
	/* trap probes' returns on an ISA with a link register (arm64): breakpoints at the return
	 * addresses of hooked calls in flight */
	struct ret_sites ret_sites;
	uint64_t yielded;	/* hand-backs of stub sites to the guest */
	unsigned yielded_sites; /* distinct stub sites handed back */
	uint64_t reclaimed;	/* yielded sites that got the stub's CALL back */
	unsigned shared;	/* entry probes whose site held a call of the guest's at attach */
};

/* tracer_yield.c, for tracer.c and tracer_attach.c: */
/* At attach, after the stubs: counts the sites already shared with the guest and puts the patcher
 * breakpoints in (one line on stderr for one that cannot go in). Main thread, target paused. */
void tracer_patchers_attach(struct tracer *t);
/* At detach, target paused: the patcher breakpoints out. */
void tracer_patchers_detach(struct tracer *t);
/* From tracer_hit: whether @addr is a patcher's: the stub sites are then handed back, and a
 * breakpoint put at the outermost patcher call's return. The VM is stopped (hit_all_stopped);
 * @regs are vCPU @cpu's; the patcher's instruction is to run in place. */
bool tracer_patcher_hit(struct tracer *t, unsigned cpu, uint64_t addr,
			const struct arch_regs *regs);
/* From tracer_hit: whether @addr is that return's: its breakpoint is then gone (the vCPU resumes
 * there as is) and yielded sites the guest left as NOPs have the stub's CALL back. VM stopped. */
bool tracer_patcher_return_hit(struct tracer *t, uint64_t addr);

/* Unmaps target.trampoline_page's page if the tracer mapped one (nothing may run in it any more:
 * the trampoline out and every slot back, or the guest gone). Paused, or the guest gone. */
void tracer_unmap_trampoline_page(struct tracer *t);

#endif

/* The tracer core: owns the probes and the per-vCPU rings, handles every breakpoint hit on the hitting
 * vCPU's thread, and detaches leaving the guest as it found it. Works on any target. */
#ifndef HVT_TRACER_H
#define HVT_TRACER_H

#include "probe.h"
#include "ring.h"
#include "target.h"
#include "../vmi/vmi_task.h"

#include <stdatomic.h>
#include <stdbool.h>

struct tracer {
	struct target *tgt; /* borrowed */
	struct probe_table probes;
	struct ring *rings; /* one per vCPU */
	unsigned nr_cpus;
	struct vmi_task_layout task;
	uint64_t t0;	   /* clock at attach; record timestamps count from here */
	atomic_int active; /* 0 once detached: hits on old probes are only emulated */
	bool attached;
	unsigned long long *lost; /* per vCPU: events not recorded (detach while the ring was full) */
};

/* Prepares probes for the @n selected sites and one ring of @ring_records per vCPU of @tgt. Returns 0 or
 * -ENOMEM. Nothing touches the guest yet. */
int tracer_init(struct tracer *t, struct target *tgt, const struct vmi_site *const *sites, size_t n,
		const struct vmi_task_layout *task, uint64_t ring_records);

/* Verifies and patches every site, and takes over breakpoint hits. On error nothing stays patched and
 * @err names the site. Main thread. */
int tracer_attach(struct tracer *t, char *err, size_t errlen);

/* With all vCPUs paused, removes every probe; later hits on them are emulated. Idempotent; main thread.
 * Returns 0 or the first restore error. */
int tracer_detach(struct tracer *t);

/* The breakpoint callback (target_bp_fn): records the entry and resumes after the NOP. */
int tracer_hit(void *ctx, unsigned cpu, uint64_t addr, struct x86_regs *regs);

/* Sum of lost over vCPUs. */
unsigned long long tracer_lost(const struct tracer *t);

/* Frees probes and rings; the tracer must be detached. */
void tracer_free(struct tracer *t);

#endif

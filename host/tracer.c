#include "tracer.h"
#include "clock.h"
#include "../arch/x86/x86_insn.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

int tracer_init(struct tracer *t, struct target *tgt, const struct vmi_site *const *sites, size_t n,
		const struct vmi_task_layout *task, uint64_t ring_records)
{
	memset(t, 0, sizeof(*t));
	t->tgt = tgt;
	t->nr_cpus = tgt->nr_cpus;
	t->task = *task;
	if (probe_table_init(&t->probes, sites, n) < 0)
		goto nomem;
	t->rings = calloc(t->nr_cpus, sizeof(*t->rings));
	t->lost = calloc(t->nr_cpus, sizeof(*t->lost));
	if (!t->rings || !t->lost)
		goto nomem;
	for (unsigned i = 0; i < t->nr_cpus; i++)
		if (ring_init(&t->rings[i], ring_records) < 0)
			goto nomem;
	return 0;
nomem:
	tracer_free(t);
	return -ENOMEM;
}

int tracer_attach(struct tracer *t, char *err, size_t errlen)
{
	int ret;

	t->t0 = clock_now_ns();
	atomic_store(&t->active, 1);
	t->tgt->ops->set_bp_handler(t->tgt, tracer_hit, t);
	ret = probe_insert_all(&t->probes, t->tgt, err, errlen);
	if (ret < 0) {
		atomic_store(&t->active, 0);
		return ret;
	}
	t->attached = true;
	return 0;
}

int tracer_detach(struct tracer *t)
{
	int ret;

	if (!t->attached)
		return 0;
	t->tgt->ops->pause(t->tgt);
	atomic_store(&t->active, 0);
	ret = probe_remove_all(&t->probes, t->tgt);
	t->tgt->ops->resume(t->tgt);
	t->attached = false;
	return ret;
}

static int read_task(void *ctx, unsigned cpu, uint64_t gva, void *buf, unsigned len)
{
	struct target *tgt = ctx;

	return tgt->ops->read_virt(tgt, cpu, gva, buf, len);
}

int tracer_hit(void *ctx, unsigned cpu, uint64_t addr, struct x86_regs *regs)
{
	struct tracer *t = ctx;
	struct probe *p = probe_lookup(&t->probes, addr);
	struct ring *ring = &t->rings[cpu];
	struct hvt_record *rec;
	struct vmi_task task;
	uint64_t parent = 0, now = clock_now_ns();

	if (!p)
		return -ENOENT;
	/* Emulate the NOP5 the INT3 sits on; the probe stays in place. */
	regs->rip = addr + X86_NOP5_LEN;
	if (!atomic_load_explicit(&t->active, memory_order_relaxed))
		return 0;
	while (!(rec = ring_reserve(ring))) {
		/* Lossless: the guest waits for the writer rather than losing an event. */
		ring->stalls++;
		if (!atomic_load_explicit(&t->active, memory_order_relaxed)) {
			t->lost[cpu]++;
			return 0;
		}
		sched_yield();
	}
	t->tgt->ops->read_virt(t->tgt, cpu, regs->rsp, &parent, sizeof(parent));
	vmi_task_current(&t->task, cpu, read_task, t->tgt, &task);
	hvt_record_entry(rec, now - t->t0, cpu, addr, parent, &task);
	ring_commit(ring);
	return 0;
}

unsigned long long tracer_lost(const struct tracer *t)
{
	unsigned long long n = 0;

	for (unsigned i = 0; i < t->nr_cpus; i++)
		n += t->lost[i];
	return n;
}

void tracer_free(struct tracer *t)
{
	probe_table_free(&t->probes);
	for (unsigned i = 0; t->rings && i < t->nr_cpus; i++)
		ring_free(&t->rings[i]);
	free(t->rings);
	free(t->lost);
	t->rings = NULL;
	t->lost = NULL;
}

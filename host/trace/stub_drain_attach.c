/* Stub probes' attach, stop and detach (the drain thread itself is stub_drain.c): the stub
 * placed and every CALL patched with the vCPUs paused, the drain started; at the end the vCPUs let
 * out of the stub, every CALL put back, hooked returns handed back, the stub unmapped. */
#include "host/trace/stub_drain.h"
#include "host/trace/stub_drain_int.h"
#include "host/trace/clock.h"
#include "host/trace/shadow.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- attach and detach ----------------------------------------------------------------------- */

/* Puts every CALL back. Returns how many sites still call the stub (a write that failed). */
static size_t unpatch_all(struct stub_drain *d)
{
	size_t left = 0;

	for (size_t i = 0; i < d->c.probes->nr; i++) {
		struct probe *p = &d->c.probes->v[i];
		int r;

		if (!p->patched)
			continue;
		r = stub_unpatch(&d->stub, p->addr, p->gpa, p->nop);
		/* a site the guest rewrote is no longer ours: left alone, reported by the tracer */
		if (r == 0 || r == -ESTALE)
			p->patched = false;
		if (r == -ESTALE)
			p->rewritten = true;
		left += p->patched;
	}
	return left;
}

/* A failed attach: every CALL put back and the stub unmapped. A site the target would not restore
 * now (QEMU's refuses text writes once a stop is asked) stays patched, the stub it calls mapped,
 * for stub_drain_detach to finish. */
static void undo_attach(struct stub_drain *d)
{
	if (unpatch_all(d) == 0)
		stub_unplace(&d->stub);
}

/* Frees the drain thread's buffers while no thread owns them (attach failed). */
static void free_buffers(struct stub_drain *d)
{
	free(d->buf);
	free(d->tc);
	free(d->scratch);
	d->buf = d->tc = d->scratch = NULL;
}

int stub_drain_attach(struct stub_drain *d, const struct stub_drain_cfg *cfg, char *err,
		      size_t errlen)
{
	struct target *tgt = cfg->tgt;
	uint64_t lo = UINT64_MAX, hi = 0;
	bool returns = false;
	struct stub_guest g = {
	    .cpu_gs_off = cfg->task->cpu_gs_off,
	    .cpu_aux_mask = cfg->task->cpu_aux_mask,
	    /* %gs:offset where the guest says (no exit on any host), else the APIC ID */
	    .cpu_cpuid = cfg->task->cpu_apic_id && !cfg->task->has_cpu_gs,
	    .task = cfg->task,
	    .stack_shift = tgt->stack_shift,
	    .max_depth = SHADOW_MAX_DEPTH,
	    .max_records = cfg->max_records,
	    .exact = cfg->exact_records,
	    .graph = cfg->graph && cfg->returns,
	};
	int ret;

	d->c = *cfg;
	d->nr_probes = 0;
	memset(d->guest_seen, 0, sizeof(d->guest_seen));
	for (size_t i = 0; i < cfg->probes->nr; i++) {
		struct probe *p = &cfg->probes->v[i];

		if (!p->stub)
			continue;
		lo = p->addr < lo ? p->addr : lo;
		hi = p->addr > hi ? p->addr : hi;
		returns |= p->hooks_return;
		d->nr_probes++;
	}
	if (!d->nr_probes)
		return 0;
	/* the drain thread's buffers: a failure is the caller's to report (status 4) */
	d->buf = malloc(DRAIN_BATCH * sizeof(struct stub_rec));
	d->tc = calloc(1, sizeof(struct task_cache));
	d->scratch = malloc(cfg->max_payload + 1);
	if (!d->buf || !d->tc || !d->scratch) {
		free_buffers(d);
		snprintf(err, errlen, "stub drain: out of memory");
		return -ENOMEM;
	}
	d->clock_anchored = d->have_offset = false;
	d->clock_learnt = false;
	if (tgt->ops->tsc_sync && tgt->ops->tsc_sync(tgt, &d->tsc_ref, &d->ns_ref, &d->tsc_khz) == 0 &&
	    d->tsc_khz) {
		d->clock_anchored = true;
	} else {
		d->tsc_khz = clock_host_tsc_khz(); /* QEMU: TCG's TSC is the host's */
		d->clock_learnt = true;
	}
	if (cfg->backpressure)
		g.wait_tsc = (d->tsc_khz ? d->tsc_khz : DRAIN_TSC_KHZ_GUESS) * DRAIN_GUEST_WAIT_MS;
	ret = stub_place(&d->stub, tgt, cfg->nr_cpus, returns, &g, lo, hi, err, errlen);
	if (ret < 0) {
		free_buffers(d);
		return ret;
	}
	for (size_t i = 0; i < cfg->probes->nr; i++) {
		struct probe *p = &cfg->probes->v[i];

		if (!p->stub)
			continue;
		ret = stub_patch(&d->stub, p->addr, p->gpa, p->nop, p->hooks_return,
				 p->event != NULL, g.graph && p->graph_root);
		if (ret < 0) {
			snprintf(err, errlen, "%s: site 0x%" PRIx64 ": %s", p->func->name, p->addr,
				 ret == -EILSEQ	  ? "not a NOP5"
				 : ret == -ERANGE ? "the stub is out of CALL rel32 reach"
				 : ret == -ESTALE ? "rewritten by the guest since it was verified"
						  : "cannot write the CALL");
			/* a write the target failed may have landed all the same: the bytes say */
			p->patched = stub_may_call(&d->stub, p->addr, p->gpa);
			free_buffers(d);
			undo_attach(d);
			return ret;
		}
		p->patched = true;
	}
	atomic_store(&d->stop, 0);
	atomic_store(&d->cut, false);
	atomic_store(&d->hold, false);
	atomic_store(&d->horizon, 0);
	ret = pthread_create(&d->thread, NULL, stub_drain_thread, d);
	if (ret) {
		free_buffers(d);
		atomic_store(&d->horizon, UINT64_MAX);
		undo_attach(d);
		snprintf(err, errlen, "cannot start the stub drain thread: %s", strerror(ret));
		return -ret;
	}
	d->running = true;
	return 0;
}

/* True if vCPU @cpu serves an interrupt (its preempt count has a bit of the task layout's
 * in_interrupt_mask, which vmi sets for Linux; unknown: no): what it
 * interrupted may be the stub's code, to which it returns with an IRET the stub must still be
 * mapped for. */
static bool cpu_in_interrupt(struct stub_drain *d, unsigned cpu)
{
	struct target *tgt = d->c.tgt;
	uint32_t count = 0;

	if (cpu >= VMI_MAX_CPUS || !d->c.task || !d->c.task->preempt_slot[cpu] ||
	    !tgt->ops->read_kernel)
		return false; /* no preempt count to read: a guest whose interrupts we cannot see */
	/* a count that cannot be read says nothing: taken as "in an interrupt" */
	return tgt->ops->read_kernel(tgt, d->c.task->preempt_slot[cpu], &count, 4) < 0 ||
	       (count & d->c.task->in_interrupt_mask) != 0;
}

/* True if some vCPU is executing the stub's code right now, or may return into it from an interrupt
 * (target paused); also when a vCPU's registers cannot be read (a failed or unfinished stop): the
 * stub is unmapped only once every vCPU is known to be out of it. */
static bool cpu_inside(struct stub_drain *d)
{
	for (unsigned i = 0; i < d->c.nr_cpus; i++) {
		struct x86_regs regs;

		if (d->c.tgt->ops->get_regs(d->c.tgt, i, &regs) < 0 ||
		    stub_owns_rip(&d->stub, regs.rip))
			return true;
		if (cpu_in_interrupt(d, i))
			return true;
	}
	return false;
}

void stub_drain_stop(struct stub_drain *d)
{
	struct stub_counters c;

	if (d->running) {
		atomic_store(&d->stop, 1);
		pthread_join(d->thread, NULL);
		d->running = false;
	}
	stub_counters(&d->stub, &c);
	d->guest_lost = c.lost > UINT64_MAX - c.bad_cpu ? UINT64_MAX : c.lost + c.bad_cpu;
	/* the guest's last word, for the writer to mark at the end */
	for (unsigned i = 0; d->nr_probes && i < d->c.nr_cpus && i < STUB_MAX_CPUS; i++)
		stub_drain_note_guest_lost(d, i);
}

void stub_drain_cut(struct stub_drain *d)
{
	atomic_store_explicit(&d->cut, true, memory_order_relaxed);
}

void stub_drain_forget_thread(struct stub_drain *d)
{
	d->running = false;
}

void stub_drain_count_pauses(struct stub_drain *d, uint64_t n, uint64_t ns)
{
	d->pauses += n;
	d->paused_ns += ns;
}

unsigned long long stub_drain_stalls(const struct stub_drain *d)
{
	unsigned long long n = 0;

	for (unsigned i = 0; d->nr_probes && i < d->c.nr_cpus; i++)
		n += d->c.rings[i].stalls;
	return n;
}

int stub_drain_detach(struct stub_drain *d)
{
	struct target *tgt = d->c.tgt;
	int ret = 0, tries = 0;
	int64_t leave_by;

	size_t left;

	if (!d->stub.placed)
		return 0;
	left = unpatch_all(d);
	if (left) {
		/* a CALL that could not be put back must keep its stub */
		fprintf(stderr, "hvtrace: %zu stub probe sites could not be restored: the stub stays "
				"mapped\n",
			left);
		ret = -EIO;
	}
	/* No new entries now, and with the hooked slots handed back no new returns into the stub; a
	 * vCPU in the middle of a routine finishes it (an entry may hook one more slot meanwhile:
	 * the second pass hands that back too). */
	if (stub_restore_slots(&d->stub, false) < 0)
		ret = -EFAULT;
	leave_by = clock_now_ms() + LEAVE_MS;
	while (cpu_inside(d) && tries++ < LEAVE_TRIES && clock_now_ms() < leave_by) {
		if (tgt->ops->run_for) {
			if (tgt->ops->run_for(tgt, LEAVE_RUN_US) < 0)
				break;
			continue;
		}
		tgt->ops->resume(tgt);
		usleep(LEAVE_RUN_US);
		tgt->ops->pause(tgt);
	}
	if (cpu_inside(d)) {
		/* cannot happen: the stub loops only on the shadow-stack lock and, bounded, waiting
		 * for room in a full ring (which the drain, still running, makes); leave it in place
		 */
		fprintf(stderr, "hvtrace: a vCPU stays inside the stub (or in an interrupt that may "
				"return into it, or its registers cannot be read): it is left mapped%s\n",
			ret ? "" : " (every site and return slot is restored)");
		if (!ret)
			ret = -EBUSY; /* nothing else failed: the stub alone stays */
	}
	if (stub_restore_slots(&d->stub, !ret) < 0 && !ret)
		ret = -EFAULT;
	stub_drain_stop(d);
	if (!ret)
		stub_unplace(&d->stub);
	return ret;
}

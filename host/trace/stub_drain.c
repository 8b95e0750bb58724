/* Stub probes in the tracer: which probes become stub probes, patching them in and out with every
 * vCPU stopped, and the drain thread that turns the guest rings' records into the same records trap
 * probes write (rings nr_cpus..2*nr_cpus-1), so every sink works unchanged. */
#include "host/trace/tracer.h"
#include "host/trace/clock.h"

#include <errno.h>
#include <sched.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DRAIN_BATCH	  256
#define DRAIN_IDLE_US	  200
#define HORIZON_SLACK_NS  2000000ull /* a record is committed within this of its timestamp */
#define FINAL_WAIT_PASSES 25000	     /* 5 s without progress at detach: give up on the rest */
#define TASK_CACHE	  256
#define TASK_CACHE_NS	  50000000ull
#define LEAVE_TRIES	  2000
#define LEAVE_RUN_US	  20 /* each short run lets a vCPU finish the stub routine it is in */

bool tracer_stub_capable(const struct tracer *t, uint32_t id)
{
	if (!t->opts.stub || t->ret_events[id])
		return false;
	return !t->events[id] || fe_registers_only(t->events[id]);
}

/* ---- the guest clock ------------------------------------------------------------------------- */

/* Session ns (since t0) of guest TSC @tsc. */
static uint64_t tsc_to_ts(struct tracer *t, uint64_t tsc)
{
	return clock_tsc_to_ns(tsc, t->tsc_ref, t->ns_ref, t->tsc_khz, t->t0);
}

/* ---- task names ------------------------------------------------------------------------------ */

struct task_cache {
	uint64_t ptr[TASK_CACHE];
	struct vmi_task task[TASK_CACHE];
	uint64_t filled_at;
};

/* Kernel memory (a vmi_read_fn): task structs are the same from every CPU. */
static int read_kernel(void *ctx, uint64_t gva, void *buf, size_t len)
{
	struct target *tgt = ctx;

	return tgt->ops->read_kernel(tgt, gva, buf, len);
}

static void task_of(struct tracer *t, struct task_cache *c, unsigned cpu, uint64_t ptr,
		    struct vmi_task *out)
{
	unsigned h = (unsigned)((ptr * 0x9e3779b97f4a7c15ull) >> 56) % TASK_CACHE;

	if (!ptr || !t->tgt->ops->read_kernel) {
		vmi_task_at(&t->task, cpu, 0, read_kernel, t->tgt, out);
		return;
	}
	if (c->ptr[h] == ptr) {
		*out = c->task[h];
		return;
	}
	vmi_task_at(&t->task, cpu, ptr, read_kernel, t->tgt, out);
	c->ptr[h] = ptr;
	c->task[h] = *out;
}

/* ---- the drain thread ------------------------------------------------------------------------ */

/* The slot for @n records of @ring, or NULL when the writer has not made room yet. */
static struct hvt_record *room(struct ring *ring, uint64_t n)
{
	if (!ring_reserve_n(ring, n)) {
		ring->stalls++;
		return NULL;
	}
	return ring_slot(ring, 0);
}

static int no_memory(void *ctx, uint64_t gva, void *buf, size_t len)
{
	(void)ctx;
	(void)gva;
	(void)buf;
	(void)len;
	return -EFAULT;
}

/* One guest record (and @args, the record after it, for an entry with argument registers) into the
 * host record stream of its CPU. False (nothing done) when that ring has no room: the record stays
 * in the guest's ring for the next pass. */
static bool convert(struct tracer *t, struct task_cache *tc, uint8_t *scratch,
		    const struct stub_rec *g, const struct stub_rec *args)
{
	struct probe *p = probe_lookup(&t->probes, g->ip);
	unsigned cpu = g->cpu < t->nr_cpus ? g->cpu : 0;
	struct ring *ring = &t->rings[t->nr_cpus + cpu];
	const struct fe_spec *spec;
	struct hvt_record *rec;
	struct vmi_task task;
	bool deep;

	if (!p)
		return true;
	deep = t->opts.returns && t->opts.max_depth && g->depth >= t->opts.max_depth;
	switch (g->type) {
	case STUB_REC_ENTRY_NOHOOK:
		atomic_fetch_add_explicit(&t->counters[p->id].misses, 1, memory_order_relaxed);
		return true;
	case STUB_REC_DROP:
		atomic_fetch_add_explicit(&t->counters[p->id].unwound, 1, memory_order_relaxed);
		return true;
	case STUB_REC_SKIP:
		return true;
	case STUB_REC_ENTRY:
		if (t->quiet_entry[p->id] || deep) {
			if (tracer_hooks_return(t, p->id))
				atomic_fetch_add_explicit(&t->counters[p->id].hooked, 1,
							  memory_order_relaxed);
			return true;
		}
		spec = t->events[p->id];
		if (spec && args) {
			struct x86_regs regs = {.rdi = args->args[0],
						.rsi = args->args[1],
						.rdx = args->args[2],
						.rcx = args->args[3],
						.r8 = args->args[4],
						.r9 = args->args[5],
						.rax = g->rax};
			size_t len = fe_payload_size(spec);
			uint64_t slots = 1 + hvt_record_payload_slots(len);

			rec = room(ring, slots);
			if (!rec)
				return false;
			fe_capture(spec, &regs, no_memory, NULL, scratch);
			task_of(t, tc, cpu, g->task, &task);
			hvt_record_entry(rec, tsc_to_ts(t, g->tsc), cpu, p->addr, g->parent, &task);
			rec->type = HVT_REC_EVENT;
			rec->value = len;
			rec->depth = tracer_hooks_return(t, p->id) ? g->depth : 0;
			ring_put_payload(ring, scratch, len);
			ring_commit_n(ring, slots);
		} else {
			rec = room(ring, 1);
			if (!rec)
				return false;
			task_of(t, tc, cpu, g->task, &task);
			hvt_record_entry(rec, tsc_to_ts(t, g->tsc), cpu, p->addr, g->parent, &task);
			rec->depth = tracer_hooks_return(t, p->id) ? g->depth : 0;
			ring_commit(ring);
		}
		if (tracer_hooks_return(t, p->id))
			atomic_fetch_add_explicit(&t->counters[p->id].hooked, 1,
						  memory_order_relaxed);
		return true;
	case STUB_REC_RETURN:
		if (deep)
			return true;
		rec = room(ring, 1);
		if (!rec)
			return false;
		task_of(t, tc, cpu, g->task, &task);
		hvt_record_entry(rec, tsc_to_ts(t, g->tsc), cpu, p->addr, g->parent, &task);
		rec->type = HVT_REC_RETURN;
		rec->value = g->rax;
		rec->duration = tsc_to_ts(t, g->tsc) - tsc_to_ts(t, g->t0);
		rec->depth = g->depth;
		ring_commit(ring);
		return true;
	}
	return true;
}

/* Drains what the guest has committed, as far as the host rings have room; *@more says whether some
 * records had to stay in a guest ring. Returns how many records were taken. */
static unsigned drain_pass(struct tracer *t, struct stub_rec *buf, struct task_cache *tc,
			   uint8_t *scratch, bool *more)
{
	uint64_t now = clock_now_ns(), pending = UINT64_MAX, h;
	unsigned total = 0;

	*more = false;
	if (now - tc->filled_at > TASK_CACHE_NS) {
		memset(tc->ptr, 0, sizeof(tc->ptr));
		tc->filled_at = now;
	}
	for (unsigned c = 0; c < t->nr_cpus; c++) {
		unsigned n, k, step;

		while ((n = stub_read(&t->stub, c, buf, DRAIN_BATCH)) > 0) {
			if (!t->clock_anchored) {
				/* no clock from the target: the newest record is about now */
				t->tsc_ref = buf[n - 1].tsc;
				t->ns_ref = now;
				t->clock_anchored = true;
			}
			for (k = 0; k < n; k += step) {
				const struct stub_rec *args = NULL;

				step = 1;
				if (buf[k].type == STUB_REC_ENTRY && (buf[k].flags & STUB_F_ARGS)) {
					if (k + 1 == n)
						break; /* its registers come with the next read */
					if (buf[k + 1].type == STUB_REC_ARGS)
						args = &buf[k + 1];
					step = 2;
				}
				if (!convert(t, tc, scratch, &buf[k], args))
					break;
			}
			if (k)
				stub_consume(&t->stub, c, k);
			t->stub_records += k;
			total += k;
			if (k < n && k + 1 == n && (buf[k].flags & STUB_F_ARGS) &&
			    n < DRAIN_BATCH) {
				/* an entry whose registers are not committed yet: not waiting on
				 * the host */
				*more = true;
				break;
			}
			if (k < n) {
				/* the writer first: nothing of this CPU from here on is in a host
				 * ring */
				uint64_t ts = tsc_to_ts(t, buf[k].tsc);

				pending = ts < pending ? ts : pending;
				*more = true;
				break;
			}
			if (n < DRAIN_BATCH)
				break;
		}
	}
	/* Records still to come were taken after the pass started, less the slack (one that anchors
	 * the clock later is stamped with the time of its pass, later still), or are the ones left
	 * waiting. */
	h = now - t->t0 > HORIZON_SLACK_NS ? now - t->t0 - HORIZON_SLACK_NS : 0;
	atomic_store(&t->stub_horizon, h < pending ? h : pending);
	return total;
}

static void *drain_thread(void *arg)
{
	struct tracer *t = arg;
	struct stub_rec *buf = malloc(DRAIN_BATCH * sizeof(*buf));
	struct task_cache *tc = calloc(1, sizeof(*tc));
	uint8_t *scratch = malloc(t->max_payload + 1);

	if (!buf || !tc || !scratch) {
		fprintf(stderr, "hvtrace: stub drain: out of memory\n");
		exit(4);
	}
	/* A guest ring holds a few milliseconds of events: the drain must not wait behind busy vCPU
	 * threads for a time slice. Best effort (needs CAP_SYS_NICE); it sleeps whenever it is
	 * idle. */
	struct sched_param sp = {.sched_priority = 1};

	pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	bool more;
	unsigned idle = 0;

	while (!atomic_load(&t->drain_stop))
		if (!drain_pass(t, buf, tc, scratch, &more))
			usleep(DRAIN_IDLE_US);
	/* the rest, while the writer makes room (it runs until after the detach) */
	for (;;) {
		if (drain_pass(t, buf, tc, scratch, &more))
			idle = 0;
		else if (!more || idle++ >= FINAL_WAIT_PASSES)
			break;
		else
			usleep(DRAIN_IDLE_US);
	}
	atomic_store(&t->stub_horizon, UINT64_MAX);
	free(buf);
	free(tc);
	free(scratch);
	return NULL;
}

/* ---- attach and detach ----------------------------------------------------------------------- */

static void unpatch_all(struct tracer *t)
{
	for (size_t i = 0; i < t->probes.nr; i++) {
		struct probe *p = &t->probes.v[i];

		if (p->patched && stub_unpatch(&t->stub, p->addr, p->nop) == 0)
			p->patched = false;
	}
}

int tracer_stub_attach(struct tracer *t, char *err, size_t errlen)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	bool returns = false;
	struct stub_guest g = {
	    .cpu_gs_off = t->task.cpu_gs_off,
	    .task = &t->task,
	    .stack_shift = t->tgt->stack_shift,
	    .max_depth = SHADOW_MAX_DEPTH,
	    /* --buffer-size-kb bounds the guest's rings too (its records are twice the size) */
	    .max_records = t->opts.ring_records / 2,
	    .graph = t->opts.graph_filter && t->opts.returns,
	};
	int ret;

	for (size_t i = 0; i < t->probes.nr; i++) {
		struct probe *p = &t->probes.v[i];

		if (!p->stub)
			continue;
		lo = p->addr < lo ? p->addr : lo;
		hi = p->addr > hi ? p->addr : hi;
		returns |= tracer_hooks_return(t, p->id);
	}
	if (!t->nr_stub_probes)
		return 0;
	ret = stub_place(&t->stub, t->tgt, t->nr_cpus, returns, &g, lo, hi, err, errlen);
	if (ret < 0)
		return ret;
	if (t->tgt->ops->tsc_sync &&
	    t->tgt->ops->tsc_sync(t->tgt, &t->tsc_ref, &t->ns_ref, &t->tsc_khz) == 0 && t->tsc_khz)
		t->clock_anchored = true;
	else
		t->tsc_khz = clock_host_tsc_khz(); /* QEMU: TCG's TSC is the host's */
	for (size_t i = 0; i < t->probes.nr; i++) {
		struct probe *p = &t->probes.v[i];

		if (!p->stub)
			continue;
		ret = stub_patch(&t->stub, p->addr, tracer_hooks_return(t, p->id),
				 t->events[p->id] != NULL, g.graph && t->graph_root[p->id], p->nop);
		if (ret < 0) {
			snprintf(err, errlen, "%s: site 0x%" PRIx64 ": %s", p->func->name, p->addr,
				 ret == -EILSEQ	  ? "not a NOP5"
				 : ret == -ERANGE ? "the stub is out of CALL rel32 reach"
						  : "cannot write the CALL");
			unpatch_all(t);
			stub_unplace(&t->stub);
			return ret;
		}
		p->patched = true;
	}
	atomic_store(&t->drain_stop, 0);
	atomic_store(&t->stub_horizon, 0);
	ret = pthread_create(&t->drain, NULL, drain_thread, t);
	if (ret) {
		unpatch_all(t);
		stub_unplace(&t->stub);
		snprintf(err, errlen, "cannot start the stub drain thread: %s", strerror(ret));
		return -ret;
	}
	t->drain_running = true;
	return 0;
}

/* True if some vCPU is executing the stub's code right now (target paused). */
static bool cpu_inside(struct tracer *t)
{
	for (unsigned i = 0; i < t->nr_cpus; i++) {
		struct x86_regs regs;

		if (t->tgt->ops->get_regs(t->tgt, i, &regs) == 0 &&
		    stub_owns_rip(&t->stub, regs.rip))
			return true;
	}
	return false;
}

void tracer_stub_stop(struct tracer *t)
{
	struct stub_counters c;

	if (t->drain_running) {
		atomic_store(&t->drain_stop, 1);
		pthread_join(t->drain, NULL);
		t->drain_running = false;
	}
	stub_counters(&t->stub, &c);
	t->stub_lost = c.lost + c.bad_cpu;
}

int tracer_stub_detach(struct tracer *t)
{
	int ret = 0, tries = 0;

	if (!t->stub.placed)
		return 0;
	unpatch_all(t);
	/* No new entries now, and with the hooked slots handed back no new returns into the stub; a
	 * vCPU in the middle of a routine finishes it (an entry may hook one more slot meanwhile:
	 * the second pass hands that back too). */
	if (stub_restore_slots(&t->stub, false) < 0)
		ret = -EFAULT;
	while (cpu_inside(t) && tries++ < LEAVE_TRIES) {
		t->tgt->ops->resume(t->tgt);
		usleep(LEAVE_RUN_US);
		t->tgt->ops->pause(t->tgt);
	}
	if (cpu_inside(t)) {
		/* cannot happen: the stub has no loop but the shadow-stack lock; leave it in place
		 */
		fprintf(stderr, "hvtrace: a vCPU stays inside the stub: it is left mapped\n");
		ret = -EBUSY;
	}
	if (stub_restore_slots(&t->stub, !ret) < 0 && !ret)
		ret = -EFAULT;
	t->restored_slots += t->stub.restored_slots;
	tracer_stub_stop(t);
	if (!ret)
		stub_unplace(&t->stub);
	return ret;
}

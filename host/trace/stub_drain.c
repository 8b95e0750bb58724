#include "host/trace/stub_drain.h"
#include "host/trace/clock.h"
#include "host/trace/shadow.h"

#include <errno.h>
#include <x86intrin.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CLOCK_WARMUP_NAP_NS 20000ull	  /* learning the guest's clock: naps at most this, */
#define CLOCK_WARMUP_NS	    500000000ull /* until the first record and for this long after it */
#define DRAIN_BATCH	    1024
#define DRAIN_IDLE_US	    200	       /* the final drain, waiting for the writer */
#define DRAIN_SLEEP_MIN_NS  STUB_DRAIN_SLEEP_MIN_NS /* the drain sleeps after every pass: at least
						     * this, */
#define DRAIN_SLEEP_IDLE_NS STUB_DRAIN_SLEEP_MAX_NS /* at most this, also while nothing comes
						     * (a TCG vCPU fills a 65536-record ring in
						     * ~35 ms: a wake-up 15 times late loses
						     * nothing), */
#define DRAIN_SLEEP_COLD_NS 1000000ull	/* or this before the first record, */
#define DRAIN_HOLD_NS	    200000ull	/* while the vCPUs are held: the writer makes room */
#define DRAIN_FILL_DIV                                                                             \
	4 /* and at most what fills 1/4 of a ring at the peak rate:                                \
	   * a wake-up that comes late by 3 times its sleep loses                                  \
	   * nothing */
/* Backpressure in the guest: a stub that finds its ring full waits up to this long for the drain
 * (measured: a drain at nice -10 on a busy 2-CPU host woke up to ~150 ms late), then gives up on
 * waiting until the drain comes again. */
#define DRAIN_GUEST_WAIT_MS  250ull
#define DRAIN_TSC_KHZ_GUESS  3000000ull /* a TSC rate when none is known */
#define DRAIN_NICE	    -10
#define DRAIN_SLICE_NS	    100000ull /* EEVDF slice asked for without real-time priority */

/* sched_setattr(2)'s argument (linux/sched/types.h clashes with <sched.h>). */
struct drain_sched_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
};
#define HORIZON_SLACK_NS  2000000ull /* a record is committed within this of its timestamp */
#define FINAL_WAIT_PASSES 25000	     /* 5 s without progress at detach: give up on the rest */
#define TASK_CACHE	  4096 /* tasks named at once (a hash of pointer and identity) */
#define TASK_CACHE_NS	  50000000ull
#define LEAVE_TRIES	  2000
#define LEAVE_RUN_US	  20 /* each short run lets a vCPU finish the stub routine it is in */
#define LEAVE_MS	  3000 /* and all of them together at most (QEMU: each run is a gdbstub round trip) */

bool stub_drain_capable(const struct probe *p)
{
	if (p->ret_event && !fe_return_register_only(p->ret_event))
		return false;
	return !p->event || fe_registers_only(p->event);
}

void stub_drain_init(struct stub_drain *d)
{
	memset(d, 0, sizeof(*d));
	atomic_store(&d->hold, false);
	atomic_store(&d->horizon, UINT64_MAX);
}

/* ---- the guest clock ------------------------------------------------------------------------- */

/* No clock from the target (QEMU, whose TCG guest TSC is the host's TSC plus an offset; under KVM
 * the same without TSC scaling): @tsc, the newest record's, was read just now, so guest TSC - host
 * TSC now is at most the offset, and the largest such difference seen is the offset to within the
 * shortest time a record waited for the drain. The anchor is a host TSC and monotonic time read
 * together now, so that a rate measured over 20 ms errs over a drain period, not the session. A
 * difference more than a second of TSC above the offset is the guest's lie, not time: ignored. */
static void learn_clock(struct stub_drain *d, uint64_t tsc)
{
	uint64_t host = __rdtsc(), ns = clock_now_ns();
	int64_t diff = (int64_t)(tsc - host);

	if (!d->have_offset ||
	    (diff > d->tsc_offset && (uint64_t)(diff - d->tsc_offset) < d->tsc_khz * 1000)) {
		if (!d->have_offset)
			d->offset_since = ns;
		d->tsc_offset = diff;
		d->have_offset = true;
	}
	d->tsc_ref = host + (uint64_t)d->tsc_offset;
	d->ns_ref = ns;
	d->clock_anchored = true;
}

/* Session ns (since t0) of guest TSC @tsc. */
static uint64_t tsc_to_ts(const struct stub_drain *d, uint64_t tsc)
{
	return clock_tsc_to_ns(tsc, d->tsc_ref, d->ns_ref, d->tsc_khz, d->c.t0);
}

/* ---- task names ------------------------------------------------------------------------------ */

/* Tasks by task struct pointer and the identity the stub recorded (R_TASK_ID), as the stub announced
 * them (STUB_REC_TASK: pid and comm read in the guest when that task started running on a CPU, or
 * changed) or else as read from guest memory: a task struct reused by a new task, or a task renamed
 * by exec, has a new identity, so a record is named as its task was when the event happened, however
 * late the drain reads it. Records without an identity (0: a guest layout without comm) fall back
 * to the pointer alone, those entries emptied every TASK_CACHE_NS. */
struct task_cache {
	uint64_t ptr[TASK_CACHE];
	uint32_t id[TASK_CACHE];
	struct vmi_task task[TASK_CACHE];
	uint64_t filled_at;
};

/* Kernel memory (a vmi_read_fn): task structs are the same from every CPU. */
static int read_kernel(void *ctx, uint64_t gva, void *buf, size_t len)
{
	struct target *tgt = ctx;

	return tgt->ops->read_kernel(tgt, gva, buf, len);
}

static unsigned task_slot(uint64_t ptr, uint32_t id)
{
	return (unsigned)(((ptr ^ id) * 0x9e3779b97f4a7c15ull) >> 52) % TASK_CACHE;
}

/* A STUB_REC_TASK record: the stub says which task runs on its CPU from here on, as it was then
 * (pid and comm read in the guest at that moment; guest-written, bounded: the comm is cut to
 * VMI_COMM_LEN - 1 bytes). */
static void task_announced(struct task_cache *c, const struct stub_rec *g)
{
	unsigned h = task_slot(g->task, g->task_id);
	struct vmi_task *t = &c->task[h];

	if (!g->task || !g->task_id)
		return;
	c->ptr[h] = g->task;
	c->id[h] = g->task_id;
	t->pid = (int32_t)(uint32_t)g->ip;
	memcpy(t->comm, &g->rax, 8);
	memcpy(t->comm + 8, &g->t0, 8);
	t->comm[VMI_COMM_LEN - 1] = 0;
}

/* The task of a record: @ptr its task struct, @id its R_TASK_ID. A task read whose identity is not
 * @id changed after the event (it is named as it is now) and is counted in tasks_changed. */
static void task_of(struct stub_drain *d, struct task_cache *c, unsigned cpu, uint64_t ptr,
		    uint32_t id, struct vmi_task *out)
{
	unsigned h = task_slot(ptr, id);
	struct target *tgt = d->c.tgt;
	uint32_t now_id;

	if (!ptr || !tgt->ops->read_kernel) {
		vmi_task_at(d->c.task, cpu, 0, read_kernel, tgt, out);
		return;
	}
	if (c->ptr[h] == ptr && c->id[h] == id) {
		*out = c->task[h];
		return;
	}
	vmi_task_at(d->c.task, cpu, ptr, read_kernel, tgt, out);
	if (id) {
		now_id = stub_task_id(out->pid, (const unsigned char *)out->comm);
		if (now_id != id) {
			d->tasks_changed++;
			return; /* not cached under an identity that is not its own */
		}
	}
	c->ptr[h] = ptr;
	c->id[h] = id;
	c->task[h] = *out;
}

/* ---- the drain thread ------------------------------------------------------------------------ */

static int no_memory(void *ctx, uint64_t gva, void *buf, size_t len)
{
	(void)ctx;
	(void)gva;
	(void)buf;
	(void)len;
	return -EFAULT;
}

/* Whether guest record @g, read from CPU @cpu's ring, is one the stub the host placed can have
 * written: a known type, that CPU, a stub probe's site, a depth within the bound the host gave
 * the stub (its own copy, not the header's), and records of hooked returns only for probes whose
 * returns are hooked. The guest can write anything there: the rest is forged, and rejected. */
static bool valid(const struct stub_drain *d, unsigned cpu, const struct probe *p,
		  const struct stub_rec *g)
{
	if (!p || !p->stub || g->cpu != cpu || g->depth >= d->stub.max_depth)
		return false;
	switch (g->type) {
	case STUB_REC_ENTRY:
		/* recorded outside the graph for its -e event alone (STUB_F_ALONE) */
		return !(g->flags & STUB_F_ALONE) || p->event;
	case STUB_REC_SKIP:
		return true;
	case STUB_REC_ENTRY_NOHOOK:
	case STUB_REC_RETURN:
	case STUB_REC_DROP:
		return p->hooks_return;
	default: /* unknown, or the argument registers without their entry */
		return false;
	}
}

/* ring_emit, unless tracing was off at @rec's time or the record filter drops it (counted): then
 * done as an emitted record. */
static bool emit_kept(struct stub_drain *d, struct ring *ring, const struct hvt_record *rec,
		      const void *payload, size_t len)
{
	if (d->c.tracing && !tracing_state_at(d->c.tracing, rec->ts))
		return true; /* tracing was off then (--tracing-off, traceoff) */
	if (d->c.keep && !rec_filter_keep(d->c.keep, rec, payload, len)) {
		atomic_fetch_add_explicit(&d->filtered, 1, memory_order_relaxed);
		return true;
	}
	return ring_emit(ring, rec, payload, len);
}

/* One guest record of CPU @cpu's ring (and @args, the record after it, for an entry with argument
 * registers) into the host record stream of that CPU. False (nothing done) when that ring has no
 * room: the record stays in the guest's ring for the next pass. A forged record is counted in
 * `rejected` and dropped. */
static bool convert(struct stub_drain *d, unsigned cpu, struct task_cache *tc, uint8_t *scratch,
		    const struct stub_rec *g, const struct stub_rec *args)
{
	struct probe *p = probe_lookup(d->c.probes, g->ip);
	struct ring *ring = &d->c.rings[cpu];
	struct hvt_record rec;
	struct vmi_task task;
	uint64_t ts, t0;
	size_t len = 0;
	bool deep, alone;

	if (g->type == STUB_REC_TASK && g->cpu == cpu) {
		task_announced(tc, g);
		return true;
	}
	if (!valid(d, cpu, p, g)) {
		d->rejected++;
		return true;
	}
	deep = d->c.returns && d->c.max_depth && g->depth >= d->c.max_depth;
	switch (g->type) {
	case STUB_REC_ENTRY_NOHOOK:
		atomic_fetch_add_explicit(&p->n.misses, 1, memory_order_relaxed);
		return true;
	case STUB_REC_DROP:
		atomic_fetch_add_explicit(&p->n.unwound, 1, memory_order_relaxed);
		return true;
	case STUB_REC_SKIP:
		return true;
	case STUB_REC_ENTRY:
		/* like ftrace's trace events, an -e event fires where function_graph does not trace
		 * the call (outside -g's graph, past --max-depth): alone, at the graph's depth
		 * there */
		alone = (g->flags & STUB_F_ALONE) || deep;
		if (!p->quiet_entry && (!alone || (p->event && args))) {
			task_of(d, tc, cpu, g->task, g->task_id, &task);
			hvt_record_entry(&rec, tsc_to_ts(d, g->tsc), cpu, p->addr, g->parent, &task);
			rec.depth = p->hooks_return ? g->depth : 0;
			if (deep)
				rec.depth = (uint8_t)d->c.max_depth;
			if (p->event && args) {
				struct x86_regs regs = {.rdi = args->args[0],
							.rsi = args->args[1],
							.rdx = args->args[2],
							.rcx = args->args[3],
							.r8 = args->args[4],
							.r9 = args->args[5],
							.rax = g->rax};

				len = fe_payload_size(p->event);
				fe_capture(p->event, &regs, no_memory, NULL, scratch);
				rec.type = alone ? HVT_REC_EVENT_ALONE : HVT_REC_EVENT;
				rec.value = len;
			}
			if (!emit_kept(d, ring, &rec, scratch, len))
				return false;
		}
		if (p->hooks_return && !(g->flags & STUB_F_ALONE))
			atomic_fetch_add_explicit(&p->n.hooked, 1, memory_order_relaxed);
		return true;
	case STUB_REC_RETURN:
		if (deep)
			return true;
		task_of(d, tc, cpu, g->task, g->task_id, &task);
		ts = tsc_to_ts(d, g->tsc);
		t0 = tsc_to_ts(d, g->t0);
		hvt_record_entry(&rec, ts, cpu, p->addr, g->parent, &task);
		rec.type = HVT_REC_RETURN;
		rec.value = g->rax;
		if (p->ret_event) {
			/* typed return: its fields are RAX alone, handed over as the first
			 * argument as the trap path does */
			struct x86_regs regs = {.rdi = g->rax, .rax = g->rax};

			len = fe_payload_size(p->ret_event);
			fe_capture(p->ret_event, &regs, no_memory, NULL, scratch);
			rec.type = HVT_REC_RETURN_EVENT;
			rec.value = len;
		}
		rec.duration = ts > t0 ? ts - t0 : 0;
		rec.depth = g->depth;
		return emit_kept(d, ring, &rec, scratch, len);
	}
	return true;
}

/* Marks in vCPU @c's host ring (ring_lost) what its guest ring says it could not take since the
 * last look (guest-reported: a count that went back is only taken as the new base). After the
 * records read with that count: they were in the ring while it was full. */
static void note_guest_lost(struct stub_drain *d, unsigned c)
{
	uint64_t now = d->stub.lost[c];

	if (now > d->guest_seen[c])
		ring_lost(&d->c.rings[c], now - d->guest_seen[c], c);
	d->guest_seen[c] = now;
}

/* Drains what the guest has committed, as far as the host rings have room; *@more says whether some
 * records had to stay in a guest ring, *@stalled how many at most a guest ring still holds that a
 * full host ring kept there (0: none did). @final: no vCPU can commit a record any more, so nothing is
 * waited for: an entry's missing registers, a record reserved but never committed (skipped, and
 * counted lost). Returns how many records were taken. */
static unsigned drain_pass(struct stub_drain *d, struct stub_rec *buf, struct task_cache *tc,
			   uint8_t *scratch, bool final, bool *more, uint64_t *stalled)
{
	uint64_t now = clock_now_ns(), pending = UINT64_MAX, h;
	unsigned total = 0;

	*more = false;
	*stalled = 0;
	if (now - tc->filled_at > TASK_CACHE_NS) {
		for (unsigned i = 0; i < TASK_CACHE; i++)
			if (!tc->id[i])
				tc->ptr[i] = 0;
		tc->filled_at = now;
	}
	for (unsigned c = 0; c < d->c.nr_cpus; c++) {
		unsigned n, k, step, gap;

		for (;;) {
			n = stub_read(&d->stub, c, buf, DRAIN_BATCH);
			if (!n && final &&
			    (gap = stub_skip_uncommitted(&d->stub, c, buf, DRAIN_BATCH))) {
				d->lost += gap;
				ring_lost(&d->c.rings[c], gap, c);
				continue;
			}
			if (!n) {
				note_guest_lost(d, c);
				break;
			}
			if (d->clock_learnt)
				learn_clock(d, buf[n - 1].tsc);
			for (k = 0; k < n; k += step) {
				const struct stub_rec *args = NULL;

				step = 1;
				if (buf[k].type == STUB_REC_ENTRY && (buf[k].flags & STUB_F_ARGS)) {
					if (k + 1 == n && (!final || n == DRAIN_BATCH))
						break; /* its registers come with the next read */
					if (k + 1 < n && buf[k + 1].type == STUB_REC_ARGS) {
						args = &buf[k + 1];
						step = 2;
					}
				}
				if (!convert(d, c, tc, scratch, &buf[k], args))
					break;
			}
			if (k)
				stub_consume(&d->stub, c, k);
			d->records += k;
			total += k;
			if (k == n)
				note_guest_lost(d, c);
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
				uint64_t ts = tsc_to_ts(d, buf[k].tsc), left = stub_backlog(&d->stub, c);

				pending = ts < pending ? ts : pending;
				*more = true;
				*stalled = left > *stalled ? left : *stalled;
				break;
			}
			if (n < DRAIN_BATCH)
				break;
		}
	}
	/* Records still to come were taken after the pass started, less the slack (one that anchors
	 * the clock later is stamped with the time of its pass, later still), or are the ones left
	 * waiting. */
	h = now - d->c.t0 > HORIZON_SLACK_NS ? now - d->c.t0 - HORIZON_SLACK_NS : 0;
	atomic_store(&d->horizon, h < pending ? h : pending);
	return total;
}

/* Gives up on what the guest rings still hold (the host rings stayed full): every record committed
 * or skipped there is counted lost. */
static void discard_rest(struct stub_drain *d, struct stub_rec *buf)
{
	for (unsigned c = 0; c < d->c.nr_cpus; c++) {
		for (;;) {
			unsigned n = stub_read(&d->stub, c, buf, DRAIN_BATCH);

			if (n) {
				if (stub_consume(&d->stub, c, n) < 0)
					break;
			} else if (!(n = stub_skip_uncommitted(&d->stub, c, buf, DRAIN_BATCH))) {
				break;
			}
			d->lost += n;
			ring_lost(&d->c.rings[c], n, c);
		}
	}
}

/* How long the drain sleeps after a pass that took @taken records @cycle_ns after the one before:
 * long enough that about 1/DRAIN_FILL_DIV of a ring has come in at the rate just seen, doubling
 * while nothing comes, never so long that 1/DRAIN_FILL_DIV of a ring (@ring records per CPU) fills
 * at the session's peak rate (@peak, records per ms, every record counted as if on one CPU), and
 * never less than DRAIN_SLEEP_MIN_NS: the drain never spins, whatever its priority. Nor more than
 * DRAIN_SLEEP_IDLE_NS: measured, a drain thread at nice -10 next to busy vCPU threads on a 2-CPU host
 * can wake 60 ms late, which a longer sleep turns into lost records. */
uint64_t stub_drain_sleep_ns(uint64_t taken, uint64_t cycle_ns, uint64_t ring, uint64_t peak,
			     uint64_t prev)
{
	uint64_t want = ring / DRAIN_FILL_DIV, bound = DRAIN_SLEEP_COLD_NS, ns;

	if (peak)
		bound = want * 1000000ull / peak;
	if (taken)
		ns = cycle_ns / taken * want;
	else
		ns = prev ? prev * 2 : DRAIN_SLEEP_MIN_NS;
	if (ns > DRAIN_SLEEP_IDLE_NS)
		ns = DRAIN_SLEEP_IDLE_NS;
	if (ns > bound)
		ns = bound;
	return ns < DRAIN_SLEEP_MIN_NS ? DRAIN_SLEEP_MIN_NS : ns;
}

bool stub_drain_hold_next(bool held, uint64_t fill, uint64_t ring)
{
	return fill >= STUB_HOLD_HIGH(ring) || (held && fill > STUB_HOLD_LOW(ring));
}

/* No real-time priority: the rings are large enough (the default holds 65536 records per CPU) that
 * a wake-up delayed by busy vCPU threads loses nothing, the batches being a quarter of a ring. A
 * higher CFS weight and a short EEVDF slice get the wake-up preferred; best effort (an unprivileged
 * hvtrace keeps nice 0). */
static void drain_priority(void)
{
	struct drain_sched_attr a = {.size = sizeof(a),
				     .sched_policy = SCHED_OTHER,
				     .sched_nice = DRAIN_NICE,
				     .sched_runtime = DRAIN_SLICE_NS};

	syscall(SYS_sched_setattr, 0, &a, 0);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
			      .tv_nsec = (long)(ns % 1000000000ull)};

	nanosleep(&ts, NULL);
}

static void *drain_thread(void *arg)
{
	struct stub_drain *d = arg;
	/* allocated by stub_drain_attach (an allocation that fails there ends the run on the main
	 * thread: this thread never exits the process), freed here */
	struct stub_rec *buf = d->buf;
	struct task_cache *tc = d->tc;
	uint8_t *scratch = d->scratch;
	uint64_t ring = d->stub.ring_records, peak = 0, nap = 0, last = clock_now_ns(), stalled;
	bool more;
	unsigned idle = 0;

	d->buf = d->tc = d->scratch = NULL;
	drain_priority();
	while (!atomic_load(&d->stop)) {
		uint64_t taken = drain_pass(d, buf, tc, scratch, false, &more, &stalled);
		uint64_t now = clock_now_ns(), cycle = now > last ? now - last : 1;
		bool hold = d->c.backpressure &&
			    stub_drain_hold_next(stub_drain_holding(d), stalled, ring);

		atomic_store_explicit(&d->hold, hold, memory_order_relaxed);
		last = now;
		if (taken && taken * 1000000ull / cycle > peak)
			peak = taken * 1000000ull / cycle;
		nap = stub_drain_sleep_ns(taken, cycle, ring, peak, taken ? 0 : nap);
		/* the guest's clock is learnt from the records: in its first CLOCK_WARMUP_NS they are
		 * read as soon as they come, so that the offset (and they) err by microseconds, not
		 * by a long nap (a burst after an idle spell waits for the nap) */
		if (d->clock_learnt && nap > CLOCK_WARMUP_NAP_NS &&
		    (!d->have_offset || now - d->offset_since < CLOCK_WARMUP_NS))
			nap = CLOCK_WARMUP_NAP_NS;
		sleep_ns(hold && nap > DRAIN_HOLD_NS ? DRAIN_HOLD_NS : nap);
	}
	atomic_store(&d->hold, false); /* stopping: the owner must be free to stop the target */
	/* One ordinary pass first, as if the last sleep had ended now: the guest's lost counts as they
	 * stand are noted ahead of the records the final passes skip (one lost mark, not two) */
	drain_pass(d, buf, tc, scratch, false, &more, &stalled);
	/* the rest, while the writer makes room (it runs until after the detach); no vCPU can
	 * commit a record now */
	for (;;) {
		if (atomic_load_explicit(&d->cut, memory_order_relaxed)) {
			more = true;
			break;
		}
		if (drain_pass(d, buf, tc, scratch, true, &more, &stalled))
			idle = 0;
		else if (!more)
			break;
		else if (idle++ >= FINAL_WAIT_PASSES)
			break;
		else
			usleep(DRAIN_IDLE_US);
	}
	if (more)
		discard_rest(d, buf);
	atomic_store(&d->horizon, UINT64_MAX);
	free(buf);
	free(tc);
	free(scratch);
	return NULL;
}

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
	ret = pthread_create(&d->thread, NULL, drain_thread, d);
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

	return cpu < VMI_MAX_CPUS && d->c.task && d->c.task->preempt_slot[cpu] &&
	       tgt->ops->read_kernel &&
	       tgt->ops->read_kernel(tgt, d->c.task->preempt_slot[cpu], &count, 4) == 0 &&
	       (count & d->c.task->in_interrupt_mask) != 0;
}

/* True if some vCPU is executing the stub's code right now, or may return into it from an interrupt
 * (target paused). */
static bool cpu_inside(struct stub_drain *d)
{
	for (unsigned i = 0; i < d->c.nr_cpus; i++) {
		struct x86_regs regs;

		if (d->c.tgt->ops->get_regs(d->c.tgt, i, &regs) == 0 &&
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
		note_guest_lost(d, i);
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
				"return into it): it is left mapped%s\n",
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

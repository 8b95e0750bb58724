#include "host/trace/stub_drain.h"
#include "host/trace/stub_drain_int.h"
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

bool stub_drain_capable(const struct probe *p)
{
	if (p->inside && !p->detour)
		return false; /* no detour planned there: a breakpoint */
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
	uint64_t ns = clock_now_ns();
	/* a guest counter that runs with CLOCK_MONOTONIC (arm64 under TCG): the host's "TSC" is
	 * that clock at the counter's rate */
	uint64_t host = d->host_counter ? (uint64_t)((unsigned __int128)ns * d->tsc_khz / 1000000)
					: __rdtsc();
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

/* Session ns (since t0) of guest TSC @tsc read on CPU @cpu: through the host TSC where the target
 * follows the vCPUs' offsets, else through the one anchor. */
static uint64_t tsc_to_ts(struct stub_drain *d, unsigned cpu, uint64_t tsc)
{
	struct target *tgt = d->c.tgt;
	uint64_t host;

	if (d->follow && tgt->ops->tsc_host(tgt, cpu, tsc, &host))
		return clock_tsc_to_ns(host, d->host_ref, d->host_ns_ref, d->tsc_khz, d->c.t0);
	return clock_tsc_to_ns(tsc, d->tsc_ref, d->ns_ref, d->tsc_khz, d->c.t0);
}

/* Takes in the target's offset moves up to now where it follows them (from when the vCPUs first
 * run, which may be after the attach), after records were read: every move before a
 * record read was made before that record was written. The host TSC and monotonic clock are read
 * side by side for the records' conversion. */
static void follow_update(struct stub_drain *d)
{
	struct target *tgt = d->c.tgt;

	if (!d->clock_anchored || !tgt->ops->tsc_update || !tgt->ops->tsc_host ||
	    !(d->follow = tgt->ops->tsc_update(tgt)))
		return;
	d->host_ns_ref = clock_now_ns();
	d->host_ref = __rdtsc();
}

/* ---- task names ------------------------------------------------------------------------------ */

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

/* The stub probe whose site a record names: an fentry site, or a detour's slot. */
static struct probe *site_probe(const struct stub_drain *d, uint64_t ip)
{
	long k;

	if (d->nr_detours && (k = stub_detour_index(&d->stub, ip)) >= 0 &&
	    (unsigned long)k < d->nr_detours)
		return d->detour_probe[k];
	return probe_lookup(d->c.probes, ip);
}

/* One guest record of CPU @cpu's ring (and @args, the record after it, for an entry with argument
 * registers) into the host record stream of that CPU. False (nothing done) when that ring has no
 * room: the record stays in the guest's ring for the next pass. A forged record is counted in
 * `rejected` and dropped. */
static bool convert(struct stub_drain *d, unsigned cpu, struct task_cache *tc, uint8_t *scratch,
		    const struct stub_rec *g, const struct stub_rec *args)
{
	struct probe *p = site_probe(d, g->ip);
	struct ring *ring = &d->c.rings[cpu];
	struct hvt_record rec;
	struct vmi_task task;
	uint64_t ts, t0;
	size_t len = 0;
	bool deep, alone;

	if (g->type == STUB_REC_TASK && g->cpu == cpu) {
		task_announced(tc, g);
		d->announced++;
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
			hvt_record_entry(&rec, tsc_to_ts(d, cpu, g->tsc), cpu, p->addr, g->parent, &task);
			rec.depth = p->hooks_return ? g->depth : 0;
			if (deep)
				rec.depth = (uint8_t)d->c.max_depth;
			if (p->inside) {
				/* an instruction inside a function: its event alone, no caller */
				rec.parent = 0;
				rec.depth = 0;
				alone = true;
			}
			if (p->event && args) {
				const struct arch *a = target_arch(d->c.tgt);
				const unsigned nr = sizeof(args->args) / sizeof(args->args[0]);
				struct arch_regs regs = {{0}};

				for (unsigned n = 0; n < nr; n++)
					arch_regs_set_arg(a, &regs, n, args->args[n]);
				arch_regs_set_ret(a, &regs, g->rax);
				len = fe_payload_size(p->event);
				fe_capture(a, p->event, &regs, no_memory, NULL, scratch);
				rec.type = alone ? HVT_REC_EVENT_ALONE : HVT_REC_EVENT;
				rec.value = len;
			}
			if (emit_gate(&d->gate, ring, cpu, NULL, &rec, scratch, len) < 0)
				return false;
		}
		if (p->hooks_return && !(g->flags & STUB_F_ALONE))
			atomic_fetch_add_explicit(&p->n.hooked, 1, memory_order_relaxed);
		return true;
	case STUB_REC_RETURN:
		if (deep)
			return true;
		task_of(d, tc, cpu, g->task, g->task_id, &task);
		ts = tsc_to_ts(d, cpu, g->tsc);
		t0 = tsc_to_ts(d, cpu, g->t0);
		hvt_record_entry(&rec, ts, cpu, p->addr, g->parent, &task);
		rec.type = HVT_REC_RETURN;
		rec.value = g->rax;
		if (p->ret_event) {
			/* typed return: its fields are RAX alone, handed over as the first
			 * argument as the trap path does */
			const struct arch *a = target_arch(d->c.tgt);
			struct arch_regs regs = {{0}};

			arch_regs_set_arg(a, &regs, 0, g->rax);
			arch_regs_set_ret(a, &regs, g->rax);
			len = fe_payload_size(p->ret_event);
			fe_capture(a, p->ret_event, &regs, no_memory, NULL, scratch);
			rec.type = HVT_REC_RETURN_EVENT;
			rec.value = len;
		}
		rec.duration = ts > t0 ? ts - t0 : 0;
		rec.depth = g->depth;
		return emit_gate(&d->gate, ring, cpu, NULL, &rec, scratch, len) == 0;
	}
	return true;
}

/* Marks in vCPU @c's host ring (ring_lost) what its guest ring says it could not take since the
 * last look (guest-reported: a count that went back is only taken as the new base). After the
 * records read with that count: they were in the ring while it was full. */
void stub_drain_note_guest_lost(struct stub_drain *d, unsigned c)
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
				stub_drain_note_guest_lost(d, c);
				break;
			}
			if (d->clock_learnt)
				learn_clock(d, buf[n - 1].tsc);
			follow_update(d);
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
				stub_drain_note_guest_lost(d, c);
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
				uint64_t ts = tsc_to_ts(d, c, buf[k].tsc), left = stub_backlog(&d->stub, c);

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

void *stub_drain_thread(void *arg)
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


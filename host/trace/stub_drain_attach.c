/* Stub probes' attach, stop and detach (the drain thread itself is stub_drain.c): the stub
 * placed and every CALL patched with the vCPUs paused, the drain started; at the end the vCPUs let
 * out of the stub, every CALL put back, hooked returns handed back, the stub unmapped. */
#include "host/trace/stub_drain.h"
#include "guest-stub/stub_blob.h"
#include "host/trace/stub_drain_int.h"
#include "host/trace/clock.h"
#include "host/trace/live_frames.h"
#include "host/trace/shadow.h"
#include "host/util/msg_fmt.h"

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

	probe_for_each(p, d->c.probes) {
		int r;

		if (!p->patched)
			continue;
		r = p->detour ? stub_detour_unpatch(&d->stub, p->detour_idx, p->addr, p->gpa, p->nop)
			      : stub_unpatch(&d->stub, p->addr, p->gpa, p->nop);
		/* a site the guest rewrote is no longer ours: left alone, reported by the tracer */
		if (r == 0 || r == -ESTALE)
			p->patched = false;
		if (r == -ESTALE)
			p->rewritten = true;
		left += p->patched;
	}
	return left;
}

/* The CALL at stub probe @p's site, as attach writes it (the entry routine for its hook, event and
 * graph root). */
static int patch_site(struct stub_drain *d, const struct probe *p)
{
	if (p->agg && p->agg_count)
		return stub_patch_agg(&d->stub, p->addr, p->gpa, p->nop, p->agg_mode);
	return stub_patch(&d->stub, p->addr, p->gpa, p->nop, p->hooks_return, p->event != NULL,
			  d->c.graph && d->c.returns && p->graph_root);
}

int stub_drain_reclaim(struct stub_drain *d, struct probe *p)
{
	const struct arch *a = target_arch(d->stub.tgt);
	uint8_t now[ARCH_PATCH_MAX];
	int r;

	if (!p->stub || p->patched || p->detour || !d->stub.placed)
		return -EINVAL;
	if (d->stub.tgt->ops->read_phys(d->stub.tgt, p->gpa, now, a->site_len) < 0)
		return -EFAULT;
	if (memcmp(now, p->nop, a->site_len))
		return -EBUSY; /* the guest's patcher holds it still */
	r = patch_site(d, p);
	/* a write the target failed may have landed all the same: the bytes say */
	p->patched = r == 0 || stub_may_call(&d->stub, p->addr, p->gpa);
	return r;
}

int stub_drain_yield(struct stub_drain *d, struct probe *p)
{
	int r;

	if (!p->stub || !p->patched)
		return -EINVAL;
	r = p->detour ? stub_detour_unpatch(&d->stub, p->detour_idx, p->addr, p->gpa, p->nop)
		      : stub_unpatch(&d->stub, p->addr, p->gpa, p->nop);
	if (r == 0 || r == -ESTALE)
		p->patched = false;
	if (r == -ESTALE)
		p->rewritten = true;
	return r;
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
	free(d->detour_probe);
	d->detour_probe = NULL;
	d->nr_detours = 0;
}

/* ---- detours: nothing may be inside the bytes they replace, nor inside them when they go ------- */

/* Where a context may be stopped inside the bytes the detours replace, sorted by address, each
 * with its detour's slot; hit[k]: a saved context was found inside detour k's bytes. */
struct points {
	struct point {
		uint64_t addr;
		unsigned k;
	} *v;
	size_t nr;
	bool *hit;
	struct live_frames_seen seen; /* where the last scan looked */
};

static int cmp_point(const void *a, const void *b)
{
	uint64_t x = ((const struct point *)a)->addr, y = ((const struct point *)b)->addr;

	return x < y ? -1 : x > y;
}

/* Marks the detour whose replaced bytes hold @v when @next says @v was an interrupted RIP. */
static bool saved_at_point(void *ctx, uint64_t v, uint64_t next)
{
	struct points *pt = ctx;
	size_t lo = 0, hi = pt->nr;

	if (!live_frame_kernel_cs(next))
		return false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pt->v[mid].addr == v) {
			pt->hit[pt->v[mid].k] = true;
			break;
		}
		if (pt->v[mid].addr < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false; /* on: every detour's contexts are marked */
}

/* The instruction boundaries inside the bytes each detour replaces (past their first): a context
 * stopped there would resume in the middle of the JMP. -ENOMEM or 0. */
static int inner_points(struct stub_drain *d, struct points *pt)
{
	size_t n = 0;

	pt->nr = 0;
	for (unsigned k = 0; k < d->nr_detours; k++)
		n += d->detour_probe[k]->detour->nr;
	pt->v = malloc((n ? n : 1) * sizeof(*pt->v));
	pt->hit = calloc(d->nr_detours ? d->nr_detours : 1, sizeof(*pt->hit));
	if (!pt->v || !pt->hit)
		return -ENOMEM;
	for (unsigned k = 0; k < d->nr_detours; k++) {
		const struct probe *p = d->detour_probe[k];

		for (size_t i = 1; i < p->detour->nr; i++)
			pt->v[pt->nr++] = (struct point){p->addr + p->detour->insn[i].off, k};
	}
	qsort(pt->v, pt->nr, sizeof(*pt->v), cmp_point);
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

/* Whether a vCPU is stopped inside the bytes a detour replaces, serves an interrupt (with the task
 * list known: what it interrupted is on a stack the walk does not see), or its registers cannot be
 * read; which, in @why. Target paused. */
static bool vcpu_inside_replaced(struct stub_drain *d, char *why, size_t len)
{
	struct target *tgt = d->c.tgt;

	for (unsigned i = 0; i < d->c.nr_cpus; i++) {
		struct arch_regs regs;
		uint64_t ip;

		if (tgt->ops->get_regs(tgt, i, &regs) < 0) {
			msg_fmt(why, len, "the registers of vCPU %u cannot be read", i);
			return true;
		}
		ip = arch_regs_ip(target_arch(tgt), &regs);
		for (unsigned k = 0; k < d->nr_detours; k++) {
			const struct probe *p = d->detour_probe[k];

			if (ip > p->addr && ip < p->addr + p->detour->len) {
				msg_fmt(why, len,
					"vCPU %u stays inside the first bytes of %s, which its "
					"detour replaces",
					i, p->func->name);
				return true;
			}
		}
		/* what it interrupted is on a stack the task walk does not see (the IRQ stack) */
		if (d->c.task && d->c.task->list.valid && cpu_in_interrupt(d, i)) {
			msg_fmt(why, len,
				"vCPU %u stays in an interrupt (what it interrupted, on the "
				"interrupt stack, cannot be looked at)",
				i);
			return true;
		}
	}
	return false;
}

/* Scans guest RAM for contexts saved inside the replaced bytes (pt->hit); how many detours have
 * one, or -errno (RAM unreadable). Target paused. */
static long scan_saved(struct stub_drain *d, struct points *pt)
{
	long n = 0;
	int ret;

	memset(pt->hit, 0, d->nr_detours * sizeof(*pt->hit));
	if (!pt->nr)
		return 0;
	ret = live_frames_scan(d->c.tgt, d->c.task, d->c.nr_cpus, pt->v[0].addr,
			       pt->v[pt->nr - 1].addr, saved_at_point, pt, &pt->seen);
	if (ret < 0)
		return ret;
	for (unsigned k = 0; k < d->nr_detours; k++)
		n += pt->hit[k];
	return n;
}

/* Lets the guest run a little (its backend's least); false when it cannot be paused again. */
static bool run_a_little(struct target *tgt)
{
	return tgt->ops->run_for && tgt->ops->run_for(tgt, LEAVE_RUN_US) == 0;
}

/* Who a saved context belongs to, by where the scan found it. */
static const char *saved_where(enum live_frames_scope scope)
{
	return scope == LIVE_FRAMES_TASKS ? "a guest task preempted there"
					  : "a context saved in guest memory";
}

/* No vCPU inside the bytes the detours replace (letting the guest run a little while one is), and
 * each detour with a context saved inside them (an interrupted, maybe preempted task; or a stale
 * interrupt frame, which cannot be told apart) made a trap probe at its entry instead, with one
 * line. Target paused. 0 or -errno with @err. */
static int no_context_inside(struct stub_drain *d, char *err, size_t errlen)
{
	struct target *tgt = d->c.tgt;
	struct points pt = {0};
	char why[200];
	int64_t leave_by = clock_now_ms() + LEAVE_MS;
	int ret = 0, tries = 0, scans = 0;
	long n;

	if (inner_points(d, &pt) < 0) {
		msg_fmt(err, errlen, "stub detours: out of memory");
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		while (vcpu_inside_replaced(d, why, sizeof(why)) && tries++ < LEAVE_TRIES &&
		       clock_now_ms() < leave_by && run_a_little(tgt))
			;
		if (vcpu_inside_replaced(d, why, sizeof(why))) {
			msg_fmt(err, errlen, "stub detours: %s (use --probe trap)", why);
			ret = -EBUSY;
			goto out;
		}
		n = scan_saved(d, &pt);
		if (n < 0) {
			msg_fmt(err, errlen, "stub detours: %s cannot be read: %s",
				pt.seen.scope == LIVE_FRAMES_TASKS ? "the guest's task list"
								   : "guest RAM",
				strerror((int)-n));
			ret = (int)n;
			goto out;
		}
		/* a task interrupted there goes on soon; a stale frame stays */
		if (!n || ++scans >= LEAVE_SCANS || clock_now_ms() >= leave_by ||
		    !run_a_little(tgt))
			break;
	}
	for (unsigned k = 0; k < d->nr_detours; k++) {
		struct probe *p = d->detour_probe[k];

		if (!pt.hit[k])
			continue;
		if (!tgt->bp_in_place) {
			msg_fmt(err, errlen,
				"%s: %s may resume inside its first bytes: no detour (use --probe "
				"trap)",
				p->func->name, saved_where(pt.seen.scope));
			ret = -EBUSY;
			goto out;
		}
		/* its slot stays unused; the drain never sees a record from it */
		p->stub = false;
		ret = probe_insert(p, tgt);
		if (ret < 0) {
			msg_fmt(err, errlen, "%s: entry 0x%" PRIx64 ": cannot insert a breakpoint",
				p->func->name, p->addr);
			goto out;
		}
		fprintf(stderr,
			"hvtrace: %s: %s may resume inside its first bytes: a trap probe at its "
			"entry instead of a detour\n",
			p->func->name, saved_where(pt.seen.scope));
	}
out:
	free(pt.v);
	free(pt.hit);
	return ret;
}

/* The stub probes through detours, by slot; 0, -ENOMEM. */
static int list_detours(struct stub_drain *d)
{
	unsigned n = 0;

	probe_for_each(p, d->c.probes)
		n += p->stub && p->detour;
	d->nr_detours = 0;
	if (!n)
		return 0;
	d->detour_probe = calloc(n, sizeof(*d->detour_probe));
	if (!d->detour_probe)
		return -ENOMEM;
	probe_for_each(p, d->c.probes) {
		if (!p->stub || !p->detour)
			continue;
		p->detour_idx = d->nr_detours;
		d->detour_probe[d->nr_detours++] = p;
	}
	return 0;
}

/* Writes every detour and, once no context is inside the bytes they replace (letting the guest
 * run a little while one is), the JMPs into them. Target paused. 0 or -errno with @err. */
static int put_detours(struct stub_drain *d, bool graph, char *err, size_t errlen)
{
	struct target *tgt = d->c.tgt;
	int ret;

	if (!d->nr_detours)
		return 0;
	if ((!tgt->ops->scan_ram && !(d->c.task && d->c.task->list.valid)) || !tgt->ops->get_regs) {
		msg_fmt(err, errlen,
			"stub detours: the %s target cannot show where its contexts are",
			tgt->name);
		return -ENOTSUP;
	}
	for (unsigned k = 0; k < d->nr_detours; k++) {
		struct probe *p = d->detour_probe[k];
		char why[200];

		uint64_t last = 0, jmp_len = target_arch(tgt)->jmp_len;

		p->gpa = 0;
		if (tgt->ops->translate(tgt, 0, p->addr, &p->gpa) < 0 ||
		    tgt->ops->translate(tgt, 0, p->addr + jmp_len - 1, &last) < 0 ||
		    last != p->gpa + jmp_len - 1) {
			/* the JMP's five bytes are written at once by guest-physical address */
			msg_fmt(err, errlen,
				"%s: entry 0x%" PRIx64 " is not mapped, or its first five bytes "
				"span two pages apart in guest-physical memory",
				p->func->name, p->addr);
			return -EFAULT;
		}
		if (tgt->ops->read_phys(tgt, p->gpa, p->nop, jmp_len) < 0 ||
		    memcmp(p->nop, p->detour->bytes, jmp_len)) {
			msg_fmt(err, errlen, "%s: entry 0x%" PRIx64 " changed since it was read",
				p->func->name, p->addr);
			return -ESTALE;
		}
		p->resolved = true;
		ret = stub_detour_write(&d->stub, k, p->detour, p->hooks_return, p->event != NULL,
					graph && p->graph_root, why, sizeof(why));
		if (ret < 0) {
			msg_fmt(err, errlen, "%s: stub detour: %s", p->func->name, why);
			return ret;
		}
	}
	ret = no_context_inside(d, err, errlen);
	if (ret < 0)
		return ret;
	for (unsigned k = 0; k < d->nr_detours; k++) {
		struct probe *p = d->detour_probe[k];

		if (!p->stub) /* a trap probe after all */
			continue;
		ret = stub_detour_patch(&d->stub, k, p->addr, p->gpa, p->nop);
		if (ret < 0) {
			msg_fmt(err, errlen, "%s: entry 0x%" PRIx64 ": %s", p->func->name, p->addr,
				ret == -ESTALE ? "rewritten by the guest since it was read"
					       : "cannot write the JMP to its detour");
			p->patched = stub_detour_may_jump(&d->stub, k, p->addr, p->gpa);
			return ret;
		}
		p->patched = true;
	}
	return 0;
}

/* Table entries a counting site of @mode may take on one CPU, with room to spare (each key a call
 * entry, a return entry or a dozen log2 buckets, by a handful of tasks). */
static uint64_t agg_entries_wanted(unsigned mode)
{
	uint64_t keys = 1 + ((mode & STUB_AGG_LOG2) ? 12 : (mode & STUB_AGG_RET) ? 1 : 0);

	return 2 * keys * ((mode & STUB_AGG_PID) ? 16 : 1);
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
	d->gate = (struct emit_gate){.tracing = cfg->tracing,
				     .keep = cfg->keep,
				     .filtered = &d->filtered}; /* a full ring: the next pass */
	d->nr_probes = 0;
	d->detour_probe = NULL;
	d->nr_detours = 0;
	memset(d->guest_seen, 0, sizeof(d->guest_seen));
	probe_for_each(p, cfg->probes) {
		if (!p->stub)
			continue;
		lo = p->addr < lo ? p->addr : lo;
		hi = p->addr > hi ? p->addr : hi;
		returns |= p->hooks_return;
		d->nr_probes++;
		if (p->agg && p->agg_count)
			g.agg_entries += agg_entries_wanted(p->agg_mode);
	}
	if (!d->nr_probes)
		return 0;
	/* the drain thread's buffers: a failure is the caller's to report (status 4) */
	d->buf = malloc(DRAIN_BATCH * sizeof(struct stub_rec));
	d->tc = calloc(1, sizeof(struct task_cache));
	d->scratch = malloc(cfg->max_payload + 1);
	if (!d->buf || !d->tc || !d->scratch || list_detours(d) < 0) {
		free_buffers(d);
		msg_fmt(err, errlen, "stub drain: out of memory");
		return -ENOMEM;
	}
	d->clock_anchored = d->have_offset = false;
	d->clock_learnt = false;
	d->host_counter = tgt->counter_khz != 0;
	if (d->host_counter) {
		d->tsc_khz = tgt->counter_khz; /* anchored at the first records, as QEMU's TSC */
		d->clock_learnt = true;
	} else if (tgt->ops->tsc_sync &&
		   tgt->ops->tsc_sync(tgt, &d->tsc_ref, &d->ns_ref, &d->tsc_khz) == 0 && d->tsc_khz) {
		d->clock_anchored = true;
	} else {
		d->tsc_khz = clock_host_tsc_khz(); /* QEMU: TCG's TSC is the host's */
		d->clock_learnt = true;
	}
	if (cfg->backpressure)
		g.wait_tsc = (d->tsc_khz ? d->tsc_khz : DRAIN_TSC_KHZ_GUESS) * DRAIN_GUEST_WAIT_MS;
	g.nr_detours = d->nr_detours;
	g.tsc_khz = d->tsc_khz;
	ret = stub_place(&d->stub, tgt, cfg->nr_cpus, returns, &g, lo, hi, err, errlen);
	if (ret < 0) {
		free_buffers(d);
		return ret;
	}
	probe_for_each(p, cfg->probes) {
		if (!p->stub || p->detour)
			continue;
		ret = patch_site(d, p);
		if (ret < 0) {
			msg_fmt(err, errlen, "%s: site 0x%" PRIx64 ": %s", p->func->name, p->addr,
				ret == -EILSEQ	 ? "not a NOP5"
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
	ret = put_detours(d, g.graph, err, errlen);
	if (ret < 0) {
		free_buffers(d);
		undo_attach(d);
		return ret;
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
		msg_fmt(err, errlen, "cannot start the stub drain thread: %s", strerror(ret));
		return -ret;
	}
	d->running = true;
	return 0;
}

/* A saved context (@v, then a ring-0 CS in @next) that resumes inside the stub @ctx. */
static bool frame_in_stub(void *ctx, uint64_t v, uint64_t next)
{
	const struct stub *s = ctx;
	const struct arch *a = target_arch(s->tgt);

	return (a->saved_kernel_mode ? a->saved_kernel_mode(next) : live_frame_kernel_cs(next)) &&
	       stub_interruptible_at(s, v);
}

/* Whether a task not on a vCPU may resume inside the stub: preempted (or interrupted) at one of the
 * few instructions where the stub runs with interrupts on, its context saved on its kernel stack.
 * 1 (one is, or nothing can be said: the task list unreadable), 0, or -ENOTSUP (the target and
 * the guest give no way to look). @seen says where it looked. Target paused. */
static int task_inside(struct stub_drain *d, struct live_frames_seen *seen)
{
	const struct target_region *r = &d->stub.reg;
	int ret = live_frames_scan(d->c.tgt, d->c.task, d->c.nr_cpus, r->gva, r->gva + r->size - 1,
				   frame_in_stub, &d->stub, seen);

	return ret == -ENOTSUP ? ret : ret != 0;
}

/* True if some vCPU is executing the stub's code right now, or may return into it from an interrupt
 * (target paused); also when a vCPU's registers cannot be read (a failed or unfinished stop): the
 * stub is unmapped only once every vCPU is known to be out of it. */
static bool cpu_inside(struct stub_drain *d)
{
	for (unsigned i = 0; i < d->c.nr_cpus; i++) {
		struct arch_regs regs;

		if (d->c.tgt->ops->get_regs(d->c.tgt, i, &regs) < 0 ||
		    stub_owns_rip(&d->stub, arch_regs_ip(target_arch(d->c.tgt), &regs)))
			return true;
		if (cpu_in_interrupt(d, i))
			return true;
	}
	return false;
}

/* Entries read from the guest at a time. */
#define AGG_CHUNK 1024

/* Reads every CPU's table of the placed stub @s (within the host's own bounds, AGG_CHUNK entries at
 * a time) and validates it into @a (allocated here, at most every entry of every table), with the
 * CPUs' drop counts, summed saturating; once per run. 0 (also without tables), -ENOMEM, or the
 * read's -errno (a->read false then). */
static int collect_agg(struct stub_agg *a, struct stub *s, const struct probe_table *probes)
{
	struct stub_agg_ent *buf;
	int ret = 0;

	if (!s->placed || !s->agg_entries || a->read)
		return 0;
	/* an STUB_AGG_BOTH entry gives two items (its calls, its returns) */
	a->cap = 2 * (size_t)s->nr_cpus * s->agg_entries;
	a->v = malloc(a->cap * sizeof(*a->v));
	buf = malloc(AGG_CHUNK * sizeof(*buf));
	if (!a->v || !buf) {
		free(buf);
		stub_agg_free(a);
		return -ENOMEM;
	}
	for (unsigned c = 0; c < s->nr_cpus && ret == 0; c++) {
		uint64_t dropped = 0;

		for (uint64_t first = 0; first < s->agg_entries && ret == 0; first += AGG_CHUNK) {
			uint64_t n =
			    s->agg_entries - first < AGG_CHUNK ? s->agg_entries - first : AGG_CHUNK;

			ret = stub_agg_read(s, c, first, buf, n);
			if (ret == 0)
				stub_agg_parse(a, buf, n, c, probes);
		}
		if (ret == 0 && stub_agg_dropped(s, c, &dropped) == 0)
			a->dropped =
			    a->dropped + dropped < a->dropped ? UINT64_MAX : a->dropped + dropped;
	}
	free(buf);
	a->read = ret == 0;
	return ret;
}

int stub_drain_read_agg(struct stub_drain *d, struct stub_agg *a)
{
	memset(a, 0, sizeof(*a));
	if (!d->stub.placed || !d->stub.agg_entries)
		return 0;
	return collect_agg(a, &d->stub, d->c.probes);
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
	/* the counting sites' tables, once no vCPU can count any more (a guest that is gone:
	 * a->read stays false) */
	if (d->stub.agg_entries && !d->agg.read && collect_agg(&d->agg, &d->stub, d->c.probes) < 0)
		d->agg_unread = true;
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
	struct live_frames_seen seen = {LIVE_FRAMES_TASKS, 0};
	int ret = 0, tries = 0, scans = 0, tasks = 0;
	long hooked = 0;
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
	/* returns hooked in a register (arm64's x30, signed into the frame by the function): the
	 * guest runs on until each has come back through the stub */
	if (d->stub.blob->ret_in_register) {
		int64_t t0 = clock_now_ms(), by = t0 + LEAVE_HOOKED_MS;

		d->leave_hooked_first = stub_hooked_frames(&d->stub);
		while ((hooked = stub_hooked_frames(&d->stub)) > 0 && clock_now_ms() < by) {
			if (tgt->ops->run_for) {
				if (tgt->ops->run_for(tgt, LEAVE_TASK_RUN_US) < 0)
					break;
				continue;
			}
			tgt->ops->resume(tgt);
			usleep(LEAVE_TASK_RUN_US);
			tgt->ops->pause(tgt);
		}
		d->leave_hooked = hooked;
		d->leave_hooked_ms = (unsigned long long)(clock_now_ms() - t0);
	}
	leave_by = clock_now_ms() + LEAVE_MS;
	for (;;) {
		unsigned run_us = LEAVE_RUN_US;

		if (hooked)
			break;
		if (!cpu_inside(d)) {
			/* a task preempted inside goes on once its CPU picks it again */
			tasks = task_inside(d, &seen);
			d->leave_scans++;
			d->leave_stacks = seen.stacks;
			if (tasks <= 0 || ++scans > LEAVE_TASK_SCANS)
				break;
			run_us = LEAVE_TASK_RUN_US;
		}
		if (tries++ >= LEAVE_TRIES || clock_now_ms() >= leave_by)
			break;
		if (tgt->ops->run_for) {
			if (tgt->ops->run_for(tgt, run_us) < 0)
				break;
			continue;
		}
		tgt->ops->resume(tgt);
		usleep(run_us);
		tgt->ops->pause(tgt);
	}
	if (hooked < 0) {
		fprintf(stderr,
			"hvtrace: the stub's shadow stacks cannot be read (hooked returns may be out): "
			"it is left mapped in its reserved RAM%s\n",
			ret ? "" : " (every site is restored)");
		if (!ret)
			ret = -EBUSY;
	} else if (hooked) {
		fprintf(stderr,
			"hvtrace: %ld hooked return%s (signed by the guest's functions, so only they "
			"can come back) %s not come back through the stub within %d s: it is left "
			"mapped in its reserved RAM%s\n",
			hooked, hooked == 1 ? "" : "s", hooked == 1 ? "has" : "have",
			LEAVE_HOOKED_MS / 1000, ret ? "" : " (every site is restored)");
		if (!ret)
			ret = -EBUSY;
	} else if (!cpu_inside(d) && tasks > 0) {
		fprintf(stderr,
			"hvtrace: %s may resume inside the stub (%s): it is left mapped%s\n",
			seen.scope == LIVE_FRAMES_TASKS
			    ? "a guest task"
			    : "a context saved in guest memory",
			seen.scope == LIVE_FRAMES_TASKS
			    ? "preempted where the stub runs with interrupts on, its context on its "
			      "kernel stack, or a task list that cannot be read"
			    : "without the guest's task list a stale interrupt frame cannot be told "
			      "from a live one",
			ret ? "" : " (every site and return slot is restored)");
		if (!ret)
			ret = -EBUSY;
	} else if (cpu_inside(d)) {
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
	free(d->detour_probe);
	d->detour_probe = NULL;
	d->nr_detours = 0;
	return ret;
}

/* The tracer: the hit path (entries, returns, triggers, stacks into the vCPU rings) and its
 * counters; set-up and accessors are tracer_setup.c, attach and detach tracer_attach.c. */
#include "host/trace/tracer.h"
#include "host/trace/tracer_int.h"
#include "arch/arch.h"
#include "host/trace/clock.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Publishes @rec (and @len bytes of @payload) in this vCPU's ring through the tracer's gate: it
 * waits for the writer rather than lose the event, unless the tracer is detached: then the event is
 * counted lost (and marked in the stream, ring_lost). */
static void emit(struct tracer *t, unsigned cpu, const struct hvt_record *rec, const void *payload,
		 size_t len)
{
	emit_gate(&t->gate, &t->rings[cpu], cpu, &t->cpu[cpu].lost, rec, payload, len);
}

/* Lazy arming: the callee probes are in while at least one graph-root call is live (the ones
 * probe_always_armed names stay in). */
static void arm(struct tracer *t)
{
	pthread_mutex_lock(&t->arm_lock);
	if (t->live_roots++ == 0) {
		probe_for_each(p, &t->probes)
			if (!probe_always_armed(p))
				probe_insert(p, t->tgt);
		t->arms++;
	}
	pthread_mutex_unlock(&t->arm_lock);
}

static void disarm(struct tracer *t, unsigned roots)
{
	if (!roots)
		return;
	pthread_mutex_lock(&t->arm_lock);
	t->live_roots = roots >= t->live_roots ? 0 : t->live_roots - roots;
	if (!t->live_roots)
		probe_for_each(p, &t->probes)
			if (!probe_always_armed(p))
				probe_remove(p, t->tgt);
	pthread_mutex_unlock(&t->arm_lock);
}

/* Frames dropped from a shadow stack (abandoned without returning): counted, and for lazy arming
 * the graph roots among them are remembered, to disarm once the stack lock is released. */
struct dropped {
	struct tracer *t;
	unsigned roots;
};

static void count_unwound(void *ctx, const struct shadow_entry *e)
{
	struct dropped *d = ctx;

	struct probe *p = probe_at(&d->t->probes, e->probe);

	atomic_fetch_add_explicit(&p->n.unwound, 1, memory_order_relaxed);
	if (p->graph_root)
		d->roots++;
}

static void miss(struct probe *p)
{
	atomic_fetch_add_explicit(&p->n.misses, 1, memory_order_relaxed);
}

/* Hooks the return of the call whose return address sits at @slot (holding @orig) on vCPU @cpu, the
 * hitting one: the slot is written at the guest-physical address @cpu's page tables give, which the
 * shadow entry keeps for the restore at detach. Returns 1 when hooked, 0 when the call is not to be
 * traced (graph filter, max depth), -1 on a miss (an unaligned slot, which could span two pages,
 * counts as one). *@depth: the call's graph depth (hooked frames below it on its stack), set when
 * 1 or 0 is returned. */
/* An entry probe may sit on code that is not entered by a call (an exception or syscall entry,
 * where the stack holds no return address, or is not yet the kernel's): its return is hooked only
 * when the slot is on a kernel-half stack and holds a kernel-half address that a CALL precedes. A
 * guest whose text lies in the lower half (the freestanding one) has no such halves: there the
 * address must lie in its text, a CALL before it. A slot that holds the return trampoline is a
 * hooked frame's, reached again by a tail call. */
static bool entry_return(struct tracer *t, unsigned cpu, uint64_t slot, uint64_t orig)
{
	const struct arch *a = target_arch(t->tgt);
	uint8_t b[ARCH_PATCH_MAX];
	uint64_t half = a->kernel_half, n = a->call_before_len;
	bool upper = t->opts.text_lo >= half;

	if (orig == t->trampoline && t->trampoline)
		return true; /* a tail call from a hooked frame: that frame's return slot */
	if (upper ? slot < half || orig < half + n
		  : orig < t->opts.text_lo + n || orig > t->opts.text_hi)
		return false;
	return t->tgt->ops->read_virt(t->tgt, cpu, orig - n, b, n) == 0 && a->call_precedes(b);
}

static int hook_return(struct tracer *t, unsigned cpu, struct probe *p, uint64_t slot,
		       uint64_t orig, uint64_t now, uint8_t *depth)
{
	struct dropped d = {.t = t};
	const struct shadow_entry *top;
	struct shadow_stack *st;
	struct shadow_entry e;
	uint64_t slot_gpa;
	int hooked = 0;

	bool link = target_arch(t->tgt)->regs.ra != ARCH_REG_NONE;

	/* a link register's return is a breakpoint (ret_sites): no slot in memory to resolve */
	slot_gpa = 0;
	if ((slot & 7) || (p->entry && !entry_return(t, cpu, slot, orig)) ||
	    (!link && t->tgt->ops->translate(t->tgt, cpu, slot, &slot_gpa) < 0))
		return -1;
	st = shadow_lock(&t->shadow, slot, true);
	if (!st)
		return -1;
	top = shadow_top(st);
	/* a link register: a call at the same stack pointer returning where the frame there does
	 * is that frame's tail call (its return address passed on in x30), not a frame gone */
	shadow_drop_dead(&t->shadow, st, slot,
			 link && top && top->slot == slot && top->orig == orig ? t->trampoline : orig,
			 count_unwound, &d);
	top = shadow_top(st);
	e = (struct shadow_entry){
	    .slot = slot,
	    .slot_gpa = slot_gpa,
	    .orig = orig,
	    .t_entry = now,
	    .probe = p->id,
	    .depth = top ? top->depth + 1 : 0,
	    .in_graph = (top && top->in_graph) || p->graph_root,
	};
	*depth = e.depth;
	if ((t->opts.graph_filter && !e.in_graph) ||
	    (t->opts.max_depth && e.depth >= t->opts.max_depth)) {
		hooked = 0;
	} else if (!shadow_push(st, &e)) {
		hooked = -1;
	} else if (link ? ret_sites_hook(&t->ret_sites, t->tgt, cpu, orig) < 0
			: t->tgt->ops->write_phys(t->tgt, slot_gpa, &t->trampoline, 8) < 0) {
		st->nr--;
		hooked = -1;
	} else {
		hooked = 1;
		atomic_fetch_add_explicit(&p->n.hooked, 1, memory_order_relaxed);
		if (!link && slot_gpa >> 32) /* a slot written above 4 GiB */
			atomic_fetch_add_explicit(&t->slots_above_4g, 1, memory_order_relaxed);
	}
	shadow_unlock(st);
	if (t->opts.lazy) {
		disarm(t, d.roots);
		if (hooked == 1 && p->graph_root)
			arm(t);
	}
	return hooked;
}

/* Guest memory as vCPU @cpu sees it (a vmi_read_fn): event fields, task names. */
struct event_reader {
	struct target *tgt;
	unsigned cpu;
};

static int event_read(void *ctx, uint64_t gva, void *buf, size_t len)
{
	struct event_reader *r = ctx;

	return r->tgt->ops->read_virt(r->tgt, r->cpu, gva, buf, len);
}

/* The task running on a vCPU during one hit, read from the guest at most once: the vCPU is stopped,
 * so every record of the hit (the call, its triggers' stack and snapshot marks) names the same. */
struct hit_task {
	bool known;
	struct vmi_task task;
	const struct arch_regs *regs; /* the hit's registers: `current` where the ISA keeps it */
};

/* The record of an entry or a return at @now of probe @p on @cpu, with the task running there
 * (@ht: read on first use in this hit). */
static void make_record(struct tracer *t, struct hit_task *ht, struct hvt_record *rec,
			enum hvt_rec_type type, unsigned cpu, const struct probe *p, uint64_t now,
			uint64_t parent, uint8_t depth)
{
	if (!ht->known) {
		struct event_reader rd = {t->tgt, cpu};

		const struct arch *a = target_arch(t->tgt);

		uint64_t base = a->percpu_base && ht->regs && t->task.has_task_gs
				    ? a->percpu_base(ht->regs)
				    : 0,
			 cur = 0;

		if (a->current_task && ht->regs)
			vmi_task_at(&t->task, cpu, a->current_task(ht->regs), event_read, &rd,
				    &ht->task);
		else if (base && event_read(&rd, base + t->task.task_gs_off, &cur, 8) == 0 && cur)
			vmi_task_at(&t->task, cpu, cur, event_read, &rd, &ht->task);
		else
			vmi_task_current(&t->task, cpu, event_read, &rd, &ht->task);
		ht->known = true;
	}
	hvt_record_entry(rec, now - t->t0, cpu, p->addr, parent, &ht->task);
	rec->type = (uint8_t)type;
	rec->depth = depth;
}

/* An event's fields captured now (arguments as they are at the call, @regs) into this vCPU's
 * scratch buffer; returns their length. */
static size_t capture(struct tracer *t, unsigned cpu, const struct fe_spec *spec,
		      const struct arch_regs *regs)
{
	struct event_reader rd = {t->tgt, cpu};

	fe_capture(target_arch(t->tgt), spec, regs, event_read, &rd, t->scratch[cpu]);
	return fe_payload_size(spec);
}

/* Takes one firing of @tt: false once its :N are used up. */
static bool take(struct tracer_trigger *tt)
{
	long left = atomic_load_explicit(&tt->left, memory_order_relaxed);

	while (left != -1) {
		if (left == 0)
			return false;
		if (atomic_compare_exchange_weak(&tt->left, &left, left - 1))
			return true;
	}
	return true;
}

/* The stack walk's view of the guest: its memory, and the return addresses behind hooked slots. */
struct stack_resolver {
	struct tracer *t;
	struct event_reader *rd;
};

static int stack_read(void *ctx, uint64_t gva, void *buf, size_t len)
{
	return event_read(((struct stack_resolver *)ctx)->rd, gva, buf, len);
}

/* The return address a hooked @slot held, from its shadow stack (0 if none there). */
static uint64_t hooked_return(void *ctx, uint64_t slot)
{
	struct tracer *t = ((struct stack_resolver *)ctx)->t;
	struct shadow_stack *st = shadow_lock(&t->shadow, slot, false);
	uint64_t orig = 0;

	if (!st)
		return 0;
	for (unsigned i = 0; i < st->nr; i++)
		if (st->e[i].slot == slot && st->e[i].orig != t->trampoline)
			orig = st->e[i].orig;
	shadow_unlock(st);
	return orig;
}

/* stacktrace: the guest's call chain at this entry, as an HVT_REC_STACK record with its task
 * (@parent: 0, or HVT_STACK_FOR_HIST for a hist's key). */
static void stack_record(struct tracer *t, struct hit_task *ht, unsigned cpu, const struct probe *p,
			 const struct arch_regs *regs, uint64_t now, uint64_t parent)
{
	const struct arch *a = target_arch(t->tgt);
	struct event_reader rd = {t->tgt, cpu};
	struct stack_resolver sr = {t, &rd};
	struct trigger_stack_cfg cfg = {
	    .text_lo = t->opts.text_lo,
	    .text_hi = t->opts.text_hi,
	    .no_frame_pointers = t->opts.no_frame_pointers,
	    .read = stack_read,
	    .ctx = &sr,
	    .trampoline = t->trampoline,
	    .resolve = hooked_return,
	    /* a hist's key: a frame-pointer chain, or (an ORC kernel, whose unwind tables hvtrace
	     * does not read) the function and its caller */
	    .reliable_only = parent == HVT_STACK_FOR_HIST,
	};
	uint64_t frames[TRIGGER_MAX_FRAMES];
	struct hvt_record rec;
	size_t n;

	n = trigger_walk_stack(&cfg, p->addr, arch_regs_sp(a, regs), arch_regs_fp(a, regs), frames,
			       TRIGGER_MAX_FRAMES);
	make_record(t, ht, &rec, HVT_REC_STACK, cpu, p, now, 0, 0);
	rec.parent = parent;
	rec.value = n * sizeof(frames[0]);
	emit(t, cpu, &rec, frames, rec.value);
}

/* A hist's stacktrace key: the stack at every call the task and CPU filters keep (checked first:
 * a call they drop costs no walk), recorded as any record is (not while tracing is off). */
static void hist_stack(struct tracer *t, struct hit_task *ht, unsigned cpu, const struct probe *p,
		       const struct arch_regs *regs, uint64_t now)
{
	if (t->opts.keep) {
		struct hvt_record call;

		make_record(t, ht, &call, HVT_REC_ENTRY, cpu, p, now, 0, 0);
		if (!rec_filter_keep(t->opts.keep, &call, NULL, 0))
			return;
	}
	stack_record(t, ht, cpu, p, regs, now, HVT_STACK_FOR_HIST);
}

/* Whether a trigger of probe @p fires in this phase (@before: traceon). */
static bool triggered(const struct tracer *t, const struct probe *p, bool before)
{
	for (size_t i = 0; i < t->nr_triggers; i++)
		if (t->triggers[i].probe == p->id &&
		    (t->triggers[i].trig->cmd == TRIG_TRACEON) == before)
			return true;
	return false;
}

/* The triggers of probe @p at its entry on @cpu at @now: traceon before the call is recorded
 * (@before), the others after it, so the call itself shows either way. Only for calls the task
 * and CPU filters (-P, --comm, --cpu) keep. */
static void fire_triggers(struct tracer *t, struct hit_task *ht, unsigned cpu,
			  const struct probe *p, const struct arch_regs *regs, uint64_t now,
			  bool before)
{
	uint64_t ts = now - t->t0;

	if (!triggered(t, p, before))
		return;
	if (t->opts.keep) {
		struct hvt_record call;

		make_record(t, ht, &call, HVT_REC_ENTRY, cpu, p, now, 0, 0);
		if (!rec_filter_keep(t->opts.keep, &call, NULL, 0))
			return;
	}
	for (size_t i = 0; i < t->nr_triggers; i++) {
		struct tracer_trigger *tt = &t->triggers[i];
		enum trigger_cmd cmd = tt->trig->cmd;

		if (tt->probe != p->id || (cmd == TRIG_TRACEON) != before)
			continue;
		switch (cmd) {
		case TRIG_TRACEON:
		case TRIG_TRACEOFF:
			/* like the kernel's, a count is used only by a firing that switches */
			if (tracing_state_at(&t->tracing, ts) != (cmd == TRIG_TRACEON) && take(tt))
				tracing_state_set(&t->tracing, cmd == TRIG_TRACEON, ts);
			break;
		case TRIG_STACKTRACE:
			if (tracing_state_at(&t->tracing, ts) && take(tt))
				stack_record(t, ht, cpu, p, regs, now, 0);
			break;
		case TRIG_SNAPSHOT:
			if (take(tt)) {
				struct hvt_record rec;

				make_record(t, ht, &rec, HVT_REC_SNAPSHOT, cpu, p, now, 0, 0);
				rec.value = atomic_fetch_add(&t->snapshots, 1) + 1;
				emit(t, cpu, &rec, NULL, 0);
			}
			break;
		}
	}
}

/* The graph depth of an instruction inside a function on the stack at @rsp: one below the
 * innermost call traced there, 0 when none is. */
static uint8_t inside_depth(struct tracer *t, uint64_t rsp)
{
	struct shadow_stack *st = shadow_lock(&t->shadow, rsp, false);
	const struct shadow_entry *top;
	uint8_t depth = 0;

	if (!st)
		return 0;
	top = shadow_top(st);
	if (top && top->depth < UINT8_MAX)
		depth = (uint8_t)(top->depth + 1);
	shadow_unlock(st);
	return depth;
}

/* An -e func+OFFSET event (an instruction inside a function): its fields now, no caller (RSP holds
 * no return address there), never a return; in a graph, at the depth of the calls around it. */
static void inside_event(struct tracer *t, unsigned cpu, struct probe *p, struct arch_regs *regs,
			 uint64_t now)
{
	struct hit_task ht = {.known = false, .regs = regs};
	struct hvt_record rec;
	size_t len = p->event ? capture(t, cpu, p->event, regs) : 0;

	if (t->nr_triggers)
		fire_triggers(t, &ht, cpu, p, regs, now, true);
	make_record(t, &ht, &rec, HVT_REC_EVENT_ALONE, cpu, p, now, 0,
		    t->opts.returns ? inside_depth(t, arch_regs_sp(target_arch(t->tgt), regs)) : 0);
	rec.value = len;
	emit(t, cpu, &rec, t->scratch[cpu], len);
	if (t->nr_triggers)
		fire_triggers(t, &ht, cpu, p, regs, now, false);
}

static int function_entry(struct tracer *t, unsigned cpu, struct probe *p, struct arch_regs *regs,
			  uint64_t now)
{
	uint64_t sp = arch_regs_sp(target_arch(t->tgt), regs); /* [sp]: the return address */
	/* (a link register: sp at the call is the key of its frame, as it is again at the return) */
	struct tracer_cpu *c = &t->cpu[cpu];
	struct hit_task ht = {.known = false, .regs = regs};
	struct hvt_record rec;
	uint64_t orig = 0;
	uint8_t depth = 0;
	bool alone = false;
	size_t len = 0;

	/* the hit's time (the one clock read of a hit: the records' time, and busy's) */
	atomic_store(&c->busy_since, now - t->t0);
	if (p->inside) {
		inside_event(t, cpu, p, regs, now);
		goto done;
	}
	if (t->nr_triggers)
		fire_triggers(t, &ht, cpu, p, regs, now, true);
	if (target_arch(t->tgt)->regs.ra != ARCH_REG_NONE) {
		/* the return address is in the link register, before the prologue signs it */
		orig = regs->r[target_arch(t->tgt)->regs.ra];
	} else if (t->tgt->ops->read_virt(t->tgt, cpu, sp, &orig, sizeof(orig)) < 0) {
		miss(p);
		if (t->opts.returns)
			goto out;
	}
	if (p->hooks_return) {
		int r = hook_return(t, cpu, p, sp, orig, now, &depth);

		if (r < 0)
			miss(p);
		/* like ftrace's trace events, an -e event fires where function_graph does not
		 * trace the call (-g, --max-depth): alone, no entry, no return */
		if (r < 0 || (r == 0 && !p->event))
			goto out;
		alone = r == 0;
	}
	if (p->quiet_entry)
		goto out;
	if (p->event)
		len = capture(t, cpu, p->event, regs);
	make_record(t, &ht, &rec,
		    alone      ? HVT_REC_EVENT_ALONE
		    : p->event ? HVT_REC_EVENT
			       : HVT_REC_ENTRY,
		    cpu, p, now, orig, depth);
	rec.value = len;
	emit(t, cpu, &rec, t->scratch[cpu], len);
out:
	if (p->stack_key)
		hist_stack(t, &ht, cpu, p, regs, now);
	if (t->nr_triggers)
		fire_triggers(t, &ht, cpu, p, regs, now, false);
done:
	atomic_store_explicit(&c->busy_since, UINT64_MAX, memory_order_release);
	return 0;
}

static int function_return(struct tracer *t, unsigned cpu, struct arch_regs *regs, uint64_t now)
{
	const struct arch *a = target_arch(t->tgt);
	struct tracer_cpu *c = &t->cpu[cpu];
	uint64_t slot = arch_regs_sp(a, regs) - a->regs.ret_slot_back;
	struct shadow_stack *st;
	struct shadow_entry e;
	struct hvt_record rec;
	struct hit_task ht = {.known = false, .regs = regs};
	struct dropped d = {.t = t};
	const struct probe *p;
	size_t len = 0;
	bool found;

	atomic_store(&c->busy_since, now - t->t0); /* the hit's time, as at the entry */
	st = shadow_lock(&t->shadow, slot, false);
	found = st && shadow_pop(st, slot, &e, count_unwound, &d);
	if (st)
		shadow_unlock(st);
	if (t->opts.lazy)
		disarm(t, d.roots + (found && probe_at(&t->probes, e.probe)->graph_root));
	if (!found) {
		/* Not ours: nothing can be resumed safely. The vCPU faults with RIP on the
		 * trampoline. */
		atomic_fetch_add(&t->orphan_returns, 1);
		atomic_store_explicit(&c->busy_since, UINT64_MAX, memory_order_release);
		return -ENOENT;
	}
	arch_regs_set_ip(a, regs, e.orig);
	p = probe_at(&t->probes, e.probe);
	if (atomic_load_explicit(&t->active, memory_order_relaxed)) {
		if (p->ret_event) {
			/* typed return: the fields are evaluated with the return value as the
			 * first argument */
			struct arch_regs ret = *regs;

			arch_regs_set_arg(a, &ret, 0, arch_regs_ret(a, regs));
			len = capture(t, cpu, p->ret_event, &ret);
		}
		make_record(t, &ht, &rec, p->ret_event ? HVT_REC_RETURN_EVENT : HVT_REC_RETURN, cpu,
			    p, now, e.orig, e.depth);
		rec.value = p->ret_event ? len : arch_regs_ret(a, regs);
		rec.duration = now - e.t_entry;
		emit(t, cpu, &rec, t->scratch[cpu], len);
	}
	atomic_store_explicit(&c->busy_since, UINT64_MAX, memory_order_release);
	return 0;
}

/* A return-site breakpoint (a link-register ISA) hit at @addr: every hooked frame at this stack
 * pointer that returns to @addr returns now (one, or a frame and its tail calls), each taking its
 * reference off the breakpoint; then the instruction there runs in place. A path that reaches
 * @addr without such a frame only runs it. */
static int link_return(struct tracer *t, unsigned cpu, uint64_t addr, struct arch_regs *regs,
		       uint64_t now)
{
	const struct arch *a = target_arch(t->tgt);
	uint64_t sp = arch_regs_sp(a, regs);

	for (unsigned k = 0; k < SHADOW_MAX_DEPTH; k++) {
		struct shadow_stack *st = shadow_lock(&t->shadow, sp, false);
		const struct shadow_entry *top = st ? shadow_top(st) : NULL;
		bool mine = top && top->slot == sp && top->orig == addr;

		if (st)
			shadow_unlock(st);
		if (!mine || function_return(t, cpu, regs, now) < 0)
			break;
		ret_sites_unref(&t->ret_sites, t->tgt, addr);
	}
	arch_regs_set_ip(a, regs, addr);
	return TARGET_BP_IN_PLACE;
}

int tracer_hit(void *ctx, unsigned cpu, uint64_t addr, struct arch_regs *regs, uint64_t at_ns)
{
	struct tracer *t = ctx;
	uint64_t now = at_ns ? at_ns : clock_now_ns();
	struct probe *p;

	if (t->ret_sites.nr && ret_sites_has(&t->ret_sites, addr))
		return link_return(t, cpu, addr, regs, now);

	if (addr == t->trampoline && t->trampoline)
		return function_return(t, cpu, regs, now);
	if (t->nr_patchers && tracer_patcher_return_hit(t, addr)) {
		arch_regs_set_ip(target_arch(t->tgt), regs, addr);
		return 0; /* its breakpoint is out: the vCPU goes on from there */
	}
	if (t->nr_patchers && tracer_patcher_hit(t, cpu, addr, regs)) {
		arch_regs_set_ip(target_arch(t->tgt), regs, addr);
		return TARGET_BP_IN_PLACE; /* the patcher's own instruction runs */
	}
	p = probe_lookup(&t->probes, addr);
	if (!p)
		return -ENOENT;
	/* Emulate the patchable NOP the breakpoint sits on; the probe stays in place. An entry
	 * probe's instruction is run in place by the target (bp_in_place). */
	arch_regs_set_ip(target_arch(t->tgt), regs,
			 p->entry ? addr : addr + target_arch(t->tgt)->site_len);
	if (atomic_load_explicit(&t->active, memory_order_relaxed))
		function_entry(t, cpu, p, regs, now);
	return p->entry ? TARGET_BP_IN_PLACE : 0;
}

uint64_t tracer_horizon(void *ctx)
{
	struct tracer *t = ctx;
	uint64_t h = clock_now_ns() - t->t0, s = stub_drain_horizon(&t->stub);

	if (s < h)
		h = s;
	for (unsigned i = 0; i < t->nr_cpus; i++) {
		uint64_t b = atomic_load(&t->cpu[i].busy_since);

		if (b < h)
			h = b;
	}
	return h;
}

unsigned long long tracer_lost(const struct tracer *t)
{
	unsigned long long n = 0;

	for (unsigned i = 0; i < t->nr_cpus; i++)
		n += t->cpu[i].lost;
	return n + t->stub.lost;
}

void tracer_stats(const struct tracer *t, struct tracer_stats *out)
{
	*out = (struct tracer_stats){
	    .probes = probe_count(&t->probes),
	    .restored_slots = t->restored_slots,
	    .interrupted_returns = t->interrupted_returns,
	    .text_rewritten = t->text_rewritten,
	    .detached_us = t->paused_to_detach_ns
			       ? (long long)((t->paused_to_detach_ns > t->t0
						  ? t->paused_to_detach_ns - t->t0
						  : 0) /
					     1000)
			       : -1,
	    .orphan_returns = atomic_load(&t->orphan_returns),
	    .slots_above_4g = atomic_load(&t->slots_above_4g),
	    .arms = t->arms,
	    .lost = tracer_lost(t),
	    .stub_probes = t->stub.nr_probes,
	    .stub_detours = t->stub.nr_detours,
	    .stub_records = t->stub.records - t->stub.announced,
	    .stub_announced = t->stub.announced,
	    .stub_lost = t->stub.lost,
	    .stub_guest_lost = t->stub.guest_lost,
	    .stub_rejected = t->stub.rejected,
	    .stub_ring_records = t->stub.stub.ring_records,
	    .stub_region_bytes = t->stub.stub.reg.size,
	    .stub_region_where = t->stub.stub.reg.where ? t->stub.stub.reg.where : "-",
	    .stub_region_perm = t->stub.stub.reg.perm,
	    .stub_cpu_from = t->stub.stub.cpu_from ? t->stub.stub.cpu_from : "-",
	    .stub_host_stalls = stub_drain_stalls(&t->stub),
	    .stub_pauses = t->stub.pauses,
	    .stub_wait_timeouts = t->stub.stub.wait_timeouts,
	    .stub_waits = stub_guest_waits(&t->stub.stub),
	    .stub_paused_ns = t->stub.paused_ns,
	    .stub_tasks_changed = t->stub.tasks_changed,
	    .stub_leave_scans = t->stub.leave_scans,
	    .stub_leave_stacks = t->stub.leave_stacks,
	    .stub_leave_hooked = t->stub.leave_hooked_first,
	    .stub_leave_hooked_ms = t->stub.leave_hooked_ms,
	    .stub_backpressure = t->opts.stub_backpressure,
	    .stub_mapped = t->stub.stub.placed,
	    .filtered = atomic_load(&t->filtered) + atomic_load(&t->stub.filtered),
	    .shared_sites = t->shared + t->yielded_sites,
	    .yielded_sites = t->yielded_sites,
	    .yields = t->yielded,
	    .reclaims = t->reclaimed,
	    .patcher_stops = t->patcher_stops,
	};
	out->patchers = t->patchers_armed;
}

void tracer_stop_drain(struct tracer *t)
{
	stub_drain_stop(&t->stub);
}

void tracer_cut(struct tracer *t)
{
	stub_drain_cut(&t->stub);
}

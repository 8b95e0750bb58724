/* Sharing the guest's text with the guest's own patchers: internal breakpoints at the functions
 * where its ftrace checks and rewrites its call sites, and where a kprobe reads the instruction it
 * replaces. At a stop at ftrace's, every fentry stub probe site goes back to the guest's NOP and is
 * traced by a breakpoint under which whatever the guest writes there runs; at the outermost
 * patcher call's return, the sites the guest left as NOPs get the stub back. At a stop at
 * kprobes', every detour goes back to the guest's instructions, for good. And sites that hold a
 * call of the guest's already at attach, counted. */
#include "host/trace/tracer.h"
#include "host/trace/tracer_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int tracer_set_patchers(struct tracer *t, const struct vmi_patcher *ps, size_t n)
{
	if (n > TRACER_MAX_PATCHERS)
		return -EINVAL;
	if (n && (!t->tgt->hit_all_stopped || !t->tgt->bp_in_place))
		return -ENOTSUP;
	for (size_t i = 0; i < n; i++)
		t->patchers[i] = (struct tracer_patcher){.addr = ps[i].addr, .detours = ps[i].detours};
	t->nr_patchers = (unsigned)n;
	return 0;
}

/* Whether entry probe @p's first instruction is a direct call (the guest's ftrace, or a BPF
 * trampoline, owns the site). */
static bool holds_guest_call(struct tracer *t, const struct probe *p)
{
	const struct arch *a = target_arch(t->tgt);
	uint8_t b[ARCH_PATCH_MAX];
	uint64_t to;

	if (!p->entry || p->inside || !p->resolved ||
	    t->tgt->ops->read_phys(t->tgt, p->gpa, b, a->site_len) < 0)
		return false;
	return a->direct_branch(b, a->site_len, p->addr, false, &to) == a->site_len;
}

/* An internal breakpoint of hvtrace's at @addr, resolved through vCPU @cpu's page tables, into
 * @bp (addr, gpa, orig, inserted). 0 or -errno (nothing inserted). */
static int insert_internal_bp(struct tracer *t, unsigned cpu, uint64_t addr,
			      struct tracer_patcher *bp)
{
	int ret = t->tgt->ops->translate(t->tgt, cpu, addr, &bp->gpa);

	if (ret == 0)
		ret = t->tgt->ops->read_phys(t->tgt, bp->gpa, &bp->orig, 1);
	if (ret == 0)
		ret = t->tgt->ops->insert_bp(t->tgt, addr, bp->gpa, bp->orig);
	bp->addr = addr;
	bp->inserted = ret == 0;
	return ret;
}

void tracer_patchers_attach(struct tracer *t)
{
	bool calls = false, detours = false;

	probe_for_each(p, &t->probes) {
		t->shared += holds_guest_call(t, p);
		calls |= p->stub && p->patched && !p->detour;
		detours |= p->stub && p->patched && p->detour;
	}
	for (unsigned i = 0; i < t->nr_patchers; i++) {
		struct tracer_patcher *pt = &t->patchers[i];
		int ret;

		if (!(pt->detours ? detours : calls))
			continue; /* no byte of the guest's it rewrites is ours: nothing to hand back */
		ret = insert_internal_bp(t, 0, pt->addr, pt);
		t->patchers_armed += ret == 0;
		if (ret < 0)
			fprintf(stderr,
				"hvtrace: cannot stop at the guest's text patcher at 0x%" PRIx64
				" (%s): its own tracing must not be turned on while hvtrace holds "
				"these sites\n",
				pt->addr, strerror(-ret));
	}
}

/* The VM is stopped: every stub probe site of the kind (@detours: detours, else fentry CALLs) whose
 * patch is still ours gets the guest's bytes back and a breakpoint instead (the target emulates an
 * fentry NOP while it is one, and runs in place whatever the guest writes there; a detoured
 * function's first instruction runs in place). Returns how many sites are handed back now. */
static unsigned yield_sites(struct tracer *t, bool detours)
{
	unsigned n = 0;

	probe_for_each(p, &t->probes) {
		int ret;

		if (!p->stub || !p->patched || !p->detour != !detours)
			continue;
		ret = stub_drain_yield(&t->stub, p);
		if (ret < 0)
			continue; /* -ESTALE: the guest's already; otherwise it stays a stub site */
		p->yielded = true;
		t->yielded++;
		t->yielded_sites += !p->ever_yielded;
		p->ever_yielded = true;
		n++;
		ret = probe_insert(p, t->tgt);
		if (ret < 0)
			fprintf(
			    stderr,
			    "hvtrace: %s: handed back to the guest's patcher, but no breakpoint "
			    "could go in (%s): its calls are not traced any more\n",
			    p->func->name, strerror(-ret));
	}
	return n;
}

/* The VM is stopped, the guest's patcher done: every yielded site that holds the guest's NOP again
 * gets the stub's CALL back and loses its breakpoint; the others stay the guest's. */
static void reclaim_sites(struct tracer *t)
{
	probe_for_each(p, &t->probes) {
		if (!p->yielded || p->detour)
			continue; /* a detour handed to kprobes stays theirs: one may be armed later */
		if (stub_drain_reclaim(&t->stub, p) < 0)
			continue; /* -EBUSY: the guest's hook is there; traced by the breakpoint */
		p->yielded = false;
		t->reclaimed++;
		/* the CALL is in: the breakpoint would trace each call twice */
		if (probe_remove(p, t->tgt) < 0)
			fprintf(stderr,
				"hvtrace: %s: the stub's CALL is back at 0x%" PRIx64
				", but its breakpoint would not go\n",
				p->func->name, p->addr);
	}
}

/* At a patcher's entry on vCPU @cpu: a one-shot breakpoint at its return address ([sp]), unless
 * one is in already (the patchers nest: the outermost call's return is the one that counts). */
static void arm_return(struct tracer *t, unsigned cpu, const struct arch_regs *regs)
{
	const struct arch *a = target_arch(t->tgt);
	struct tracer_patcher *rb = &t->ret_bp;
	uint64_t ret_addr = 0;
	int r;

	if (rb->inserted)
		return;
	r = t->tgt->ops->read_virt(t->tgt, cpu, arch_regs_sp(a, regs), &ret_addr, sizeof(ret_addr));
	if (r < 0) {
		fprintf(stderr,
			"hvtrace: the guest's text patcher's return address is not readable (stack "
			"0x%" PRIx64 ": %s): the sites handed back stay traced by breakpoints\n",
			arch_regs_sp(a, regs), strerror(-r));
		return;
	}
	/* the guest's stack says where: never inside hvtrace's own code in its memory */
	r = t->stub.stub.placed && stub_owns_rip(&t->stub.stub, ret_addr) ? -EPERM : 0;
	if (r == 0)
		r = insert_internal_bp(t, cpu, ret_addr, rb);
	if (r < 0)
		fprintf(stderr,
			"hvtrace: no breakpoint at the return of the guest's text patcher (0x%" PRIx64
			": %s): the sites handed back stay traced by breakpoints\n",
			ret_addr, strerror(-r));
}

static void disarm_return(struct tracer *t)
{
	struct tracer_patcher *rb = &t->ret_bp;

	if (rb->inserted && t->tgt->ops->remove_bp(t->tgt, rb->addr, rb->gpa, rb->orig) == 0)
		rb->inserted = false;
}

bool tracer_patcher_return_hit(struct tracer *t, uint64_t addr)
{
	if (!t->ret_bp.inserted || addr != t->ret_bp.addr)
		return false;
	disarm_return(t);
	reclaim_sites(t);
	return true;
}

bool tracer_patcher_hit(struct tracer *t, unsigned cpu, uint64_t addr,
			const struct arch_regs *regs)
{
	bool yielded_any = false;

	for (unsigned i = 0; i < t->nr_patchers; i++) {
		if (t->patchers[i].addr != addr)
			continue;
		t->patcher_stops++;
		if (atomic_load_explicit(&t->active, memory_order_relaxed))
			yield_sites(t, t->patchers[i].detours);
		if (t->patchers[i].detours)
			return true;
		probe_for_each(p, &t->probes) yielded_any |= p->yielded && !p->detour;
		if (yielded_any)
			arm_return(t, cpu, regs);
		return true;
	}
	return false;
}

void tracer_patchers_detach(struct tracer *t)
{
	disarm_return(t);
	for (unsigned i = 0; i < t->nr_patchers; i++) {
		struct tracer_patcher *pt = &t->patchers[i];

		if (pt->inserted &&
		    t->tgt->ops->remove_bp(t->tgt, pt->addr, pt->gpa, pt->orig) == 0)
			pt->inserted = false;
	}
}

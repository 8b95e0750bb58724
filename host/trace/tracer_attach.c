/* The tracer's attach and detach: probes, stubs and the return trampoline put in with every vCPU
 * stopped, and taken out again with every hooked return handed back (the hit path is tracer.c). */
#include "host/trace/tracer.h"
#include "host/trace/tracer_int.h"
#include "host/trace/clock.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Whether probe @p can be a stub probe in this configuration (set_graph_function with lazy arming,
 * fields read from guest memory at the call, or no fentry site, need trap probes). */
static bool stub_capable(const struct tracer *t, const struct probe *p)
{
	return t->opts.stub && (!p->entry || p->detour) && stub_drain_capable(p) &&
	       !tracer_has_trigger(t, p);
}

/* NOP5 -> CALL rel32 is five bytes: only with every vCPU stopped. */
static int attach_stubs(struct tracer *t, char *err, size_t errlen)
{
	struct stub_drain_cfg cfg = {
	    .tgt = t->tgt,
	    .probes = &t->probes,
	    .rings = t->rings + t->nr_cpus,
	    .nr_cpus = t->nr_cpus,
	    .task = &t->task,
	    .returns = t->opts.returns,
	    .graph = t->opts.graph_filter,
	    .max_depth = t->opts.max_depth,
	    .keep = t->opts.keep,
	    .tracing = &t->tracing,
	    /* --buffer-size-kb is the guest's ring size too, in bytes per CPU */
	    .max_records = t->opts.ring_records * sizeof(struct hvt_record) / STUB_REC_SIZE,
	    .exact_records = t->opts.ring_exact,
	    .max_payload = t->max_payload,
	    .t0 = t->t0,
	    .backpressure = t->opts.stub_backpressure,
	};
	int ret = t->tgt->ops->pause(t->tgt);

	if (ret < 0) {
		msg_fmt(err, errlen, "cannot stop the vCPUs to patch: %s", strerror(-ret));
		return ret;
	}
	ret = stub_drain_attach(&t->stub, &cfg, err, errlen);
	t->tgt->ops->resume(t->tgt);
	return ret;
}

/* The trampoline's guest-physical address and byte, through vCPU 0's page tables at attach (a page
 * of the tracer's own: where it was placed; a kernel not yet booted may not map it in the tables
 * its vCPU 0 starts with). */
static int resolve_trampoline(struct tracer *t)
{
	struct target *tgt = t->tgt;

	if (t->tramp_mapped)
		t->trampoline_gpa = t->tramp_reg.gpa + (t->trampoline - t->tramp_reg.gva);
	else if (tgt->ops->translate(tgt, 0, t->trampoline, &t->trampoline_gpa) < 0)
		return -EFAULT;
	if (tgt->ops->read_phys(tgt, t->trampoline_gpa, &t->trampoline_orig, 1) < 0)
		return -EFAULT;
	return 0;
}

/* Whether a probe that hooks returns is a trap probe, or a stub probe that may become one (its site
 * yielded to the guest's patcher gets a breakpoint, tracer_yield.c): their returns go through the
 * trampoline (a stub probe's through the stub). */
static bool trap_returns(const struct tracer *t)
{
	probe_for_each(p, &t->probes)
		if (p->hooks_return && (!p->stub || t->nr_patchers))
			return true;
	return false;
}

/* The trampoline's INT3, once. 0, or -errno with @err. */
static int insert_trampoline(struct tracer *t, char *err, size_t errlen)
{
	int ret;

	if (t->trampoline_inserted)
		return 0;
	ret = resolve_trampoline(t);
	if (ret == 0)
		ret = t->tgt->ops->insert_bp(t->tgt, t->trampoline, t->trampoline_gpa,
					     t->trampoline_orig);
	if (ret < 0) {
		msg_fmt(err, errlen, "return trampoline at 0x%llx: cannot write INT3: %s",
			(unsigned long long)t->trampoline, strerror(-ret));
		return ret;
	}
	t->trampoline_inserted = true;
	return 0;
}

int tracer_attach(struct tracer *t, char *err, size_t errlen)
{
	bool stubs = false;
	int ret;

	t->t0 = clock_now_ns();
	probe_for_each(p, &t->probes) {
		p->hooks_return = t->opts.returns &&
				  (t->opts.hook_all || p->ret_probe ||
				   (p->agg && (p->agg_mode & STUB_AGG_RET))) &&
				  !p->no_return;
		/* which probes the stub takes, before anything goes in: the trampoline's INT3
		 * goes in only for the returns of trap probes (a kernel booted under hvtrace
		 * calls __fentry__, where it may lie, before it has an IDT) */
		p->stub = !t->opts.lazy && stub_capable(t, p);
	}
	atomic_store(&t->active, 1);
	t->tgt->ops->set_bp_handler(t->tgt, tracer_hit, t);
	ret = t->trampoline && trap_returns(t) ? insert_trampoline(t, err, errlen) : 0;
	if (ret < 0) {
		atomic_store(&t->active, 0);
		return ret;
	}
	if (t->opts.lazy) {
		/* every site is checked now; only the graph roots are armed until one is entered */
		ret = probe_verify_all(&t->probes, t->tgt, err, errlen);
		probe_for_each(p, &t->probes)
			if (ret == 0 && probe_always_armed(p))
				ret = probe_insert(p, t->tgt);
		if (ret < 0 && !*err)
			msg_fmt(err, errlen, "cannot insert a breakpoint: %s", strerror(-ret));
		if (ret < 0)
			probe_remove_all(&t->probes, t->tgt);
	} else {
		probe_for_each(p, &t->probes)
			stubs |= p->stub;
		ret = probe_insert_all(&t->probes, t->tgt, err, errlen);
		if (ret == 0 && stubs)
			ret = attach_stubs(t, err, errlen);
		/* a detour that became a trap probe (attach_stubs) */
		if (ret == 0 && t->trampoline && trap_returns(t))
			ret = insert_trampoline(t, err, errlen);
		if (ret == 0)
			tracer_patchers_attach(t);
	}
	if (ret < 0 && t->stub.stub.placed) {
		/* stub sites the target would not restore now (QEMU's refuses text writes once a
		 * stop is asked) are still patched: the detach that must follow restores them, and
		 * everything else */
		atomic_store(&t->active, 0);
		t->attached = true;
		return ret;
	}
	if (ret < 0) {
		if (stubs) /* the trap probes went in before the stubs failed */
			probe_remove_all(&t->probes, t->tgt);
		atomic_store(&t->active, 0);
		if (t->trampoline_inserted)
			t->tgt->ops->remove_bp(t->tgt, t->trampoline, t->trampoline_gpa,
					       t->trampoline_orig);
		t->trampoline_inserted = false;
		return ret;
	}
	t->attached = true;
	return 0;
}

/* Writes back the return address of one shadow entry if its slot still points at the trampoline: at
 * the guest-physical address the hooking vCPU wrote the trampoline to, whatever page tables any
 * vCPU holds now. */
static void restore_slot(void *ctx, const struct shadow_entry *e)
{
	struct tracer *t = ctx;
	uint64_t cur;

	/* newest first: a tail call's frames (several on one slot, the newer ones saving the
	 * trampoline) each count as a return handed back, and the oldest writes the real address
	 * last */
	if (t->tgt->ops->read_phys(t->tgt, e->slot_gpa, &cur, 8) < 0 || cur != t->trampoline)
		return;
	if (t->tgt->ops->write_phys(t->tgt, e->slot_gpa, &e->orig, 8) == 0)
		t->restored_slots++;
}

/* After the probes are out: names each site the guest rewrote over our patch. */
static void report_rewritten(struct tracer *t)
{
	t->text_rewritten += probe_report_rewritten(&t->probes, t->tgt);
}

/* Returns already taken but not trapped yet: the RET popped the slot and, before the trampoline's
 * breakpoint fired, the vCPU took an interrupt (between two instructions). The hardware pushed its
 * frame (RIP, CS, RFLAGS, RSP, SS) on that stack, below the popped slot and 16-byte aligned, with
 * RIP on the trampoline and RSP one past the slot; with the probes gone, its IRET would run the
 * trampoline's own code (a RET that pops whatever is next). The frame gets the real return address
 * instead. Kept here between the scan and the shadow's update. */
struct interrupted {
	struct tracer *t;
	uint64_t slots[64];
	unsigned nr;
};

static void unhook_interrupted_one(void *ctx, const struct shadow_entry *e)
{
	struct interrupted *in = ctx;
	struct tracer *t = in->t;
	uint64_t frame = ((e->slot + 8) & ~15ull) - 40, f[5], orig;

	if (in->nr == sizeof(in->slots) / sizeof(in->slots[0]) ||
	    t->tgt->ops->read_virt(t->tgt, 0, frame, f, sizeof(f)) < 0 || f[0] != t->trampoline ||
	    (f[1] & 3) != 0 || f[3] != e->slot + 8)
		return;
	for (unsigned i = 0; i < in->nr; i++)
		if (in->slots[i] == e->slot)
			return; /* a tail call's frames: one interrupted return */
	orig = shadow_resolve(&t->shadow, e->slot);
	if (orig && t->tgt->ops->write_virt(t->tgt, 0, frame, &orig, 8) == 0)
		in->slots[in->nr++] = e->slot;
}

/* The slot of a return handed back in an interrupt's frame, if it still points at the trampoline:
 * written back too, uncounted. After a real interrupted return the slot is dead stack (popped,
 * above the frame, or under the frame's SS, which then no longer reads as the trampoline); but a
 * stale frame from an earlier interrupted return at the same slot can still lie below a live
 * hooked slot (a function just entered, its stack not written yet), and that slot must not stay
 * on the trampoline when its entry is forgotten. */
static void unhook_interrupted_slot(void *ctx, const struct shadow_entry *e)
{
	struct interrupted *in = ctx;
	struct tracer *t = in->t;
	uint64_t cur;

	for (unsigned i = 0; i < in->nr; i++)
		if (in->slots[i] == e->slot) {
			if (t->tgt->ops->read_phys(t->tgt, e->slot_gpa, &cur, 8) == 0 &&
			    cur == t->trampoline)
				t->tgt->ops->write_phys(t->tgt, e->slot_gpa, &e->orig, 8);
			return;
		}
}

static void unhook_interrupted(struct tracer *t)
{
	struct interrupted in = {.t = t};

	shadow_for_each(&t->shadow, unhook_interrupted_one, &in);
	if (in.nr)
		shadow_for_each(&t->shadow, unhook_interrupted_slot, &in);
	for (unsigned i = 0; i < in.nr; i++) {
		t->restored_slots += shadow_forget(&t->shadow, in.slots[i]);
		t->interrupted_returns++;
	}
}

/* A vCPU stopped right on the trampoline (its RET already popped the slot) resumes at the real
 * return address instead. */
static void unhook_cpus(struct tracer *t)
{
	for (unsigned i = 0; i < t->nr_cpus; i++) {
		const struct arch *a = target_arch(t->tgt);
		struct arch_regs regs;
		uint64_t orig, slot;

		if (t->tgt->ops->get_regs(t->tgt, i, &regs) < 0 ||
		    arch_regs_ip(a, &regs) != t->trampoline)
			continue;
		slot = arch_regs_sp(a, &regs) - a->regs.ret_slot_back;
		orig = shadow_resolve(&t->shadow, slot);
		if (!orig)
			continue;
		arch_regs_set_ip(a, &regs, orig);
		if (t->tgt->ops->set_regs(t->tgt, i, &regs) == 0)
			/* its slot was popped already: not to be written back again */
			t->restored_slots += shadow_forget(&t->shadow, slot);
	}
}

size_t tracer_forget_range(struct tracer *t, uint64_t lo, uint64_t hi)
{
	size_t n = 0;

	probe_for_each(p, &t->probes) {
		if (p->stub && p->patched && p->addr >= lo && p->addr < hi) {
			p->patched = false;
			n++;
		}
	}
	return n;
}

int tracer_detach(struct tracer *t)
{
	int ret;

	if (!t->attached)
		return 0;
	t->tgt->ops->pause(t->tgt);
	t->paused_to_detach_ns = clock_now_ns();
	atomic_store(&t->active, 0);
	if (t->before_detach)
		t->before_detach(t->before_detach_ctx);
	tracer_patchers_detach(t);
	ret_sites_remove_all(&t->ret_sites, t->tgt);
	ret = probe_remove_all(&t->probes, t->tgt);
	if (t->stub.stub.placed) {
		int r = stub_drain_detach(&t->stub);

		t->restored_slots += t->stub.stub.restored_slots;
		if (r < 0 && !ret)
			ret = r;
	}
	if (t->trampoline) {
		unhook_cpus(t);
		unhook_interrupted(t);
		shadow_for_each(&t->shadow, restore_slot, t);
		shadow_clear(&t->shadow);
		if (t->trampoline_inserted) {
			int r = t->tgt->ops->remove_bp(t->tgt, t->trampoline, t->trampoline_gpa,
						       t->trampoline_orig);

			if (r == -ESTALE) {
				uint8_t now = 0;

				t->tgt->ops->read_phys(t->tgt, t->trampoline_gpa, &now, 1);
				fprintf(stderr,
					"hvtrace: return trampoline at 0x%" PRIx64
					" was rewritten by the guest (guest-physical 0x%" PRIx64
					" holds %02x): left as it is\n",
					t->trampoline, t->trampoline_gpa, now);
				t->text_rewritten++;
			} else if (r < 0 && !ret) {
				ret = r;
			}
			t->trampoline_inserted = r < 0 && r != -ESTALE;
		}
		/* every return handed back: a page of the tracer's own goes (its INT3 with it) */
		if (!t->trampoline_inserted)
			tracer_unmap_trampoline_page(t);
	}
	report_rewritten(t);
	t->tgt->ops->resume(t->tgt);
	t->attached = false;
	return ret;
}

int tracer_takeover_detach(struct tracer *t)
{
	if (!t->attached)
		return 0;
	shadow_break_locks(&t->shadow);
	stub_drain_forget_thread(&t->stub);
	return tracer_detach(t);
}

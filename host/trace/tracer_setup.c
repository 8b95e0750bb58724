/* The tracer's set-up and ownership: tracer_new and tracer_free, what the session sets on its
 * probes before the attach (events, return probes, triggers, graph roots, detours), and the
 * accessors of the opaque handle. The hit path and the counters are tracer.c; attach and detach
 * tracer_attach.c. */
#include "host/trace/tracer.h"
#include "host/trace/tracer_int.h"
#include "guest-stub/stub_abi.h"
#include "guest-stub/trampoline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SHADOW_STACKS 1024

/* target.trampoline_page: maps a page of the tracer's own in the guest's kernel page tables (near
 * the traced text, opts' range) with guest_stub_trampoline's bytes at STUB_CODE_OFF, read-only and
 * executable, and takes it as the return trampoline. 0, or -errno (nothing mapped). */
static int map_trampoline_page(struct tracer *t, const struct tracer_opts *opts)
{
	struct target *tgt = t->tgt;
	uint64_t lo = opts->text_lo, hi = opts->text_hi > lo ? opts->text_hi : lo;
	char why[256];
	int ret;

	if (!tgt->ops->stub_map || !tgt->ops->stub_unmap || !tgt->ops->write_phys)
		return -ENOTSUP;
	ret = tgt->ops->stub_map(tgt, lo, hi, STUB_CODE_SIZE, STUB_CODE_SIZE, &t->tramp_reg, why,
				 sizeof(why));
	if (ret < 0)
		return ret;
	if (t->tramp_reg.code_gva ||
	    tgt->ops->write_phys(tgt, t->tramp_reg.gpa + STUB_CODE_OFF, guest_stub_trampoline,
				 guest_stub_trampoline_size) < 0 ||
	    (tgt->ops->stub_protect && tgt->ops->stub_protect(tgt, &t->tramp_reg, 0, 0) < 0)) {
		tgt->ops->stub_unmap(tgt, &t->tramp_reg);
		return -EFAULT;
	}
	t->tramp_mapped = true;
	t->trampoline = t->tramp_reg.gva + STUB_CODE_OFF;
	return 0;
}

void tracer_unmap_trampoline_page(struct tracer *t)
{
	if (!t->tramp_mapped)
		return;
	t->tgt->ops->stub_unmap(t->tgt, &t->tramp_reg);
	t->tramp_mapped = false;
}

int tracer_new(struct tracer **out, struct target *tgt, const struct vmi_site *const *sites,
	       size_t n, const struct vmi_task_layout *task, const struct tracer_opts *opts)
{
	/* on a cache line of its own, as its members may ask (more than malloc's alignment) */
	_Static_assert(_Alignof(struct tracer) <= 64, "struct tracer asks for more than a line");
	size_t size = (sizeof(struct tracer) + 63) & ~(size_t)63;
	struct tracer *t = aligned_alloc(64, size);

	*out = NULL;
	if (!t)
		return -ENOMEM;
	memset(t, 0, size);
	stub_drain_init(&t->stub);
	pthread_mutex_init(&t->arm_lock, NULL);
	t->tgt = tgt;
	t->opts = *opts;
	tracing_state_init(&t->tracing, !opts->tracing_off);
	/* a full ring: the vCPU waits for the writer while the tracer is attached */
	t->gate = (struct emit_gate){.tracing = &t->tracing,
				     .keep = opts->keep,
				     .filtered = &t->filtered,
				     .wait_while = &t->active};
	/* stub probes cost nothing while no root is live: they stay in */
	t->opts.lazy = opts->lazy && opts->graph_filter && opts->returns && !opts->stub;
	t->nr_cpus = tgt->nr_cpus;
	t->task = *task;
	/* returns need a trampoline, but where the ISA has a link register (ret_sites.h); one of
	 * the tracer's own where the target asks for it (stub probes map their region later, in the
	 * same place: the two do not go together) */
	if (opts->returns && !tgt->trampoline && target_arch(tgt)->regs.ra == ARCH_REG_NONE) {
		int ret =
		    tgt->trampoline_page && !opts->stub ? map_trampoline_page(t, opts) : -ENOTSUP;

		if (ret < 0) {
			tracer_free(t);
			return ret == -ENOMEM ? ret : -ENOTSUP;
		}
	}
	if (probe_table_init(&t->probes, sites, n) < 0)
		goto nomem;
	t->scratch = calloc(t->nr_cpus, sizeof(*t->scratch));
	t->nr_rings = t->nr_cpus * (opts->stub ? 2 : 1);
	t->rings = calloc(t->nr_rings, sizeof(*t->rings));
	t->cpu = aligned_alloc(64, t->nr_cpus * sizeof(*t->cpu));
	if (!t->rings || !t->cpu || !t->scratch)
		goto nomem;
	memset(t->cpu, 0, t->nr_cpus * sizeof(*t->cpu));
	for (unsigned i = 0; i < t->nr_cpus; i++) {
		atomic_store(&t->cpu[i].busy_since, UINT64_MAX);
	}
	/* the stub's records arrive in bursts the guest's small rings cannot hold: room for 4 times
	 * more */
	for (unsigned i = 0; i < t->nr_rings; i++)
		if (ring_init(&t->rings[i], opts->ring_records * (i < t->nr_cpus ? 1 : 4)) < 0)
			goto nomem;
	if (opts->returns) {
		if (!t->tramp_mapped)
			t->trampoline = tgt->trampoline;
		if (shadow_init(&t->shadow, SHADOW_STACKS, tgt->stack_shift, t->trampoline) < 0)
			goto nomem;
	}
	*out = t;
	return 0;
nomem:
	tracer_free(t);
	return -ENOMEM;
}

static int grow_scratch(struct tracer *t, size_t need)
{
	if (need > t->max_payload) {
		t->max_payload = need;
		for (unsigned i = 0; i < t->nr_cpus; i++) {
			uint8_t *b = realloc(t->scratch[i], need);

			if (!b)
				return -ENOMEM;
			t->scratch[i] = b;
		}
	}
	return 0;
}

int tracer_set_event(struct tracer *t, uint32_t id, const struct fe_spec *spec)
{
	struct probe *p = probe_at(&t->probes, id);

	if (!p)
		return -EINVAL;
	p->event = spec;
	return grow_scratch(t, fe_payload_size(spec));
}

int tracer_add_trigger(struct tracer *t, uint32_t id, const struct trigger *trig)
{
	struct tracer_trigger *v;

	if (!probe_at(&t->probes, id))
		return -EINVAL;
	v = realloc(t->triggers, (t->nr_triggers + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	t->triggers = v;
	v[t->nr_triggers].trig = trig;
	v[t->nr_triggers].probe = id;
	atomic_init(&v[t->nr_triggers].left, trig->count);
	t->nr_triggers++;
	return 0;
}

int tracer_set_stack_key(struct tracer *t, uint32_t id)
{
	struct probe *p = probe_at(&t->probes, id);

	if (!p)
		return -EINVAL;
	p->stack_key = true;
	return 0;
}

bool tracer_has_trigger(const struct tracer *t, const struct probe *p)
{
	if (p->stack_key)
		return true;
	for (size_t i = 0; i < t->nr_triggers; i++)
		if (t->triggers[i].probe == p->id)
			return true;
	return false;
}

int tracer_set_return(struct tracer *t, uint32_t id, const struct fe_spec *spec, bool quiet)
{
	struct probe *p = probe_at(&t->probes, id);

	if (!p)
		return -EINVAL;
	if (!t->opts.returns)
		return -ENOTSUP;
	p->ret_probe = true;
	p->quiet_entry = quiet;
	p->ret_event = spec;
	return spec ? grow_scratch(t, fe_payload_size(spec)) : 0;
}

int tracer_set_agg(struct tracer *t, uint32_t id, unsigned mode, bool count)
{
	struct probe *p = probe_at(&t->probes, id);

	if (!p || p->entry || p->event || mode >= 8 || mode == STUB_AGG_LOG2 ||
	    mode == (STUB_AGG_LOG2 | STUB_AGG_PID))
		return -EINVAL;
	if ((mode & STUB_AGG_RET) && (!t->opts.returns || p->no_return))
		return -ENOTSUP;
	p->agg = true;
	p->agg_count = count;
	p->agg_mode = (uint8_t)mode;
	return 0;
}

unsigned long long tracer_stub_agg_entries(const struct tracer *t)
{
	return t->stub.stub.agg_entries;
}

int tracer_stub_agg_now(struct tracer *t, struct stub_agg *a)
{
	return stub_drain_read_agg(&t->stub, a);
}

const struct stub_agg *tracer_stub_agg(const struct tracer *t)
{
	return t->stub.agg.read || t->stub.agg_unread ? &t->stub.agg : NULL;
}

int tracer_set_graph_root(struct tracer *t, uint32_t id)
{
	struct probe *p = probe_at(&t->probes, id);

	if (!p)
		return -EINVAL;
	p->graph_root = true;
	return 0;
}

int tracer_set_detour(struct tracer *t, uint32_t id, const struct arch_reloc_plan *plan)
{
	struct probe *p = probe_at(&t->probes, id);
	struct arch_reloc_plan *copy;

	if (!p || !p->entry)
		return -EINVAL;
	copy = malloc(sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	*copy = *plan;
	free(p->detour);
	p->detour = copy;
	return 0;
}

int tracer_set_no_return(struct tracer *t, uint32_t id)
{
	struct probe *p = probe_at(&t->probes, id);

	if (!p || !p->entry)
		return -EINVAL;
	p->no_return = true;
	return 0;
}

void tracer_free(struct tracer *t)
{
	if (!t)
		return;
	stub_drain_stop(&t->stub);
	tracer_unmap_trampoline_page(t);
	stub_agg_free(&t->stub.agg);
	probe_table_free(&t->probes);
	for (unsigned i = 0; t->rings && i < t->nr_rings; i++)
		ring_free(&t->rings[i]);
	free(t->rings);
	free(t->cpu);
	for (unsigned i = 0; t->scratch && i < t->nr_cpus; i++)
		free(t->scratch[i]);
	free(t->scratch);
	free(t->triggers);
	t->triggers = NULL;
	t->nr_triggers = 0;
	t->scratch = NULL;
	shadow_free(&t->shadow);
	pthread_mutex_destroy(&t->arm_lock);
	free(t);
}

const struct probe_table *tracer_probes(const struct tracer *t)
{
	return &t->probes;
}

struct ring *tracer_rings(struct tracer *t, unsigned *nr)
{
	*nr = t->nr_rings;
	return t->rings;
}

unsigned long long tracer_cpu_stalls(const struct tracer *t, unsigned cpu)
{
	return t->rings[cpu].stalls;
}

unsigned long long tracer_cpu_lost(const struct tracer *t, unsigned cpu)
{
	return t->cpu[cpu].lost;
}

const struct arch *tracer_arch(const struct tracer *t)
{
	return target_arch(t->tgt);
}

struct target *tracer_target(const struct tracer *t)
{
	return t->tgt;
}

uint64_t tracer_trampoline(const struct tracer *t)
{
	return t->trampoline;
}

bool tracer_returns(const struct tracer *t)
{
	return t->opts.returns;
}

uint64_t tracer_t0(const struct tracer *t)
{
	return t->t0;
}

bool tracer_backpressure(const struct tracer *t)
{
	return t->opts.stub_backpressure && t->stub.nr_probes;
}

bool tracer_drain_holding(struct tracer *t)
{
	return stub_drain_holding(&t->stub);
}

void tracer_count_pauses(struct tracer *t, uint64_t n, uint64_t ns)
{
	stub_drain_count_pauses(&t->stub, n, ns);
}

void tracer_set_before_detach(struct tracer *t, void (*fn)(void *ctx), void *ctx)
{
	t->before_detach = fn;
	t->before_detach_ctx = ctx;
}

void tracer_set_task_slots(struct tracer *t, const uint64_t *current, const uint64_t *preempt)
{
	memcpy(t->task.current_slot, current, sizeof(t->task.current_slot));
	memcpy(t->task.preempt_slot, preempt, sizeof(t->task.preempt_slot));
}

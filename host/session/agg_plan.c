#include "host/session/agg_plan.h"
#include "guest-stub/stub_abi.h"

#include <string.h>

/* Whether the stub keeps key or value @f (as a key when @key), and the mode bits it needs. */
static bool countable_field(const struct hist_field *f, bool key, unsigned *mode)
{
	switch (f->src) {
	case HIST_SRC_HITCOUNT:
		return !key;
	case HIST_SRC_PID:
		*mode |= STUB_AGG_PID;
		return key;
	case HIST_SRC_CPU:
	case HIST_SRC_IP:
		return key;
	case HIST_SRC_DURATION:
		*mode |= STUB_AGG_RET;
		if (!key)
			return f->mod == HIST_MOD_NONE; /* the sum of the durations, in ns */
		*mode |= STUB_AGG_LOG2;
		return f->mod == HIST_MOD_LOG2;
	default:
		return false;
	}
}

bool agg_plan_hist_countable(const struct hist_spec *h, unsigned *mode)
{
	unsigned m = 0;

	for (unsigned i = 0; i < h->nr_keys; i++)
		if (!countable_field(&h->keys[i], true, &m))
			return false;
	for (unsigned i = 0; i < h->nr_vals; i++)
		if (!countable_field(&h->vals[i], false, &m))
			return false;
	*mode = m;
	return true;
}

int agg_plan_apply(struct tracer *tr, const struct session *s, bool stub)
{
	const struct probe_table *probes = tracer_probes(tr);
	int counted = 0;

	if (s->tracer != TRACER_NOP || s->nr_expects || s->summary || s->junit ||
	    rec_filter_active(&s->tasks) || s->nr_efilters)
		return 0;
	probe_for_each(p, probes) {
		unsigned mode = s->profile ? STUB_AGG_RET : 0, m;
		bool watched = s->profile, countable = stub;
		int ret;

		if (p->event || p->ret_probe || p->entry || p->inside || tracer_has_trigger(tr, p))
			continue;
		for (size_t k = 0; k < s->nr_hists; k++) {
			const struct probe *hp = probe_find(probes, s->hists[k].func);

			if (hp != p)
				continue;
			watched = true;
			if (agg_plan_hist_countable(&s->hists[k], &m))
				mode |= m;
			else
				countable = false;
			if (hist_wants_returns(&s->hists[k]))
				mode |= STUB_AGG_RET;
		}
		if (!watched || ((mode & STUB_AGG_RET) && p->no_return))
			continue;
		ret = tracer_set_agg(tr, p->id, mode, countable);
		if (ret < 0)
			return ret;
		counted += countable;
	}
	return counted;
}

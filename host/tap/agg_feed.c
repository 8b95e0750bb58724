#include "host/tap/agg_feed.h"

#include <string.h>

/* Field @f of item @it (the key's raw value, then its modifier; a log2 duration key is the
 * item's bucket as counted). */
static uint64_t item_field(const struct hist_field *f, const struct stub_agg_item *it,
			   const struct probe *p)
{
	switch (f->src) {
	case HIST_SRC_HITCOUNT:
		return it->hits;
	case HIST_SRC_PID:
		return hist_field_mod(f, (uint64_t)(int64_t)it->pid);
	case HIST_SRC_CPU:
		return hist_field_mod(f, it->cpu);
	case HIST_SRC_IP:
		return hist_field_mod(f, p->addr);
	case HIST_SRC_DURATION:
		return it->has_log2 && f->mod == HIST_MOD_LOG2 ? it->log2 : it->sum_ns;
	default:
		return 0;
	}
}

static void feed_hist(struct hist *h, const struct stub_agg_item *it, const struct probe *p)
{
	uint64_t key[HIST_KEYS_MAX], val[HIST_VALS_MAX];
	char comm[VMI_COMM_LEN];

	for (unsigned i = 0; i < h->spec.nr_keys; i++)
		key[i] = item_field(&h->spec.keys[i], it, p);
	for (unsigned i = 0; i < h->spec.nr_vals; i++)
		val[i] = h->spec.vals[i].src == HIST_SRC_DURATION
			     ? it->sum_ns
			     : item_field(&h->spec.vals[i], it, p);
	memset(comm, 0, sizeof(comm));
	memcpy(comm, it->comm, sizeof(it->comm) < sizeof(comm) ? sizeof(it->comm) : sizeof(comm));
	comm[VMI_COMM_LEN - 1] = 0;
	hist_account_n(h, key, val, comm, it->hits);
}

void agg_feed(const struct stub_agg *a, struct hist_set *hs, struct profile *prof,
	      const struct probe_table *probes)
{
	for (size_t k = 0; k < hs->nr; k++) {
		const struct probe *p = probe_at(probes, hs->v[k].probe);

		if (p && p->stub && p->agg && p->agg_count)
			hs->v[k].dropped += a->dropped;
	}
	for (size_t i = 0; i < a->nr; i++) {
		const struct stub_agg_item *it = &a->v[i];
		const struct probe *p = probe_at(probes, it->probe);

		if (!p)
			continue;
		if (it->is_unwound) {
			/* as the drain counts an abandoned frame's record */
			struct probe *w = probe_at(probes, it->probe);

			atomic_fetch_add_explicit(&w->n.unwound, it->hits, memory_order_relaxed);
			continue;
		}
		for (size_t k = 0; k < hs->nr; k++)
			if (hs->v[k].probe == it->probe && hs->v[k].on_return == it->is_return)
				feed_hist(&hs->v[k], it, p);
		if (prof)
			profile_add_counted(prof, it->cpu, it->probe, it->is_return, it->hits,
					    it->sum_ns, it->sumsq_ns, it->max_ns);
	}
}

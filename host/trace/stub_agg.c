#include "host/trace/stub_agg.h"

#include <stdlib.h>
#include <string.h>

unsigned stub_agg_log2(uint64_t v)
{
	return v <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(v - 1);
}

/* Whether @e, at a site of counting probe @p, is what the stub writes for @p's mode. */
static bool plausible(const struct stub_agg_ent *e, const struct probe *p)
{
	unsigned mode = p->agg_mode;
	bool pid = mode & STUB_AGG_PID, ret = mode & STUB_AGG_RET, log2 = mode & STUB_AGG_LOG2;

	if (e->bucket == STUB_AGG_UNWOUND) /* frames abandoned: counted alone */
		return ret && e->pid == STUB_AGG_NOPID && !e->sum && !e->sumsq && !e->max;
	if (pid ? e->pid > STUB_AGG_PID_MAX : e->pid != STUB_AGG_NOPID)
		return false;
	if (e->bucket == 0) /* calls: no duration */
		return !e->sum && !e->sumsq && !e->max;
	if (!ret || (e->bucket == 1) == log2 || e->bucket > 2 + 64)
		return false;
	/* each duration is at most max, so the sum at most hits * max, and max one of them */
	if (e->max > e->sum || (unsigned __int128)e->hits * e->max < e->sum)
		return false;
	return !log2 || stub_agg_log2(e->max) == e->bucket - 2;
}

void stub_agg_parse(struct stub_agg *a, const struct stub_agg_ent *raw, size_t n, unsigned cpu,
		    const struct probe_table *probes)
{
	for (size_t i = 0; i < n; i++) {
		const struct stub_agg_ent *e = &raw[i];
		const struct probe *p;
		struct stub_agg_item *it;

		if (!e->ip || !e->hits)
			continue;
		p = probe_lookup(probes, e->ip);
		if (!p || !p->stub || !p->agg || !p->agg_count || p->addr != e->ip ||
		    !plausible(e, p) || a->nr == a->cap) {
			a->rejected++;
			continue;
		}
		it = &a->v[a->nr++];
		memset(it, 0, sizeof(*it));
		it->probe = p->id;
		it->cpu = (uint16_t)cpu;
		it->is_unwound = e->bucket == STUB_AGG_UNWOUND;
		it->has_pid = (p->agg_mode & STUB_AGG_PID) && !it->is_unwound;
		it->pid = it->has_pid ? (int32_t)e->pid : -1;
		it->is_return = e->bucket >= 1 && !it->is_unwound;
		it->has_log2 = it->is_return && e->bucket >= 2;
		it->log2 = it->has_log2 ? (uint8_t)(e->bucket - 2) : 0;
		it->hits = e->hits;
		it->sum_ns = e->sum;
		it->sumsq_ns = e->sumsq;
		it->max_ns = e->max;
		if (it->has_pid)
			memcpy(it->comm, e->comm, sizeof(it->comm) - 1);
	}
}

void stub_agg_free(struct stub_agg *a)
{
	free(a->v);
	memset(a, 0, sizeof(*a));
}

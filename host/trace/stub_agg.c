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

/* The returns an STUB_AGG_BOTH entry counts (the u64 at A_COMM), and whether the rest of its comm
 * is zero as the stub leaves it. */
static uint64_t both_returns(const struct stub_agg_ent *e, bool *clean)
{
	uint64_t rets, rest;

	memcpy(&rets, e->comm, 8);
	memcpy(&rest, e->comm + 8, 8);
	*clean = rest == 0;
	return rets;
}

/* Whether @e, an STUB_AGG_BOTH entry (calls and returns of the profiler's short path, prof.S), is
 * what the stub writes for counting probe @p. */
static bool plausible_both(const struct stub_agg_ent *e, const struct probe *p)
{
	bool clean;
	uint64_t rets = both_returns(e, &clean);

	if (p->agg_mode != STUB_AGG_RET || e->pid != STUB_AGG_NOPID || !clean)
		return false;
	if (!rets)
		return !e->sum && !e->sumsq && !e->max;
	return e->max <= e->sum && (unsigned __int128)rets * e->max >= e->sum;
}

/* Appends to @a the item of @e's probe @p on CPU @cpu (its hits, and its durations when
 * @is_return), or counts it rejected when @a is full. */
static struct stub_agg_item *add_item(struct stub_agg *a, const struct stub_agg_ent *e,
				      const struct probe *p, unsigned cpu, bool is_return)
{
	struct stub_agg_item *it;

	if (a->nr == a->cap) {
		a->rejected++;
		return NULL;
	}
	it = &a->v[a->nr++];
	memset(it, 0, sizeof(*it));
	it->probe = p->id;
	it->cpu = (uint16_t)cpu;
	it->pid = -1;
	it->is_return = is_return;
	it->hits = e->hits;
	if (is_return) {
		it->sum_ns = e->sum;
		it->sumsq_ns = e->sumsq;
		it->max_ns = e->max;
	}
	return it;
}

void stub_agg_parse(struct stub_agg *a, const struct stub_agg_ent *raw, size_t n, unsigned cpu,
		    const struct probe_table *probes)
{
	for (size_t i = 0; i < n; i++) {
		const struct stub_agg_ent *e = &raw[i];
		const struct probe *p;
		struct stub_agg_item *it;

		bool clean;

		/* nothing counted (a STUB_AGG_BOTH entry may hold returns alone: of calls made on
		 * another CPU, arm64's general routines counting them where they return) */
		if (!e->ip || (!e->hits && (e->bucket != STUB_AGG_BOTH || !both_returns(e, &clean))))
			continue;
		p = probe_lookup(probes, e->ip);
		if (p && p->stub && p->agg && p->agg_count && p->addr == e->ip &&
		    e->bucket == STUB_AGG_BOTH) {
			uint64_t rets = both_returns(e, &clean);

			if (!plausible_both(e, p)) {
				a->rejected++;
				continue;
			}
			if (e->hits)
				add_item(a, e, p, cpu, false);
			if (rets && (it = add_item(a, e, p, cpu, true)))
				it->hits = rets;
			continue;
		}
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

#include "host/tap/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

int profile_init(struct profile *p, const struct probe_table *probes)
{
	p->probes = probes;
	p->cpu_v = NULL;
	p->nr_cpus = 0;
	p->v = calloc(probe_count(probes) ? probe_count(probes) : 1, sizeof(*p->v));
	return p->v ? 0 : -ENOMEM;
}

int profile_set_cpus(struct profile *p, unsigned nr_cpus)
{
	size_t n = probe_count(p->probes) ? probe_count(p->probes) : 1;

	free(p->cpu_v);
	p->cpu_v = calloc((size_t)(nr_cpus ? nr_cpus : 1) * n, sizeof(*p->cpu_v));
	p->nr_cpus = p->cpu_v ? (nr_cpus ? nr_cpus : 1) : 0;
	return p->cpu_v ? 0 : -ENOMEM;
}

/* Probe @id's entry of CPU @cpu, or NULL without per-CPU tables. */
static struct profile_entry *cpu_entry(struct profile *p, unsigned cpu, uint32_t id)
{
	if (!p->cpu_v)
		return NULL;
	if (cpu >= p->nr_cpus)
		cpu = p->nr_cpus - 1;
	return &p->cpu_v[(size_t)cpu * probe_count(p->probes) + id];
}

static void count_calls(struct profile_entry *e, uint64_t n)
{
	if (e)
		e->hits += n;
}

static void count_returns(struct profile_entry *e, uint64_t n, uint64_t sum, uint64_t sumsq,
			  uint64_t max)
{
	if (!e)
		return;
	e->returns += n;
	e->total_ns += sum;
	e->sumsq_ns += sumsq;
	if (max > e->max_ns)
		e->max_ns = max;
}

void profile_add_counted(struct profile *p, unsigned cpu, uint32_t id, bool is_return, uint64_t n,
			 uint64_t sum_ns, uint64_t sumsq_ns, uint64_t max_ns)
{
	if (id >= probe_count(p->probes))
		return;
	if (!is_return) {
		count_calls(&p->v[id], n);
		count_calls(cpu_entry(p, cpu, id), n);
		return;
	}
	count_returns(&p->v[id], n, sum_ns, sumsq_ns, max_ns);
	count_returns(cpu_entry(p, cpu, id), n, sum_ns, sumsq_ns, max_ns);
}

/* a call of @rec's probe (an -e event outside function_graph's graph all the same: no return) */
static void profile_call(void *ctx, const struct sink_rec *rec)
{
	struct profile *p = ctx;

	if (rec->probe)
		profile_add_counted(p, rec->r->cpu, rec->probe->id, false, 1, 0, 0, 0);
}

static void profile_ret(void *ctx, const struct sink_rec *rec)
{
	struct profile *p = ctx;
	uint64_t d = rec->r->duration;

	if (rec->probe)
		profile_add_counted(p, rec->r->cpu, rec->probe->id, true, 1, d, d * d, d);
}

static const struct sink_tap_ops profile_ops = {.call = profile_call, .ret = profile_ret};

void profile_add(void *ctx, const struct sink_rec *rec)
{
	sink_tap_record(&profile_ops, ctx, rec);
}

static const struct profile *sort_ctx;

static int by_time(const void *a, const void *b)
{
	const struct profile_entry *x = &sort_ctx->v[*(const uint32_t *)a];
	const struct profile_entry *y = &sort_ctx->v[*(const uint32_t *)b];

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->hits != y->hits)
		return x->hits > y->hits ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void us(char *buf, size_t len, uint64_t ns)
{
	snprintf(buf, len, "%" PRIu64 ".%03" PRIu64 " us", ns / 1000, ns % 1000);
}

void profile_print(const struct profile *p, unsigned long long stub_lost, FILE *out)
{
	size_t n = probe_count(p->probes);
	uint32_t *order = malloc((n ? n : 1) * sizeof(*order));

	if (!order)
		return;
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	sort_ctx = p;
	qsort(order, n, sizeof(*order), by_time);
	fprintf(out, "  %-30s %10s %10s %8s %8s %16s %14s %14s\n", "Function", "Hit", "Returns",
		"Misses", "Unwound", "Time", "Avg", "Max");
	fprintf(out, "  %-30s %10s %10s %8s %8s %16s %14s %14s\n", "--------", "---", "-------",
		"------", "-------", "----", "---", "---");
	for (size_t k = 0; k < n; k++) {
		const struct profile_entry *e = &p->v[order[k]];
		const struct probe *pr = probe_at(p->probes, order[k]);
		uint64_t misses = atomic_load(&pr->n.misses);
		uint64_t unwound = atomic_load(&pr->n.unwound);
		char tot[32], avg[32], max[32];

		if (!e->hits && !misses)
			continue;
		us(tot, sizeof(tot), e->total_ns);
		us(avg, sizeof(avg), e->returns ? e->total_ns / e->returns : 0);
		us(max, sizeof(max), e->max_ns);
		fprintf(out,
			"  %-30s %10" PRIu64 " %10" PRIu64 " %8" PRIu64 " %8" PRIu64
			" %16s %14s %14s\n",
			pr->func->name, e->hits, e->returns, misses, unwound, tot, avg, max);
	}
	free(order);
	/* events and return probes, in kprobe_profile's layout: name, hits, misses */
	for (size_t i = 0; i < n; i++) {
		const struct probe *pr = probe_at(p->probes, i);
		const char *name = pr->func->name;
		uint64_t misses = atomic_load(&pr->n.misses);

		if (pr->event)
			fprintf(out, "  %-44s %15" PRIu64 " %15" PRIu64 "\n", name, p->v[i].hits, misses);
		if (pr->ret_probe) {
			char rname[160];

			/* hits: entries hooked, as kretprobe's nhit; each must have its return line */
			snprintf(rname, sizeof(rname), "r_%s_0", name); /* the kernel's default kretprobe name */
			fprintf(out, "  %-44s %15" PRIu64 " %15" PRIu64 "\n", rname,
				(uint64_t)atomic_load(&pr->n.hooked), misses);
		}
	}
	/* the stub cannot tell which probe an event it had no room for belonged to, and the count
	 * is the guest's own */
	if (stub_lost)
		fprintf(out,
			"hvtrace: guest-reported: %llu events missed: the stub's guest rings were "
			"full (no probe named)\n",
			stub_lost);
}

int profile_copy(struct profile *dst, const struct profile *src)
{
	size_t n = probe_count(src->probes) ? probe_count(src->probes) : 1;

	memset(dst, 0, sizeof(*dst));
	dst->probes = src->probes;
	dst->v = malloc(n * sizeof(*dst->v));
	if (src->cpu_v)
		dst->cpu_v = malloc((size_t)src->nr_cpus * n * sizeof(*dst->cpu_v));
	if (!dst->v || (src->cpu_v && !dst->cpu_v)) {
		profile_free(dst);
		return -ENOMEM;
	}
	memcpy(dst->v, src->v, n * sizeof(*dst->v));
	if (src->cpu_v) {
		memcpy(dst->cpu_v, src->cpu_v, (size_t)src->nr_cpus * n * sizeof(*dst->cpu_v));
		dst->nr_cpus = src->nr_cpus;
	}
	return 0;
}

void profile_free(struct profile *p)
{
	free(p->v);
	free(p->cpu_v);
	p->v = p->cpu_v = NULL;
	p->nr_cpus = 0;
}

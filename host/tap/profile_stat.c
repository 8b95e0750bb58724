#include "host/tap/profile_stat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int profile_stat_duration(char *buf, size_t len, uint64_t ns)
{
	char us[24], frac[5];
	int n = snprintf(us, sizeof(us), "%" PRIu64, ns / 1000), w, out;

	w = n;
	out = snprintf(buf, len, "%s", us);
	if (n < 7) {
		size_t slen = 8 - (size_t)n < sizeof(frac) ? 8 - (size_t)n : sizeof(frac);

		snprintf(frac, slen, "%03" PRIu64, ns % 1000);
		out += snprintf(buf + out, (size_t)out < len ? len - (size_t)out : 0, ".%s", frac);
		w += (int)strlen(frac) + 1;
	}
	out += snprintf(buf + out, (size_t)out < len ? len - (size_t)out : 0, " us ");
	for (; w < 8; w++)
		out += snprintf(buf + out, (size_t)out < len ? len - (size_t)out : 0, " ");
	return out;
}

int profile_stat_line(char *buf, size_t len, const char *name, const struct profile_entry *e)
{
	uint64_t avg = e->hits ? e->total_ns / e->hits : 0, s2 = 0;
	uint64_t denom =
	    e->hits * (e->hits - 1) * 1000; /* wraps as ftrace's, but never to 0 here */
	int n;

	if (e->hits > 1 && denom)
		s2 = (e->hits * e->sumsq_ns - e->total_ns * e->total_ns) / denom;
	n = snprintf(buf, len, "  %-30.30s  %10" PRIu64 "    ", name, e->hits);
	n += profile_stat_duration(buf + n, (size_t)n < len ? len - (size_t)n : 0, e->total_ns);
	n += snprintf(buf + n, (size_t)n < len ? len - (size_t)n : 0, "    ");
	n += profile_stat_duration(buf + n, (size_t)n < len ? len - (size_t)n : 0, avg);
	n += snprintf(buf + n, (size_t)n < len ? len - (size_t)n : 0, "    ");
	n += profile_stat_duration(buf + n, (size_t)n < len ? len - (size_t)n : 0, s2);
	n += snprintf(buf + n, (size_t)n < len ? len - (size_t)n : 0, "\n");
	return n;
}

static const struct profile_entry *sort_tab;

static int by_time(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	const struct profile_entry *x = &sort_tab[i], *y = &sort_tab[j];

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->hits != y->hits)
		return x->hits > y->hits ? -1 : 1;
	return i < j ? -1 : 1;
}

/* One table: @tab, one entry per probe of @p. */
static void print_table(const struct profile *p, const struct profile_entry *tab, uint32_t *order,
			const char *title, FILE *out)
{
	size_t n = probe_count(p->probes), k = 0;
	char line[256];

	for (size_t i = 0; i < n; i++)
		if (tab[i].hits)
			order[k++] = (uint32_t)i;
	sort_tab = tab;
	qsort(order, k, sizeof(*order), by_time);
	fprintf(out, "%s\n", title);
	fputs(
	    "  Function                               Hit    Time            Avg             s^2\n"
	    "  --------                               ---    ----            ---             ---\n",
	    out);
	for (size_t i = 0; i < k; i++) {
		profile_stat_line(line, sizeof(line), probe_at(p->probes, order[i])->func->name,
				  &tab[order[i]]);
		fputs(line, out);
	}
}

int profile_stat_print(const struct profile *p, FILE *out)
{
	size_t n = probe_count(p->probes);
	uint32_t *order = malloc((n ? n : 1) * sizeof(*order));
	char title[64];

	if (!order)
		return -ENOMEM;
	for (unsigned c = 0; p->cpu_v && c < p->nr_cpus; c++) {
		snprintf(title, sizeof(title), "trace_stat/function%u:", c);
		print_table(p, p->cpu_v + (size_t)c * n, order, title, out);
		fputc('\n', out);
	}
	print_table(p, p->v, order, "trace_stat/function (all CPUs):", out);
	free(order);
	return ferror(out) ? -EIO : 0;
}

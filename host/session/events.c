#include "host/session/events.h"
#include "host/trace/fevent_btf.h"
#include "host/trace/filter.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int events_select(const struct session *s, const struct vmi_sites *sites,
		  const struct vmi_sites *inside, const struct vmi_site ***sel, size_t *nr,
		  char *err, size_t errlen)
{
	size_t more = inside ? inside->nr : 0;
	int ret;

	if (!s->nr_events && !s->nr_rprobes)
		return 0;
	for (size_t e = 0; e < s->nr_events && !inside; e++)
		if (s->events[e].offset) {
			char label[160];

			msg_fmt(err, errlen,
				"-e %s: an instruction inside a function is probed through QEMU's "
				"gdbstub (run --qemu, attach); this backend cannot",
				fe_label(&s->events[e], label, sizeof(label)));
			return -ENOENT;
		}
	if (!*sel) {
		*sel = calloc(sites->nr + more ? sites->nr + more : 1, sizeof(**sel));
		if (!*sel)
			return -ENOMEM;
		*nr = 0;
	} else if (more) {
		const struct vmi_site **v = realloc(*sel, (sites->nr + more) * sizeof(**sel));

		if (!v)
			return -ENOMEM;
		*sel = v;
	}
	ret = filter_add_events(sites, false, "-e", s->events, s->nr_events, *sel, nr, err, errlen);
	if (ret == 0 && more)
		ret = filter_add_events(inside, true, "-e", s->events, s->nr_events, *sel, nr, err,
					errlen);
	if (ret == 0)
		ret = filter_add_events(sites, false, "-r", s->rprobes, s->nr_rprobes, *sel, nr, err,
					errlen);
	return ret;
}

/* Whether the probe of @func would trace entries without the return probe (selected by the tracer's
 * own filters, or an -e event). */
static bool entry_wanted(const struct session *s, const char *func, bool traced)
{
	for (size_t e = 0; e < s->nr_events; e++)
		if (!s->events[e].offset && !strcmp(s->events[e].func, func))
			return true;
	return traced;
}

/* Whether -e @a and -e @b are at one place: the same function, the same offset into it. */
static bool same_place(const struct fe_spec *a, const struct fe_spec *b)
{
	return a->offset == b->offset && !strcmp(a->func, b->func);
}

/* The first -e of the place of -e @e. */
static size_t first_of(const struct session *s, size_t e)
{
	for (size_t k = 0; k < e; k++)
		if (same_place(&s->events[k], &s->events[e]))
			return k;
	return e;
}

int events_resolve(const struct session *s, const struct vmi_btf *btf, struct fe_spec **events,
		   struct fe_spec **rprobes, char *err, size_t errlen)
{
	char why[384];

	*events = calloc(s->nr_events ? s->nr_events : 1, sizeof(**events));
	*rprobes = calloc(s->nr_rprobes ? s->nr_rprobes : 1, sizeof(**rprobes));
	if (!*events || !*rprobes)
		return -ENOMEM;
	for (size_t e = 0; e < s->nr_events; e++) {
		(*events)[e] = s->events[e];
		if (fe_resolve_btf(&(*events)[e], false, btf, why, sizeof(why)) < 0) {
			msg_fmt(err, errlen, "-e: %s", why);
			return -EINVAL;
		}
	}
	/* several -e of one function: chained after its first, all recorded at each call */
	for (size_t e = 0; e < s->nr_events; e++) {
		size_t last = first_of(s, e), n = 1;

		if (last == e)
			continue;
		/* built in order: the chain's tail is the latest -e of the function before @e */
		for (size_t j = last + 1; j < e; j++)
			if (same_place(&s->events[j], &s->events[e])) {
				last = j;
				n++;
			}
		if (n >= FE_MAX_CHAIN) {
			msg_fmt(err, errlen, "-e %s: at most %d events on one function",
				s->events[e].func, FE_MAX_CHAIN);
			return -EINVAL;
		}
		(*events)[last].next = &(*events)[e];
	}
	for (size_t e = 0; e < s->nr_rprobes; e++) {
		(*rprobes)[e] = s->rprobes[e];
		if (fe_resolve_btf(&(*rprobes)[e], true, btf, why, sizeof(why)) < 0) {
			msg_fmt(err, errlen, "-r: %s", why);
			return -EINVAL;
		}
	}
	return 0;
}

int events_bind(const struct session *s, const struct fe_spec *events,
		const struct fe_spec *rprobes, struct tracer *t, const bool *traced)
{
	const struct probe_table *probes = tracer_probes(t);
	const struct probe_name *named;
	size_t n;

	for (size_t e = 0; e < s->nr_events; e++) {
		char label[160];

		if (first_of(s, e) != e)
			continue; /* chained after the first -e of its function (events_resolve) */
		fe_label(&s->events[e], label, sizeof(label));
		n = probe_find_all(probes, label, &named);
		for (size_t k = 0; k < n; k++) {
			const struct probe *pr = probe_at(probes, named[k].id);
			int ret;

			if (pr->inside != (s->events[e].offset != 0))
				continue;
			ret = tracer_set_event(t, pr->id, &events[e]);
			if (ret < 0)
				return ret;
		}
	}
	for (size_t e = 0; e < s->nr_rprobes; e++) {
		n = probe_find_all(probes, s->rprobes[e].func, &named);
		for (size_t k = 0; k < n; k++) {
			const struct probe *pr = probe_at(probes, named[k].id);
			bool quiet;
			int ret;

			if (pr->inside)
				continue;
			quiet = !entry_wanted(s, s->rprobes[e].func, traced && traced[pr->id]);
			ret = tracer_set_return(t, pr->id, &rprobes[e], quiet);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

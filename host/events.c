#include "events.h"
#include "filter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int events_select(const struct session *s, const struct vmi_sites *sites,
		  const struct vmi_site ***sel, size_t *nr, char *err, size_t errlen)
{
	if (!s->nr_events)
		return 0;
	if (!*sel) {
		*sel = calloc(sites->nr ? sites->nr : 1, sizeof(**sel));
		if (!*sel)
			return -ENOMEM;
		*nr = 0;
	}
	return filter_add_events(sites, s->events, s->nr_events, *sel, nr, err, errlen);
}

int events_bind(const struct session *s, struct tracer *t)
{
	for (size_t e = 0; e < s->nr_events; e++)
		for (size_t i = 0; i < t->probes.nr; i++)
			if (!strcmp(t->probes.v[i].func->name, s->events[e].func)) {
				int ret = tracer_set_event(t, t->probes.v[i].id, &s->events[e]);

				if (ret < 0)
					return ret;
			}
	return 0;
}

#include "host/trace/filter.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool filter_glob_match(const char *glob, const char *name)
{
	return fnmatch(glob, name, 0) == 0;
}

static bool any_match(char *const *globs, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (filter_glob_match(globs[i], name))
			return true;
	return false;
}

/* Fails with a message if some glob of @globs matches no site. */
static int check_each_matches(const struct vmi_sites *sites, char *const *globs, size_t n,
			      const char *flag, char *err, size_t errlen)
{
	for (size_t g = 0; g < n; g++) {
		size_t i;

		for (i = 0; i < sites->nr; i++)
			if (filter_glob_match(globs[g], sites->v[i].func->name))
				break;
		if (i == sites->nr) {
			msg_fmt(err, errlen, "%s '%s': matches no traceable function", flag,
				globs[g]);
			return -ENOENT;
		}
	}
	return 0;
}

int filter_select(const struct vmi_sites *sites, char *const *filters, size_t nr_filters,
		  char *const *notrace, size_t nr_notrace, const struct vmi_site ***out, size_t *nr,
		  char *err, size_t errlen)
{
	const struct vmi_site **sel;
	int ret;

	ret = check_each_matches(sites, filters, nr_filters, "-l", err, errlen);
	if (ret < 0)
		return ret;
	ret = check_each_matches(sites, notrace, nr_notrace, "-n", err, errlen);
	if (ret < 0)
		return ret;
	sel = calloc(sites->nr ? sites->nr : 1, sizeof(*sel));
	if (!sel)
		return -ENOMEM;
	*nr = 0;
	for (size_t i = 0; i < sites->nr; i++) {
		const char *name = sites->v[i].func->name;

		if (nr_filters && !any_match(filters, nr_filters, name))
			continue;
		if (any_match(notrace, nr_notrace, name))
			continue;
		sel[(*nr)++] = &sites->v[i];
	}
	if (!*nr) {
		if (nr_notrace)
			msg_fmt(err, errlen, "-n: excludes every function the filter selected");
		else
			msg_fmt(err, errlen, "the guest has no traceable function");
		free(sel);
		return -ENOENT;
	}
	*out = sel;
	return 0;
}

int filter_add_events(const struct vmi_sites *sites, bool inside, const char *opt,
		      const struct fe_spec *specs, size_t nr_specs, const struct vmi_site **sel,
		      size_t *nr, char *err, size_t errlen)
{
	for (size_t e = 0; e < nr_specs; e++) {
		const struct vmi_site *site = NULL;
		char label[160];
		bool have = false;

		if ((specs[e].offset != 0) != inside)
			continue;
		fe_label(&specs[e], label, sizeof(label));
		for (size_t i = 0; i < sites->nr && !site; i++)
			if (!strcmp(sites->v[i].func->name, label))
				site = &sites->v[i];
		if (!site) {
			msg_fmt(err, errlen, "%s %s(...): %s is not a traceable function", opt,
				specs[e].func, specs[e].func);
			return -ENOENT;
		}
		for (size_t k = 0; k < *nr && !have; k++)
			have = sel[k] == site;
		if (!have)
			sel[(*nr)++] = site;
	}
	return 0;
}

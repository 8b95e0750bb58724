/* set_ftrace_filter / set_ftrace_notrace over a guest's patchable sites, with ftrace's globs. */
#ifndef HVT_FILTER_H
#define HVT_FILTER_H

#include "host/trace/fevent.h"
#include "vmi/vmi_sites.h"

#include <stdbool.h>
#include <stddef.h>

/* ftrace glob: '*' any run, '?' one character, '[...]' a class; otherwise exact. Pure. */
bool filter_glob_match(const char *glob, const char *name);

/* Selects the sites whose function matches any of @filters (all sites when there are none) and none of
 * @notrace. Each glob must match at least one function, and something must be left: otherwise returns
 * -ENOENT with a reason naming the glob in @err. On success *@out (caller frees) holds *@nr pointers into
 * @sites, in address order. */
int filter_select(const struct vmi_sites *sites, char *const *filters, size_t nr_filters,
		  char *const *notrace, size_t nr_notrace, const struct vmi_site ***out, size_t *nr,
		  char *err, size_t errlen);

/* Adds to the selection *@sel (*@nr entries, room for every site) the site of each function named by
 * @specs (events of option @opt), unless already selected; with @inside, the site named
 * "func+0xOFF" of each func+OFFSET spec instead (the others skipped), without, those skipped.
 * Returns 0, or -ENOENT with "<opt> FUNC(...): FUNC is not a traceable function" in @err. */
int filter_add_events(const struct vmi_sites *sites, bool inside, const char *opt,
		      const struct fe_spec *specs, size_t nr_specs, const struct vmi_site **sel,
		      size_t *nr, char *err, size_t errlen);

#endif

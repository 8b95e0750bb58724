/* Wiring a session's -e function-based events into a selection of sites and a tracer. Shared by the
 * embedded VMM (`run`) and the QEMU backend (`run --qemu`, `attach`). */
#ifndef HVT_EVENTS_H
#define HVT_EVENTS_H

#include "host/session/session.h"
#include "host/trace/tracer.h"
#include "vmi/vmi_btf.h"
#include "vmi/vmi_sites.h"

/* Makes sure every event function is in the selection *@sel (allocated with room for all of @sites if
 * NULL; grown for the sites of @inside), and the site in @inside (inside_sites_build; NULL: the
 * backend has none, and a func+OFFSET event is refused) of every -e func+OFFSET event. Returns 0,
 * -ENOMEM, or -ENOENT with a reason in @err. */
int events_select(const struct session *s, const struct vmi_sites *sites,
		  const struct vmi_sites *inside, const struct vmi_site ***sel, size_t *nr,
		  char *err, size_t errlen);

/* The session's -e and -r specs completed from the guest's BTF (@btf, NULL for a guest without
 * one): fresh arrays of s->nr_events and s->nr_rprobes specs in *@events and *@rprobes (the caller
 * frees them). Touches no guest. Returns 0, -ENOMEM, or -EINVAL with one line in @err ("-e ..." /
 * "-r ..."). */
int events_resolve(const struct session *s, const struct vmi_btf *btf, struct fe_spec **events,
		   struct fe_spec **rprobes, char *err, size_t errlen);

/* Gives each event's probe its spec and makes each -r function a return probe (@events and
 * @rprobes, the session's specs as events_resolve completed them, are borrowed). @traced[i] says
 * probe i is traced by the tracer's own selection (NULL: none is), so that a probe there only for
 * -r records no entries. Returns 0 or -errno. */
int events_bind(const struct session *s, const struct fe_spec *events,
		const struct fe_spec *rprobes, struct tracer *t, const bool *traced);

#endif

/* Wiring a session's -e function-based events into a selection of sites and a tracer. Shared by the
 * embedded VMM (`run`) and the QEMU backend (`run --qemu`, `attach`). */
#ifndef HVT_EVENTS_H
#define HVT_EVENTS_H

#include "host/cli/session.h"
#include "host/trace/tracer.h"
#include "vmi/vmi_sites.h"

/* Makes sure every event function is in the selection *@sel (allocated with room for all of @sites if
 * NULL). Returns 0, -ENOMEM, or -ENOENT with a reason in @err. */
int events_select(const struct session *s, const struct vmi_sites *sites,
		  const struct vmi_site ***sel, size_t *nr, char *err, size_t errlen);

/* Gives each event's probe its spec and makes each -r function a return probe (specs borrowed from
 * @s). @traced[i] says probe i is traced by the tracer's own selection (NULL: none is), so that a
 * probe there only for -r records no entries. Returns 0 or -errno. */
int events_bind(const struct session *s, struct tracer *t, const bool *traced);

#endif

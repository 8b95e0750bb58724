/* What the session asks of each probe, set on the tracer once its probes exist and before it
 * attaches (pipeline_build): -g graph roots, --trigger, entries without returns (asm code), stub
 * detours; and which probes must stay trap probes. Main thread. */
#ifndef HVT_PROBE_SETUP_H
#define HVT_PROBE_SETUP_H

#include "host/session/pipeline_guest.h"
#include "host/session/session.h"
#include "host/trace/tracer.h"

#include <stdbool.h>
#include <stddef.h>

/* set_graph_function: marks the probes whose function matches a -g glob of @s; each glob must
 * match one traced function, else -ENOENT with a reason in @err. */
int probe_setup_graph_roots(struct tracer *t, const struct session *s, char *err, size_t errlen);

/* --trigger: each of @s's on the probe of its function, which must be a traced one. 0, or an exit
 * status with @err. */
int probe_setup_triggers(struct tracer *t, const struct session *s, char *err, size_t errlen);

/* Entry probes on what @g's BTF (or DWARF) does not know as a C function trace entries only (one
 * line says so when returns are traced); -r on one is refused. 0 or EXIT_BAD_INPUT with @err. */
int probe_setup_no_returns(struct tracer *t, const struct session *s,
			   const struct pipeline_guest *g, char *err, size_t errlen);

/* Stub detours for the functions without an fentry site (with @g's stub probes and kernel text),
 * and one line saying how many got one. 0 or -ENOMEM. */
int probe_setup_detours(struct tracer *t, const struct session *s, const struct pipeline_guest *g);

/* With no trap probe allowed: true (and why in @err) if a probe of @t can only be a trap probe. */
bool probe_setup_need_trap(const struct tracer *t, char *err, size_t errlen);

/* --probe stub: one line naming the -e events and -r return probes that read guest memory at the
 * call and so stay trap probes (nothing when there is none). */
void probe_setup_say_trap(const struct tracer *t);

#endif

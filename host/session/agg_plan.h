/* Aggregation where the probe fires: under the nop tracer, which probes only feed aggregations (a
 * hist trigger on their function, --profile) and what the stub must keep to answer them (calls,
 * returns and their durations, keyed by the task's pid, in log2 buckets), set on the tracer before
 * it attaches (tracer_set_agg). A stub probe so marked is counted in the guest and writes no
 * record; a hist the stub cannot key (another field, a modifier it cannot apply before counting)
 * leaves its function recording, aggregated on the host. */
#ifndef HVT_AGG_PLAN_H
#define HVT_AGG_PLAN_H

#include "host/session/session.h"
#include "host/trace/hist_spec.h"
#include "host/trace/tracer.h"

#include <stdbool.h>

/* Whether the stub can count what hist @h reads, and if so the STUB_AGG_* bits it needs in
 * *@mode: keys common_pid, common_cpu, ip (any modifier), duration.log2; values hitcount and
 * duration (in ns, no modifier). Pure. */
bool agg_plan_hist_countable(const struct hist_spec *h, unsigned *mode);

/* Marks every probe of @tr that only aggregations want under session @s (the nop tracer, no -e
 * event or -r on it, no other trigger, no task filter and no --expect-*: those need records):
 * counted by the stub when @stub and every hist on it is countable, else still marked so its
 * returns are hooked for the profile's times (a trap probe's records feed the host's tables).
 * Returns how many are counted by the stub, or -errno of tracer_set_agg. Main thread, before
 * tracer_attach. */
int agg_plan_apply(struct tracer *tr, const struct session *s, bool stub);

#endif

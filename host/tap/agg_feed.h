/* What the stub counted (host/trace/stub_agg: its tables, validated) added to the session's
 * aggregations as if each event had come through the writer: the hist triggers of each counted
 * function (keys computed from the entry's pid, CPU, function and log2 bucket, modifiers applied)
 * and the profile (calls, returns, times, per CPU); frames unwound to their probe's counter. */
#ifndef HVT_AGG_FEED_H
#define HVT_AGG_FEED_H

#include "host/tap/hist.h"
#include "host/tap/profile.h"
#include "host/trace/stub_agg.h"

/* Adds every item of @a to the hists of @hs that watch its probe (calls to the hists of calls,
 * returns to those of returns) and to @prof (NULL: none); each such hist's Dropped grows by the
 * events the stub's tables had no room for. Main thread, after the writer stopped. */
void agg_feed(const struct stub_agg *a, struct hist_set *hs, struct profile *prof,
	      const struct probe_table *probes);

#endif

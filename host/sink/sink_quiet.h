/* A sink that leaves out the records some probes make only to feed a tap (a hist trigger's
 * function under the nop tracer): wraps any sink in place, as sink_trigger does; every other
 * record goes to the wrapped sink unchanged. */
#ifndef HVT_SINK_QUIET_H
#define HVT_SINK_QUIET_H

#include "host/sink/sink.h"

struct sink_quiet {
	struct sink_ops ops;	      /* the wrapped sink's ops point here (first member) */
	const struct sink_ops *inner; /* the wrapped sink's own */
	/* whether @rec (an entry or a plain return) is left out; @ctx is @quiet_ctx */
	bool (*quiet)(const void *ctx, const struct sink_rec *rec);
	const void *quiet_ctx;
};

/* Wraps the initialized sink @s so that the HVT_REC_ENTRY and HVT_REC_RETURN records @quiet
 * names are not written (the writer's tap still sees them). @q must outlive @s. Main thread,
 * before the writer starts. */
void sink_quiet_wrap(struct sink *s, struct sink_quiet *q,
		     bool (*quiet)(const void *ctx, const struct sink_rec *rec), const void *ctx);

#endif

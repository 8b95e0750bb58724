/* What a session asks of its tracer (tracer_new): its own header, so that the tracer's private
 * fields (tracer_int.h) and its public interface (tracer.h) both build on it. */
#ifndef HVT_TRACER_OPTS_H
#define HVT_TRACER_OPTS_H

#include "host/trace/rec_filter.h"

#include <stdbool.h>
#include <stdint.h>

struct tracer_opts {
	bool returns;  /* return hooks through the trampoline are possible (function_graph, -r) */
	bool hook_all; /* with returns: every probe hooks its return (function_graph); otherwise
			* only the return probes (tracer_set_return) */
	bool graph_filter;  /* only calls below a probe marked graph_root (set_graph_function) */
	unsigned max_depth; /* with returns: do not trace deeper than this (0 = no limit) */
	bool lazy;	    /* with graph_filter: only graph-root and -e probes stay inserted; the
			     * others are inserted while a root call is live (for targets where
			     * every inserted breakpoint costs, such as QEMU's gdbstub under TCG) */
	uint64_t ring_records; /* per vCPU */
	bool ring_exact;       /* stub probes: guest rings smaller than that are an error */
	bool stub; /* stub probes wherever they can do the job (tracer_new says which cannot) */
	bool
	    stub_backpressure; /* stub probes: the drain may ask for the vCPUs to be held rather
				* than lose records (the target's owner polls stub_drain_holding) */
	const struct rec_filter *keep; /* -P, --comm, --cpu: records it rejects are dropped (and
					* counted); NULL keeps all. Borrowed, outlives the tracer */
	bool tracing_off; /* --tracing-off: start with tracing off (a traceon trigger starts it) */
	uint64_t text_lo, text_hi; /* the guest's code addresses, for stacktrace's walk */
	bool no_frame_pointers;	   /* the guest's code keeps no frame pointers (stacktrace scans) */
};

#endif

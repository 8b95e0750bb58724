/* The trace.dat sink (`hvtrace record`): trace-cmd's file format, read by trace-cmd report,
 * KernelShark and `hvtrace report`. See sink_tracedat.c for the events it writes. */
#ifndef HVT_SINK_TRACEDAT_H
#define HVT_SINK_TRACEDAT_H

#include "host/sink/sink.h"
#include "host/sink/tracedat_restamp.h"

/* Sets up @s to write trace.dat to @out (opened for writing at @path; per-vCPU pages go to unlinked
 * temporary files in @path's directory, or $TMPDIR when @out is a pipe, until end()). @graph:
 * entries and returns are function_graph events, else function events. @events / @rprobes: the
 * session's -e and -r specs (borrowed; the records' specs (struct sink_rec) point into them). Returns 0 or -errno. Main thread. */
int sink_tracedat_init(struct sink *s, FILE *out, const char *path, const struct vmi_symtab *syms,
		       unsigned nr_cpus, bool graph, const struct fe_spec *events, size_t nr_events,
		       const struct fe_spec *rprobes, size_t nr_rprobes);

/* record --host: this file gets the options trace-cmd's host-guest tracing writes in a guest's
 * file: TRACEID @trace_id, and TIME_SHIFT naming the host's file (@host_trace_id) with one
 * offset per vCPU, @t0_ns: the host's mono clock at the session's start, which the records'
 * timestamps count from. Before the sink ends (the headers are written then). Main thread. */
void sink_tracedat_peer(struct sink *s, uint64_t trace_id, uint64_t host_trace_id, uint64_t t0_ns);

/* record --host, after sink_tracedat_peer: at the end, each trap event moves to its vCPU's exit in
 * @host (borrowed until the sink ends; tracedat_restamp.h says which events), returns when they
 * exited at @trampoline. What moved is counted in *@counts (the caller's, read once the sink has
 * ended). Main thread, before the sink ends. */
void sink_tracedat_restamp(struct sink *s, const struct host_side *host, uint64_t trampoline,
			   struct td_restamp_counts *counts);

#endif

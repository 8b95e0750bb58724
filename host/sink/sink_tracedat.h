/* The trace.dat sink (`hvtrace record`): trace-cmd's file format, read by trace-cmd report,
 * KernelShark and `hvtrace report`. See sink_tracedat.c for the events it writes. */
#ifndef HVT_SINK_TRACEDAT_H
#define HVT_SINK_TRACEDAT_H

#include "host/sink/sink.h"

/* Sets up @s to write trace.dat to @out (opened for writing at @path; per-vCPU pages go to unlinked
 * temporary files in @path's directory, or $TMPDIR when @out is a pipe, until end()). @graph:
 * entries and returns are function_graph events, else function events. @events / @rprobes: the
 * session's -e and -r specs (borrowed; the records' specs (struct sink_rec) point into them). Returns 0 or -errno. Main thread. */
int sink_tracedat_init(struct sink *s, FILE *out, const char *path, const struct vmi_symtab *syms,
		       unsigned nr_cpus, bool graph, const struct fe_spec *events, size_t nr_events,
		       const struct fe_spec *rprobes, size_t nr_rprobes);

#endif

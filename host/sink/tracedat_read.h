/* `hvtrace report`'s input: a trace.dat (from `hvtrace record`, or any trace-cmd file with the same
 * events) read with libtracecmd and turned back into the record stream that `run` fed its sinks.
 *
 * The events and what they become: ftrace:function -> entry; ftrace:funcgraph_entry /
 * funcgraph_exit
 * -> entry / return (duration rettime - calltime, RAX from retval); kprobes/p_<func>_<n> and
 * fprobes/<func>__entry_<n> -> an entry with a function-based event, its spec rebuilt from the
 * event's format (field names, sizes, arrays, __data_loc strings, and the print fmt's conversion of
 * each: %d / %Ld signed, %u / %Lu unsigned, 0x%x / 0x%Lx hex, %pS symbol); kprobes/r_<func>_<n> ->
 * a return probe's return (typed by its fields; a lone `arg1` is a bare -r). A function_graph entry
 * or exit and the probe events of the same function at the same time on the same CPU are one
 * record, as in `run`. A page's missed-events mark becomes an HVT_REC_LOST record. Everything read
 * from the file is bounded: field offsets and sizes against the record, strings against
 * FE_MAX_STRING, specs against the fe_spec limits. */
#ifndef HVT_TRACEDAT_READ_H
#define HVT_TRACEDAT_READ_H

#include "host/sink/sink.h"
#include "vmi/vmi_symtab.h"

#include <stdbool.h>
#include <stddef.h>

struct tdr;

/* What a trace.dat holds, from tdr_scan. */
struct tdr_summary {
	unsigned nr_cpus;
	bool graph;    /* function_graph events */
	bool function; /* function events */
	unsigned long long records;
};

/* Opens @path and rebuilds its probe events' specs. NULL with one line in @err on a file
 * libtracecmd cannot read or an event that cannot be rebuilt. Main thread. */
struct tdr *tdr_open(const char *path, char *err, size_t errlen);

/* First pass: fills @syms (unsorted adds, then sorted) with the functions every address in the
 * trace falls in, from the file's kallsyms, and @sum. Returns 0 or -errno with @err. Once per
 * tdr_open: the replay needs a handle of its own (tdr_open again). */
int tdr_scan(struct tdr *r, struct vmi_symtab *syms, struct tdr_summary *sum, char *err,
	     size_t errlen);

/* Second pass, on a handle tdr_scan did not read: feeds the records, in time order, to sink @s
 * through the writer (begin, records, end), each record's spec looked up in the file's -e and -r
 * formats. @graph: a function_graph trace (tdr_summary.graph), where a probe event with no graph
 * entry of its call is an event alone (HVT_REC_EVENT_ALONE). Returns 0 or -errno with @err. */
int tdr_replay(struct tdr *r, struct sink *s, bool graph, char *err, size_t errlen);

/* The guest file's TRACEID option (record --host), 0 when it has none. */
unsigned long long tdr_trace_id(struct tdr *r);

void tdr_close(struct tdr *r);

/* libtracecmd reads the whole of @path in a child first (10 minutes at most): the library itself
 * has crashed on bad files (Debian's 3.1.6, on the error path of tracecmd_open); a file is read in
 * this process only once that went well. A path that cannot be read, or a directory, is named as
 * such first (-errno, -EISDIR). 0, or a negative errno with @err. */
int tdr_try_in_child(const char *path, char *err, size_t errlen);

#endif

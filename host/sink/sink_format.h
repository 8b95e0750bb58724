/* The output formats: one table of every sink hvtrace writes, and the one --format vocabulary that
 * run, attach, record and report share. A format is a sink file that defines its table entry
 * (struct sink_format) and one line in SINK_FORMATS (sink_format.c). */
#ifndef HVT_SINK_FORMAT_H
#define HVT_SINK_FORMAT_H

#include "host/sink/sink.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a sink is made with, the same for every format: each takes what it needs. */
struct sink_config {
	FILE *out;	  /* borrowed */
	const char *path; /* where @out was opened ("-": stdout), for files beside it */
	const struct vmi_symtab *syms; /* borrowed, for naming addresses */
	unsigned nr_cpus;
	const char *tracer; /* "function", "function_graph" or "nop": the header's, and what the
			     * viewer sinks draw */
	bool graph_retval, graph_retval_hex, graph_tail; /* function_graph text: --funcgraph-* */
	uint64_t irq_lo, irq_hi; /* function_graph text: the guest's .irqentry.text, 0/0 unknown */
	/* trace.dat: the session's -e and -r specs (borrowed; records' specs point into them) */
	const struct fe_spec *events, *rprobes;
	size_t nr_events, nr_rprobes;
};

/* Makes sink @s from @cfg. Returns 0 or -errno (-ENOMEM; trace.dat: its temporary files' errno).
 * Main thread. */
typedef int (*sink_make_fn)(struct sink *s, const struct sink_config *cfg);

/* Who writes a format: run and attach over the live record stream, record (a file to read back),
 * report over a trace.dat read back. */
enum sink_use { SINK_LIVE, SINK_RECORD, SINK_REPORT };

/* One output format: its --format word and its writer for each use (NULL: not offered there). */
struct sink_format {
	const char *name;
	sink_make_fn live;
	sink_make_fn record;
	sink_make_fn report;
};

/* The format called @name, or NULL. Pure. */
const struct sink_format *sink_format_find(const char *name);

/* The format @use writes without --format: function_graph text when @graph (the tracer, or the
 * file's events), else the function text; record's trace.dat. Pure. */
const struct sink_format *sink_format_default(enum sink_use use, bool graph);

/* @f's writer for @use, or NULL when @use does not write it. Pure. */
sink_make_fn sink_format_maker(const struct sink_format *f, enum sink_use use);

/* The format @name as @cmd ("run", "attach", "record", "report") of @use writes it: the format,
 * or NULL with one line in @err (an unknown name: the names there are; a format @cmd does not
 * write: the commands that do). Pure. */
const struct sink_format *sink_format_choose(const char *name, enum sink_use use, const char *cmd,
					     char *err, size_t errlen);

/* Every format's name, in the table's order, as "text, graph, ... or tracedat" into @buf. Pure. */
void sink_format_names(char *buf, size_t len);

#endif

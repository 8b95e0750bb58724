/* Sinks turn the record stream into an output format. They run on the writer thread only and never reach
 * back into a target. */
#ifndef HVT_SINK_H
#define HVT_SINK_H

#include "record.h"
#include "../vmi/vmi_symtab.h"

#include <stddef.h>
#include <stdio.h>

struct sink;

struct sink_ops {
	void (*begin)(struct sink *s);				  /* header */
	void (*record)(struct sink *s, const struct hvt_record *r); /* one record, in time order */
	void (*end)(struct sink *s);				  /* trailer */
};

struct sink {
	const struct sink_ops *ops;
	FILE *out;			/* borrowed */
	const struct vmi_symtab *syms;	/* borrowed, for naming addresses */
	unsigned nr_cpus;
	unsigned long long written;	/* lines written */
	unsigned long long lost;	/* set by the writer before end() */
};

/* ftrace's function tracer text: "<task>-<pid> [<cpu>] <ts>: <func> <-<parent>". */
void sink_function_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus);

/* Formats @r as one function-tracer line (with '\n') into @buf. Returns the length. Pure. */
int sink_function_format(char *buf, size_t len, const struct hvt_record *r,
			 const struct vmi_symtab *syms);

/* Writes the name of the function containing @addr ("0x<addr>" if none) into @buf. Pure. */
void sink_symbol_name(char *buf, size_t len, uint64_t addr, const struct vmi_symtab *syms);

#endif

/* `report --exits`: per traced function, guest time and host time of its calls and the VM exits in
 * them, from a function_graph recording and its host file (record --host). See sink_exits.c. */
#ifndef HVT_SINK_EXITS_H
#define HVT_SINK_EXITS_H

#include "host/sink/sink.h"
#include "host/sink/tracedat_host.h"

#include <stdio.h>

/* Sets up @s to write the table to @out at end(), with the host's view @hs (borrowed; outlives
 * the sink). 0 or -ENOMEM. Main thread; records come from the writer thread. */
int sink_exits_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus,
		    const struct host_side *hs);

/* Frees what init allocated (after end). */
void sink_exits_free(struct sink *s);

#endif

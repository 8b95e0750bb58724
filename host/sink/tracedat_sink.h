/* The trace.dat sink's state, shared by its two halves: the events (sink_tracedat.c, writer thread,
 * per record) and the headers and the file's assembly at the end (tracedat_headers.c). Private to
 * them. */
#ifndef HVT_TRACEDAT_SINK_H
#define HVT_TRACEDAT_SINK_H

#include "host/sink/sink.h"
#include "host/sink/tracedat_format.h"
#include "host/sink/tracedat_restamp.h"

#define TD_COMMS 4096 /* task names kept for the cmdlines (open addressing) */

struct td_cpu {
	struct td_page page;
	FILE *tmp;
	uint64_t pages;
	uint64_t pending_lost; /* lost before the next page */
	bool idle_seen;
	char idle_comm[VMI_COMM_LEN]; /* pid 0's name on this vCPU (each has its own idle task) */
};

struct td_comm {
	int32_t pid;
	bool used;
	char comm[VMI_COMM_LEN];
};

struct td_sink {
	const char *path;
	bool graph;
	const struct fe_spec *events, *rprobes;
	size_t nr_events, nr_rprobes;
	struct td_cpu *cpus;
	struct td_comm *comms;
	/* record --host: the options that pair this file with the host's (sink_tracedat_peer) */
	bool peer;
	uint64_t trace_id, host_trace_id, t0_ns;
	/* and trap events at their exits, when the host's file could be read back
	 * (sink_tracedat_restamp; NULL: not asked) */
	struct td_restamp restamp;
	struct td_restamp_counts *restamped;
	uint8_t ev[TD_PAGE_DATA]; /* one event being built */
};

/* Writes the whole file but the pages' flush: headers (event formats, the guest's symbols as
 * kallsyms, the task names seen, the vCPU count), the per-vCPU offsets and the per-vCPU pages
 * copied from their temporary files. Errors land in @s->err. Writer thread, at the end. */
void tracedat_headers_write(struct sink *s);

#endif

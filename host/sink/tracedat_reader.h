/* The trace.dat reader's state, shared by its two halves: opening the file and rebuilding its probe
 * events' specs (tracedat_read.c) and the two passes over its records (tracedat_replay.c). Private
 * to them; the interface is tracedat_read.h. */
#ifndef HVT_TRACEDAT_READER_H
#define HVT_TRACEDAT_READER_H

#include "host/sink/sink.h"
#include "host/sink/writer.h"
#include "host/trace/ring.h"

#include <trace-cmd.h>
#include <event-parse.h>

#include <stdbool.h>
#include <stdint.h>

struct tdr_summary;

#define TDR_MAX_SPECS 256 /* probe events in one file */
#define TDR_MAX_CPUS  256
#define TDR_RING      4096u	   /* records per CPU between the reader and the writer */
#define TDR_MAP	      1024	   /* functions with probe events seen (ip -> spec) */
#define TDR_ADDRS     (1u << 16)   /* distinct function starts named */
#define TDR_MAX_TS    (1ull << 62) /* ns: 146 years */

enum tdr_role {
	ROLE_NONE,
	ROLE_FUNCTION,
	ROLE_GRAPH_ENT,
	ROLE_GRAPH_EXIT,
	ROLE_PROBE,
	ROLE_RPROBE
};

struct tdr_spec {
	struct fe_spec spec;
	struct tep_format_field *field[FE_MAX_FIELDS];
	struct tep_format_field *ip, *ret_ip, *duration, *fault, *parent, *arg1;
	unsigned nth;	/* p_<func>_<nth> */
	bool ret, bare; /* a return probe; one without typed fields */
	bool placed;	/* its first record told whether it lies inside a function (spec.offset) */
};

struct tdr_role_of {
	int id;
	enum tdr_role role;
	struct tdr_spec *spec;
};

struct tdr_cpu {
	struct ring *ring; /* pass 2 */
	bool pending;
	struct hvt_record rec;
	const struct tdr_spec *parts[FE_MAX_CHAIN]; /* probe events merged into @rec */
	unsigned nr_parts;
	size_t len; /* payload bytes */
	uint8_t payload[WRITER_PAYLOAD_MAX];
};

struct tdr_map {
	uint64_t ip;
	const struct fe_spec *spec;
};

struct tdr {
	const char *path;
	struct tracecmd_input *h;
	struct tep_handle *tep;
	unsigned nr_cpus;
	struct tdr_spec *specs;
	size_t nr_specs;
	struct tdr_role_of *roles;
	size_t nr_roles;
	struct tep_format_field *fn_ip, *fn_parent, *ent_func, *ent_depth, *ex_func, *ex_retval,
	    *ex_depth, *ex_calltime, *ex_rettime;
	struct tdr_cpu *cpus;
	struct ring *rings; /* one per CPU, the writer's input */
	unsigned nr_rings;
	struct tdr_map events[TDR_MAP], rets[TDR_MAP];
	/* pass state */
	bool replay;
	bool graph; /* replay: a function_graph trace (tdr_replay) */
	struct vmi_symtab *syms;
	uint64_t *named; /* function starts added to @syms (open addressing, 0 = free) */
	struct tdr_summary *sum;
	struct writer w;
	_Atomic uint64_t horizon;
	uint64_t max_ts;
	unsigned long long lost;
	int err;
	char *errbuf;
	size_t errlen;
};

/* Whether @size is an integer field's size (1, 2, 4 or 8 bytes). Pure. */
static inline bool tdr_elem_size(unsigned size)
{
	return size == 1 || size == 2 || size == 4 || size == 8;
}

#endif

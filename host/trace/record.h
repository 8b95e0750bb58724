/* The one record stream: fixed-size binary records written by vCPU threads, read by sinks. */
#ifndef HVT_RECORD_H
#define HVT_RECORD_H

#include "vmi/vmi_task.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

enum hvt_rec_type {
	HVT_REC_ENTRY = 1,  /* a traced function was entered */
	HVT_REC_RETURN = 2, /* it returned (function_graph / return probes) */
	HVT_REC_EVENT = 3,  /* an entry with a function-based event: `value` bytes of captured fields
			     * follow in the next hvt_record_payload_slots(value) records, raw */
	HVT_REC_RETURN_EVENT = 4, /* a return probe's return with typed fields (of RAX): payload as for
				   * HVT_REC_EVENT, `value` its length */
	HVT_REC_LOST = 5, /* `value` events of vCPU `cpu` were lost just before this point of its
			   * stream (ts: when the loss was seen); no function, no payload */
	HVT_REC_STACK = 6,    /* --trigger FUNC:stacktrace hit FUNC (`ip`): `value` bytes of guest
			       * code addresses (u64, innermost first) follow as a payload; with
			       * `parent` HVT_STACK_FOR_HIST, a hist's stacktrace key instead (not
			       * traced) */
	HVT_REC_SNAPSHOT = 7, /* --trigger FUNC:snapshot: snapshot number `value` of what was
			       * traced before this point; no payload */
	/* an -e event at a call function_graph does not trace (outside -g's graph, past
	 * --max-depth), as ftrace prints its trace events there: the fields alone, payload as for
	 * HVT_REC_EVENT; `depth` the graph's depth there (traced frames); no entry, no return */
	HVT_REC_EVENT_ALONE = 8,
};


/* Records a payload of @len bytes occupies after its event record. */
#define hvt_record_payload_slots(len) (((len) + 63) / 64)

struct hvt_record {
	uint64_t ts;	   /* ns since the session started */
	uint64_t ip;	   /* the function's patched site */
	uint64_t parent;   /* entry: the return address (call site in the caller) */
	uint64_t value;	   /* return: RAX */
	uint64_t duration; /* return: ns since the matching entry */
	int32_t pid;
	uint16_t cpu;
	uint8_t type;  /* enum hvt_rec_type */
	uint8_t depth; /* nesting depth on the guest stack, 0 = outermost traced call */
	char comm[VMI_COMM_LEN];
};

/* An HVT_REC_STACK's `parent` when the stack was walked for a hist's stacktrace key (--trigger
 * FUNC:hist:keys=stacktrace), not for the stacktrace trigger: the hist counts it, no sink shows it. */
#define HVT_STACK_FOR_HIST 1

static_assert(sizeof(struct hvt_record) == 64, "records are one cache line");

/* Whether raw payload records follow @r. */
static inline int hvt_record_has_payload(const struct hvt_record *r)
{
	return r->type == HVT_REC_EVENT || r->type == HVT_REC_EVENT_ALONE ||
	       r->type == HVT_REC_RETURN_EVENT || r->type == HVT_REC_STACK;
}

/* Fills @r as an entry record. Pure; allocation- and format-free (hot path). */
static inline void hvt_record_entry(struct hvt_record *r, uint64_t ts, unsigned cpu, uint64_t ip,
				    uint64_t parent, const struct vmi_task *task)
{
	r->ts = ts;
	r->ip = ip;
	r->parent = parent;
	r->value = 0;
	r->duration = 0;
	r->pid = task->pid;
	r->cpu = (uint16_t)cpu;
	r->type = HVT_REC_ENTRY;
	r->depth = 0;
	memcpy(r->comm, task->comm, VMI_COMM_LEN);
}

/* Fills @r as a loss mark: @n events of vCPU @cpu lost just before @ts (every other field 0). Pure;
 * allocation- and format-free (hot path). */
static inline void hvt_record_lost(struct hvt_record *r, uint64_t ts, unsigned cpu, uint64_t n)
{
	memset(r, 0, sizeof(*r));
	r->ts = ts;
	r->cpu = (uint16_t)cpu;
	r->type = HVT_REC_LOST;
	r->value = n;
}

#endif

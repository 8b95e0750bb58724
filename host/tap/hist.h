/* Hist triggers aggregated on the host: one bounded table per --trigger 'FUNC:hist:...', allocated
 * whole before the trace, fed as a writer tap (no allocation, no formatting per event); an event
 * whose new key finds the table full is counted as Dropped, as ftrace's tracing_map does. */
#ifndef HVT_HIST_H
#define HVT_HIST_H

#include "host/sink/sink.h"
#include "host/trace/hist_spec.h"
#include "host/trace/probe.h"
#include "vmi/vmi_task.h"

#include <stdint.h>

#define HIST_STACK_DEPTH 16 /* frames a stacktrace key keeps, the kernel's HIST_STACKTRACE_DEPTH */

struct hist_entry {
	uint64_t key[HIST_KEYS_MAX]; /* a stacktrace key: a hash of @stack */
	uint64_t stack[HIST_STACK_DEPTH]; /* a stacktrace key's frames, 0 after the last */
	uint64_t sum[1 + HIST_VALS_MAX]; /* [0] hitcount, then the vals */
	char comm[VMI_COMM_LEN];	 /* the task's name at the first event (.execname) */
};

struct hist {
	struct hist_spec spec;	 /* a copy, with the -e fields bound */
	uint32_t probe;		 /* the probe id it watches */
	bool on_return;		 /* aggregates returns (a duration field), else calls */
	int stack_key;		 /* the stacktrace key's index: aggregates the host's stack records
				  * (HVT_REC_STACK marked HVT_STACK_FOR_HIST); -1: none */
	struct hist_entry *elts; /* spec.size of them, nr_elts used */
	uint32_t nr_elts;
	uint32_t *slots; /* open addressing over 2 * spec.size: element index + 1, 0 empty */
	uint32_t mask;
	uint64_t hits, dropped;
};

/* The session's hist triggers. */
struct hist_set {
	struct hist *v;
	size_t nr;
};

/* Binds each of @specs (@nr) to its probe in @probes and allocates its table: the function must
 * be probed with what the hist reads (calls, or returns for a duration: a return probe, or
 * @graph, the function_graph tracer; -e fields: an -e event of the function, numeric scalars).
 * 0; -EINVAL with one line in @err naming the trigger and what is wrong; -ENOMEM. Main thread,
 * before the writer starts. */
int hist_set_init(struct hist_set *s, const struct hist_spec *specs, size_t nr,
		  const struct probe_table *probes, bool graph, char *err, size_t errlen);

/* Whether probe @id is watched by a hist of @s. Pure. */
bool hist_set_watches(const struct hist_set *s, uint32_t id);

/* Accounts @rec in every hist of @ctx (a struct hist_set) that watches its probe. Writer tap; one
 * thread; no allocation. */
void hist_add(void *ctx, const struct sink_rec *rec);

/* Accounts one event of hist @h with the key and value fields @key / @val (already modified,
 * .log2 and the others applied by hist_field_value) and task name @comm. Pure but for @h. */
void hist_account(struct hist *h, const uint64_t *key, const uint64_t *val, const char *comm);

/* hist_account for @n events at once, @val being their values' sums (a hitcount value: @n). Pure
 * but for @h. */
void hist_account_n(struct hist *h, const uint64_t *key, const uint64_t *val, const char *comm,
		    uint64_t n);

/* hist_account_n with the frames of a stacktrace key (@stack: HIST_STACK_DEPTH of them, 0 after
 * the last), told apart by their hash in its key and then frame by frame. Pure but for @h. */
void hist_account_stack(struct hist *h, const uint64_t *key, const uint64_t *stack,
			const char *comm);

/* @v with field @f's modifier applied (.log2, .buckets=N, .usecs; the others print it). Pure. */
uint64_t hist_field_mod(const struct hist_field *f, uint64_t v);

/* A field's value in record @rec (payload included) with its modifier applied. Pure. */
uint64_t hist_field_value(const struct hist_field *f, const struct sink_rec *rec);

/* A deep copy of @src into @dst (its tables as they are now): 0 or -ENOMEM (@dst empty then).
 * The thread that fills @src. */
int hist_set_copy(struct hist_set *dst, const struct hist_set *src);

void hist_set_free(struct hist_set *s);

#endif

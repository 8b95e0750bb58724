/* Aggregation in the guest, read back: the stub's per-CPU tables (guest-stub/stub_abi.h, counting
 * routines), copied at the end of a run (stub_drain_stop), validated entry by entry into host
 * memory. The guest is
 * untrusted: an entry the stub cannot have written (a site that is no counting probe, a bucket or
 * key its probe's mode does not make, sums that contradict their own count or maximum) is dropped
 * and counted; what passes is the guest's word on its own counts, and nothing more. */
#ifndef HVT_STUB_AGG_H
#define HVT_STUB_AGG_H

#include "guest-stub/stub_abi.h"
#include "host/trace/probe.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STUB_AGG_PID_MAX 4194304 /* Linux's PID_MAX_LIMIT */

/* One validated entry: @hits calls (bucket 0), returns (bucket >= 1) or frames unwound
 * (STUB_AGG_UNWOUND) of probe @probe on CPU @cpu, by task @pid (has_pid) and, in log2 mode, in
 * duration bucket @log2 (bucket - 2). */
struct stub_agg_item {
	uint32_t probe;
	uint16_t cpu;
	bool has_pid;
	bool is_return;
	bool is_unwound; /* @hits hooked frames abandoned without returning (no pid, no bucket) */
	bool has_log2;
	uint8_t log2;
	int32_t pid;
	uint64_t hits;
	uint64_t sum_ns, sumsq_ns, max_ns; /* returns: durations (sumsq wraps as the guest's) */
	char comm[16];			   /* NUL-terminated: the guest's bytes, unescaped */
};

/* A run's tables, validated. */
struct stub_agg {
	struct stub_agg_item *v;
	size_t nr, cap;
	uint64_t
	    dropped; /* guest-reported: events no table had room for (RH_AGG_DROP, saturating) */
	uint64_t rejected; /* entries the stub cannot have written, left out */
	bool read;	   /* the tables were read (else they could not be: nothing above holds) */
};

/* Validates @n raw entries of CPU @cpu's table (as the guest holds them) against the counting
 * probes of @probes (stub probes with a mode, p->agg), appending each good one to @a (an
 * STUB_AGG_BOTH entry as two items, its calls and its returns; at most a->cap in all; past that,
 * counted rejected) and counting the others in a->rejected. Empty
 * entries (A_IP 0) and entries not yet counted (hits 0) are skipped. Pure but for @a. */
void stub_agg_parse(struct stub_agg *a, const struct stub_agg_ent *raw, size_t n, unsigned cpu,
		    const struct probe_table *probes);

/* ilog2(roundup_pow_of_two(v)), as the kernel's .log2 (0 for 0 and 1). Pure. */
unsigned stub_agg_log2(uint64_t v);

void stub_agg_free(struct stub_agg *a);

#endif

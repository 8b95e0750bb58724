/* Per-function summary of a session (function_profile / kprobe_profile): hits, returns, misses,
 * unwound frames, total / average / max duration. Fed from the record stream on the writer thread. */
#ifndef HVT_PROFILE_H
#define HVT_PROFILE_H

#include "host/sink/sink.h"
#include "host/trace/probe.h"
#include "host/trace/record.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct profile_entry {
	uint64_t hits, returns, total_ns, max_ns;
	uint64_t sumsq_ns; /* the durations' squares summed (ns^2, wrapping as ftrace's) */
};

struct profile {
	const struct probe_table *probes; /* borrowed */
	struct profile_entry *v;	  /* per probe id, every CPU */
	struct profile_entry *cpu_v;	  /* per CPU, then probe id (profile_set_cpus), or NULL */
	unsigned nr_cpus;
};

/* Returns 0 or -ENOMEM. */
int profile_init(struct profile *p, const struct probe_table *probes);

/* Keeps the profile per CPU too, for @nr_cpus CPUs (a record of a CPU past them counts as the
 * last's). Before the first record. 0 or -ENOMEM. */
int profile_set_cpus(struct profile *p, unsigned nr_cpus);

/* Accounts @n calls (or with @is_return @n returns whose durations sum to @sum_ns, their squares
 * to @sumsq_ns, the longest @max_ns) of probe @id on CPU @cpu at once: what the stub counted.
 * Main thread, after the writer stopped. */
void profile_add_counted(struct profile *p, unsigned cpu, uint32_t id, bool is_return, uint64_t n,
			 uint64_t sum_ns, uint64_t sumsq_ns, uint64_t max_ns);

/* Accounts one record by its probe (@rec->probe, one of @ctx's probes; none: not counted). Writer
 * tap; one thread. */
void profile_add(void *ctx, const struct sink_rec *rec);

/* Prints one line per probe that was hit or missed, busiest (total time, then hits) first, with the
 * probes' miss and unwound counters; then one line per -e event ("<func> <hits> <misses>") and per
 * return probe ("r_<func>_0 <returns> <misses>", the kernel's default kretprobe name), as
 * kprobe_profile; then @stub_lost, the events the guest says its stub had no room for
 * (guest-reported), if any. After the writer stopped; main thread. */
void profile_print(const struct profile *p, unsigned long long stub_lost, FILE *out);

/* @dst as a copy of @src (the same probes, per CPU if @src is), to be freed with profile_free:
 * what SIGUSR2's dump adds the stub's tables so far to. The writer thread (which feeds @src). 0 or
 * -ENOMEM (@dst then empty). */
int profile_copy(struct profile *dst, const struct profile *src);

void profile_free(struct profile *p);

#endif

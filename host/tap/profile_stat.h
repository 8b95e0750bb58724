/* The profile as ftrace's function profiler prints it (trace_stat/functionN: Function, Hit, Time,
 * Avg, s^2; function_stat_show with the graph tracer's times), one section per CPU and one for
 * every CPU merged. */
#ifndef HVT_PROFILE_STAT_H
#define HVT_PROFILE_STAT_H

#include "host/tap/profile.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ftrace's trace_print_graph_duration: @ns as "U.NNN us " padded to its column (at most seven
 * digits: the nanoseconds shortened, then dropped, as the microseconds grow). Returns the length.
 * Pure. */
int profile_stat_duration(char *buf, size_t len, uint64_t ns);

/* One line of trace_stat/function for @name (cut to 30 characters) and @e: hits, total time,
 * average and the sample variance s^2 (Welford's, in ftrace's unsigned arithmetic), with its
 * newline. Returns the length. Pure. */
int profile_stat_line(char *buf, size_t len, const char *name, const struct profile_entry *e);

/* Writes "trace_stat/functionN:" and its table for each CPU with per-CPU tables (profile_set_cpus),
 * then "trace_stat/function (all CPUs):": the functions that were hit, by total time (then hits),
 * longest first, as the kernel's stat files sort them. 0 or -errno of the write. After the writer
 * stopped; main thread. */
int profile_stat_print(const struct profile *p, FILE *out);

#endif

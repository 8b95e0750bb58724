/* --expect-call / --expect-no-call: turn a trace into a verdict for CI boot tests. */
#ifndef HVT_EXPECT_H
#define HVT_EXPECT_H

#include "host/out/profile.h"
#include "host/trace/probe.h"

#include <stddef.h>
#include <stdio.h>

/* Checks that every function named in @calls / @no_calls is traced (a probe in @probes). Returns 0, or
 * -ENOENT with "--expect-call FUNC: FUNC is not traced" in @err. */
int expect_check_names(const struct probe_table *probes, char *const *calls, size_t nr_calls,
		       char *const *no_calls, size_t nr_no_calls, char *err, size_t errlen);

/* Prints one "hvtrace: ..." line to @out per unmet expectation (a function of @calls never entered, one of
 * @no_calls entered). Returns the number of unmet expectations. */
int expect_verdict(const struct profile *prof, char *const *calls, size_t nr_calls,
		   char *const *no_calls, size_t nr_no_calls, FILE *out);

#endif

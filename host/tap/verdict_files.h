/* --summary FILE (one JSON object) and --junit FILE (JUnit XML, one test case per --expect-*): a
 * session's verdicts for CI systems. Written once, after the writer stopped; main thread. */
#ifndef HVT_VERDICT_FILES_H
#define HVT_VERDICT_FILES_H

#include "host/tap/expect.h"

#include <stdio.h>

/* How the session ended. */
struct verdict_end {
	const char *tracer;	 /* current_tracer */
	int exit_status;	 /* hvtrace's exit status */
	const char *exit_reason; /* "guest-exit", "timeout", ... (docs/usage.md, "Exit status") */
	unsigned long long lost; /* events lost (rings full, guest-reported) */
	double elapsed;		 /* seconds the session ran */
};

/* Writes the summary of @st (evaluated) and @end to @f as one JSON object and a newline:
 * {"exit_status", "exit_reason", "tracer", "elapsed", "lost", "functions": [{"name", "addr", "calls",
 * "returns"} for each function called or returned], "expectations": [{"option", "spec", "passed",
 * "detail"}], "unmet"}. Every string is escaped so the document is valid JSON whatever the bytes.
 * Returns 0 or -errno. */
int verdict_write_summary(FILE *f, const struct expect_state *st, const struct verdict_end *end);

/* Writes a JUnit XML report (the Ant / Jenkins schema) to @f: one test suite "hvtrace", one test case
 * per expectation of @st (a <failure> with the reason for an unmet one), and a test case "run" with an
 * <error> when the session ended with a status other than 0 and 7. Returns 0 or -errno. */
int verdict_write_junit(FILE *f, const struct expect_state *st, const struct verdict_end *end);

#endif

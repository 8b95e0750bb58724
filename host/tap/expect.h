/* --expect-call / --expect-no-call / --expect-return / --expect-order: turn a trace into a verdict for CI
 * boot tests.
 *
 *   --expect-call FUNC        FUNC was called (at least once)
 *   --expect-call 'FUNC OP N' FUNC's calls compare with N: OP is one of >= > <= < = == !=
 *   --expect-no-call FUNC     FUNC was never called
 *   --expect-return 'FUNC==V' every return of FUNC had value V (and there was one); '!=': none had;
 *                             needs function_graph, or -r FUNC
 *                             V is decimal (signed) or 0x hex; RAX matches V as 64 bits, or in its low
 *                             32 bits as a signed int when V is in int range (an int function leaves
 *                             RAX's upper half undefined)
 *   --expect-order 'A,B[,C...]'  A's first call came before B's first call (and B's before C's); each
 *                             must have been called
 *
 * Specs are parsed when the options are (expect_parse), bound to the tracer's probes before anything is
 * patched (expect_bind), fed from the writer thread (expect_tap) and judged after the writer stopped
 * (expect_evaluate). */
#ifndef HVT_EXPECT_H
#define HVT_EXPECT_H

#include "host/tap/profile.h"
#include "host/trace/probe.h"
#include "host/trace/record.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EXPECT_MAX_ORDER 8
#define EXPECT_NAME_LEN 128

enum expect_kind { EXPECT_CALL, EXPECT_NO_CALL, EXPECT_RETURN, EXPECT_ORDER };

enum expect_op { EXPECT_GE, EXPECT_GT, EXPECT_LE, EXPECT_LT, EXPECT_EQ, EXPECT_NE };

struct expect {
	enum expect_kind kind;
	const char *spec; /* as given (borrowed): names it in messages, JUnit and the summary */
	char funcs[EXPECT_MAX_ORDER][EXPECT_NAME_LEN];
	unsigned nr_funcs; /* 1, or 2..EXPECT_MAX_ORDER for EXPECT_ORDER */
	enum expect_op op;
	bool bare; /* --expect-call FUNC without a count */
	int64_t value; /* the count, or the return value */
	uint32_t ids[EXPECT_MAX_ORDER]; /* the probe of each function (expect_bind) */

	/* filled by expect_tap / expect_evaluate */
	uint64_t returns, mismatches, first_bad;
	bool passed;
	char reason[256]; /* what was found, for a pass as for a failure */
};

/* Parses @spec of option @kind into @e (@spec is borrowed). Returns 0, or -EINVAL with
 * "--expect-call 'x>=': expected a count after >=" in @err. */
int expect_parse(struct expect *e, enum expect_kind kind, const char *spec, char *err,
		 size_t errlen);

/* The option name of @kind ("--expect-call"). */
const char *expect_option(enum expect_kind kind);

/* Binds @v[0..@nr) to the probes of @probes: each function must be traced, and a function of
 * --expect-return must have its return values recorded: a return probe (-r) whose one field is RAX
 * itself (bare, or typed without offsets or dereferences), or else @all_returns (function_graph hooks
 * every return). Returns 0, or -ENOENT with one line in @err. */
int expect_bind(struct expect *v, size_t nr, const struct probe_table *probes, bool all_returns,
		char *err, size_t errlen);

/* What the writer's tap accumulates: the profile (fed on), the first call of each probe, the return
 * values of the --expect-return functions. */
struct expect_state {
	struct profile *prof;
	struct expect *v; /* a copy of the session's, with results */
	size_t nr;
	uint64_t *first_ts; /* per probe id; UINT64_MAX: never called */
	bool any_return;    /* some --expect-return */
};

/* Copies @v[0..@nr) (bound) into @st over @prof. Returns 0 or -ENOMEM. */
int expect_state_init(struct expect_state *st, struct profile *prof, const struct expect *v,
		      size_t nr);

/* Writer tap: profile_add, then the first calls and return values, by @rec's probe (one of the
 * profile's; a return probe's RAX from @rec's payload). Writer thread; no allocation. */
void expect_tap(void *ctx, const struct sink_rec *rec);

/* Judges every expectation (passed, reason). After the writer stopped. Returns the number unmet. */
int expect_evaluate(struct expect_state *st);

/* Prints "hvtrace: OPTION SPEC: REASON" to @out for each unmet expectation. */
void expect_print_unmet(const struct expect_state *st, FILE *out);

void expect_state_free(struct expect_state *st);

#endif

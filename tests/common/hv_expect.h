/* The declarative harness of the integration tests (tests/kvm and tests/qemu alike): what one
 * hvtrace run must show, written as data (struct hv_expect), and the one check of a run against it.
 * A test lists its command lines with their expectations in a table; tests/qemu/test_linux.c plays
 * its whole suite that way. */
#ifndef HVT_TESTS_HV_EXPECT_H
#define HVT_TESTS_HV_EXPECT_H

#include "tests/common/hv_run.h"

#include <stdbool.h>
#include <stddef.h>

/* Expectations of one hvtrace run, written as a designated initializer. A zero field checks
 * nothing, but @status (0: a clean exit). */
struct hv_expect {
	int status;		/* hvtrace's exit status */
	const char *err_is;	/* the whole of stderr */
	int err_lines;		/* stderr is this many lines */
	const char *err[4];	/* each in stderr */
	const char *console_is; /* the whole of the guest's console ("": nothing) */
	const char *console[3]; /* each in the guest's console */
	const char *trace[2];	/* each in the trace */
	size_t lines_over;	/* more trace lines than this */
	bool no_lines;		/* no function line in the trace */
	const char *only[2];	/* every trace line is one of these functions */
	/* a trace line of @func by a workload process (pid > 1) named one of @comms */
	struct task_line {
		const char *func;
		const char *comms[5];
	} tasks[3];
	/* more than @over occurrences of @text in the trace */
	struct text_count {
		const char *text;
		long over;
	} counts[2];
	/* the number after @field on the "stub probes" line of --stats is more than @over */
	struct stub_stat {
		const char *field;
		long over;
	} stub[3];
	/* as many @close as @open in the trace, and more than @over of them */
	struct nesting {
		const char *open, *close;
		long over;
	} nest;
	bool none_in_flight; /* --stats: restored-slots 0 (nothing in flight at the end) */
	bool above_4g;	     /* --stats: slots-above-4g > 0 (return slots hooked above 4 GiB) */
	bool lost_marked;    /* the trace's "CPU:N [LOST M EVENTS]" lines add up to --stats' stub
			      * lost + guest-reported-lost */
	bool profile;	     /* --profile is balanced, but for the returns handed back at detach */
	int profile_min;     /* ... and lists at least this many functions */
	void (*check)(const struct hv_result *r); /* anything else */
};

/* One hvtrace command line of a test's table (@args without the program name, up to 15) and what
 * its run must show. */
struct hv_run_case {
	const char *label; /* names the run in failure messages */
	const char *args[16];
	struct hv_expect expect;
};

/* Runs @c (hv_run, no signal) with each of its args passed through @arg first when @arg is not NULL
 * (a test's @-names for paths known at run time), then checks its expectations. */
void hv_case_play(const struct hv_run_case *c, const char *(*arg)(const char *));
/* Fails the running cmocka test, naming @label (the run), at the first expectation of @e that @r
 * does not meet; @r->lines must be parsed (hv_run does). */
void hv_expect_check(const char *label, const struct hv_expect *e, const struct hv_result *r);
/* Prints @console (a guest's, may be NULL) apart from a failure message, labelled @label: from a
 * little before its first kernel splat where it has one (16000 bytes at most, then its last 2000),
 * else its last 6000 bytes. */
void hv_print_console(const char *label, const char *console);
/* The "restored-slots N" of hvtrace's --stats on @err: hooked returns in flight at detach; fails
 * the running test if there is none. */
long hv_restored_slots(const char *err);
/* Hit of @func in the section of trace_stat text @text (--profile's FILE.profile) titled @title
 * ("trace_stat/function0:", "(all CPUs):"), -1 when the section or the line is not there; *@ns
 * (when not NULL) gets its Time in ns. */
long hv_profile_hits(const char *text, const char *title, const char *func, double *ns);
/* Every function's Hit summed over the section of @text titled @title, -1 without it. */
long hv_profile_total(const char *text, const char *title);

#endif

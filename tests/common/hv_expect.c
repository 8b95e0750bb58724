#include "tests/common/hv_expect.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A trace line of @func by @comm, a process other than the idle task and init (pid > 1). */
static bool has_line(const struct hv_result *r, const char *func, const char *comm)
{
	for (size_t i = 0; i < r->nr_lines; i++)
		if (!strcmp(r->lines[i].func, func) && !strcmp(r->lines[i].comm, comm) &&
		    r->lines[i].pid > 1)
			return true;
	return false;
}

/* --profile table on stderr: every listed function returned as often as it was entered, nothing
 * missed or unwound, except the @in_flight calls whose returns were handed back at detach. Returns
 * the number of functions listed. */
static int assert_profile_balanced(const char *err, long in_flight)
{
	const char *p = strstr(err, "  --------");
	long open = 0;
	int n = 0;

	assert_non_null(p);
	p = strchr(p, '\n') + 1;
	while (*p == ' ') {
		char name[128];
		long hit, ret, miss, unw;

		if (sscanf(p, " %127s %ld %ld %ld %ld", name, &hit, &ret, &miss, &unw) != 5)
			break;
		if (ret > hit || miss || unw)
			fail_msg("%s: %ld hits, %ld returns, %ld misses, %ld unwound", name, hit,
				 ret, miss, unw);
		open += hit - ret;
		n++;
		p = strchr(p, '\n') + 1;
	}
	if (open != in_flight)
		fail_msg("%ld entries without a return, %ld returns handed back at detach", open,
			 in_flight);
	return n;
}

long hv_restored_slots(const char *err)
{
	const char *p = strstr(err, "restored-slots ");

	assert_non_null(p);
	return atol(p + strlen("restored-slots "));
}

/* A stub-probe line of --stats: "stub probes N records N lost N". */
static long stub_stat(const char *err, const char *field)
{
	return hv_stat(err, "stub probes ", field);
}

/* Where the first kernel splat on @console starts (BUG, Oops, panic, and a WARN()'s "WARNING:
 * CPU:" with @warnings; not a message that merely says WARNING, as SRSO's at boot does), NULL
 * without one. */
static const char *first_splat(const char *console, bool warnings)
{
	static const char *const splats[] = {"BUG: ", "Oops: ", "Kernel panic", "WARNING: CPU:"};
	const char *first = NULL;

	for (size_t i = 0; console && i < ARRAY_LEN(splats) - !warnings; i++) {
		const char *p = strstr(console, splats[i]);

		if (p && (!first || p < first))
			first = p;
	}
	return first;
}

/* @console printed apart (cmocka cuts a long failure message short): what a guest that panicked,
 * hung or ended early did last. From a little before its first kernel splat (BUG, Oops, WARNING,
 * panic) where it has one, 16000 bytes at most (then its last 2000 too): the first one says what
 * went wrong, the later ones follow from it; else its last 6000 bytes. */
void hv_print_console(const char *label, const char *console)
{
	size_t n = console ? strlen(console) : 0;
	const char *first = first_splat(console, true);

	if (first) {
		const char *from = first - console > 500 ? first - 500 : console;

		size_t left = n - (size_t)(from - console);

		printf("-- %s: the guest's console from before its first splat:\n%.16000s\n", label,
		       from);
		if (left > 16000) /* and how it ended */
			printf("-- %s: ... its last 2000 bytes:\n%s\n", label,
			       console + n - (left - 16000 > 2000 ? 2000 : left - 16000));
		printf("-- end of console\n");
	} else {
		printf("-- %s: the guest's console, its last 6000 bytes:\n%s\n-- end of console\n",
		       label, n > 6000 ? console + n - 6000 : n ? console : "(none)");
	}
	fflush(stdout);
}

/* The first kernel splat's own line (a WARNING aside: the guest died of something else) and the
 * RIP line after it on @console ("Oops: int3: 0000 [#1] ... | RIP: 0010:sched_clock_tick+0x5/
 * 0x70"), into @buf; "" when it has none. A failure's message carries it: a CI log that keeps only
 * the end of a long console still says what the guest died of. */
static const char *console_splat(const char *console, char *buf, size_t size)
{
	const char *first = first_splat(console, false), *rip;

	buf[0] = '\0';
	if (!first)
		return buf;
	rip = strstr(first, "RIP: ");
	snprintf(buf, size, " (the guest's first splat: %.*s%s%.*s)", (int)strcspn(first, "\r\n"),
		 first, rip ? " | " : "", rip ? (int)strcspn(rip, "\r\n") : 0, rip ? rip : "");
	return buf;
}

static void assert_has(const char *label, const char *what, const char *s, const char *text)
{
	if (strstr(s, text))
		return;
	if (!strcmp(what, "console")) {
		char splat[400];

		hv_print_console(label, s);
		fail_msg("%s: no \"%s\" in its console%s", label, text,
			 console_splat(s, splat, sizeof(splat)));
	}
	fail_msg("%s: no \"%s\" in its %s: %.2000s", label, text, what, s);
}

void hv_expect_check(const char *label, const struct hv_expect *e, const struct hv_result *r)
{
	if (r->status != e->status) {
		char splat[400];

		hv_print_console(label, r->console);
		fail_msg("%s: status %d, not %d%s: %s", label, r->status, e->status,
			 console_splat(r->console, splat, sizeof(splat)), r->err);
	}
	if (e->err_is && strcmp(r->err, e->err_is))
		fail_msg("%s: stderr \"%s\", not \"%s\"", label, r->err, e->err_is);
	if (e->err_lines)
		assert_int_equal(count_lines(r->err), e->err_lines);
	for (size_t i = 0; i < ARRAY_LEN(e->err) && e->err[i]; i++)
		assert_has(label, "stderr", r->err, e->err[i]);
	if (e->console_is && strcmp(r->console, e->console_is))
		fail_msg("%s: console \"%.2000s\", not \"%s\"", label, r->console, e->console_is);
	for (size_t i = 0; i < ARRAY_LEN(e->console) && e->console[i]; i++)
		assert_has(label, "console", r->console, e->console[i]);
	for (size_t i = 0; i < ARRAY_LEN(e->trace) && e->trace[i]; i++)
		assert_has(label, "trace", r->trace, e->trace[i]);
	if (e->no_lines)
		assert_int_equal(r->nr_lines, 0);
	if (e->lines_over)
		assert_true(r->nr_lines > e->lines_over);
	if (e->only[0])
		for (size_t l = 0; l < r->nr_lines; l++) {
			bool listed = false;

			for (size_t i = 0; i < ARRAY_LEN(e->only) && e->only[i]; i++)
				listed |= !strcmp(r->lines[l].func, e->only[i]);
			if (!listed)
				fail_msg("%s: a trace line of %s", label, r->lines[l].func);
		}
	for (size_t i = 0; i < ARRAY_LEN(e->tasks) && e->tasks[i].func; i++) {
		const struct task_line *tl = &e->tasks[i];
		bool seen = false;

		for (size_t k = 0; k < ARRAY_LEN(tl->comms) && tl->comms[k]; k++)
			seen |= has_line(r, tl->func, tl->comms[k]);
		if (!seen)
			fail_msg("%s: no %s by %s (or the other workload processes listed)", label,
				 tl->func, tl->comms[0]);
	}
	for (size_t i = 0; i < ARRAY_LEN(e->counts) && e->counts[i].text; i++)
		assert_true(count_text(r->trace, e->counts[i].text) > e->counts[i].over);
	for (size_t i = 0; i < ARRAY_LEN(e->stub) && e->stub[i].field; i++)
		assert_true(stub_stat(r->err, e->stub[i].field) > e->stub[i].over);
	if (e->nest.open) {
		long opens = count_text(r->trace, e->nest.open);

		assert_true(opens > e->nest.over);
		assert_int_equal(opens, count_text(r->trace, e->nest.close));
	}
	if (e->none_in_flight)
		assert_int_equal(hv_restored_slots(r->err), 0);
	if (e->lost_marked) {
		unsigned long long sum = 0, m;
		unsigned cpu;

		for (const char *p = r->trace; (p = strstr(p, "\nCPU:")); p++)
			if (sscanf(p, "\nCPU:%u [LOST %llu EVENTS]\n", &cpu, &m) == 2)
				sum += m;
		assert_int_equal(sum, stub_stat(r->err, "lost ") +
					  stub_stat(r->err, "guest-reported-lost "));
	}
	if (e->above_4g && hv_stat(r->err, "kaslr-slide ", "slots-above-4g ") <= 0)
		fail_msg("%s: no return slot hooked above 4 GiB: %s", label, r->err);
	if (e->profile)
		assert_true(assert_profile_balanced(r->err, hv_restored_slots(r->err)) >=
			    e->profile_min);
	if (e->check)
		e->check(r);
}

void hv_case_play(const struct hv_run_case *c, const char *(*arg)(const char *))
{
	const char *argv[ARRAY_LEN(c->args) + 1];
	struct hv_result r;
	size_t n = 0;

	for (; n < ARRAY_LEN(c->args) && c->args[n]; n++)
		argv[n] = arg ? arg(c->args[n]) : c->args[n];
	argv[n] = NULL;
	hv_run(&r, argv, 0, 0);
	hv_expect_check(c->label, &c->expect, &r);
	hv_result_free(&r);
}

/* Hit of @func in the section of trace_stat text @text titled @title ("trace_stat/function0:",
 * "trace_stat/function (all CPUs):"), -1 when the section or the line is not there; *@ns gets its
 * Time in ns (from "U.NNN us"). */
long hv_profile_hits(const char *text, const char *title, const char *func, double *ns)
{
	const char *at = text ? strstr(text, title) : NULL, *end;
	char pat[64];

	if (!at)
		return -1;
	end = strstr(at + 1, "\ntrace_stat/");
	snprintf(pat, sizeof(pat), "\n  %-30.30s  ", func);
	at = strstr(at, pat);
	if (!at || (end && at > end))
		return -1;
	at += strlen(pat);
	long hits = strtol(at, (char **)&at, 10);
	if (ns)
		*ns = strtod(at, NULL) * 1000;
	return hits;
}

/* Every function's Hit summed over a section (its lines up to the next section). */
long hv_profile_total(const char *text, const char *title)
{
	const char *at = strstr(text, title), *end;
	long sum = 0;

	if (!at)
		return -1;
	end = strstr(at + 1, "\ntrace_stat/");
	at = strstr(at, "  --------");
	for (at = strchr(at, '\n'); at && *++at && (!end || at < end); at = strchr(at, '\n')) {
		char name[64];
		long hits;

		if (sscanf(at, " %63s %ld", name, &hits) == 2)
			sum += hits;
	}
	return sum;
}

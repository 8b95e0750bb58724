/* The writer cut short (writer_cut, a second SIGINT while the backlog is written): the records
 * still in the rings are dropped, each event counted exactly in not-written and lost, the lost
 * marks among them still go out (one per ring, at the end), and the trace ends with its trailer.
 * And the record context (struct sink_rec): each record looked up once, its payload, spec and probe
 * handed to the sink and the tap. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/sink/sink.h"
#include "host/sink/writer.h"
#include "host/trace/probe.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PER_RING 1000 /* events per ring */
#define LOST_AT	 600  /* each ring: events lost just before its record number LOST_AT */

static _Atomic uint64_t horizon_ts;

static uint64_t horizon(void *ctx)
{
	(void)ctx;
	return atomic_load(&horizon_ts);
}

static struct vmi_sym syms_v[] = {{.addr = 0x1000, .size = 0x10, .name = "f"}};
static const struct vmi_symtab syms = {.syms = syms_v, .nr = 1, .cap = 1};

/* Ring r holds PER_RING entries of vCPU r at ts = 1000 * (k + 1) + r, one in ten with an event
 * payload of 100 bytes (two payload records), and 7 + r events lost before its record LOST_AT. */
static void fill(struct ring *rings)
{
	uint8_t payload[100];

	memset(payload, 0xab, sizeof(payload));
	for (unsigned r = 0; r < 2; r++) {
		assert_int_equal(ring_init(&rings[r], 4096), 0);
		for (unsigned k = 0; k < PER_RING; k++) {
			struct hvt_record rec = {.ts = 1000ull * (k + 1) + r,
						 .ip = 0x1000,
						 .parent = 0x1008,
						 .cpu = (uint16_t)r,
						 .type = HVT_REC_ENTRY};
			size_t len = 0;

			if (k == LOST_AT)
				ring_lost(&rings[r], 7 + r, r);
			if (k % 10 == 3) {
				rec.type = HVT_REC_EVENT;
				rec.value = len = sizeof(payload);
			}
			memcpy(rec.comm, "task", 5);
			assert_true(ring_emit(&rings[r], &rec, payload, len));
		}
	}
}

/* Waits (bounded) until the writer has delivered @n records in all. */
static void wait_delivered(struct writer *w, unsigned long long n)
{
	for (int i = 0; i < 20000; i++) {
		unsigned long long got = 0;

		for (unsigned r = 0; r < w->nr; r++)
			got += __atomic_load_n(&w->events[r], __ATOMIC_RELAXED);
		if (got >= n)
			return;
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	fail_msg("the writer did not deliver %llu records", n);
}

static unsigned long long count_lines(const char *text, const char *what)
{
	unsigned long long n = 0;

	for (const char *p = text; (p = strstr(p, what)); p++)
		n++;
	return n;
}

/* The writer has written the records below @upto (0: none) when it is cut; returns the text. */
static char *cut_at(uint64_t upto, unsigned long long written_before, struct writer *w)
{
	struct ring rings[2];
	struct sink s;
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	assert_non_null(out);
	fill(rings);
	sink_function_init(&s, out, &syms, 2);
	atomic_store(&horizon_ts, upto);
	memset(w, 0, sizeof(*w));
	assert_int_equal(writer_start(w, rings, 2, &s, horizon, NULL), 0);
	if (written_before)
		wait_delivered(w, written_before);
	writer_cut(w);
	writer_stop(w, 30); /* the host's own lost count, as the tracer gives it */
	for (unsigned r = 0; r < 2; r++) {
		assert_null(ring_peek(&rings[r])); /* every record taken, written or dropped */
		ring_free(&rings[r]);
	}
	assert_int_equal(fclose(out), 0);
	return text;
}

/* Cut before anything was written: every event not written, counted. */
static void test_cut_before_any(void **state)
{
	struct writer w;
	char *text, trailer[128];

	(void)state;
	text = cut_at(0, 0, &w);
	assert_int_equal(w.not_written, 2 * PER_RING);
	assert_int_equal(count_lines(text, " <-"), 0);
	/* the dropped lost marks, each at the end */
	assert_non_null(strstr(text, "CPU:0 [LOST 7 EVENTS]\nCPU:1 [LOST 8 EVENTS]\n"));
	snprintf(trailer, sizeof(trailer),
		 "# entries-in-buffer/entries-written: 0/%u   #P:2\n"
		 "# entries-written: 0   lost: %u   not-written: %u\n",
		 30 + 2 * PER_RING, 30 + 2 * PER_RING, 2 * PER_RING);
	assert_true(strlen(text) >= strlen(trailer));
	assert_string_equal(text + strlen(text) - strlen(trailer), trailer);
	writer_free(&w);
	free(text);
}

/* Cut after the records below ts 400,500 were written (400 of ring 0, 400 of ring 1, their payload
 * records with them): the rest, exactly, not written; the marks after the cut point still out. */
static void test_cut_midway(void **state)
{
	struct writer w;
	char *text, trailer[128];
	/* records delivered below the horizon: 400 per ring, 40 of them events with 2 payload
	 * records each */
	unsigned long long delivered = 2 * (400 + 40 * 2);
	unsigned long long written;

	(void)state;
	text = cut_at(400500, delivered, &w);
	written = count_lines(text, "f <-f\n"); /* events print as function lines (no -e spec) */
	assert_int_equal(written, 800);
	assert_int_equal(w.not_written, 2 * PER_RING - 800);
	assert_non_null(strstr(text, "CPU:0 [LOST 7 EVENTS]\nCPU:1 [LOST 8 EVENTS]\n"));
	snprintf(trailer, sizeof(trailer), "# entries-written: 800   lost: %u   not-written: %u\n",
		 30 + 2 * PER_RING - 800, 2 * PER_RING - 800);
	assert_string_equal(text + strlen(text) - strlen(trailer), trailer);
	writer_free(&w);
	free(text);
}

/* Not cut: everything written, no not-written in the trailer, the marks where they were. */
static void test_not_cut(void **state)
{
	struct ring rings[2];
	struct sink s;
	struct writer w = {0};
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	(void)state;
	fill(rings);
	sink_function_init(&s, out, &syms, 2);
	atomic_store(&horizon_ts, UINT64_MAX);
	assert_int_equal(writer_start(&w, rings, 2, &s, horizon, NULL), 0);
	writer_stop(&w, 30);
	assert_int_equal(w.not_written, 0);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(count_lines(text, "f <-f\n"), 2 * PER_RING);
	assert_non_null(strstr(text, "CPU:0 [LOST 7 EVENTS]\n"));
	assert_non_null(strstr(text, "CPU:1 [LOST 8 EVENTS]\n"));
	assert_non_null(strstr(text, "# entries-written: 2000   lost: 30\n"));
	writer_free(&w);
	for (unsigned r = 0; r < 2; r++)
		ring_free(&rings[r]);
	free(text);
}

/* ---- the record context ---------------------------------------------------------------------- */

/* What the context test's sink and tap saw: each record's type, ip, probe, spec and its payload's
 * first byte (0 without one), whether the sink was given a next record, and in what order. */
struct seen_rec {
	uint8_t type;
	uint64_t ip;
	const struct probe *probe;
	const struct fe_spec *spec;
	uint8_t first;
	bool had_next;
};

static struct seen_rec sunk[16], tapped[16];
static unsigned nr_sunk, nr_tapped, nr_lookups;

static struct seen_rec seen_of(const struct sink_rec *rec, bool had_next)
{
	return (struct seen_rec){.type = rec->r->type,
				 .ip = rec->r->ip,
				 .probe = rec->probe,
				 .spec = rec->spec,
				 .first = rec->payload ? rec->payload[0] : 0,
				 .had_next = had_next};
}

static void ctx_begin(struct sink *s)
{
	(void)s;
}

static void ctx_end(struct sink *s)
{
	(void)s;
}

/* A lookahead sink that folds an entry with the return after it (as function_graph's leaf). */
static unsigned ctx_record(struct sink *s, const struct sink_rec *rec, const struct sink_rec *next)
{
	(void)s;
	assert_true(nr_sunk < 16);
	sunk[nr_sunk++] = seen_of(rec, next != NULL);
	if (rec->r->type == HVT_REC_ENTRY && next && next->r->ip == rec->r->ip &&
	    (next->r->type == HVT_REC_RETURN || next->r->type == HVT_REC_RETURN_EVENT)) {
		assert_true(nr_sunk < 16);
		sunk[nr_sunk++] = seen_of(next, false);
		return 2;
	}
	return 1;
}

/* the other records, which no callback is handed a next record with */
static void ctx_other(struct sink *s, const struct sink_rec *rec)
{
	ctx_record(s, rec, NULL);
}

static void ctx_lost(struct sink *s, const struct hvt_record *r)
{
	ctx_record(s, &(struct sink_rec){.r = r}, NULL);
}

static void ctx_tap(void *ctx, const struct sink_rec *rec)
{
	(void)ctx;
	assert_true(nr_tapped < 16);
	tapped[nr_tapped++] = seen_of(rec, false);
}

/* writer_lookup_probes, counted. */
static void counted_lookup(const void *ctx, struct sink_rec *rec)
{
	nr_lookups++;
	writer_lookup_probes(ctx, rec);
}

/* Two rings through a lookahead sink and a tap: every record looked up once, although the sink
 * sees most of them twice (as @next, then as the record); an event's spec is its probe's -e spec,
 * a typed return's its return spec, other records none; payloads are each record's own. */
static void test_record_context(void **state)
{
	static struct vmi_sym fsyms[] = {{0x1000, 16, "a"}, {0x2000, 16, "b"}};
	static struct vmi_site sites[] = {{0x1000, &fsyms[0]}, {0x2000, &fsyms[1]}};
	const struct vmi_site *sel[] = {&sites[0], &sites[1]};
	static const struct sink_ops ops = {.begin = ctx_begin,
					    .entry = ctx_record,
					    .event = ctx_record,
					    .event_alone = ctx_other,
					    .ret = ctx_other,
					    .ret_event = ctx_other,
					    .lost = ctx_lost,
					    .end = ctx_end,
					    .lookahead = true};
	struct fe_spec ev, ret;
	struct probe_table probes;
	struct ring rings[2];
	struct sink s;
	struct writer w = {0};
	uint8_t p1[16], p2[9];
	char err[64];
	size_t pos;
	/* ring 0: a { event of a; b(); } a returns typed; an entry at no probe. ring 1: b(). In the
	 * order the sink gets them (a leaf's return with its entry), with whether it gets a @next. */
	const struct {
		unsigned ring;
		uint8_t type;
		uint64_t ts, ip;
		const uint8_t *payload;
		size_t len;
		bool had_next;
	} in[] = {
	    {0, HVT_REC_ENTRY, 10, 0x1000, NULL, 0, true},
	    {1, HVT_REC_ENTRY, 15, 0x2000, NULL, 0, true},
	    {1, HVT_REC_RETURN, 25, 0x2000, NULL, 0, false},
	    {0, HVT_REC_EVENT, 20, 0x1000, p1, sizeof(p1), true},
	    {0, HVT_REC_ENTRY, 30, 0x2000, NULL, 0, true},
	    {0, HVT_REC_RETURN, 40, 0x2000, NULL, 0, false},
	    /* a return is handed no next record (sink_record: entries only) */
	    {0, HVT_REC_RETURN_EVENT, 50, 0x1000, p2, sizeof(p2), false},
	    {0, HVT_REC_ENTRY, 60, 0x3000, NULL, 0, false},
	};
	const size_t n = sizeof(in) / sizeof(in[0]);

	(void)state;
	memset(p1, 0x11, sizeof(p1));
	memset(p2, 0x22, sizeof(p2));
	assert_int_equal(fe_parse("a(int x)", &ev, err, sizeof(err), &pos), 0);
	assert_int_equal(fe_parse("a(x64 ret)", &ret, err, sizeof(err), &pos), 0);
	assert_int_equal(probe_table_init(&probes, sel, 2), 0);
	probes.v[0].event = &ev;
	probes.v[0].ret_event = &ret;
	for (unsigned r = 0; r < 2; r++)
		assert_int_equal(ring_init(&rings[r], 64), 0);
	for (size_t i = 0; i < n; i++) {
		struct hvt_record rec = {.ts = in[i].ts,
					 .ip = in[i].ip,
					 .cpu = (uint16_t)in[i].ring,
					 .type = in[i].type,
					 .value = in[i].len};

		assert_true(ring_emit(&rings[in[i].ring], &rec, in[i].payload, in[i].len));
	}
	nr_sunk = nr_tapped = nr_lookups = 0;
	sink_setup(&s, &ops, NULL, &syms, 2);
	w.lookup = counted_lookup;
	w.lookup_ctx = &probes;
	w.tap = ctx_tap;
	atomic_store(&horizon_ts, UINT64_MAX);
	assert_int_equal(writer_start(&w, rings, 2, &s, horizon, NULL), 0);
	writer_stop(&w, 0);
	assert_int_equal(nr_lookups, n);
	assert_int_equal(w.lookups, n);
	/* the sink and the tap saw every record once, in time order; the leaves as pairs */
	assert_int_equal(nr_sunk, n);
	assert_int_equal(nr_tapped, n);
	for (size_t i = 0; i < n; i++) {
		const struct probe *want = in[i].ip == 0x1000	? &probes.v[0]
					   : in[i].ip == 0x2000 ? &probes.v[1]
								: NULL;
		const struct fe_spec *spec = in[i].type == HVT_REC_EVENT	  ? &ev
					     : in[i].type == HVT_REC_RETURN_EVENT ? &ret
										  : NULL;

		assert_int_equal(sunk[i].type, in[i].type);
		assert_int_equal(sunk[i].ip, in[i].ip);
		assert_ptr_equal(sunk[i].probe, want);
		assert_ptr_equal(sunk[i].spec, spec);
		assert_int_equal(sunk[i].first, in[i].payload ? in[i].payload[0] : 0);
		assert_int_equal(sunk[i].had_next, in[i].had_next);
		assert_int_equal(tapped[i].type, sunk[i].type);
		assert_int_equal(tapped[i].ip, sunk[i].ip);
		assert_ptr_equal(tapped[i].probe, sunk[i].probe);
		assert_ptr_equal(tapped[i].spec, sunk[i].spec);
		assert_int_equal(tapped[i].first, sunk[i].first);
	}
	writer_free(&w);
	for (unsigned r = 0; r < 2; r++)
		ring_free(&rings[r]);
	probe_table_free(&probes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cut_before_any),
	    cmocka_unit_test(test_cut_midway),
	    cmocka_unit_test(test_not_cut),
	    cmocka_unit_test(test_record_context),
	};

	return cmocka_run_group_tests_name("writer_cut", tests, NULL, NULL);
}

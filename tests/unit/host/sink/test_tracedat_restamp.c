/* record --host: the ring-buffer pages read back (td_page_read_*), and trap events moved to their
 * vCPU's kvm_exit (td_restamp_cpu over host_side_exit_of): which events move (at their own
 * breakpoint's exit, out of guest mode), which stay (stub events in guest mode, another site's
 * exit, a host without kvm_exit), and the pages' losses and order kept. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/sink/tracedat_format.h"
#include "host/sink/tracedat_host.h"
#include "host/sink/tracedat_restamp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0	  1000000000ull
#define SITE	  0xffffffff81001000ull
#define OTHER	  0xffffffff81002000ull
#define TRAMP	  0xffffffffa0000000ull
#define RPROBE_ID (TD_ID_DYNAMIC + 2)

/* One event of ours: id, then the function's site first (as every event hvtrace writes). */
static size_t event(uint8_t *ev, unsigned id, uint64_t func, size_t len)
{
	memset(ev, 0, len);
	ev[0] = (uint8_t)id;
	ev[1] = (uint8_t)(id >> 8);
	memcpy(ev + 8, &func, 8);
	return len;
}

struct read_ev {
	uint64_t ts, func;
	unsigned id;
	size_t len;
};

/* Reads back @pages pages of @f: the events, and the loss of each page in @lost. */
static size_t read_all(FILE *f, uint64_t pages, struct read_ev *out, size_t max, uint64_t *lost)
{
	static uint8_t buf[TD_PAGE_SIZE];
	size_t n = 0;

	rewind(f);
	for (uint64_t i = 0; i < pages; i++) {
		struct td_page_reader rd;
		const uint8_t *data;
		uint64_t ts;
		size_t len;
		int got;

		assert_int_equal(fread(buf, 1, TD_PAGE_SIZE, f), TD_PAGE_SIZE);
		assert_true(td_page_read_start(&rd, buf, &lost[i]));
		while ((got = td_page_read_next(&rd, &ts, &data, &len)) > 0) {
			assert_true(n < max);
			out[n].ts = ts;
			out[n].id = (unsigned)data[0] | (unsigned)data[1] << 8;
			memcpy(&out[n].func, data + 8, 8);
			out[n++].len = len;
		}
		assert_int_equal(got, 0);
	}
	return n;
}

static void write_page(FILE *f, struct td_page *p)
{
	td_page_finish(p);
	assert_int_equal(fwrite(p->buf, 1, TD_PAGE_SIZE, f), TD_PAGE_SIZE);
}

static void test_page_read_back(void **state)
{
	static struct td_page p;
	static struct read_ev ev[8];
	uint8_t data[300];
	uint64_t lost[2];
	uint64_t far = 1000 + (1ull << 27) * 5 + 3; /* a time extend before it */
	FILE *f = tmpfile();

	(void)state;
	td_page_start(&p, 1000, 0);
	assert_true(td_page_add(&p, 1000, data, event(data, TD_ID_FUNCTION, SITE, 24)));
	assert_true(td_page_add(&p, far, data, event(data, 1001, OTHER, 200))); /* length word */
	assert_true(td_page_add(&p, far + 9, data, event(data, TD_ID_FUNCGRAPH_EXIT, SITE, 22)));
	write_page(f, &p);
	td_page_start(&p, far + 20, 42); /* 42 lost before this page */
	assert_true(td_page_add(&p, far + 20, data, event(data, TD_ID_FUNCTION, OTHER, 24)));
	write_page(f, &p);
	assert_int_equal(read_all(f, 2, ev, 8, lost), 4);
	assert_int_equal(ev[0].ts, 1000);
	assert_int_equal(ev[0].len, 24);
	assert_int_equal(ev[1].ts, far);
	assert_int_equal(ev[1].id, 1001);
	assert_int_equal(ev[1].func, OTHER);
	assert_int_equal(ev[1].len, 200);
	assert_int_equal(ev[2].ts, far + 9);
	assert_int_equal(ev[2].len, 24); /* padded */
	assert_int_equal(ev[3].ts, far + 20);
	assert_int_equal(lost[0], 0);
	assert_int_equal(lost[1], 42);
	fclose(f);
}

static void test_page_read_refuses_what_does_not_fit(void **state)
{
	static uint8_t buf[TD_PAGE_SIZE];
	struct td_page_reader rd;
	const uint8_t *data;
	uint64_t lost, ts, commit = TD_PAGE_DATA + 1;
	uint32_t w;
	size_t len;

	(void)state;
	memcpy(buf + 8, &commit, 8);
	assert_false(td_page_read_start(&rd, buf, &lost)); /* a commit beyond the page */
	commit = 8;
	memcpy(buf + 8, &commit, 8);
	w = 5; /* 20 bytes of data in a commit of 8 */
	memcpy(buf + TD_PAGE_HEADER, &w, 4);
	assert_true(td_page_read_start(&rd, buf, &lost));
	assert_int_equal(td_page_read_next(&rd, &ts, &data, &len), -1);
	w = 0; /* a length word beyond the commit */
	memcpy(buf + TD_PAGE_HEADER, &w, 4);
	w = 4000;
	memcpy(buf + TD_PAGE_HEADER + 4, &w, 4);
	assert_true(td_page_read_start(&rd, buf, &lost));
	assert_int_equal(td_page_read_next(&rd, &ts, &data, &len), -1);
}

/* vCPU 0: a breakpoint exit at SITE at 1000 (back in the guest at 3000), one at the trampoline at
 * 5000 (back at 7000), an exit at OTHER at 9000 (back at 9500); vCPU 1: exits a host without
 * kvm_exit saw (kvm_userspace_exit). Guest times; the host's are T0 later. */
static void host_of(struct host_side *h)
{
	static struct hs_exit e0[3], e1[1];
	static struct hs_span a0[3], a1[1];

	memset(h, 0, sizeof(*h));
	h->nr_vcpus = 2;
	e0[0] = (struct hs_exit){T0 + 1000, SITE, 0x43, true};
	e0[1] = (struct hs_exit){T0 + 5000, TRAMP, 0x43, true};
	e0[2] = (struct hs_exit){T0 + 9000, OTHER, 0x43, true};
	a0[0] = (struct hs_span){T0 + 1000, T0 + 3000};
	a0[1] = (struct hs_span){T0 + 5000, T0 + 7000};
	a0[2] = (struct hs_span){T0 + 9000, T0 + 9500};
	h->v[0] = (struct hs_vcpu){.tid = 10, .away = a0, .nr_away = 3, .exits = e0, .nr_exits = 3};
	e1[0] = (struct hs_exit){T0 + 1000, 0, 4, false};
	a1[0] = (struct hs_span){T0 + 1000, T0 + 3000};
	h->v[1] = (struct hs_vcpu){.tid = 11, .away = a1, .nr_away = 1, .exits = e1, .nr_exits = 1};
}

static void test_exit_of(void **state)
{
	struct host_side *h = calloc(1, sizeof(*h));
	uint64_t ts, rip;

	(void)state;
	host_of(h);
	assert_true(host_side_exit_of(h, 0, T0 + 2000, &ts, &rip));
	assert_int_equal(ts, T0 + 1000);
	assert_int_equal(rip, SITE);
	assert_true(host_side_exit_of(h, 0, T0 + 1000, &ts, &rip));  /* at the exit itself */
	assert_false(host_side_exit_of(h, 0, T0 + 3000, &ts, &rip)); /* back in the guest */
	assert_false(host_side_exit_of(h, 0, T0 + 4000, &ts, &rip));
	assert_false(host_side_exit_of(h, 0, T0 + 500, &ts, &rip)); /* before any exit */
	assert_true(host_side_exit_of(h, 0, T0 + 6999, &ts, &rip));
	assert_int_equal(rip, TRAMP);
	assert_false(host_side_exit_of(h, 1, T0 + 2000, &ts, &rip)); /* no kvm_exit */
	assert_false(host_side_exit_of(h, 2, T0 + 2000, &ts, &rip)); /* no such vCPU */
	free(h);
}

static void test_restamp_moves_trap_events_only(void **state)
{
	static struct td_page p;
	static struct read_ev ev[16];
	struct host_side *h = calloc(1, sizeof(*h));
	struct td_restamp r = {h, T0, TRAMP, RPROBE_ID, RPROBE_ID + 1};
	struct td_restamp_counts n = {0};
	uint8_t data[64];
	uint64_t lost[4], pages;
	FILE *in = tmpfile(), *out = tmpfile();

	(void)state;
	host_of(h);
	td_page_start(&p, 500, 0);
	/* a stub event in guest mode before the first exit: stays */
	assert_true(td_page_add(&p, 500, data, event(data, TD_ID_FUNCTION, SITE, 24)));
	/* the trap entry at SITE, stamped 1900 by hvtrace: to 1000; its -e event too */
	assert_true(td_page_add(&p, 1900, data, event(data, TD_ID_FUNCTION, SITE, 24)));
	assert_true(td_page_add(&p, 1910, data, event(data, TD_ID_DYNAMIC, SITE, 40)));
	/* an event of another function in that stretch: not this exit's, stays */
	assert_true(td_page_add(&p, 1950, data, event(data, TD_ID_FUNCTION, OTHER, 24)));
	/* in guest mode again: stays */
	assert_true(td_page_add(&p, 4000, data, event(data, TD_ID_FUNCTION, SITE, 24)));
	write_page(in, &p);
	td_page_start(&p, 6000, 3); /* 3 lost before the return */
	/* the return through the trampoline and its return probe: to 5000 */
	assert_true(td_page_add(&p, 6000, data, event(data, TD_ID_FUNCGRAPH_EXIT, SITE, 48)));
	assert_true(td_page_add(&p, 6001, data, event(data, RPROBE_ID, SITE, 32)));
	/* an entry at SITE in OTHER's exit: stays */
	assert_true(td_page_add(&p, 9100, data, event(data, TD_ID_FUNCTION, SITE, 24)));
	write_page(in, &p);
	assert_int_equal(td_restamp_cpu(&r, 0, in, 2, out, &pages, &n), 0);
	assert_int_equal(pages, 2);
	assert_int_equal(read_all(out, pages, ev, 16, lost), 8);
	assert_int_equal(ev[0].ts, 500);
	assert_int_equal(ev[1].ts, 1000);
	assert_int_equal(ev[2].ts, 1000);
	assert_int_equal(ev[2].id, TD_ID_DYNAMIC);
	assert_int_equal(ev[2].len, 40);
	assert_int_equal(ev[3].ts, 1950);
	assert_int_equal(ev[4].ts, 4000);
	assert_int_equal(ev[5].ts, 5000);
	assert_int_equal(ev[5].id, TD_ID_FUNCGRAPH_EXIT);
	assert_int_equal(ev[6].ts, 5000);
	assert_int_equal(ev[7].ts, 9100);
	assert_int_equal(lost[0], 0);
	assert_int_equal(lost[1], 3); /* still before the return */
	assert_int_equal(n.events, 8);
	assert_int_equal(n.moved, 4);
	assert_int_equal(n.shift_max_ns, 1001);
	assert_int_equal(n.shift_total_ns, 900 + 910 + 1000 + 1001);

	/* vCPU 1's host has no kvm_exit: nothing moves */
	memset(&n, 0, sizeof(n));
	rewind(out);
	assert_int_equal(td_restamp_cpu(&r, 1, in, 2, out, &pages, &n), 0);
	assert_int_equal(n.moved, 0);
	assert_int_equal(read_all(out, pages, ev, 16, lost), 8);
	assert_int_equal(ev[1].ts, 1900);
	fclose(in);
	fclose(out);
	free(h);
}

static void test_restamp_keeps_order(void **state)
{
	static struct td_page p;
	static struct read_ev ev[4];
	struct host_side *h = calloc(1, sizeof(*h));
	struct td_restamp r = {h, T0, 0, 0, 0};
	struct td_restamp_counts n = {0};
	uint8_t data[32];
	uint64_t lost[1], pages;
	FILE *in = tmpfile(), *out = tmpfile();

	(void)state;
	host_of(h);
	/* an event at 1500 of OTHER (stays), then the trap event at SITE stamped 1600: its exit
	 * (1000) is before the event before it, so it goes no earlier than that one; no trampoline
	 * known: the return at 6000 stays */
	td_page_start(&p, 1500, 0);
	assert_true(td_page_add(&p, 1500, data, event(data, TD_ID_FUNCTION, OTHER, 24)));
	assert_true(td_page_add(&p, 1600, data, event(data, TD_ID_FUNCTION, SITE, 24)));
	assert_true(td_page_add(&p, 6000, data, event(data, TD_ID_FUNCGRAPH_EXIT, SITE, 24)));
	write_page(in, &p);
	assert_int_equal(td_restamp_cpu(&r, 0, in, 1, out, &pages, &n), 0);
	assert_int_equal(read_all(out, pages, ev, 4, lost), 3);
	assert_int_equal(ev[0].ts, 1500);
	assert_int_equal(ev[1].ts, 1500);
	assert_int_equal(ev[2].ts, 6000);
	assert_int_equal(n.moved, 1);
	fclose(in);
	fclose(out);
	free(h);
}

static void test_restamp_refuses_a_foreign_page(void **state)
{
	static uint8_t page[TD_PAGE_SIZE];
	struct td_restamp r = {0};
	struct td_restamp_counts n = {0};
	uint64_t commit = TD_PAGE_SIZE, pages;
	FILE *in = tmpfile(), *out = tmpfile();

	(void)state;
	memcpy(page + 8, &commit, 8);
	assert_int_equal(fwrite(page, 1, sizeof(page), in), sizeof(page));
	assert_int_equal(td_restamp_cpu(&r, 0, in, 1, out, &pages, &n), -22);
	assert_int_equal(td_restamp_cpu(&r, 0, in, 2, out, &pages, &n), -22); /* first page first */
	fclose(in);
	in = tmpfile();
	assert_int_equal(td_restamp_cpu(&r, 0, in, 1, out, &pages, &n), -5); /* short file */
	fclose(in);
	fclose(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_page_read_back),
	    cmocka_unit_test(test_page_read_refuses_what_does_not_fit),
	    cmocka_unit_test(test_exit_of),
	    cmocka_unit_test(test_restamp_moves_trap_events_only),
	    cmocka_unit_test(test_restamp_keeps_order),
	    cmocka_unit_test(test_restamp_refuses_a_foreign_page),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

#include "host/sink/tracedat_restamp.h"
#include "host/sink/tracedat_format.h"
#include "host/tracedat/le_bytes.h"

#include <errno.h>
#include <string.h>

struct restamp_out {
	struct td_page page;
	FILE *f;
	uint64_t pages;
	uint64_t lost; /* marked on the next page started */
	int err;
};

static void out_flush(struct restamp_out *o)
{
	if (!o->page.started)
		return;
	td_page_finish(&o->page);
	if (!o->err && fwrite(o->page.buf, 1, TD_PAGE_SIZE, o->f) != TD_PAGE_SIZE)
		o->err = -EIO;
	o->pages++;
	o->page.started = false;
}

static void out_add(struct restamp_out *o, uint64_t ts, const uint8_t *data, size_t len)
{
	if (o->page.started && ts < o->page.last_ts)
		ts = o->page.last_ts; /* never a negative delta */
	if (!o->page.started) {
		td_page_start(&o->page, ts, o->lost);
		o->lost = 0;
	}
	if (td_page_add(&o->page, ts, data, len))
		return;
	out_flush(o);
	td_page_start(&o->page, ts, 0);
	td_page_add(&o->page, ts, data, len); /* it fitted a page before */
}

/* Where event @data (@len bytes, stamped @ts) of vCPU @cpu goes: its exit's time when it is a trap
 * event at its own breakpoint's exit, else @ts. */
static uint64_t new_time(const struct td_restamp *r, unsigned cpu, uint64_t ts, const uint8_t *data,
			 size_t len)
{
	uint64_t exit_ts, rip, func;
	unsigned id;
	bool ret;

	if (len < 16 || !r->host)
		return ts;
	id = (unsigned)data[0] | (unsigned)data[1] << 8;
	func = le_get64(data + 8); /* every event of ours has the function's site first */
	ret = id == TD_ID_FUNCGRAPH_EXIT || (id >= r->ret_first && id < r->ret_end);
	if (ret && !r->trampoline)
		return ts;
	if (!host_side_exit_of(r->host, cpu, ts + r->t0_ns, &exit_ts, &rip) ||
	    rip != (ret ? r->trampoline : func) || exit_ts < r->t0_ns)
		return ts;
	return exit_ts - r->t0_ns;
}

int td_restamp_cpu(const struct td_restamp *r, unsigned cpu, FILE *in, uint64_t pages, FILE *out,
		   uint64_t *out_pages, struct td_restamp_counts *n)
{
	uint8_t buf[TD_PAGE_SIZE];
	struct restamp_out o = {.f = out};

	*out_pages = 0;
	if (fseeko(in, 0, SEEK_SET) < 0)
		return -EIO;
	for (uint64_t i = 0; i < pages && !o.err; i++) {
		struct td_page_reader rd;
		uint64_t lost, ts = 0, base;
		const uint8_t *data;
		size_t len;
		int got;

		if (fread(buf, 1, TD_PAGE_SIZE, in) != TD_PAGE_SIZE)
			return -EIO;
		if (!td_page_read_start(&rd, buf, &lost))
			return -EINVAL;
		base = rd.ts;
		if (lost) { /* the loss stays before this page's first event */
			out_flush(&o);
			o.lost = lost;
		}
		while ((got = td_page_read_next(&rd, &ts, &data, &len)) > 0) {
			uint64_t to = new_time(r, cpu, ts, data, len);

			if (o.page.started && to < o.page.last_ts)
				to = o.page.last_ts < ts ? o.page.last_ts : ts;
			n->events++;
			if (to != ts) {
				n->moved++;
				n->shift_total_ns += ts - to;
				n->shift_max_ns =
				    ts - to > n->shift_max_ns ? ts - to : n->shift_max_ns;
			}
			out_add(&o, to, data, len);
		}
		if (got < 0)
			return -EINVAL;
		if (o.lost && !o.page.started) /* a loss with no event after it on its page */
			td_page_start(&o.page, base, o.lost), o.lost = 0;
	}
	out_flush(&o);
	if (!o.err && fflush(out))
		o.err = -EIO;
	*out_pages = o.pages;
	return o.err;
}

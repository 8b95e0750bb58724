/* The kernel ring buffer's page layout, as trace.dat holds it (libtraceevent's kbuffer reads it).
 */
#include "host/sink/tracedat_format.h"
#include "host/tracedat/le_bytes.h"

#include <string.h>

void td_page_start(struct td_page *p, uint64_t ts, uint64_t lost)
{
	memset(p->buf, 0, TD_PAGE_HEADER);
	le_put64(p->buf, ts);
	p->len = 0;
	p->last_ts = ts;
	p->started = true;
	p->lost = lost;
}

bool td_page_add(struct td_page *p, uint64_t ts, const void *data, size_t len)
{
	uint64_t delta = ts > p->last_ts ? ts - p->last_ts : 0;
	size_t padded = (len + 3) & ~(size_t)3;
	bool extend = delta >> TD_DELTA_BITS;
	bool big = padded > 4 * TD_TYPE_DATA_MAX;
	size_t need = (extend ? 8 : 0) + 4 + (big ? 4 : 0) + padded;
	size_t room = TD_PAGE_DATA - (p->lost ? 8 : 0);
	uint8_t *at = p->buf + TD_PAGE_HEADER + p->len;

	if (!len || p->len + need > room)
		return false;
	if (extend) {
		le_put32(at, TD_TYPE_TIME_EXTEND | (uint32_t)(delta & ((1u << TD_DELTA_BITS) - 1))
						       << 5);
		le_put32(at + 4, (uint32_t)(delta >> TD_DELTA_BITS));
		at += 8;
		delta = 0;
	}
	if (big) {
		le_put32(at, (uint32_t)delta << 5);
		le_put32(at + 4, (uint32_t)(padded + 4)); /* the length word counts itself */
		at += 8;
	} else {
		le_put32(at, (uint32_t)(padded / 4) | (uint32_t)delta << 5);
		at += 4;
	}
	memcpy(at, data, len);
	memset(at + len, 0, padded - len);
	p->len += need;
	p->last_ts = ts;
	return true;
}

void td_page_finish(struct td_page *p)
{
	uint64_t commit = p->len;

	if (p->lost) {
		commit |= TD_MISSED_EVENTS | TD_MISSED_STORED;
		le_put64(p->buf + TD_PAGE_HEADER + p->len, p->lost);
	}
	le_put64(p->buf + 8, commit);
	memset(p->buf + TD_PAGE_HEADER + p->len + (p->lost ? 8 : 0), 0,
	       TD_PAGE_DATA - p->len - (p->lost ? 8 : 0));
}

bool td_page_read_start(struct td_page_reader *r, const uint8_t *buf, uint64_t *lost)
{
	uint64_t commit = le_get64(buf + 8);
	uint64_t len = commit & ~(TD_MISSED_EVENTS | TD_MISSED_STORED);
	bool stored = commit & TD_MISSED_STORED;

	*lost = 0;
	if (len > TD_PAGE_DATA || (stored && len + 8 > TD_PAGE_DATA))
		return false;
	if (stored)
		*lost = le_get64(buf + TD_PAGE_HEADER + len);
	else if (commit & TD_MISSED_EVENTS)
		*lost = 1; /* some, count unknown */
	r->buf = buf;
	r->at = TD_PAGE_HEADER;
	r->end = TD_PAGE_HEADER + (size_t)len;
	r->ts = le_get64(buf);
	return true;
}

int td_page_read_next(struct td_page_reader *r, uint64_t *ts, const uint8_t **data, size_t *len)
{
	while (r->at < r->end) {
		uint32_t w, type, delta;
		size_t left = r->end - r->at, n;

		if (left < 4)
			return -1;
		w = le_get32(r->buf + r->at);
		type = w & 31;
		delta = w >> 5;
		if (type == TD_TYPE_PADDING && !delta)
			return 0; /* the rest of the page is padding */
		if (type >= TD_TYPE_PADDING || type == 0) {
			if (left < 8)
				return -1;
			n = le_get32(r->buf + r->at + 4);
		}
		if (type == TD_TYPE_TIME_EXTEND || type == TD_TYPE_TIME_STAMP) {
			uint64_t t = (uint64_t)n << TD_DELTA_BITS | delta;

			r->ts = type == TD_TYPE_TIME_STAMP ? t : r->ts + t;
			r->at += 8;
			continue;
		}
		/* a discarded event: its length word counts itself */
		if (type == TD_TYPE_PADDING) {
			if (n < 8 || n > left)
				return -1;
			r->at += n;
			continue;
		}
		if (type == 0) { /* data beyond 112 bytes: a length word that counts itself */
			if (n < 4 || n - 4 > left - 8)
				return -1;
			*data = r->buf + r->at + 8;
			*len = n - 4;
			r->at += 8 + ((n - 4 + 3) & ~(size_t)3);
		} else {
			if ((size_t)type * 4 > left - 4)
				return -1;
			*data = r->buf + r->at + 4;
			*len = (size_t)type * 4;
			r->at += 4 + *len;
		}
		r->ts += delta;
		*ts = r->ts;
		return 1;
	}
	return 0;
}

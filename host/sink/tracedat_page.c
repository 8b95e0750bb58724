/* The kernel ring buffer's page layout, as trace.dat holds it (libtraceevent's kbuffer reads it).
 */
#include "host/sink/tracedat_format.h"

#include <string.h>

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

void td_page_start(struct td_page *p, uint64_t ts, uint64_t lost)
{
	memset(p->buf, 0, TD_PAGE_HEADER);
	put64(p->buf, ts);
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
		put32(at, TD_TYPE_TIME_EXTEND | (uint32_t)(delta & ((1u << TD_DELTA_BITS) - 1))
						    << 5);
		put32(at + 4, (uint32_t)(delta >> TD_DELTA_BITS));
		at += 8;
		delta = 0;
	}
	if (big) {
		put32(at, (uint32_t)delta << 5);
		put32(at + 4, (uint32_t)(padded + 4)); /* the length word counts itself */
		at += 8;
	} else {
		put32(at, (uint32_t)(padded / 4) | (uint32_t)delta << 5);
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
		put64(p->buf + TD_PAGE_HEADER + p->len, p->lost);
	}
	put64(p->buf + 8, commit);
	memset(p->buf + TD_PAGE_HEADER + p->len + (p->lost ? 8 : 0), 0,
	       TD_PAGE_DATA - p->len - (p->lost ? 8 : 0));
}

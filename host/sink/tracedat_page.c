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

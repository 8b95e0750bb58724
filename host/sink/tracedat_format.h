/* trace-cmd's trace.dat (version 6, "flyrecord"): the constants and the ring-buffer page encoding
 * shared by the writer (sink_tracedat.c) and its tests. Little-endian, 8-byte longs, 4096-byte
 * pages as Linux x86-64 writes them. */
#ifndef HVT_TRACEDAT_FORMAT_H
#define HVT_TRACEDAT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TD_PAGE_SIZE	 4096u
#define TD_PAGE_HEADER	 16u /* u64 timestamp, local_t commit */
#define TD_PAGE_DATA	 (TD_PAGE_SIZE - TD_PAGE_HEADER)
#define TD_MISSED_EVENTS (1ull << 31) /* commit flags: events were lost before this page */
#define TD_MISSED_STORED (1ull << 30) /* ... and their count follows the data */

/* Event header type_len values (the kernel's ring_buffer.h). */
#define TD_TYPE_DATA_MAX    28 /* 1..28: data of type_len * 4 bytes */
#define TD_TYPE_PADDING	    29
#define TD_TYPE_TIME_EXTEND 30
#define TD_TYPE_TIME_STAMP  31
#define TD_DELTA_BITS	    27

/* The ftrace event ids of Linux x86-64 (enum trace_type), and where ours start. */
#define TD_ID_FUNCTION	      1
#define TD_ID_FUNCGRAPH_EXIT  10
#define TD_ID_FUNCGRAPH_ENTRY 11
#define TD_ID_DYNAMIC	      1000 /* -e events, then -r return probes */

/* One per-CPU page being filled. */
struct td_page {
	uint8_t buf[TD_PAGE_SIZE];
	size_t len;	  /* bytes of data used after the header */
	uint64_t last_ts; /* timestamp of the last event written (the page's base at first) */
	bool started;	  /* holds an event (or its base timestamp is set) */
	uint64_t lost;	  /* missed events to mark on this page (0: none) */
};

/* Starts an empty page at @ts carrying a missed-events mark of @lost (0: none). Pure. */
void td_page_start(struct td_page *p, uint64_t ts, uint64_t lost);

/* Appends one event of @len data bytes (@data) at @ts (>= the page's last): a time-extend first
 * when the delta does not fit 27 bits, then the header (type_len, or 0 with the length word for
 * data beyond 112 bytes) and the data padded to 4 bytes. Returns false, page unchanged, when it
 * does not fit (the caller finishes the page and starts another). Pure. */
bool td_page_add(struct td_page *p, uint64_t ts, const void *data, size_t len);

/* Finishes the page for writing: sets the commit (data length, and the missed-events flags with the
 * count stored after the data when @p->lost). Pure. */
void td_page_finish(struct td_page *p);

/* Reading a finished page back (td_page_read_start, td_page_read_next). */
struct td_page_reader {
	const uint8_t *buf;
	size_t at, end; /* offsets in buf */
	uint64_t ts;	/* of the last event read (the page's base at first) */
};

/* Starts reading the finished page @buf (TD_PAGE_SIZE bytes): its missed-events count in *@lost (0:
 * none marked). false when its commit does not fit the page. Pure. */
bool td_page_read_start(struct td_page_reader *r, const uint8_t *buf, uint64_t *lost);

/* The page's next event: 1 with its time (*@ts), data (*@data, in the page) and length (*@len), 0
 * at the page's end, -1 when an event header does not fit the page. Time extends, absolute
 * timestamps and padding are taken as the kernel writes them. Pure. */
int td_page_read_next(struct td_page_reader *r, uint64_t *ts, const uint8_t **data, size_t *len);

#endif

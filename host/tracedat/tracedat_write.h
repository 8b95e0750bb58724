/* The trace.dat writer core (trace-cmd's version 6, flyrecord): the file's parts in their order,
 * little-endian, for both files hvtrace writes: the guest's (host/sink/tracedat_headers.c) and the
 * host's (host/hosttrace/host_rec.c). Each caller owns what goes into the parts (event formats,
 * kallsyms, cmdlines, options); this owns how they are laid out. One thread per td_out. */
#ifndef HVT_TRACEDAT_WRITE_H
#define HVT_TRACEDAT_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* trace.dat's option ids (trace-cmd's enum tracecmd_file_options) */
#define TD_OPT_DONE	  0
#define TD_OPT_TRACECLOCK 4
#define TD_OPT_CPUCOUNT	  8
#define TD_OPT_TRACEID	  11
#define TD_OPT_TIME_SHIFT 12
#define TD_OPT_GUEST	  13

/* A trace.dat being written. */
struct td_out {
	FILE *f;      /* borrowed */
	uint64_t off; /* bytes written so far (the output may be a pipe: no ftell) */
	int err;      /* errno of the first failed write, 0 if none: every later write is skipped */
};

/* Writes @n bytes of @p (a failure lands in o->err, as for sink_write). */
void td_out_bytes(struct td_out *o, const void *p, size_t n);

/* Writes @v little-endian in 2, 4 or 8 bytes. */
void td_out_u16(struct td_out *o, uint16_t v);
void td_out_u32(struct td_out *o, uint32_t v);
void td_out_u64(struct td_out *o, uint64_t v);

/* A section: its size (8 bytes when @wide, else 4) then its @len bytes. */
void td_out_section(struct td_out *o, const void *data, size_t len, bool wide);

/* The file's start: magic, version 6, little endian, 8-byte longs, @page_size, then the
 * "header_page" and "header_event" sections with the texts tracefs gives for them. */
void td_out_begin(struct td_out *o, uint32_t page_size, const char *header_page, size_t page_len,
		  const char *header_event, size_t event_len);

/* After the cmdlines: the CPU count, then the options' start ("options  "). */
void td_out_options_begin(struct td_out *o, uint32_t nr_cpus);

/* One option: its id, its size, its @size bytes. */
void td_out_option(struct td_out *o, uint16_t id, const void *data, uint32_t size);

/* One option whose data is @v, little-endian, in 4 (or 8) bytes. */
void td_out_option_u32(struct td_out *o, uint16_t id, uint32_t v);
void td_out_option_u64(struct td_out *o, uint16_t id, uint64_t v);

/* The temporary file of CPU @cpu's pages and, in *@pages, how many it holds (whole pages). */
typedef FILE *(*td_cpu_pages_fn)(const void *ctx, unsigned cpu, uint64_t *pages);

/* The end of the options, "flyrecord", each CPU's data offset and size, the padding to a page
 * boundary, then each CPU's pages of @page_size bytes copied from its file (@cpu_pages). Errors
 * land in o->err (ENOMEM, or the copy's errno). */
void td_out_flyrecord(struct td_out *o, unsigned nr_cpus, uint32_t page_size,
		      td_cpu_pages_fn cpu_pages, const void *ctx);

#endif

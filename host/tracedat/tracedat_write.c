#include "host/tracedat/tracedat_write.h"
#include "host/tracedat/le_bytes.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

void td_out_bytes(struct td_out *o, const void *p, size_t n)
{
	o->off += n;
	if (o->err || !n)
		return;
	errno = 0;
	if (fwrite(p, 1, n, o->f) != n)
		o->err = errno ? errno : EIO;
}

void td_out_u16(struct td_out *o, uint16_t v)
{
	uint8_t b[2];

	le_put16(b, v);
	td_out_bytes(o, b, sizeof(b));
}

void td_out_u32(struct td_out *o, uint32_t v)
{
	uint8_t b[4];

	le_put32(b, v);
	td_out_bytes(o, b, sizeof(b));
}

void td_out_u64(struct td_out *o, uint64_t v)
{
	uint8_t b[8];

	le_put64(b, v);
	td_out_bytes(o, b, sizeof(b));
}

void td_out_section(struct td_out *o, const void *data, size_t len, bool wide)
{
	if (wide)
		td_out_u64(o, len);
	else
		td_out_u32(o, (uint32_t)len);
	td_out_bytes(o, data, len);
}

void td_out_begin(struct td_out *o, uint32_t page_size, const char *header_page, size_t page_len,
		  const char *header_event, size_t event_len)
{
	static const char magic[] = {
	    0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g', '6', 0, 0 /* little endian */,
	    8 /* long */};

	td_out_bytes(o, magic, sizeof(magic));
	td_out_u32(o, page_size);
	td_out_bytes(o, "header_page", 12);
	td_out_section(o, header_page, page_len, true);
	td_out_bytes(o, "header_event", 13);
	td_out_section(o, header_event, event_len, true);
}

void td_out_options_begin(struct td_out *o, uint32_t nr_cpus)
{
	td_out_u32(o, nr_cpus);
	td_out_bytes(o, "options  ", 10);
}

void td_out_option(struct td_out *o, uint16_t id, const void *data, uint32_t size)
{
	td_out_u16(o, id);
	td_out_u32(o, size);
	td_out_bytes(o, data, size);
}

void td_out_option_u32(struct td_out *o, uint16_t id, uint32_t v)
{
	td_out_u16(o, id);
	td_out_u32(o, 4);
	td_out_u32(o, v);
}

void td_out_option_u64(struct td_out *o, uint16_t id, uint64_t v)
{
	td_out_u16(o, id);
	td_out_u32(o, 8);
	td_out_u64(o, v);
}

/* Copies what it can of the first @len bytes of @f to @o inside the kernel (copy_file_range: page
 * cache to page cache, no copy through this process); returns how many (0: not between these
 * files, e.g. @o a pipe). @o's stream is flushed first; its offset moves on with what is copied. */
static uint64_t copy_in_kernel(struct td_out *o, FILE *f, uint64_t len)
{
	loff_t from = 0;
	uint64_t done = 0;

	if (fflush(o->f))
		return 0;
	while (done < len) {
		ssize_t n = copy_file_range(fileno(f), &from, fileno(o->f), NULL, len - done, 0);

		if (n <= 0)
			break;
		done += (uint64_t)n;
	}
	o->off += done;
	return done;
}

/* Copies @pages pages of @page from @f's start to @o. */
static void copy_pages(struct td_out *o, FILE *f, uint64_t pages, uint8_t *page, uint32_t page_size)
{
	uint64_t first;

	if (!pages || o->err)
		return;
	errno = 0;
	if (fflush(f)) {
		o->err = errno ? errno : EIO;
		return;
	}
	first = copy_in_kernel(o, f, pages * page_size);
	/* the rest (all of it where the kernel cannot copy) through @page, from where that stopped,
	 * whole pages only (a partial copy resumes mid-page: page_size divides what it did) */
	if (first % page_size) {
		o->err = EIO;
		return;
	}
	if (fseek(f, (long)first, SEEK_SET)) {
		o->err = errno ? errno : EIO;
		return;
	}
	for (uint64_t p = first / page_size; p < pages && !o->err; p++) {
		if (fread(page, 1, page_size, f) != page_size) {
			o->err = errno ? errno : EIO;
			return;
		}
		td_out_bytes(o, page, page_size);
	}
}

void td_out_flyrecord(struct td_out *o, unsigned nr_cpus, uint32_t page_size,
		      td_cpu_pages_fn cpu_pages, const void *ctx)
{
	uint8_t *page = calloc(1, page_size);
	uint64_t off, pages;

	if (!page) {
		o->err = o->err ? o->err : ENOMEM;
		return;
	}
	td_out_u16(o, TD_OPT_DONE);
	td_out_bytes(o, "flyrecord", 10);
	off = o->off + 16ull * nr_cpus;
	off = (off + page_size - 1) / page_size * page_size;
	for (unsigned c = 0; c < nr_cpus; c++) {
		cpu_pages(ctx, c, &pages);
		td_out_u64(o, off);
		td_out_u64(o, pages * page_size);
		off += pages * page_size;
	}
	td_out_bytes(o, page, (size_t)((page_size - o->off % page_size) % page_size));
	for (unsigned c = 0; c < nr_cpus && !o->err; c++) {
		FILE *f = cpu_pages(ctx, c, &pages);

		copy_pages(o, f, pages, page, page_size);
	}
	free(page);
}

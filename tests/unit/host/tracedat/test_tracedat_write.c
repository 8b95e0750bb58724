/* The trace.dat writer core (host/tracedat/tracedat_write.c) byte for byte: little-endian integers,
 * sections of 4- and 8-byte sizes, the file's start, options, and flyrecord's per-CPU offsets with
 * the pages copied page-aligned from each CPU's temporary file; a failed write kept in err. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/tracedat/le_bytes.h"
#include "host/tracedat/tracedat_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What @f holds, from its start; *@len its size. */
static uint8_t *contents(FILE *f, size_t *len)
{
	long n;
	uint8_t *buf;

	assert_int_equal(fflush(f), 0);
	n = ftell(f);
	assert_true(n >= 0);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	rewind(f);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	*len = (size_t)n;
	return buf;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void le_stores(void **state)
{
	uint8_t b[8];

	(void)state;
	le_put16(b, 0x1234);
	assert_memory_equal(b, "\x34\x12", 2);
	le_put32(b, 0xdeadbeef);
	assert_memory_equal(b, "\xef\xbe\xad\xde", 4);
	le_put64(b, 0x0102030405060708ull);
	assert_memory_equal(b, "\x08\x07\x06\x05\x04\x03\x02\x01", 8);
}

static void integers_sections_options(void **state)
{
	FILE *f = tmpfile();
	struct td_out o = {.f = f};
	uint8_t *buf;
	size_t len;
	static const uint8_t want[] = {
	    0x02, 0x01,							   /* u16 */
	    0x04, 0x03, 0x02, 0x01,					   /* u32 */
	    3,	  0,	0,    0,    0,	 0,   0,    0,	  'a',	'b',  'c', /* wide section */
	    2,	  0,	0,    0,    'x', 'y',				   /* narrow section */
	    11,	  0,	8,    0,    0,	 0,   0x88, 0x77, 0x66, 0x55, 0x44,
	    0x33, 0x22, 0x11,					     /* u64 option */
	    8,	  0,	4,    0,    0,	 0,   2,    0,	  0,	0,   /* u32 option */
	    4,	  0,	4,    0,    0,	 0,   'm',  'o',  'n',	'o', /* option */
	};

	(void)state;
	assert_non_null(f);
	td_out_u16(&o, 0x0102);
	td_out_u32(&o, 0x01020304);
	td_out_section(&o, "abc", 3, true);
	td_out_section(&o, "xy", 2, false);
	td_out_option_u64(&o, TD_OPT_TRACEID, 0x1122334455667788ull);
	td_out_option_u32(&o, TD_OPT_CPUCOUNT, 2);
	td_out_option(&o, TD_OPT_TRACECLOCK, "mono", 4);
	assert_int_equal(o.err, 0);
	assert_int_equal(o.off, sizeof(want));
	buf = contents(f, &len);
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	free(buf);
	fclose(f);
}

static void file_start(void **state)
{
	FILE *f = tmpfile();
	struct td_out o = {.f = f};
	uint8_t *buf;
	size_t len;

	(void)state;
	td_out_begin(&o, 4096, "PG", 2, "EVT", 3);
	td_out_options_begin(&o, 3);
	buf = contents(f, &len);
	assert_int_equal(len, o.off);
	assert_memory_equal(buf, "\x17\x08\x44tracing6\0\0\x08", 14);
	assert_memory_equal(buf + 14, "\x00\x10\x00\x00", 4);
	assert_memory_equal(buf + 18, "header_page\0", 12);
	assert_int_equal(get64(buf + 30), 2);
	assert_memory_equal(buf + 38, "PG", 2);
	assert_memory_equal(buf + 40, "header_event\0", 13);
	assert_int_equal(get64(buf + 53), 3);
	assert_memory_equal(buf + 61, "EVT", 3);
	assert_memory_equal(buf + 64, "\x03\x00\x00\x00options  \0", 14);
	assert_int_equal(len, 78);
	free(buf);
	fclose(f);
}

struct cpus {
	FILE *tmp[2];
	uint64_t pages[2];
};

static FILE *cpu_pages(const void *ctx, unsigned cpu, uint64_t *pages)
{
	const struct cpus *c = ctx;

	*pages = c->pages[cpu];
	return c->tmp[cpu];
}

/* two CPUs, one with two pages and one with none: offsets page-aligned, pages copied in order */
static void flyrecord(void **state)
{
	enum { PAGE = 64 };
	FILE *f = tmpfile();
	struct td_out o = {.f = f};
	struct cpus c = {{tmpfile(), tmpfile()}, {2, 0}};
	uint8_t page[PAGE], *buf;
	size_t len, at;

	(void)state;
	for (int p = 0; p < 2; p++) {
		memset(page, 'A' + p, sizeof(page));
		assert_int_equal(fwrite(page, 1, PAGE, c.tmp[0]), PAGE);
	}
	td_out_bytes(&o, "xyz", 3);
	td_out_flyrecord(&o, 2, PAGE, cpu_pages, &c);
	assert_int_equal(o.err, 0);
	buf = contents(f, &len);
	assert_int_equal(len, o.off);
	assert_memory_equal(buf + 3, "\0\0flyrecord\0", 12);
	at = 15;
	/* 15 + 32 = 47, the data at 64 */
	assert_int_equal(get64(buf + at), 64);
	assert_int_equal(get64(buf + at + 8), 2 * PAGE);
	assert_int_equal(get64(buf + at + 16), 64 + 2 * PAGE);
	assert_int_equal(get64(buf + at + 24), 0);
	assert_int_equal(len, 64 + 2 * PAGE);
	for (size_t i = at + 32; i < 64; i++)
		assert_int_equal(buf[i], 0);
	for (size_t i = 0; i < PAGE; i++) {
		assert_int_equal(buf[64 + i], 'A');
		assert_int_equal(buf[64 + PAGE + i], 'B');
	}
	free(buf);
	fclose(f);
	fclose(c.tmp[0]);
	fclose(c.tmp[1]);
}

/* a page missing from a CPU's file is an error, and every write after the first failure skipped */
static void errors_kept(void **state)
{
	FILE *f = tmpfile();
	struct td_out o = {.f = f};
	struct cpus c = {{tmpfile(), tmpfile()}, {1, 0}};
	size_t len;
	uint8_t *buf;

	(void)state;
	td_out_flyrecord(&o, 2, 64, cpu_pages, &c); /* CPU 0's file is empty */
	assert_int_not_equal(o.err, 0);
	buf = contents(f, &len);
	free(buf);
	td_out_u64(&o, 1);
	assert_int_equal(len, ftell(f));
	fclose(f);
	fclose(c.tmp[0]);
	fclose(c.tmp[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(le_stores),   cmocka_unit_test(integers_sections_options),
	    cmocka_unit_test(file_start),  cmocka_unit_test(flyrecord),
	    cmocka_unit_test(errors_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

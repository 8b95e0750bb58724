/* trace.dat: the ring-buffer page encoding of the writer, a round trip writer -> libtracecmd reader
 * -> text sink, and the reader refusing files that are not trace.dat. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/sink/tracedat_read.h"
#include "host/sink/sink_tracedat.h"
#include "host/sink/tracedat_format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint32_t word(const struct td_page *p, size_t at)
{
	uint32_t v;

	memcpy(&v, p->buf + TD_PAGE_HEADER + at, 4);
	return v;
}

static uint64_t quad(const uint8_t *at)
{
	uint64_t v;

	memcpy(&v, at, 8);
	return v;
}

static void test_page_small_event(void **state)
{
	static struct td_page p;
	uint8_t data[24];

	(void)state;
	memset(data, 0xab, sizeof(data));
	td_page_start(&p, 1000, 0);
	assert_true(td_page_add(&p, 1000, data, 24));
	assert_true(td_page_add(&p, 1005, data, 22)); /* padded to 24 */
	assert_int_equal(word(&p, 0), 6);	      /* type_len 6, delta 0 */
	assert_int_equal(word(&p, 28), 6 | 5 << 5);   /* delta 5 */
	assert_memory_equal(p.buf + TD_PAGE_HEADER + 32, data, 22);
	assert_int_equal(p.buf[TD_PAGE_HEADER + 32 + 22], 0);
	assert_int_equal(p.len, 56);
	td_page_finish(&p);
	assert_int_equal(quad(p.buf), 1000);
	assert_int_equal(quad(p.buf + 8), 56); /* commit, no flags */
}

static void test_page_time_extend_and_big_event(void **state)
{
	static struct td_page p;
	uint8_t data[200] = {1, 2, 3};
	uint64_t delta = (1ull << 27) * 3 + 7;

	(void)state;
	td_page_start(&p, 50, 0);
	assert_true(td_page_add(&p, 50 + delta, data, sizeof(data)));
	assert_int_equal(word(&p, 0), TD_TYPE_TIME_EXTEND | 7 << 5);
	assert_int_equal(word(&p, 4), 3);
	assert_int_equal(word(&p, 8), 0);    /* type_len 0: the length word follows */
	assert_int_equal(word(&p, 12), 204); /* data and the length word itself */
	assert_memory_equal(p.buf + TD_PAGE_HEADER + 16, data, sizeof(data));
	assert_int_equal(p.len, 16 + 200);
	assert_int_equal(p.last_ts, 50 + delta);
}

static void test_page_full_and_missed(void **state)
{
	static struct td_page p;
	uint8_t data[24] = {0};
	unsigned n = 0;

	(void)state;
	td_page_start(&p, 0, 9);
	while (td_page_add(&p, n, data, sizeof(data)))
		n++;
	/* 28 bytes each; 8 bytes kept for the missed-events count */
	assert_int_equal(n, (TD_PAGE_DATA - 8) / 28);
	td_page_finish(&p);
	assert_int_equal(quad(p.buf + 8), p.len | TD_MISSED_EVENTS | TD_MISSED_STORED);
	assert_int_equal(quad(p.buf + TD_PAGE_HEADER + p.len), 9);
}

/* ---- round trip ---------------------------------------------------------------------------------
 */

static char path[64];

static void rec(struct sink *s, uint64_t ts, unsigned cpu, uint8_t type, uint64_t ip,
		uint64_t parent, int pid, const char *comm, uint64_t value)
{
	struct hvt_record r = {.ts = ts,
			       .ip = ip,
			       .parent = parent,
			       .pid = pid,
			       .cpu = (uint16_t)cpu,
			       .type = type,
			       .value = value};

	strncpy(r.comm, comm, sizeof(r.comm));
	sink_record(s, &(struct sink_rec){.r = &r}, NULL);
}

/* Writes a function-tracer trace.dat of two vCPUs to @path: 3 calls, 7 events lost on cpu1, the
 * last call at @last_ts. */
static void write_sample_at(struct vmi_symtab *syms, uint64_t last_ts)
{
	struct sink s;
	FILE *out;
	int fd;

	snprintf(path, sizeof(path), "/tmp/tdat-unit-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	out = fdopen(fd, "wb");
	assert_non_null(out);
	memset(syms, 0, sizeof(*syms));
	assert_int_equal(vmi_symtab_add(syms, 0xffffffff81000000ull, 0x40, "do_work"), 0);
	assert_int_equal(vmi_symtab_add(syms, 0xffffffff81000100ull, 0x80, "caller"), 0);
	vmi_symtab_sort(syms);
	assert_int_equal(sink_tracedat_init(&s, out, path, syms, 2, false, NULL, 0, NULL, 0), 0);
	s.ops->begin(&s);
	rec(&s, 1000, 0, HVT_REC_ENTRY, 0xffffffff81000000ull, 0xffffffff81000110ull, 42, "bash",
	    0);
	rec(&s, 2000, 1, HVT_REC_ENTRY, 0xffffffff81000000ull, 0xffffffff81000120ull, 0, "idle1",
	    0);
	rec(&s, 2500, 1, HVT_REC_LOST, 0, 0, 0, "", 7);
	rec(&s, last_ts, 1, HVT_REC_ENTRY, 0xffffffff81000100ull, 0xffffffff81000010ull, 43,
	    "worker", 0);
	s.lost = 7;
	s.ops->end(&s);
	assert_int_equal(s.err, 0);
	assert_int_equal(s.written, 3);
	assert_int_equal(fclose(out), 0);
}

static void write_sample(struct vmi_symtab *syms)
{
	write_sample_at(syms, 3000000000ull);
}

static void test_round_trip(void **state)
{
	struct vmi_symtab wsyms, syms = {0};
	struct tdr_summary sum;
	char err[512], *text = NULL;
	size_t len = 0;
	struct sink k;
	FILE *mem;
	struct tdr *r;

	(void)state;
	write_sample(&wsyms);
	r = tdr_open(path, err, sizeof(err));
	if (!r)
		fail_msg("%s", err);
	assert_int_equal(tdr_scan(r, &syms, &sum, err, sizeof(err)), 0);
	tdr_close(r);
	assert_int_equal(sum.nr_cpus, 2);
	assert_true(sum.function);
	assert_false(sum.graph);
	assert_int_equal(sum.records, 3);
	assert_int_equal(syms.nr, 2);

	r = tdr_open(path, err, sizeof(err));
	assert_non_null(r);
	mem = open_memstream(&text, &len);
	sink_function_init(&k, mem, &syms, 2);
	assert_int_equal(tdr_replay(r, &k, false, err, sizeof(err)), 0);
	tdr_close(r);
	fclose(mem);
	/* the drop mark on CPU 1's page is where the kernel's reader puts it: before its next event */
	assert_string_equal(text, "# tracer: function\n"
				  "#\n"
				  "#           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n"
				  "#              | |         |         |         |\n"
				  "            bash-42      [000]      0.000001: do_work <-caller\n"
				  "           idle1-0       [001]      0.000002: do_work <-caller\n"
				  "CPU:1 [LOST 7 EVENTS]\n"
				  "          worker-43      [001]      3.000000: caller <-do_work\n"
				  "# entries-in-buffer/entries-written: 3/10   #P:2\n"
				  "# entries-written: 3   lost: 7\n");
	free(text);
	vmi_symtab_free(&syms);
	vmi_symtab_free(&wsyms);
	unlink(path);
}

/* trace-cmd itself reads the file: names, task names, the drop mark. */
static void test_trace_cmd_reads_it(void **state)
{
	struct vmi_symtab wsyms;
	char cmd[160], out[8192];
	size_t n;
	FILE *p;

	(void)state;
	write_sample(&wsyms);
	snprintf(cmd, sizeof(cmd), "trace-cmd report -i %s 2>&1", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	assert_int_equal(pclose(p), 0);
	assert_non_null(strstr(out, "cpus=2\n"));
	assert_non_null(
	    strstr(out, "bash-42    [000]     0.000001: function:             do_work"));
	/* (trace-cmd's function plugin indents by the nesting it infers) */
	assert_non_null(
	    strstr(out, "worker-43    [001]     3.000000: function:                caller\n"));
	assert_non_null(strstr(out, "\nCPU:1 [7 EVENTS DROPPED]\n          worker-43"));
	vmi_symtab_free(&wsyms);
	unlink(path);
}

/* Not trace.dat: one line naming the file; nothing read. */
static void test_reader_rejects_corrupt(void **state)
{
	static const char *const bad[] = {"", "\x17\x08\x44tracing6", "garbage that is no trace"};
	struct vmi_symtab wsyms;
	char err[512];
	FILE *f;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(path, sizeof(path), "/tmp/tdat-unit-bad-%d", getpid());
		f = fopen(path, "wb");
		assert_non_null(f);
		fputs(bad[i], f);
		fclose(f);
		err[0] = 0;
		assert_null(tdr_open(path, err, sizeof(err)));
		assert_non_null(strstr(err, path));
		assert_null(strchr(err, '\n'));
		unlink(path);
	}
	/* a good file cut in its headers */
	write_sample(&wsyms);
	assert_int_equal(truncate(path, 300), 0);
	assert_null(tdr_open(path, err, sizeof(err)));
	assert_non_null(strstr(err, "not a trace.dat"));
	unlink(path);
	assert_null(tdr_open(path, err, sizeof(err)));
	assert_non_null(strstr(err, "No such file"));
	vmi_symtab_free(&wsyms);
}

/* A timestamp no session reaches (it would stall the replay's horizon): refused, one line. */
static void test_reader_rejects_far_timestamp(void **state)
{
	struct vmi_symtab wsyms, syms = {0};
	struct tdr_summary sum;
	char err[512];
	struct tdr *r;

	(void)state;
	write_sample_at(&wsyms, 1ull << 63);
	r = tdr_open(path, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(tdr_scan(r, &syms, &sum, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ": a record's timestamp is beyond 2^62 ns"));
	assert_non_null(strstr(err, path));
	tdr_close(r);
	vmi_symtab_free(&syms);
	vmi_symtab_free(&wsyms);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_page_small_event),
	    cmocka_unit_test(test_page_time_extend_and_big_event),
	    cmocka_unit_test(test_page_full_and_missed),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_trace_cmd_reads_it),
	    cmocka_unit_test(test_reader_rejects_corrupt),
	    cmocka_unit_test(test_reader_rejects_far_timestamp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

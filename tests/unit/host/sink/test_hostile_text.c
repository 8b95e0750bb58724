/* Text output of values a hostile guest chose: task names, string and char[] arguments are escaped
 * (no guest byte starts a line or a control sequence), and the function_graph sink stays inside its
 * line buffer whatever depth or CPU a record claims. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/sink/sink.h"
#include "host/trace/escape.h"
#include "tests/common/fake_mem.h"
#include "tests/common/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the hostile test guest names a task: a newline, a forged line, a clear-screen sequence. */
#define FORGED_NAME "x\n[000] forged\x1b[2J"

static struct vmi_symtab syms;
static char *text; /* what a sink wrote to the stream capture() opened */
static size_t text_size;

static int setup(void **state)
{
	static const struct vmi_sym funcs[] = {{0x1000, 0x40, "fib"}, {0x1100, 0x80, "task_step"}};

	(void)state;
	memset(&syms, 0, sizeof(syms));
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
		if (vmi_symtab_add(&syms, funcs[i].addr, funcs[i].size, funcs[i].name) < 0)
			return -1;
	vmi_symtab_sort(&syms);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	vmi_symtab_free(&syms);
	free(text);
	text = NULL;
	return 0;
}

/* A record whose comm holds all 16 bytes of @comm (no NUL if it is that long). */
static struct hvt_record rec(uint8_t type, const char *comm, unsigned cpu, uint8_t depth)
{
	return hv_record(type, 1234567890ull, cpu, 0x1000, 0x1117, depth, 66, comm);
}

/* A stream for a sink to write to. */
static FILE *capture(void)
{
	FILE *out;

	free(text);
	text = NULL;
	out = open_memstream(&text, &text_size);
	assert_non_null(out);
	return out;
}

/* Everything the sink wrote to @out, checked to hold no raw control byte but the line ends. */
static const char *captured(FILE *out)
{
	assert_int_equal(fclose(out), 0);
	for (const char *p = text; *p; p++)
		assert_true(*p == '\n' || (*p >= 0x20 && *p < 0x7f));
	return text;
}

static void test_escape_bytes(void **state)
{
	char b[64] = "untouched";

	(void)state;
	assert_int_equal(escape_str(b, sizeof(b), "fib", SIZE_MAX), 3);
	assert_string_equal(b, "fib");
	escape_str(b, sizeof(b), FORGED_NAME, SIZE_MAX);
	assert_string_equal(b, "x\\n[000] forged\\x1b[2J");
	escape_str(b, sizeof(b), "a\\b\tc\rd\x7f\x80\xff", SIZE_MAX);
	assert_string_equal(b, "a\\\\b\\tc\\rd\\x7f\\x80\\xff");
	/* at most @max bytes: a name without its NUL */
	escape_str(b, sizeof(b), "abcdef", 3);
	assert_string_equal(b, "abc");
	/* a plain name cut by the buffer; an escape after plain bytes */
	assert_int_equal(escape_str(b, 3, "abcdef", SIZE_MAX), 2);
	assert_string_equal(b, "ab");
	assert_int_equal(escape_str(b, sizeof(b), "abc\\", 4), 5);
	assert_string_equal(b, "abc\\\\");
	/* an escape that does not fit is left out whole */
	assert_int_equal(escape_str(b, 6, "ab\x1b", SIZE_MAX), 2);
	assert_string_equal(b, "ab");
	assert_int_equal(escape_str(b, 7, "ab\x1b", SIZE_MAX), 6);
	assert_string_equal(b, "ab\\x1b");
	assert_int_equal(escape_str(b, 1, "ab", SIZE_MAX), 0);
	assert_string_equal(b, "");
	memcpy(b, "kept", 5);
	assert_int_equal(escape_str(b, 0, "ab", SIZE_MAX), 0);
	assert_string_equal(b, "kept");
}

/* A task name with a newline and escape sequences, all 16 bytes of it (no NUL), is one escaped
 * field of one line: no forged line, no control byte. */
static void test_comm_escaped(void **state)
{
	struct hvt_record r = rec(HVT_REC_ENTRY, FORGED_NAME, 1, 0);
	struct sink s;
	FILE *out = capture();

	(void)state;
	sink_function_init(&s, out, &syms, 2);
	sink_record(&s, &(struct sink_rec){.r = &r}, NULL);
	r.type = HVT_REC_RETURN;
	r.value = 1;
	sink_record(&s, &(struct sink_rec){.r = &r}, NULL);
	s.lost = 2;
	s.guest_lost = 5;
	s.ops->end(&s);
	assert_string_equal(captured(out),
			    "x\\n[000] forged\\x1b[-66      [001]      1.234568: fib <-task_step\n"
			    "x\\n[000] forged\\x1b[-66      [001]      1.234568: r_fib: "
			    "(task_step+0x17/0x80 <- fib) ret=0x1 duration=0.000us\n"
			    "# entries-in-buffer/entries-written: 2/4   #P:2\n"
			    "# entries-written: 2   lost: 2   guest-reported-lost: 5\n");
}

/* string and char[] arguments: guest bytes, escaped the same way. */
static void test_string_args_escaped(void **state)
{
	static uint8_t mem[0x1000];
	struct fake_mem fake;
	struct arch_regs regs = {.r[X86_RDI] = 0x10000, .r[X86_RSI] = 0x10100};
	struct hvt_record r = rec(HVT_REC_EVENT, "worker1", 0, 0);
	struct fe_spec spec;
	uint8_t payload[1024];
	char err[128], line[1024];
	size_t pos;

	(void)state;
	fake_mem_init(&fake);
	fake_mem_map(&fake, 0x10000, mem, sizeof(mem));
	strcpy((char *)mem, "a\nb\x1b[2J");
	memcpy(mem + 0x100, "\r\x07z\\\0yyy", 8);
	assert_int_equal(fe_parse("f(string label, char[8] raw)", &spec, err, sizeof(err), &pos),
			 0);
	fe_capture(arch_default(), &spec, &regs, fake_mem_read, &fake, payload);
	sink_event_format(line, sizeof(line), &r, &spec, payload, &syms);
	assert_string_equal(line, "         worker1-66      [000]      1.234568: "
				  "task_step->f(label=a\\nb\\x1b[2J, raw=\\r\\x07z\\\\)\n");
}

/* A record claiming depth 255 (a forged stub record, or any record at all) with return values on:
 * the indent stops at SINK_GRAPH_MAX_DEPTH levels and the line stays whole. */
static void test_graph_forged_depth(void **state)
{
	struct hvt_record ret = rec(HVT_REC_RETURN, "cpu0", 0, 255), ent = ret;
	char indent[2 * SINK_GRAPH_MAX_DEPTH + 1], want[1024];
	struct sink s;
	FILE *out = capture();

	(void)state;
	ret.duration = 1234;
	ret.value = 0x2a;
	ent.type = HVT_REC_ENTRY;
	memset(indent, ' ', sizeof(indent) - 1);
	indent[sizeof(indent) - 1] = 0;
	assert_int_equal(sink_graph_init(&s, out, &syms, 2, true, false), 0);
	assert_int_equal(sink_record(&s, &(struct sink_rec){.r = &ret}, NULL), 1);
	/* a leaf */
	assert_int_equal(
	    sink_record(&s, &(struct sink_rec){.r = &ent}, &(struct sink_rec){.r = &ret}), 2);
	assert_int_equal(sink_record(&s, &(struct sink_rec){.r = &ent}, NULL), 1);
	s.ops->end(&s);
	snprintf(want, sizeof(want),
		 " 0)   1.234 us    |  %s} /* fib ret=0x2a */\n"
		 " 0)   1.234 us    |  %sfib(); /* ret=0x2a */\n"
		 " 0)               |  %sfib() {\n"
		 "# entries-written: 4   lost: 0\n",
		 indent, indent, indent);
	assert_string_equal(captured(out), want);
}

/* Whatever the buffer, sink_graph_format writes inside it and ends the line. */
static void test_graph_line_bounded(void **state)
{
	struct hvt_record ret = rec(HVT_REC_RETURN, "cpu0", 0, 255);
	char b[64 + 32];
	struct sink s;
	FILE *null = fopen("/dev/null", "w");

	(void)state;
	ret.duration = UINT64_MAX;
	ret.value = UINT64_MAX;
	assert_int_equal(sink_graph_init(&s, null, &syms, 2, true, false), 0);
	for (size_t len = 0; len <= 64; len++) {
		memset(b, 0x55, sizeof(b));
		int n = sink_graph_format(b, len, &s, &ret, NULL);

		for (size_t k = len; k < sizeof(b); k++)
			assert_int_equal((uint8_t)b[k], 0x55);
		if (len)
			assert_int_equal(n, (int)strlen(b));
		if (len >= 2)
			assert_int_equal(b[n - 1], '\n');
	}
	for (size_t len = 0; len <= 32; len++) {
		memset(b, 0x55, sizeof(b));
		sink_graph_duration(b, len, UINT64_MAX);
		for (size_t k = len; k < sizeof(b); k++)
			assert_int_equal((uint8_t)b[k], 0x55);
	}
	s.ops->end(&s);
	fclose(null);
}

/* A task switch to a forged name is one escaped marker block (its comm cut to 7 bytes, as
 * print_graph_proc does, before escaping); a record of a CPU the sink does not
 * have gets no marker (and touches no state). */
static void test_graph_marker_escaped(void **state)
{
	struct hvt_record a = rec(HVT_REC_ENTRY, "cpu0", 0, 0),
			  b = rec(HVT_REC_ENTRY, FORGED_NAME, 0, 1);
	struct hvt_record c = rec(HVT_REC_ENTRY, FORGED_NAME, 9, 0);
	struct sink s;
	FILE *out = capture();

	(void)state;
	a.pid = 0;
	assert_int_equal(sink_graph_init(&s, out, &syms, 2, false, false), 0);
	sink_record(&s, &(struct sink_rec){.r = &a}, NULL);
	sink_record(&s, &(struct sink_rec){.r = &b}, NULL);
	sink_record(&s, &(struct sink_rec){.r = &c}, NULL);
	s.ops->end(&s);
	assert_string_equal(captured(out),
			    " 0)               |  fib() {\n"
			    " ------------------------------------------\n"
			    " 0)     cpu0-0     =>  x\\n[000]-66  \n"
			    " ------------------------------------------\n"
			    "\n"
			    " 0)               |    fib() {\n"
			    " 9)               |  fib() {\n"
			    "# entries-written: 3   lost: 0\n");
	assert_int_equal(s.task_switches, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_escape_bytes),	cmocka_unit_test(test_comm_escaped),
	    cmocka_unit_test(test_string_args_escaped), cmocka_unit_test(test_graph_forged_depth),
	    cmocka_unit_test(test_graph_line_bounded),	cmocka_unit_test(test_graph_marker_escaped),
	};

	return cmocka_run_group_tests_name("hostile_text", tests, setup, teardown);
}

/* host/sink_function.c: the ftrace "function" tracer text, line by line and as a whole sink. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/record.h"
#include "host/sink/sink.h"
#include "tests/common/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* fib [0x401000, 0x401040), task_step [0x401100, 0x401180), a very long name at 0x402000. */
static struct vmi_symtab syms;

static int syms_setup(void **state)
{
	(void)state;
	memset(&syms, 0, sizeof(syms));
	if (vmi_symtab_add(&syms, 0x401000, 0x40, "fib") < 0 ||
	    vmi_symtab_add(&syms, 0x401100, 0x80, "task_step") < 0 ||
	    vmi_symtab_add(&syms, 0x402000, 0x10, "a_rather_long_function_name") < 0)
		return -1;
	vmi_symtab_sort(&syms);
	return 0;
}

static int syms_teardown(void **state)
{
	(void)state;
	vmi_symtab_free(&syms);
	return 0;
}

static struct hvt_record entry(const char *comm, int32_t pid, unsigned cpu, uint64_t ts,
			       uint64_t ip, uint64_t parent)
{
	return hv_record(HVT_REC_ENTRY, ts, cpu, ip, parent, 0, pid, comm);
}

/* ---- sink_symbol_name ----------------------------------------------------------------------- */

static void test_symbol_name(void **state)
{
	char buf[64];

	(void)state;
	sink_symbol_name(buf, sizeof(buf), 0x401000, &syms);
	assert_string_equal(buf, "fib");
	sink_symbol_name(buf, sizeof(buf), 0x40103f, &syms);
	assert_string_equal(buf, "fib");
	sink_symbol_name(buf, sizeof(buf), 0x401117, &syms);
	assert_string_equal(buf, "task_step");
	sink_symbol_name(buf, sizeof(buf), 0x401040, &syms);
	assert_string_equal(buf, "0x401040");
	sink_symbol_name(buf, sizeof(buf), 0xffffffff8100abcdull, &syms);
	assert_string_equal(buf, "0xffffffff8100abcd");
	sink_symbol_name(buf, sizeof(buf), 0, &syms);
	assert_string_equal(buf, "0x0");
	/* truncated to the buffer, always terminated */
	sink_symbol_name(buf, 5, 0x401100, &syms);
	assert_string_equal(buf, "task");
}

/* ---- sink_function_format ------------------------------------------------------------------- */

/* The reference line (trace_print_context with irq-info off, then trace_fn_trace): comm
 * right-aligned in 16, '-', pid left-aligned in 7, ' ', [cpu] in 3 digits, ' ', then " %5lu.%06lu"
 * (seconds, microseconds rounded), ": ", then "func <-parent". */
static void test_format_line(void **state)
{
	struct hvt_record r = entry("worker1", 101, 1, 1234567890ull, 0x401000, 0x401117);
	char buf[256];
	int n;

	(void)state;
	n = sink_function_format(buf, sizeof(buf), &r, &syms);
	assert_string_equal(buf, "         worker1-101     [001]      1.234568: fib <-task_step\n");
	assert_int_equal(n, strlen(buf));
}

/* A parent in no symbol is printed as hex; so is an ip in no symbol. */
static void test_format_unknown_parent(void **state)
{
	struct hvt_record r =
	    entry("worker1", 101, 1, 1234567890ull, 0x401000, 0xffffffff81000abcull);
	char buf[256];

	(void)state;
	sink_function_format(buf, sizeof(buf), &r, &syms);
	assert_string_equal(
	    buf, "         worker1-101     [001]      1.234568: fib <-0xffffffff81000abc\n");

	r.ip = 0x500000;
	r.parent = 0x401000;
	sink_function_format(buf, sizeof(buf), &r, &syms);
	assert_string_equal(buf, "         worker1-101     [001]      1.234568: 0x500000 <-fib\n");
}

/* Field edges: zero time, sub-microsecond rounding (ns2usecs adds 500 ns), a 15-character comm, a
 * wide pid, cpu >= 100,
 * more than 99999 seconds. */
static void test_format_fields(void **state)
{
	struct hvt_record r;
	char buf[256];

	(void)state;
	r = entry("cpu0", 0, 0, 0, 0x401100, 0x401000);
	sink_function_format(buf, sizeof(buf), &r, &syms);
	assert_string_equal(buf, "            cpu0-0       [000]      0.000000: task_step <-fib\n");

	r = entry("kworker/u8:3abc", 1234567, 12, 999999999ull, 0x401000, 0x401000);
	sink_function_format(buf, sizeof(buf), &r, &syms);
	assert_string_equal(buf, " kworker/u8:3abc-1234567 [012]      1.000000: fib <-fib\n");

	r = entry("x", 12345678, 255, 123456789012345678ull, 0x402004, 0x401101);
	sink_function_format(buf, sizeof(buf), &r, &syms);
	assert_string_equal(buf, "               x-12345678 [255]  123456789.012346: "
				 "a_rather_long_function_name <-task_step\n");
}

/* ---- the sink: header, entry and return-probe lines, trailer --------------------------------- */

static void test_sink_stream(void **state)
{
	struct hvt_record r1 = entry("worker1", 101, 1, 1234567890ull, 0x401000, 0x401117);
	struct hvt_record r2 = entry("<unknown>", 0, 0, 2000001000ull, 0x401100, 0x9999);
	struct hvt_record ret = r1;
	struct sink s;
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	(void)state;
	assert_non_null(out);
	ret.type = HVT_REC_RETURN;
	ret.value = 0x2a;
	ret.duration = 12345;
	sink_function_init(&s, out, &syms, 2);
	assert_false(s.ops->lookahead);
	s.ops->begin(&s);
	/* ignores @next: consumes one */
	assert_int_equal(sink_record(&s, &(struct sink_rec){.r = &r1}, &(struct sink_rec){.r = &r2}),
			 1);
	/* a return probe's line */
	assert_int_equal(sink_record(&s, &(struct sink_rec){.r = &ret}, NULL), 1);
	assert_int_equal(sink_record(&s, &(struct sink_rec){.r = &r2}, NULL), 1);
	s.lost = 7;
	s.ops->end(&s);
	assert_int_equal(s.written, 3);
	assert_int_equal(fclose(out), 0);
	assert_string_equal(text,
			    "# tracer: function\n"
			    "#\n"
			    "#           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n"
			    "#              | |         |         |         |\n"
			    "         worker1-101     [001]      1.234568: fib <-task_step\n"
			    "         worker1-101     [001]      1.234568: r_fib: "
			    "(task_step+0x17/0x80 <- fib) "
			    "ret=0x2a duration=12.345us\n"
			    "       <unknown>-0       [000]      2.000001: task_step <-0x9999\n"
			    "# entries-in-buffer/entries-written: 3/10   #P:2\n"
			    "# entries-written: 3   lost: 7\n");
	free(text);
}

/* A return typed from BTF: void has no value (one blank before duration), a long is signed. */
static void test_return_typed(void **state)
{
	struct hvt_record r = entry("worker1", 101, 1, 1234567890, 0x401000, 0x401117);
	struct fe_spec spec;
	uint8_t payload[16] = {0};
	char line[256], err[64];
	size_t pos;

	(void)state;
	r.type = HVT_REC_RETURN_EVENT;
	r.duration = 12345;
	assert_int_equal(fe_parse("fib()", &spec, err, sizeof(err), &pos), 0);
	spec.fprobe_style = true;
	sink_return_format(line, sizeof(line), &r, &spec, payload, &syms);
	assert_string_equal(line, "         worker1-101     [001]      1.234568: r_fib: "
				  "(task_step+0x17/0x80 <- fib) duration=12.345us\n");
	assert_int_equal(fe_parse("fib(long ret)", &spec, err, sizeof(err), &pos), 0);
	spec.fprobe_style = true;
	memcpy(payload + 1, &(int64_t){-2}, 8);
	sink_return_format(line, sizeof(line), &r, &spec, payload, &syms);
	assert_string_equal(line, "         worker1-101     [001]      1.234568: r_fib: "
				  "(task_step+0x17/0x80 <- fib) ret=-2 duration=12.345us\n");
}

/* The line is built without printf (the hot path of the text output): it must be what the format
 * "%16s-%-7d [%03u]  %5llu.%06llu: %s <-%s\n" gives, for every mix of field widths (comm of 0 to
 * 16 bytes, with one to escape; negative, wide pids; CPUs past 999; past 99999 s), and cut as
 * snprintf cuts it in any buffer (the return value is the whole line's length either way). */
static void test_format_matches_printf(void **state)
{
	static const char *const comms[] = {"", "a", "worker1", "fifteen_chars_x", "sixteen_chars_xy",
					    "tab\there"};
	static const int pids[] = {0, 7, 101, 1234567, 12345678, -1, -2147483647 - 1};
	static const unsigned cpus[] = {0, 7, 99, 100, 999, 1000, 65535};
	static const uint64_t tss[] = {0, 499, 500, 999999499, 1234567890ull, 99999999999500ull,
				       123456789012345678ull};
	char want[512], got[512], cut[512];

	(void)state;
	for (size_t c = 0; c < sizeof(comms) / sizeof(comms[0]); c++)
		for (size_t p = 0; p < sizeof(pids) / sizeof(pids[0]); p++)
			for (size_t k = 0; k < sizeof(cpus) / sizeof(cpus[0]); k++)
				for (size_t t = 0; t < sizeof(tss) / sizeof(tss[0]); t++) {
					struct hvt_record r = entry(comms[c], pids[p], cpus[k], tss[t],
								    0x401000, 0x402004);
					uint64_t us = tss[t] / 1000 + (tss[t] % 1000 >= 500);
					const char *comm = strcmp(comms[c], "tab\there")
							       ? comms[c]
							       : "tab\\there";
					int n = snprintf(want, sizeof(want),
							 "%16s-%-7d [%03u]  %5llu.%06llu: fib "
							 "<-a_rather_long_function_name\n",
							 comm, pids[p], cpus[k],
							 (unsigned long long)(us / 1000000),
							 (unsigned long long)(us % 1000000));

					assert_int_equal(sink_function_format(got, sizeof(got), &r,
									      &syms),
							 n);
					assert_string_equal(got, want);
					for (size_t len = 0; len < (size_t)n + 2; len += 13) {
						memcpy(cut, "untouched", 10);
						assert_int_equal(
						    sink_function_format(cut, len, &r, &syms), n);
						if (len)
							assert_int_equal(
							    strncmp(cut, want, len - 1), 0);
						assert_int_equal(strlen(cut),
								 len ? (len - 1 < (size_t)n
									    ? len - 1
									    : (size_t)n)
								     : 9);
					}
				}
}

/* sink_symbol answers as vmi_symtab_lookup, first time and from its cache, for addresses that
 * share a slot, lie in no symbol, or come back after their slot was taken. */
static void test_symbol_cache(void **state)
{
	static struct sink k; /* its cache is large: not on the stack */
	uint64_t addrs[4096];

	(void)state;
	sink_function_init(&k, NULL, &syms, 1);
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++)
		addrs[i] = 0x400f00 + i * 3; /* before, in and after fib, task_step, the long name */
	for (int pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
			size_t j = pass == 1 ? sizeof(addrs) / sizeof(addrs[0]) - 1 - i : i;

			assert_ptr_equal(sink_symbol(&k, addrs[j]), vmi_symtab_lookup(&syms, addrs[j]));
		}
	assert_ptr_equal(sink_symbol(&k, 0x401000), &syms.syms[0]);
	assert_null(sink_symbol(&k, 0));
	assert_null(sink_symbol(&k, UINT64_MAX));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_symbol_name),	  cmocka_unit_test(test_format_line),
	    cmocka_unit_test(test_return_typed),  cmocka_unit_test(test_format_unknown_parent),
	    cmocka_unit_test(test_format_fields), cmocka_unit_test(test_sink_stream),
	    cmocka_unit_test(test_format_matches_printf), cmocka_unit_test(test_symbol_cache),
	};

	return cmocka_run_group_tests(tests, syms_setup, syms_teardown);
}

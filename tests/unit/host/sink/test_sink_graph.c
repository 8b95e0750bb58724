/* function_graph text: duration column, overhead marks, entry / leaf / return lines. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/sink/sink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_marks(void **state)
{
	(void)state;
	assert_int_equal(sink_graph_mark(10000), ' ');
	assert_int_equal(sink_graph_mark(10001), '+');
	assert_int_equal(sink_graph_mark(100001), '!');
	assert_int_equal(sink_graph_mark(1000001), '#');
	assert_int_equal(sink_graph_mark(10000001), '*');
	assert_int_equal(sink_graph_mark(100000001), '@');
	assert_int_equal(sink_graph_mark(1000000001), '$');
}

/* The column is 14 wide: mark, space, the value in at most 8 characters (7 digits and the point),
 * " us ", padding. */
static void test_duration_column(void **state)
{
	char b[64];

	(void)state;
	sink_graph_duration(b, sizeof(b), 1234);
	assert_string_equal(b, "  1.234 us    ");
	sink_graph_duration(b, sizeof(b), 25970);
	assert_string_equal(b, "+ 25.970 us   ");
	sink_graph_duration(b, sizeof(b), 173878);
	assert_string_equal(b, "! 173.878 us  ");
	sink_graph_duration(b, sizeof(b), 2781791);
	assert_string_equal(b, "# 2781.791 us ");
	sink_graph_duration(b, sizeof(b), 12345678);
	assert_string_equal(b, "* 12345.67 us ");
	sink_graph_duration(b, sizeof(b), 123456789);
	assert_string_equal(b, "@ 123456.7 us ");
	sink_graph_duration(b, sizeof(b), 1234567890);
	assert_string_equal(b, "$ 1234567 us  ");
	sink_graph_duration(b, sizeof(b), 0);
	assert_string_equal(b, "  0.000 us    ");
}

static struct vmi_symtab syms;

static int setup(void **state)
{
	(void)state;
	vmi_symtab_add(&syms, 0x1000, 0x40, "fib");
	vmi_symtab_add(&syms, 0x1040, 0x40, "tree_b");
	vmi_symtab_sort(&syms);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	vmi_symtab_free(&syms);
	return 0;
}

static void test_lines(void **state)
{
	struct sink s;
	char b[256];
	struct hvt_record e = {.type = HVT_REC_ENTRY, .ip = 0x1000, .cpu = 1, .depth = 2};
	struct hvt_record r = {.type = HVT_REC_RETURN, .ip = 0x1040, .cpu = 0, .depth = 1,
			       .duration = 25970, .value = 0xe1};

	FILE *null = fopen("/dev/null", "w");

	(void)state;
	assert_int_equal(sink_graph_init(&s, null, &syms, 2, false, false), 0);
	sink_graph_format(b, sizeof(b), &s, &e, NULL);
	assert_string_equal(b, " 1)               |      fib() {\n");
	r.ip = 0x1000;
	r.cpu = 1;
	r.depth = 2;
	r.value = 1;
	r.duration = 1234;
	sink_graph_format(b, sizeof(b), &s, &e, &r);
	assert_string_equal(b, " 1)   1.234 us    |      fib();\n");
	s.graph_retval = true;
	sink_graph_format(b, sizeof(b), &s, &e, &r);
	assert_string_equal(b, " 1)   1.234 us    |      fib(); /* ret=0x1 */\n");

	r = (struct hvt_record){.type = HVT_REC_RETURN, .ip = 0x1040, .cpu = 0, .depth = 1,
				.duration = 173878, .value = 0xe1};
	sink_graph_format(b, sizeof(b), &s, &r, NULL);
	assert_string_equal(b, " 0) ! 173.878 us  |    } /* tree_b ret=0xe1 */\n");
	s.graph_retval = false;
	sink_graph_format(b, sizeof(b), &s, &r, NULL);
	assert_string_equal(b, " 0) ! 173.878 us  |    }\n");
	s.graph_tail = true;
	sink_graph_format(b, sizeof(b), &s, &r, NULL);
	assert_string_equal(b, " 0) ! 173.878 us  |    } /* tree_b */\n");
	s.ops->end(&s); /* frees the sink's state */
	fclose(null);
}

/* With more than 10 vCPUs the CPU column widens, as ftrace's does. */
static void test_cpu_column_width(void **state)
{
	struct sink s;
	char b[256];
	struct hvt_record e = {.type = HVT_REC_ENTRY, .ip = 0x1040, .cpu = 3};
	FILE *null = fopen("/dev/null", "w");

	(void)state;
	assert_int_equal(sink_graph_init(&s, null, &syms, 12, false, false), 0);
	sink_graph_format(b, sizeof(b), &s, &e, NULL);
	assert_string_equal(b, "  3)               |  tree_b() {\n");
	s.ops->end(&s);
	fclose(null);
}

/* A record stream through the sink: leaf folding, task-switch markers, the trailer. */
static void test_stream(void **state)
{
	struct sink s;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	struct hvt_record a = {.type = HVT_REC_ENTRY, .ip = 0x1040, .pid = 0, .comm = "cpu0"};
	struct hvt_record b = {.type = HVT_REC_ENTRY, .ip = 0x1000, .depth = 1, .pid = 0,
			       .comm = "cpu0"};
	struct hvt_record c = {.type = HVT_REC_RETURN, .ip = 0x1000, .depth = 1, .duration = 1000,
			       .pid = 0, .comm = "cpu0"};
	struct hvt_record d = {.type = HVT_REC_RETURN, .ip = 0x1040, .duration = 5000, .pid = 101,
			       .comm = "worker1"};

	(void)state;
	assert_int_equal(sink_graph_init(&s, out, &syms, 1, false, false), 0);
	s.ops->begin(&s);
	assert_int_equal(sink_record(&s, &(struct sink_rec){.r = &a}, &(struct sink_rec){.r = &b}),
			 1);
	assert_int_equal(sink_record(&s, &(struct sink_rec){.r = &b}, &(struct sink_rec){.r = &c}),
			 2);
	assert_int_equal(sink_record(&s, &(struct sink_rec){.r = &d}, NULL), 1);
	s.ops->end(&s);
	fclose(out);
	assert_string_equal(buf, "# tracer: function_graph\n"
				 "#\n"
				 "# CPU  DURATION                  FUNCTION CALLS\n"
				 "# |     |   |                     |   |   |   |\n"
				 " 0)               |  tree_b() {\n"
				 " 0)   1.000 us    |    fib();\n"
				 /* verif_pid()'s block: print_graph_proc() centres "comm-pid" in
				  * 14 columns, the comm cut to 7 bytes */
				 " ------------------------------------------\n"
				 " 0)     cpu0-0     =>  worker1-101  \n"
				 " ------------------------------------------\n"
				 "\n"
				 " 0)   5.000 us    |  }\n"
				 "# entries-written: 4   lost: 0\n");
	free(buf);
}

static struct fe_spec ev_spec, ret_spec;

/* -e and -r in function_graph: the graph lines are those without them (a return probe's return closes
 * its call, a leaf stays a leaf, with RAX as return value), the events are comment lines: the -e
 * fields inside the call, the r_ line right after the return. */
static void test_stream_events(void **state)
{
	struct sink s;
	char *buf = NULL, err[64];
	size_t len = 0, pos;
	FILE *out = open_memstream(&buf, &len);
	uint8_t ev_payload[9] = {0}, fib_ret[9] = {0}, tree_ret[9] = {0};
	struct hvt_record a = {.type = HVT_REC_EVENT, .ip = 0x1040, .value = 9, .comm = "cpu0"};
	struct hvt_record b = {.type = HVT_REC_ENTRY, .ip = 0x1000, .depth = 1, .comm = "cpu0"};
	struct hvt_record c = {.type = HVT_REC_RETURN_EVENT, .ip = 0x1000, .parent = 0x1050,
			       .depth = 1, .duration = 1000, .value = 9, .comm = "cpu0"};
	struct hvt_record d = {.type = HVT_REC_RETURN_EVENT, .ip = 0x1040, .parent = 0x2000,
			       .duration = 5000, .value = 9, .comm = "cpu0"};
	/* each record with its payload and spec, as the writer hands them over */
	struct sink_rec ra = {.r = &a, .payload = ev_payload, .spec = &ev_spec}, rb = {.r = &b},
			rc = {.r = &c, .payload = fib_ret, .spec = &ret_spec},
			rd = {.r = &d, .payload = tree_ret, .spec = &ret_spec};

	(void)state;
	assert_int_equal(fe_parse("tree_b(int id)", &ev_spec, err, sizeof(err), &pos), 0);
	/* what a bare -r is without BTF: RAX in hex */
	assert_int_equal(fe_parse("fib(x64 ret)", &ret_spec, err, sizeof(err), &pos), 0);
	memcpy(ev_payload + 1, &(int64_t){42}, 8);
	memcpy(fib_ret + 1, &(uint64_t){0x9}, 8);
	memcpy(tree_ret + 1, &(uint64_t){0xe1}, 8);
	assert_int_equal(sink_graph_init(&s, out, &syms, 1, true, false), 0);
	s.ops->begin(&s);
	assert_int_equal(sink_record(&s, &ra, &rb), 1);
	assert_int_equal(sink_record(&s, &rb, &rc), 2);
	assert_int_equal(sink_record(&s, &rd, NULL), 1);
	s.ops->end(&s);
	fclose(out);
	assert_string_equal(buf, "# tracer: function_graph\n"
				 "#\n"
				 "# CPU  DURATION                  FUNCTION CALLS\n"
				 "# |     |   |                     |   |   |   |\n"
				 " 0)               |  tree_b() {\n"
				 /* print_graph_comment() indents by the CPU's depth + 1, not at
				  * all at depth 0 (inside tree_b; after fib's return) */
				 " 0)               |  /* tree_b: id=42 */\n"
				 " 0)   1.000 us    |    fib(); /* ret=0x9 */\n"
				 " 0)               |  /* r_fib: (tree_b+0x10/0x40 <- fib) ret=9 */\n"
				 " 0)   5.000 us    |  } /* tree_b ret=0xe1 */\n"
				 " 0)               |  /* r_tree_b: (0x2000 <- tree_b) ret=e1 */\n"
				 "# entries-written: 4   lost: 0\n");
	free(buf);
}

/* A return probe whose fields hold no copy of RAX (a dereference): the closing line has no value
 * rather than a wrong one. */
static void test_return_without_rax(void **state)
{
	struct sink s;
	char *buf = NULL, err[64];
	size_t len = 0, pos;
	uint8_t payload[9] = {0};
	struct hvt_record d = {.type = HVT_REC_RETURN_EVENT, .ip = 0x1040, .parent = 0x2000,
			       .duration = 5000, .value = 9, .comm = "cpu0"};
	FILE *out = open_memstream(&buf, &len);

	(void)state;
	assert_int_equal(fe_parse("tree_b(u64 ret[1])", &ret_spec, err, sizeof(err), &pos), 0);
	memcpy(payload + 1, &(uint64_t){7}, 8);
	assert_int_equal(sink_graph_init(&s, out, &syms, 1, true, false), 0);
	assert_int_equal(
	    sink_record(&s, &(struct sink_rec){.r = &d, .payload = payload, .spec = &ret_spec},
			  NULL),
	    1);
	s.ops->end(&s);
	fclose(out);
	assert_string_equal(buf, " 0)   5.000 us    |  }\n"
				 " 0)               |  /* r_tree_b: (0x2000 <- tree_b) ret=7 */\n"
				 "# entries-written: 1   lost: 0\n");
	free(buf);
}

/* An -e event at a call function_graph does not trace (outside -g's graph, past --max-depth,
 * issue 23): its comment alone, no call line, indented by the graph's depth there as ftrace's
 * print_graph_comment does (none outside the graph; inside an open depth-1 call, its depth 1). */
static void test_event_alone(void **state)
{
	struct sink s;
	char *buf = NULL, err[64];
	size_t len = 0, pos;
	FILE *out = open_memstream(&buf, &len);
	uint8_t payload[9] = {0};
	struct hvt_record a = {
	    .type = HVT_REC_EVENT_ALONE, .ip = 0x1040, .value = 9, .comm = "cpu0"};
	struct hvt_record b = {
	    .type = HVT_REC_EVENT_ALONE, .ip = 0x1040, .value = 9, .depth = 2, .comm = "cpu0"};
	struct sink_rec ra = {.r = &a, .payload = payload, .spec = &ev_spec},
			rb = {.r = &b, .payload = payload, .spec = &ev_spec};

	(void)state;
	assert_int_equal(fe_parse("tree_b(int id)", &ev_spec, err, sizeof(err), &pos), 0);
	memcpy(payload + 1, &(int64_t){42}, 8);
	assert_int_equal(sink_graph_init(&s, out, &syms, 1, true, false), 0);
	/* a return right after is not its own: no leaf */
	assert_int_equal(sink_record(&s, &ra, &rb), 1);
	assert_int_equal(sink_record(&s, &rb, NULL), 1);
	s.ops->end(&s);
	fclose(out);
	assert_string_equal(buf, " 0)               |  /* tree_b: id=42 */\n"
				 " 0)               |      /* tree_b: id=42 */\n"
				 "# entries-written: 2   lost: 0\n");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_marks),
	    cmocka_unit_test(test_duration_column),
	    cmocka_unit_test(test_lines),
	    cmocka_unit_test(test_cpu_column_width),
	    cmocka_unit_test(test_stream),
	    cmocka_unit_test(test_stream_events),
	    cmocka_unit_test(test_return_without_rax),
	    cmocka_unit_test(test_event_alone),
	};

	return cmocka_run_group_tests_name("graph_format", tests, setup, teardown);
}

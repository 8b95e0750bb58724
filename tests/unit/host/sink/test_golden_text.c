/* Golden files of the text sinks: one synthetic record stream (two vCPUs, a task switch, a function
 * in the guest's .irqentry.text, an errno return, events lost inside a vCPU's stream and after its
 * last record, leaf and nested calls) through the real rings and writer into each sink, compared
 * byte for byte with tests/golden/. Which kernel function each line shape comes from is in
 * tests/golden/README.md. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/sink/sink.h"
#include "host/sink/writer.h"
#include "host/trace/ring.h"
#include "tests/common/files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN "tests/golden/"

static struct vmi_symtab syms;

static int setup(void **state)
{
	(void)state;
	vmi_symtab_add(&syms, 0x1000, 0x40, "fib");
	vmi_symtab_add(&syms, 0x1040, 0x40, "tree_b");
	vmi_symtab_add(&syms, 0x1080, 0x40, "sys_open");
	vmi_symtab_add(&syms, 0x1100, 0x80, "task_step");
	vmi_symtab_add(&syms, 0x2000, 0x20, "do_irq");
	vmi_symtab_sort(&syms);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	vmi_symtab_free(&syms);
	return 0;
}

/* The guest's .irqentry.text: do_irq. */
#define IRQ_LO 0x2000
#define IRQ_HI 0x2100

struct step {
	unsigned cpu;
	uint64_t ts, ip, parent, value, duration;
	uint8_t type, depth;
	int32_t pid;
	const char *comm;
};

/* The stream, per vCPU in time order; type 0 = ring_lost(value) before the next record. */
static const struct step stream[] = {
	{0, 1000000500, 0x1040, 0x1110, 0, 0, HVT_REC_ENTRY, 0, 0, "cpu0"},
	{0, 1000001000, 0x1000, 0x1050, 0, 0, HVT_REC_ENTRY, 1, 0, "cpu0"},
	{0, 1000002234, 0x1000, 0x1050, 9, 1234, HVT_REC_RETURN, 1, 0, "cpu0"},
	{0, 1000003000, 0x2000, 0x1060, 0, 0, HVT_REC_ENTRY, 1, 0, "cpu0"},
	{0, 1000003500, 0x2000, 0x1060, 0, 500, HVT_REC_RETURN, 1, 0, "cpu0"},
	{0, 1000020000, 0x1040, 0x1110, 0x10, 19500, HVT_REC_RETURN, 0, 0, "cpu0"},
	{0, 0, 0, 0, 3, 0, 0, 0, 0, NULL},
	{0, 1000030000, 0x1080, 0x1110, 0, 0, HVT_REC_ENTRY, 0, 101, "worker1"},
	{0, 1000031000, 0x1000, 0x1090, 0, 0, HVT_REC_ENTRY, 1, 101, "worker1"},
	{0, 1000032000, 0x1000, 0x1090, 1, 1000, HVT_REC_RETURN, 1, 101, "worker1"},
	{0, 1000150000, 0x1080, 0x1110, (uint64_t)-2, 120000, HVT_REC_RETURN, 0, 101, "worker1"},
	{1, 1000010000, 0x1000, 0x1120, 0, 0, HVT_REC_ENTRY, 0, 102, "kworker/u8:3abc"},
	{1, 1000011000, 0x1000, 0x1120, 0xfffffff4, 1000, HVT_REC_RETURN, 0, 102,
	 "kworker/u8:3abc"},
	/* lost after vCPU 1's last record: the writer marks them at the end */
	{1, 0, 0, 0, 5, 0, 0, 0, 0, NULL},
};

static uint64_t no_horizon(void *ctx)
{
	(void)ctx;
	return 0; /* nothing before the final drain: the whole stream is in the rings by then */
}

/* Runs @stream (without returns when @entries_only: the function tracer's records) through two
 * rings and the writer into @s; returns the text. */
static char *run(struct sink *s, FILE *out, char **text, bool entries_only)
{
	struct ring rings[2];
	struct writer w = {0};
	unsigned long long lost = 0;

	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(ring_init(&rings[i], 64), 0);
	for (size_t i = 0; i < sizeof(stream) / sizeof(stream[0]); i++) {
		const struct step *st = &stream[i];
		struct hvt_record r = {.ts = st->ts, .ip = st->ip, .parent = st->parent,
				       .value = st->value, .duration = st->duration,
				       .pid = st->pid, .cpu = (uint16_t)st->cpu, .type = st->type,
				       .depth = st->depth};

		if (!st->type) {
			ring_lost(&rings[st->cpu], st->value, st->cpu);
			lost += st->value;
			continue;
		}
		if (entries_only && st->type == HVT_REC_RETURN)
			continue;
		memcpy(r.comm, st->comm, strnlen(st->comm, sizeof(r.comm)));
		assert_true(ring_emit(&rings[st->cpu], &r, NULL, 0));
	}
	assert_int_equal(writer_start(&w, rings, 2, s, no_horizon, NULL), 0);
	writer_stop(&w, lost);
	writer_free(&w);
	for (unsigned i = 0; i < 2; i++)
		ring_free(&rings[i]);
	assert_int_equal(fclose(out), 0);
	return *text;
}

static void compare(const char *got, const char *golden)
{
	char *want = hv_slurp(golden);

	if (strcmp(got, want)) {
		fprintf(stderr, "--- %s\n%s--- got\n%s", golden, want, got);
		fail_msg("%s differs", golden);
	}
	free(want);
}

static void test_function(void **state)
{
	struct sink s;
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	(void)state;
	sink_function_init(&s, out, &syms, 2);
	compare(run(&s, out, &text, true), GOLDEN "function.txt");
	assert_int_equal(s.written, 6);
	free(text);
}

/* A reader of a finished trace (report) knows the counts: they are in the header, as the kernel's. */
static void test_function_counts_known(void **state)
{
	struct sink s;
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	(void)state;
	sink_function_init(&s, out, &syms, 2);
	s.counts_known = true;
	s.hdr_entries = 6;
	s.hdr_written = 14;
	compare(run(&s, out, &text, true), GOLDEN "function-counts.txt");
	free(text);
}

static void graph(const char *golden, bool retval, bool hex)
{
	struct sink s;
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	assert_int_equal(sink_graph_init(&s, out, &syms, 2, retval, false), 0);
	s.graph_retval_hex = hex;
	s.irq_lo = IRQ_LO;
	s.irq_hi = IRQ_HI;
	compare(run(&s, out, &text, false), golden);
	assert_int_equal(s.written, 12);
	assert_int_equal(s.task_switches, 1);
	free(text);
}

static void test_graph(void **state)
{
	(void)state;
	graph(GOLDEN "function_graph.txt", false, false);
}

static void test_graph_retval(void **state)
{
	(void)state;
	graph(GOLDEN "function_graph-retval.txt", true, false);
}

static void test_graph_retval_hex(void **state)
{
	(void)state;
	graph(GOLDEN "function_graph-retval-hex.txt", true, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_function),	 cmocka_unit_test(test_function_counts_known),
		cmocka_unit_test(test_graph),		 cmocka_unit_test(test_graph_retval),
		cmocka_unit_test(test_graph_retval_hex),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

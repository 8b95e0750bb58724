/* The output-format table (host/sink/sink_format.c): one vocabulary, each word one format with its
 * writers per command; the defaults; one error line naming the format and the command; and each
 * writer makes the sink of its format. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/sink/sink_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void names_and_uses(void **state)
{
	static const char *const live[] = {"text", "graph", "json", "jsonl", "folded"};
	char names[256];

	(void)state;
	sink_format_names(names, sizeof(names));
	assert_string_equal(names, "text, graph, json, jsonl, folded or tracedat");
	for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++) {
		const struct sink_format *f = sink_format_find(live[i]);

		assert_non_null(f);
		assert_string_equal(f->name, live[i]);
		/* what run writes, report writes: the same word, the same format */
		assert_non_null(sink_format_maker(f, SINK_LIVE));
		assert_non_null(sink_format_maker(f, SINK_REPORT));
		assert_ptr_equal(sink_format_maker(f, SINK_LIVE),
				 sink_format_maker(f, SINK_REPORT));
		assert_null(sink_format_maker(f, SINK_RECORD));
	}
	assert_non_null(sink_format_maker(sink_format_find("tracedat"), SINK_RECORD));
	assert_null(sink_format_maker(sink_format_find("tracedat"), SINK_LIVE));
	assert_null(sink_format_maker(sink_format_find("tracedat"), SINK_REPORT));
	assert_null(sink_format_find("JSON"));
	assert_null(sink_format_find(""));
	assert_null(sink_format_find("chrome"));
}

static void defaults(void **state)
{
	(void)state;
	assert_ptr_equal(sink_format_default(SINK_LIVE, false), sink_format_find("text"));
	assert_ptr_equal(sink_format_default(SINK_LIVE, true), sink_format_find("graph"));
	assert_ptr_equal(sink_format_default(SINK_REPORT, false), sink_format_find("text"));
	assert_ptr_equal(sink_format_default(SINK_REPORT, true), sink_format_find("graph"));
	assert_ptr_equal(sink_format_default(SINK_RECORD, true), sink_format_find("tracedat"));
	assert_ptr_equal(sink_format_default(SINK_RECORD, false), sink_format_find("tracedat"));
}

static void choose(void **state)
{
	char err[256];

	(void)state;
	assert_ptr_equal(sink_format_choose("json", SINK_LIVE, "run", err, sizeof(err)),
			 sink_format_find("json"));
	assert_ptr_equal(sink_format_choose("jsonl", SINK_REPORT, "report", err, sizeof(err)),
			 sink_format_find("jsonl"));
	assert_null(sink_format_choose("xml", SINK_LIVE, "run", err, sizeof(err)));
	assert_string_equal(
	    err, "--format 'xml': expected text, graph, json, jsonl, folded or tracedat");
	assert_null(sink_format_choose("folded", SINK_RECORD, "record", err, sizeof(err)));
	assert_string_equal(err,
			    "--format folded: record does not write it (run, attach, report do)");
	assert_null(sink_format_choose("tracedat", SINK_LIVE, "attach", err, sizeof(err)));
	assert_string_equal(err, "--format tracedat: attach does not write it (record does)");
}

/* every live writer makes its sink over a memory stream: a header and a trailer, no error */
static void writers_make_sinks(void **state)
{
	static const char *const live[] = {"text", "graph", "json", "jsonl", "folded"};

	(void)state;
	for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&buf, &len);
		struct sink s;
		struct sink_config cfg = {
		    .out = out, .path = "-", .nr_cpus = 2, .tracer = "function_graph"};

		assert_non_null(out);
		assert_int_equal(sink_format_maker(sink_format_find(live[i]), SINK_LIVE)(&s, &cfg),
				 0);
		assert_string_equal(s.tracer, "function_graph");
		assert_int_equal(s.nr_cpus, 2);
		s.ops->begin(&s);
		s.ops->end(&s);
		assert_int_equal(s.err, 0);
		fclose(out);
		assert_true(len > 0 || !strcmp(live[i], "folded"));
		free(buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(names_and_uses),
	    cmocka_unit_test(defaults),
	    cmocka_unit_test(choose),
	    cmocka_unit_test(writers_make_sinks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

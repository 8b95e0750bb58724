/* The report sinks for viewers: Chrome trace-event JSON (sink_chrome) and collapsed stacks
 * (sink_folded), and the live JSON Lines of run --format jsonl (sink_json), fed exact synthetic
 * record streams and compared with golden files in tests/golden/viz/ byte for byte. The streams: nested function_graph calls on two vCPUs by two
 * tasks, an -e event with an int and a string payload, a lost-events mark, a return whose entry was
 * never seen, a call still open at the end, and a guest whose comm, string argument and symbol name
 * hold quotes, backslashes, ';' and control bytes; and a task switched out on one vCPU and resumed
 * on the other. tests/viewer/check-viewers.sh loads the same
 * golden files in speedscope. HVT_UPDATE_GOLDEN=1 rewrites the golden files instead (review them).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/sink/sink.h"
#include "host/trace/escape.h"
#include "tests/common/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN "tests/golden/viz/"

static struct vmi_symtab syms;
static struct fe_spec leaf_spec;

/* The hostile task: a quote, a backslash, a newline, a control byte and a non-ASCII byte. */
static const char hostile_comm[VMI_COMM_LEN] = "q\"b\\s\n\x01\xff";

static int setup(void **state)
{
	char err[64];
	size_t pos;

	(void)state;
	vmi_symtab_add(&syms, 0x1000, 0x100, "main");
	vmi_symtab_add(&syms, 0x1100, 0x100, "work");
	vmi_symtab_add(&syms, 0x1200, 0x100, "leaf");
	vmi_symtab_add(&syms, 0x1300, 0x100, "we\"ird;\\sym");
	vmi_symtab_sort(&syms);
	return fe_parse("leaf(int id, string name)", &leaf_spec, err, sizeof(err), &pos);
}

static int teardown(void **state)
{
	(void)state;
	vmi_symtab_free(&syms);
	return 0;
}

/* The writer's lookup (sink_lookup_fn) for these streams: leaf's -e spec on its events. */
static void look_up(const void *ctx, struct sink_rec *sr)
{
	(void)ctx;
	sr->spec = (sr->r->type == HVT_REC_EVENT || sr->r->type == HVT_REC_EVENT_ALONE) &&
			   sr->r->ip == 0x1200
		       ? &leaf_spec
		       : NULL;
}

/* Compares @got with golden file @name (or writes it under HVT_UPDATE_GOLDEN=1). */
static void golden(const char *name, const char *got, size_t len)
{
	char path[256], *want;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), GOLDEN "%s", name);
	if (getenv("HVT_UPDATE_GOLDEN")) {
		f = fopen(path, "w");
		assert_non_null(f);
		assert_int_equal(fwrite(got, 1, len, f), len);
		fclose(f);
		return;
	}
	f = fopen(path, "r");
	if (!f)
		fail_msg("%s: cannot open the golden file", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	want = calloc(1, (size_t)n + 1);
	assert_non_null(want);
	assert_int_equal(fread(want, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	assert_string_equal(got, want);
	assert_int_equal(len, (size_t)n);
	free(want);
}

static struct hvt_record rec(uint8_t type, uint64_t ts, unsigned cpu, uint64_t ip, uint8_t depth,
			     int32_t pid, const char *comm)
{
	return hv_record(type, ts, cpu, ip, 0, depth, pid, comm);
}

/* The function_graph stream, in time order across the two vCPUs:
 *   cpu0, app-100:     main { work { leaf(id=7, name=...) } }, main still open at the end
 *   cpu1, hostile-200: we"ird;\sym { leaf }, 5 events lost, then a return of work (300 ns) whose
 *                      entry came before the trace. */
static void feed_graph(struct sink *s)
{
	static uint8_t payload[512];
	struct hvt_record r;
	struct sink_rec sr;
	const char name[] = "a\"b\\c\x1b[31m;d";

	memset(payload, 0, sizeof(payload));
	assert_int_equal(fe_payload_size(&leaf_spec), 9 + 1 + 128);
	memcpy(payload + 1, &(int64_t){7}, 8);
	memcpy(payload + 10, name, sizeof(name));

	s->tracer = "function_graph";
	s->ops->begin(s);
#define FEED(type, ts, cpu, ip, depth, pid, comm, ...)                                             \
	do {                                                                                       \
		r = rec(type, ts, cpu, ip, depth, pid, comm);                                      \
		sr = (struct sink_rec){.r = &r};                                                   \
		__VA_ARGS__;                                                                       \
		look_up(NULL, &sr);                                                                \
		assert_int_equal(sink_record(s, &sr, NULL), 1);                                 \
	} while (0)
	FEED(HVT_REC_ENTRY, 1000, 0, 0x1000, 0, 100, "app", r.parent = 0x10);
	FEED(HVT_REC_ENTRY, 1200, 1, 0x1300, 0, 200, hostile_comm, r.parent = 0x10);
	FEED(HVT_REC_ENTRY, 1500, 0, 0x1100, 1, 100, "app", r.parent = 0x1010);
	FEED(HVT_REC_ENTRY, 1700, 1, 0x1200, 1, 200, hostile_comm, r.parent = 0x1320);
	FEED(HVT_REC_RETURN, 1900, 1, 0x1200, 1, 200, hostile_comm, r.duration = 200, r.value = 1);
	FEED(HVT_REC_EVENT, 2000, 0, 0x1200, 2, 100, "app", r.parent = 0x1110,
	     r.value = fe_payload_size(&leaf_spec), sr.payload = payload);
	FEED(HVT_REC_LOST, 2100, 1, 0, 0, 0, "", r.value = 5);
	FEED(HVT_REC_RETURN, 2300, 1, 0x1300, 0, 200, hostile_comm, r.duration = 1100,
	     r.value = 0xffffffffffffffea);
	FEED(HVT_REC_RETURN, 2600, 0, 0x1200, 2, 100, "app", r.duration = 600, r.value = 7);
	FEED(HVT_REC_RETURN, 3000, 0, 0x1100, 1, 100, "app", r.duration = 1500, r.value = 0);
	FEED(HVT_REC_RETURN, 3200, 1, 0x1100, 0, 200, hostile_comm, r.duration = 300, r.value = 3);
#undef FEED
	s->lost = 5;
	s->ops->end(s);
}

/* The function tracer stream: entries (hits) on both vCPUs, the same tasks, and one -r return. */
static void feed_function(struct sink *s)
{
	static const struct {
		uint64_t ts, ip, parent;
		unsigned cpu;
	} hits[] = {
	    {1000, 0x1100, 0x1010, 0}, {1100, 0x1200, 0x1110, 1}, {1200, 0x1200, 0x1120, 0},
	    {1300, 0x1200, 0x1310, 1}, {1400, 0x1100, 0x1020, 0},
	};

	struct hvt_record r;

	s->tracer = "function";
	s->ops->begin(s);
	for (size_t i = 0; i < sizeof(hits) / sizeof(hits[0]); i++) {
		r = rec(HVT_REC_ENTRY, hits[i].ts, hits[i].cpu, hits[i].ip, 0,
			hits[i].cpu ? 200 : 100, hits[i].cpu ? hostile_comm : "app");

		r.parent = hits[i].parent;
		assert_int_equal(sink_record(s, &(struct sink_rec){.r = &r}, NULL), 1);
	}
	/* a return probe (-r work): a complete slice with its value */
	r = rec(HVT_REC_RETURN, 1500, 0, 0x1100, 0, 100, "app");
	r.parent = 0x1020;
	r.duration = 100;
	r.value = 42;
	assert_int_equal(sink_record(s, &(struct sink_rec){.r = &r}, NULL), 1);
	s->ops->end(s);
}

/* Task switches: app's main on cpu0 is switched out by worker, which runs work there, then app
 * resumes on cpu1 (migrated) and calls leaf; main returns on cpu1. */
static void feed_switch(struct sink *s)
{
	struct hvt_record r;

	s->tracer = "function_graph";
	s->ops->begin(s);
	r = rec(HVT_REC_ENTRY, 1000, 0, 0x1000, 0, 100, "app");
	assert_int_equal(sink_record(s, &(struct sink_rec){.r = &r}, NULL), 1);
	r = rec(HVT_REC_ENTRY, 1100, 0, 0x1100, 0, 101, "worker");
	assert_int_equal(sink_record(s, &(struct sink_rec){.r = &r}, NULL), 1);
	r = rec(HVT_REC_RETURN, 1300, 0, 0x1100, 0, 101, "worker");
	r.duration = 200;
	assert_int_equal(sink_record(s, &(struct sink_rec){.r = &r}, NULL), 1);
	r = rec(HVT_REC_ENTRY, 1400, 1, 0x1200, 1, 100, "app");
	assert_int_equal(sink_record(s, &(struct sink_rec){.r = &r}, NULL), 1);
	r = rec(HVT_REC_RETURN, 1500, 1, 0x1200, 1, 100, "app");
	r.duration = 100;
	assert_int_equal(sink_record(s, &(struct sink_rec){.r = &r}, NULL), 1);
	r = rec(HVT_REC_RETURN, 1600, 1, 0x1000, 0, 100, "app");
	r.duration = 600;
	assert_int_equal(sink_record(s, &(struct sink_rec){.r = &r}, NULL), 1);
	s->ops->end(s);
}

static void run(int (*init)(struct sink *, FILE *, const struct vmi_symtab *, unsigned),
		void (*feed)(struct sink *), const char *name)
{
	struct sink s;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	assert_int_equal(init(&s, out, &syms, 2), 0);
	feed(&s);
	assert_int_equal(s.err, 0);
	assert_null(s.priv); /* end() freed the sink's state */
	fclose(out);
	golden(name, buf, len);
	free(buf);
}

static int json_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus)
{
	sink_json_init(s, out, syms, nr_cpus);
	return 0;
}

static void test_json_graph(void **state)
{
	(void)state;
	run(json_init, feed_graph, "graph.jsonl");
}

static void test_json_function(void **state)
{
	(void)state;
	run(json_init, feed_function, "function.jsonl");
}

static void test_json_switch(void **state)
{
	(void)state;
	run(json_init, feed_switch, "switch.jsonl");
}

/* Reads back the JSON string starting at @p (after its opening quote) into @out: the inverse of
 * escape_json for what it writes. Returns the end (the closing quote), or NULL if malformed. */
static const char *json_unescape(const char *p, char *out, size_t *n)
{
	*n = 0;
	for (; *p && *p != '"'; p++) {
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			return NULL;
		if (*p != '\\') {
			out[(*n)++] = *p;
			continue;
		}
		p++;
		if (*p == '"' || *p == '\\') {
			out[(*n)++] = *p;
		} else if (*p == 'u' && !strncmp(p + 1, "00", 2)) {
			unsigned v;

			if (sscanf(p + 3, "%2x", &v) != 1)
				return NULL;
			out[(*n)++] = (char)v;
			p += 4;
		} else {
			return NULL;
		}
	}
	return *p == '"' ? p : NULL;
}

/* Every comm byte value 1..255, 16 of them: each line of the JSON Lines is printable ASCII, and
 * its "comm" reads back as exactly the 16 bytes the guest wrote. */
static void test_json_all_bytes(void **state)
{
	struct sink s;
	char *buf = NULL, *line;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	unsigned lines = 0;

	(void)state;
	sink_json_init(&s, out, &syms, 1);
	s.tracer = "function";
	s.ops->begin(&s);
	for (unsigned b = 1; b < 256; b++) {
		struct hvt_record r = rec(HVT_REC_ENTRY, b, 0, 0x1100, 0, (int32_t)b, "");

		memset(r.comm, (int)b, VMI_COMM_LEN);
		r.parent = 0x1010;
		sink_record(&s, &(struct sink_rec){.r = &r}, NULL);
	}
	s.ops->end(&s);
	fclose(out);
	assert_int_equal(s.err, 0);
	for (size_t i = 0; i < len; i++)
		assert_true(buf[i] == '\n' || (buf[i] >= 0x20 && buf[i] < 0x7f));
	line = buf;
	for (char *nl; (nl = strchr(line, '\n')); line = nl + 1) {
		const char *c;
		char got[64];
		size_t n;
		unsigned pid;

		*nl = 0;
		c = strstr(line, "\"comm\":\"");
		if (!c)
			continue; /* begin, end */
		assert_non_null(json_unescape(c + 8, got, &n));
		assert_int_equal(n, VMI_COMM_LEN);
		assert_int_equal(sscanf(strstr(line, "\"pid\":"), "\"pid\":%u}", &pid), 1);
		for (size_t k = 0; k < n; k++)
			assert_int_equal((unsigned char)got[k], pid);
		lines++;
	}
	assert_int_equal(lines, 255);
	assert_int_equal(s.written, 255);
	free(buf);
}

/* escape_json: the escapes, and a cut that never splits one. */
static void test_escape_json(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(escape_json(buf, sizeof(buf), "a\"b\\c\n\x7f\xc3\xa9", SIZE_MAX), 31);
	assert_string_equal(buf, "a\\\"b\\\\c\\u000a\\u007f\\u00c3\\u00a9");
	assert_int_equal(escape_json(buf, 8, "ab\x01", SIZE_MAX), 2);
	assert_string_equal(buf, "ab");
	assert_int_equal(escape_json(buf, sizeof(buf), "abcdef", 3), 3);
	assert_string_equal(buf, "abc");
}

static void test_chrome_graph(void **state)
{
	(void)state;
	run(sink_chrome_init, feed_graph, "graph.json");
}

static void test_chrome_function(void **state)
{
	(void)state;
	run(sink_chrome_init, feed_function, "function.json");
}

static void test_chrome_switch(void **state)
{
	(void)state;
	run(sink_chrome_init, feed_switch, "switch.json");
}

static void test_folded_switch(void **state)
{
	(void)state;
	run(sink_folded_init, feed_switch, "switch.folded");
}

static void test_folded_graph(void **state)
{
	(void)state;
	run(sink_folded_init, feed_graph, "graph.folded");
}

static void test_folded_function(void **state)
{
	(void)state;
	run(sink_folded_init, feed_function, "function.folded");
}

/* Every comm byte value 1..255 at every position: the JSON stays parseable text with no raw
 * control byte or non-ASCII byte, and the folded lines stay one line each. */
static void test_all_bytes(void **state)
{
	struct sink s;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	unsigned lines = 0;

	(void)state;
	assert_int_equal(sink_folded_init(&s, out, &syms, 1), 0);
	s.tracer = "function";
	s.ops->begin(&s);
	for (unsigned b = 1; b < 256; b++) {
		struct hvt_record r = rec(HVT_REC_ENTRY, b, 0, 0x1100, 0, (int32_t)b, "");

		memset(r.comm, (int)b, VMI_COMM_LEN);
		r.parent = 0x1010;
		sink_record(&s, &(struct sink_rec){.r = &r}, NULL);
	}
	s.ops->end(&s);
	fclose(out);
	for (size_t i = 0; i < len; i++) {
		assert_true(buf[i] == '\n' || (buf[i] >= 0x20 && buf[i] < 0x7f));
		lines += buf[i] == '\n';
	}
	assert_int_equal(lines, 255);
	free(buf);

	buf = NULL;
	out = open_memstream(&buf, &len);
	assert_int_equal(sink_chrome_init(&s, out, &syms, 1), 0);
	s.tracer = "function_graph";
	s.ops->begin(&s);
	for (unsigned b = 1; b < 256; b++) {
		struct hvt_record r = rec(HVT_REC_ENTRY, b, 0, 0x1100, 0, (int32_t)b, "");

		memset(r.comm, (int)b, VMI_COMM_LEN);
		sink_record(&s, &(struct sink_rec){.r = &r}, NULL);
	}
	s.ops->end(&s);
	fclose(out);
	for (size_t i = 0; i < len; i++)
		assert_true(buf[i] == '\n' || (buf[i] >= 0x20 && buf[i] < 0x7f));
	/* 255 tasks, each named once and its call opened on both tracks and closed at the end */
	assert_non_null(strstr(
	    buf,
	    "\"name\":\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"-34\""));
	assert_non_null(strstr(buf,
			       "\"name\":\"\\u00ff\\u00ff\\u00ff\\u00ff\\u00ff\\u00ff\\u00ff\\u00ff"
			       "\\u00ff\\u00ff\\u00ff\\u00ff\\u00ff\\u00ff\\u00ff\\u00ff-255\""));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_chrome_graph),  cmocka_unit_test(test_chrome_function),
	    cmocka_unit_test(test_folded_graph),  cmocka_unit_test(test_folded_function),
	    cmocka_unit_test(test_chrome_switch), cmocka_unit_test(test_folded_switch),
	    cmocka_unit_test(test_all_bytes),	  cmocka_unit_test(test_json_graph),
	    cmocka_unit_test(test_json_function), cmocka_unit_test(test_json_switch),
	    cmocka_unit_test(test_json_all_bytes), cmocka_unit_test(test_escape_json),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

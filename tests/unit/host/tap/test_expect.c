/* host/tap/expect.c and host/tap/verdict_files.c: --expect-* specs, their verdicts over a record stream
 * (a real probe table and profile, records as the writer hands them over), and the --summary JSON and
 * --junit XML they give. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/tap/expect.h"
#include "host/tap/verdict_files.h"
#include "host/sink/writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_parse(void **state)
{
	static const struct {
		enum expect_kind kind;
		const char *spec;
		enum expect_op op;
		int64_t value;
		bool bare;
	} good[] = {
	    {EXPECT_CALL, "fib", EXPECT_GE, 1, true},
	    {EXPECT_CALL, "fib>=5", EXPECT_GE, 5, false},
	    {EXPECT_CALL, "fib>5", EXPECT_GT, 5, false},
	    {EXPECT_CALL, "fib<=0", EXPECT_LE, 0, false},
	    {EXPECT_CALL, "fib<7", EXPECT_LT, 7, false},
	    {EXPECT_CALL, "fib=6", EXPECT_EQ, 6, false},
	    {EXPECT_CALL, "fib==6", EXPECT_EQ, 6, false},
	    {EXPECT_CALL, "fib!=0x10", EXPECT_NE, 16, false},
	    {EXPECT_NO_CALL, "panic", EXPECT_EQ, 0, false},
	    {EXPECT_RETURN, "f==243", EXPECT_EQ, 243, false},
	    {EXPECT_RETURN, "f=-12", EXPECT_EQ, -12, false},
	    {EXPECT_RETURN, "f!=0", EXPECT_NE, 0, false},
	    {EXPECT_RETURN, "f==0xffffffffffffffff", EXPECT_EQ, -1, false},
	    {EXPECT_RETURN, "f==-9223372036854775808", EXPECT_EQ, INT64_MIN, false},
	};
	static const struct {
		enum expect_kind kind;
		const char *spec, *msg;
	} bad[] = {
	    {EXPECT_CALL, "", "--expect-call '': expected a function name"},
	    {EXPECT_CALL, ">=3", "--expect-call '>=3': expected a function name"},
	    {EXPECT_CALL, "fib>=",
	     "--expect-call 'fib>=': expected a count (a decimal number) after the comparison"},
	    {EXPECT_CALL, "fib>=-1",
	     "--expect-call 'fib>=-1': expected a count (a decimal number) after the comparison"},
	    {EXPECT_CALL, "fib>=3x",
	     "--expect-call 'fib>=3x': expected a count (a decimal number) after the comparison"},
	    {EXPECT_CALL, "fib>= 3",
	     "--expect-call 'fib>= 3': expected a count (a decimal number) after the comparison"},
	    {EXPECT_CALL, "fib>=99999999999999999999",
	     "--expect-call 'fib>=99999999999999999999': expected a count (a decimal number) after "
	     "the comparison"},
	    {EXPECT_CALL, "fib~3",
	     "--expect-call 'fib~3': expected FUNC, or FUNC followed by >= > <= < = != and a count"},
	    {EXPECT_NO_CALL, "fib=0",
	     "--expect-no-call 'fib=0': expected a function name alone (counts go with "
	     "--expect-call)"},
	    {EXPECT_RETURN, "f", "--expect-return 'f': expected FUNC==VALUE or FUNC!=VALUE"},
	    {EXPECT_RETURN, "f>=1", "--expect-return 'f>=1': expected FUNC==VALUE or FUNC!=VALUE"},
	    {EXPECT_RETURN, "f==",
	     "--expect-return 'f==': expected a value (decimal, or 0x hex) after the comparison"},
	    {EXPECT_RETURN, "f==0x1ffffffffffffffff",
	     "--expect-return 'f==0x1ffffffffffffffff': expected a value (decimal, or 0x hex) after "
	     "the comparison"},
	    {EXPECT_ORDER, "a", "--expect-order 'a': expected two functions or more, A,B"},
	    {EXPECT_ORDER, "a,", "--expect-order 'a,': expected a function name"},
	    {EXPECT_ORDER, "a,,b", "--expect-order 'a,,b': expected a function name"},
	    {EXPECT_ORDER, "a,b c", "--expect-order 'a,b c': expected FUNC,FUNC[,...]"},
	    {EXPECT_ORDER, "a,b,c,d,e,f,g,h,i", "--expect-order 'a,b,c,d,e,f,g,h,i': at most 8 functions"},
	};
	char longname[200], err[256];
	struct expect e;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(expect_parse(&e, good[i].kind, good[i].spec, err, sizeof(err)), 0);
		assert_int_equal(e.op, good[i].op);
		assert_true(e.value == good[i].value);
		assert_int_equal(e.bare, good[i].bare);
		assert_int_equal(e.nr_funcs, 1);
		assert_ptr_equal(e.spec, good[i].spec);
	}
	assert_int_equal(expect_parse(&e, EXPECT_CALL, "fib>=5", err, sizeof(err)), 0);
	assert_string_equal(e.funcs[0], "fib");
	assert_int_equal(expect_parse(&e, EXPECT_ORDER, "a,b.c,c$3", err, sizeof(err)), 0);
	assert_int_equal(e.nr_funcs, 3);
	assert_string_equal(e.funcs[1], "b.c");
	assert_string_equal(e.funcs[2], "c$3");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(expect_parse(&e, bad[i].kind, bad[i].spec, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, bad[i].msg);
	}
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	assert_int_equal(expect_parse(&e, EXPECT_CALL, longname, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "': function name too long"));
}

/* Four functions at 0x1000..0x4000 (the last has a quote, a byte >= 0x80 and a '<' in its name, as a
 * guest's symbol table may). */
static struct vmi_sym syms[] = {
    {0x1000, 16, "alpha"}, {0x2000, 16, "beta"}, {0x3000, 16, "gamma"}, {0x4000, 16, "q\"\xe9<"}};
static struct vmi_site sites[] = {
    {0x1000, &syms[0]}, {0x2000, &syms[1]}, {0x3000, &syms[2]}, {0x4000, &syms[3]}};

struct fixture {
	struct probe_table probes;
	struct profile prof;
	struct expect v[32];
	size_t nr;
	struct expect_state st;
};

static void fixture_init(struct fixture *f)
{
	const struct vmi_site *sel[] = {&sites[0], &sites[1], &sites[2], &sites[3]};

	memset(f, 0, sizeof(*f));
	assert_int_equal(probe_table_init(&f->probes, sel, 4), 0);
	assert_int_equal(profile_init(&f->prof, &f->probes), 0);
}

static void add(struct fixture *f, enum expect_kind kind, const char *spec)
{
	char err[256];

	assert_true(f->nr < sizeof(f->v) / sizeof(f->v[0]));
	assert_int_equal(expect_parse(&f->v[f->nr++], kind, spec, err, sizeof(err)), 0);
}

/* Record @r with @payload to the tap as the writer hands it over: its probe looked up. */
static void tap(struct fixture *f, const struct hvt_record *r, const uint8_t *payload)
{
	struct sink_rec sr = {.r = r, .payload = payload};

	writer_lookup_probes(&f->probes, &sr);
	expect_tap(&f->st, &sr);
}

static void feed(struct fixture *f, uint8_t type, uint64_t ip, uint64_t ts, uint64_t value)
{
	struct hvt_record r = {.ts = ts, .ip = ip, .type = type, .value = value};

	tap(f, &r, NULL);
}

static void fixture_free(struct fixture *f)
{
	expect_state_free(&f->st);
	profile_free(&f->prof);
	probe_table_free(&f->probes);
}

/* alpha: entered at 10, 30, 50 returning 5, 5, 0xffffffff00000005 (int 5 with junk above); beta:
 * entered at 20 and 40 returning 0 then -1 (as an int: 0xffffffff); nothing of the third. */
static void feed_stream(struct fixture *f)
{
	feed(f, HVT_REC_ENTRY, 0x1000, 30, 0);
	feed(f, HVT_REC_ENTRY, 0x1000, 10, 0); /* out of order across CPUs: the first call is 10 */
	feed(f, HVT_REC_RETURN, 0x1000, 11, 5);
	feed(f, HVT_REC_RETURN, 0x1000, 31, 5);
	feed(f, HVT_REC_EVENT, 0x2000, 20, 0);
	feed(f, HVT_REC_RETURN, 0x2000, 21, 0);
	feed(f, HVT_REC_ENTRY, 0x2000, 40, 0);
	feed(f, HVT_REC_RETURN, 0x2000, 41, 0xffffffffull);
	feed(f, HVT_REC_ENTRY, 0x1000, 50, 0);
	feed(f, HVT_REC_RETURN, 0x1000, 51, 0xffffffff00000005ull);
	feed(f, HVT_REC_LOST, 0x1000, 60, 3);
	feed(f, HVT_REC_ENTRY, 0x9999, 70, 0); /* no probe there */
}

static void test_verdicts(void **state)
{
	static const struct {
		enum expect_kind kind;
		const char *spec;
		bool passed;
		const char *reason;
	} cases[] = {
	    {EXPECT_CALL, "alpha", true, "the guest called alpha 3 times"},
	    {EXPECT_CALL, "alpha=3", true, "the guest called alpha 3 times"},
	    {EXPECT_CALL, "alpha>3", false, "the guest called alpha 3 times"},
	    {EXPECT_CALL, "beta<=2", true, "the guest called beta 2 times"},
	    {EXPECT_CALL, "beta!=2", false, "the guest called beta 2 times"},
	    {EXPECT_CALL, "gamma", false, "the guest never called it"},
	    {EXPECT_CALL, "gamma<1", true, "the guest called gamma 0 times"},
	    {EXPECT_NO_CALL, "gamma", true, "the guest called gamma 0 times"},
	    {EXPECT_NO_CALL, "beta", false, "the guest called it 2 times"},
	    {EXPECT_RETURN, "alpha==5", true, "alpha returned 5 3 times"},
	    {EXPECT_RETURN, "alpha!=6", true, "alpha returned other than 6 3 times"},
	    {EXPECT_RETURN, "beta==0", false, "beta returned 0xffffffff (4294967295) in 1 of 2 returns"},
	    {EXPECT_RETURN, "beta!=-1", false, "beta returned 0xffffffff (4294967295) in 1 of 2 returns"},
	    {EXPECT_RETURN, "gamma==0", false, "gamma never returned while traced"},
	    {EXPECT_ORDER, "alpha,beta", true, "first calls in this order"},
	    {EXPECT_ORDER, "beta,alpha", false, "alpha was first called before beta"},
	    {EXPECT_ORDER, "alpha,gamma", false, "gamma was never called"},
	};
	const size_t n = sizeof(cases) / sizeof(cases[0]);
	struct fixture f;
	char err[256];
	int unmet = 0;

	(void)state;
	fixture_init(&f);
	for (size_t i = 0; i < n; i++)
		add(&f, cases[i].kind, cases[i].spec);
	assert_int_equal(expect_bind(f.v, f.nr, &f.probes, true, err, sizeof(err)), 0);
	assert_int_equal(expect_state_init(&f.st, &f.prof, f.v, f.nr), 0);
	feed_stream(&f);
	for (size_t i = 0; i < n; i++)
		unmet += !cases[i].passed;
	assert_int_equal(expect_evaluate(&f.st), unmet);
	for (size_t i = 0; i < n; i++) {
		if (f.st.v[i].passed != cases[i].passed)
			fail_msg("%s: passed %d, want %d", cases[i].spec, f.st.v[i].passed,
				 cases[i].passed);
		assert_string_equal(f.st.v[i].reason, cases[i].reason);
	}
	/* the profile was fed on */
	assert_int_equal(f.prof.v[0].hits, 3);
	assert_int_equal(f.prof.v[1].returns, 2);
	fixture_free(&f);
}

/* An -e event outside function_graph's graph (HVT_REC_EVENT_ALONE) is a call: counted by the
 * profile and by --expect-call alike. */
static void test_event_alone_is_a_call(void **state)
{
	struct fixture f;
	char err[256];

	(void)state;
	fixture_init(&f);
	add(&f, EXPECT_CALL, "alpha=2");
	assert_int_equal(expect_bind(f.v, f.nr, &f.probes, false, err, sizeof(err)), 0);
	assert_int_equal(expect_state_init(&f.st, &f.prof, f.v, f.nr), 0);
	feed(&f, HVT_REC_ENTRY, 0x1000, 10, 0);
	feed(&f, HVT_REC_EVENT_ALONE, 0x1000, 20, 0);
	assert_int_equal(expect_evaluate(&f.st), 0);
	assert_string_equal(f.st.v[0].reason, "the guest called alpha 2 times");
	assert_int_equal(f.prof.v[0].hits, 2);
	assert_int_equal(f.prof.v[0].returns, 0);
	fixture_free(&f);
}

static void test_bind_errors(void **state)
{
	struct fixture f;
	char err[256];

	(void)state;
	fixture_init(&f);
	add(&f, EXPECT_ORDER, "alpha,nosuch");
	assert_int_equal(expect_bind(f.v, f.nr, &f.probes, true, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "--expect-order alpha,nosuch: nosuch is not traced (check -l/-n and "
				 "the guest's symbols)");
	f.nr = 0;
	add(&f, EXPECT_RETURN, "alpha==1");
	assert_int_equal(expect_bind(f.v, f.nr, &f.probes, false, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "--expect-return alpha==1: needs alpha's return values: trace it with "
				 "-p function_graph or -r alpha");
	fixture_free(&f);
}

/* A return probe (-r) on gamma: its returns are typed events, RAX in their payload; a spec that is not
 * RAX itself is refused. */
static void test_return_probe(void **state)
{
	struct fe_spec spec, off;
	struct fixture f;
	uint8_t payload[9] = {0};
	uint64_t rax = 0xfffffffffffffff2ull; /* -14 */
	char err[256];
	size_t pos;
	struct hvt_record r = {.ts = 5, .ip = 0x3000, .type = HVT_REC_RETURN_EVENT, .value = 9};

	(void)state;
	fixture_init(&f);
	assert_int_equal(fe_parse("gamma(long ret)", &spec, err, sizeof(err), &pos), 0);
	assert_int_equal(fe_parse("gamma(long ret+8)", &off, err, sizeof(err), &pos), 0);
	f.probes.v[2].ret_event = &off;
	add(&f, EXPECT_RETURN, "gamma==-14");
	add(&f, EXPECT_RETURN, "gamma!=0");
	assert_int_equal(expect_bind(f.v, 1, &f.probes, true, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "--expect-return gamma==-14: needs gamma's return values: its -r spec "
				 "must be RAX itself ('gamma' or 'gamma(long ret)')");
	f.probes.v[2].ret_event = &spec;
	f.probes.v[2].quiet_entry = true; /* -r alone: no entry records */
	assert_int_equal(expect_bind(f.v, f.nr, &f.probes, false, err, sizeof(err)), 0);
	assert_int_equal(expect_state_init(&f.st, &f.prof, f.v, f.nr), 0);
	memcpy(payload + 1, &rax, 8);
	tap(&f, &r, payload);
	tap(&f, &r, payload);
	assert_int_equal(expect_evaluate(&f.st), 0);
	assert_string_equal(f.st.v[0].reason, "gamma returned -14 2 times");
	rax = 3;
	memcpy(payload + 1, &rax, 8);
	tap(&f, &r, payload);
	assert_int_equal(expect_evaluate(&f.st), 1);
	assert_string_equal(f.st.v[0].reason, "gamma returned 0x3 (3) in 1 of 3 returns");
	assert_true(f.st.v[1].passed);
	fixture_free(&f);
}

static char *written(int (*write)(FILE *, const struct expect_state *, const struct verdict_end *),
		     const struct expect_state *st, const struct verdict_end *end)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	assert_non_null(m);
	assert_int_equal(write(m, st, end), 0);
	assert_int_equal(fclose(m), 0);
	return buf;
}

static void test_files(void **state)
{
	struct verdict_end end = {.tracer = "function_graph", .exit_status = 7,
				  .exit_reason = "expect-unmet", .lost = 3, .elapsed = 1.5};
	struct fixture f;
	char err[256], *json, *xml;

	(void)state;
	fixture_init(&f);
	add(&f, EXPECT_CALL, "alpha>=3");
	add(&f, EXPECT_RETURN, "beta==0");
	assert_int_equal(expect_bind(f.v, f.nr, &f.probes, true, err, sizeof(err)), 0);
	assert_int_equal(expect_state_init(&f.st, &f.prof, f.v, f.nr), 0);
	feed_stream(&f);
	feed(&f, HVT_REC_ENTRY, 0x4000, 80, 0);
	assert_int_equal(expect_evaluate(&f.st), 1);
	json = written(verdict_write_summary, &f.st, &end);
	assert_string_equal(
	    json,
	    "{\"exit_status\":7,\"exit_reason\":\"expect-unmet\",\"tracer\":\"function_graph\","
	    "\"elapsed\":1.500000,\"lost\":3,\"functions\":["
	    "{\"name\":\"alpha\",\"addr\":\"0x1000\",\"calls\":3,\"returns\":3},"
	    "{\"name\":\"beta\",\"addr\":\"0x2000\",\"calls\":2,\"returns\":2},"
	    "{\"name\":\"q\\\"\\u00e9<\",\"addr\":\"0x4000\",\"calls\":1,\"returns\":0}],"
	    "\"expectations\":["
	    "{\"option\":\"--expect-call\",\"spec\":\"alpha>=3\",\"passed\":true,"
	    "\"detail\":\"the guest called alpha 3 times\"},"
	    "{\"option\":\"--expect-return\",\"spec\":\"beta==0\",\"passed\":false,"
	    "\"detail\":\"beta returned 0xffffffff (4294967295) in 1 of 2 returns\"}],"
	    "\"unmet\":1}\n");
	xml = written(verdict_write_junit, &f.st, &end);
	assert_string_equal(
	    xml,
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<testsuites tests=\"2\" failures=\"1\" errors=\"0\" time=\"1.500\">\n"
	    "  <testsuite name=\"hvtrace\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\" "
	    "time=\"1.500\">\n"
	    "    <testcase classname=\"hvtrace.expect\" name=\"--expect-call alpha&gt;=3\" "
	    "time=\"0\"/>\n"
	    "    <testcase classname=\"hvtrace.expect\" name=\"--expect-return beta==0\" time=\"0\">\n"
	    "      <failure type=\"expect-return\" message=\"beta returned 0xffffffff (4294967295) in "
	    "1 of 2 returns\">--expect-return beta==0: beta returned 0xffffffff (4294967295) in 1 of "
	    "2 returns</failure>\n"
	    "    </testcase>\n"
	    "  </testsuite>\n"
	    "</testsuites>\n");
	free(json);
	free(xml);
	/* a run that failed otherwise: one more test case, an error */
	end.exit_status = 3;
	end.exit_reason = "guest-fault";
	xml = written(verdict_write_junit, &f.st, &end);
	assert_non_null(strstr(xml, "<testsuites tests=\"3\" failures=\"1\" errors=\"1\""));
	assert_non_null(strstr(xml, "    <testcase classname=\"hvtrace\" name=\"run\" time=\"1.500\">\n"
				    "      <error type=\"exit-status\" message=\"exit status 3: "
				    "guest-fault\"/>\n    </testcase>\n"));
	free(xml);
	fixture_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_verdicts),
	    cmocka_unit_test(test_event_alone_is_a_call),
	    cmocka_unit_test(test_bind_errors),
	    cmocka_unit_test(test_return_probe),
	    cmocka_unit_test(test_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

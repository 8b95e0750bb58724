/* --filter-event: the expression parser (its errors, hostile input) and evaluation on payloads laid
 * out as fe_capture lays them out. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/event_filter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct fe_spec spec;
static uint8_t payload[1024];
static size_t payload_len;

/* f(int a, u64 b, string s, char[4] c, u16[2] arr): a=-5, b=0x1f0, s="kworker/1", c="abcd",
 * arr faulted unless @arr_ok. */
static void make_payload(bool s_fault)
{
	char err[128];
	size_t pos, off = 0;

	assert_int_equal(fe_parse("f(int a, u64 b, string s+0, char[4] c+0, u16[2] arr+0)", &spec,
				  err, sizeof(err), &pos),
			 0);
	memset(payload, 0, sizeof(payload));
	for (unsigned i = 0; i < spec.nr_fields; i++) {
		const struct fe_field *f = &spec.fields[i];
		uint8_t *d = payload + off + 1;

		switch (i) {
		case 0: {
			uint64_t v = (uint64_t)-5;
			memcpy(d, &v, 8);
			break;
		}
		case 1: {
			uint64_t v = 0x1f0;
			memcpy(d, &v, 8);
			break;
		}
		case 2:
			payload[off] = s_fault;
			strcpy((char *)d, "kworker/1");
			break;
		case 3:
			memcpy(d, "abcd", 4);
			break; /* no NUL: a char[N] fills it */
		case 4:
			payload[off] = 1;
			break;
		}
		off += 1 + fe_field_data_size(f);
	}
	payload_len = off;
	assert_int_equal(payload_len, fe_payload_size(&spec));
}

static int match(const char *text)
{
	struct ef_filter *f = malloc(sizeof(*f));
	char err[256];
	int m;

	assert_non_null(f);
	if (ef_parse(text, f, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	if (ef_bind(f, &spec, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	m = ef_match(f, payload, payload_len);
	/* a payload cut short matches nothing */
	assert_false(ef_match(f, payload, 0));
	free(f);
	return m;
}

static void test_numbers(void **state)
{
	(void)state;
	make_payload(false);
	assert_true(match("f: a == -5"));
	assert_true(match("f: a < 0 && a >= -5 && a > -6 && a <= -5"));
	assert_false(match("f: a > 0")); /* int: signed */
	assert_true(match("f: b == 0x1f0 && b == 496"));
	assert_true(match("f: b & 0x10"));
	assert_false(match("f: b & 0x0f"));
	assert_true(match("f: b != 1"));
	assert_true(match("f: b > 0xff && b < 0x200"));
	/* u64: unsigned, -1 is the largest value */
	assert_true(match("f: b < -1"));
}

static void test_strings_and_logic(void **state)
{
	(void)state;
	make_payload(false);
	assert_true(match("f: s == \"kworker/1\""));
	assert_true(match("f: s ~ \"kworker/*\""));
	assert_true(match("f: s == kworker/?"));
	assert_false(match("f: s == kworker"));
	assert_true(match("f: s != kworker"));
	assert_true(match("f: c == abcd")); /* char[4] without a NUL */
	assert_true(match("f: c ~ 'a*d'"));
	assert_true(match("f: !(s == x) && (a == 1 || b == 496)"));
	assert_true(match("f: a == 1 || a == 2 || a == -5"));
	assert_false(match("f: a == -5 && !(b == 496)"));
	assert_true(match("f:!!(a==-5)"));
	/* && binds tighter than || */
	assert_true(match("f: a == -5 || a == 1 && b == 0"));
	assert_false(match("f: (a == -5 || a == 1) && b == 0"));
	/* a faulted field satisfies no comparison, == or != */
	make_payload(true);
	assert_false(match("f: s == \"kworker/1\""));
	assert_false(match("f: s != \"kworker/1\""));
	assert_true(match("f: !(s ~ \"*\")"));
}

static void parse_error(const char *text, const char *want)
{
	struct ef_filter *f = malloc(sizeof(*f));
	char err[1024];

	assert_non_null(f);
	assert_int_equal(ef_parse(text, f, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, want);
	free(f);
}

static void test_parse_errors(void **state)
{
	(void)state;
	parse_error("", "--filter-event '': expected 'FUNC: EXPR' at column 1");
	parse_error("f a == 1",
		    "--filter-event 'f a == 1': expected ':' after the function at column 3");
	parse_error("f:", "--filter-event 'f:': expected a field name at column 3");
	parse_error(
	    "f: a",
	    "--filter-event 'f: a': expected an operator (== != < > <= >= & ~) at column 5");
	parse_error("f: a &&",
		    "--filter-event 'f: a &&': expected an operator (== != < > <= >= & ~) at "
		    "column 6");
	parse_error("f: a == ", "--filter-event 'f: a == ': expected a value at column 9");
	parse_error("f: a == 1 &&",
		    "--filter-event 'f: a == 1 &&': expected a field name at column 13");
	parse_error("f: a == 1 b == 2",
		    "--filter-event 'f: a == 1 b == 2': expected && or || or the end "
		    "at column 11");
	parse_error("f: (a == 1", "--filter-event 'f: (a == 1': unclosed '(' at column 4");
	parse_error("f: (a == 1 x", "--filter-event 'f: (a == 1 x': expected ')' at column 12");
	parse_error("f: s == \"abc",
		    "--filter-event 'f: s == \"abc': unterminated string at column 9");
	parse_error("f: a === 1", "--filter-event 'f: a === 1': expected a value at column 8");
	parse_error("f: a == 1)",
		    "--filter-event 'f: a == 1)': expected && or || or the end at column 10");
	parse_error("f+: a == 1",
		    "--filter-event 'f+: a == 1': expected an offset into the function at column 3");
	parse_error("f+0x100001: a == 1", "--filter-event 'f+0x100001: a == 1': expected an offset "
					  "into the function at column 3");
	/* a number too big for 64 bits is named as such, not taken for a word (issue 37) */
	parse_error("f: a == 99999999999999999999999",
		    "--filter-event 'f: a == 99999999999999999999999': a number out of range (64 "
		    "bits) at column 9");
	parse_error("f: a > -0x8000000000000001",
		    "--filter-event 'f: a > -0x8000000000000001': a number out of range (64 bits) "
		    "at column 8");
}

/* FUNC+OFFSET: the filter of an -e event inside a function, named as its probe ("f+0xOFF"). */
static void test_inside_function(void **state)
{
	struct ef_filter *f = malloc(sizeof(*f));
	char err[256];

	(void)state;
	assert_non_null(f);
	assert_int_equal(ef_parse("vfs_read+9: count > 10", f, err, sizeof(err)), 0);
	assert_string_equal(f->func, "vfs_read+0x9");
	assert_int_equal(ef_parse(" vfs_read+0x1a : count > 10", f, err, sizeof(err)), 0);
	assert_string_equal(f->func, "vfs_read+0x1a");
	free(f);
}

/* Hostile input: deep nesting, too many terms, long names and values, every byte value. */
static void test_hostile(void **state)
{
	char text[EF_MAX_TEXT + 8], err[1024];
	struct ef_filter *f = malloc(sizeof(*f));
	size_t n;

	(void)state;
	assert_non_null(f);
	/* 40 parentheses deep: refused at the 33rd */
	n = (size_t)snprintf(text, sizeof(text), "f: ");
	for (int i = 0; i < 40; i++)
		text[n++] = '(';
	strcpy(text + n, "a == 1");
	assert_int_equal(ef_parse(text, f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "nested too deep (at most 32) at column 36"));
	/* !!!... likewise */
	n = (size_t)snprintf(text, sizeof(text), "f: ");
	for (int i = 0; i < 100; i++)
		text[n++] = '!';
	strcpy(text + n, "a == 1");
	assert_int_equal(ef_parse(text, f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "nested too deep"));
	/* 40 terms: more than 64 nodes */
	n = (size_t)snprintf(text, sizeof(text), "f: a == 1");
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "||a==1");
	assert_int_equal(ef_parse(text, f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "too many terms (at most 64)"));
	/* 32 terms fit (63 nodes) */
	n = (size_t)snprintf(text, sizeof(text), "f: a == 1");
	for (int i = 0; i < 31; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "||a==1");
	assert_int_equal(ef_parse(text, f, err, sizeof(err)), 0);
	assert_int_equal(f->nr_nodes, 63);
	/* too long as a whole, a field name, a value */
	memset(text, 'a', EF_MAX_TEXT);
	text[EF_MAX_TEXT] = 0;
	assert_int_equal(ef_parse(text, f, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--filter-event: longer than 511 characters");
	n = (size_t)snprintf(text, sizeof(text), "f: ");
	memset(text + n, 'x', 100);
	strcpy(text + n + 100, " == 1");
	assert_int_equal(ef_parse(text, f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "field name too long at column 4"));
	n = (size_t)snprintf(text, sizeof(text), "f: s == ");
	memset(text + n, 'v', 200);
	text[n + 200] = 0;
	assert_int_equal(ef_parse(text, f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "value too long at column 9"));
	/* every single byte after a valid prefix: parsed or refused, never past the end */
	for (int c = 1; c < 256; c++) {
		snprintf(text, sizeof(text), "f: a == 1 %c", c);
		(void)ef_parse(text, f, err, sizeof(err));
		snprintf(text, sizeof(text), "f: a %c= 1", c);
		(void)ef_parse(text, f, err, sizeof(err));
	}
	free(f);
}

static void test_bind_errors(void **state)
{
	static const struct {
		const char *text, *err;
	} bad[] = {
	    {"f: zz == 1",
	     "--filter-event 'f: zz == 1': zz: no such field of the -e event at column 4"},
	    {"f: s < 1", "--filter-event 'f: s < 1': s: a string field takes == != ~ at column 4"},
	    {"f: a ~ 1",
	     "--filter-event 'f: a ~ 1': a: a number field takes a number and == != < > <= "
	     ">= & at column 4"},
	    {"f: a == x",
	     "--filter-event 'f: a == x': a: a number field takes a number and == != < > "
	     "<= >= & at column 4"},
	    {"f: arr == 1",
	     "--filter-event 'f: arr == 1': arr: an array field cannot be compared at "
	     "column 4"},
	    /* a number the field cannot hold: its range, not "takes a number" (issue 37) */
	    {"f: a == 0x1ffffffff",
	     "--filter-event 'f: a == 0x1ffffffff': a: 0x1ffffffff is out of range for a 32-bit "
	     "field (-2147483648 to 4294967295) at column 4"},
	    {"f: a < -2147483649",
	     "--filter-event 'f: a < -2147483649': a: -2147483649 is out of range for a 32-bit "
	     "field (-2147483648 to 4294967295) at column 4"},
	};
	struct ef_filter *f = malloc(sizeof(*f));
	char err[256];

	(void)state;
	make_payload(false);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(ef_parse(bad[i].text, f, err, sizeof(err)), 0);
		assert_int_equal(ef_bind(f, &spec, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, bad[i].err);
	}
	/* unbound: matches nothing */
	assert_int_equal(ef_parse("f: a == -5", f, err, sizeof(err)), 0);
	assert_false(ef_match(f, payload, payload_len));
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_numbers),	 cmocka_unit_test(test_strings_and_logic),
	    cmocka_unit_test(test_parse_errors),
	    cmocka_unit_test(test_inside_function), cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_bind_errors),
	};

	return cmocka_run_group_tests_name("event_filter", tests, NULL, NULL);
}

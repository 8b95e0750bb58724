/* host/util/msg_fmt: error lines keep their reason; values are what gets shortened (issue 37, class
 * 6). */
#include "host/util/msg_fmt.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* Fits: exactly what snprintf writes, every conversion kind the code uses. */
static void test_fits_like_snprintf(void **state)
{
	char a[256], b[256];
	size_t n;

	(void)state;
	n = msg_fmt(a, sizeof(a), "%s '%s': %d %u %#llx %zu %ld %-6s| %5s %.3s %c %% %02x %p", "-l",
		    "fib", -3, 7u, 0x1234ULL, (size_t)9, -5L, "ab", "cd", "xyzzy", 'q', 0xa,
		    (void *)0x10);
	snprintf(b, sizeof(b), "%s '%s': %d %u %#llx %zu %ld %-6s| %5s %.3s %c %% %02x %p", "-l",
		 "fib", -3, 7u, 0x1234ULL, (size_t)9, -5L, "ab", "cd", "xyzzy", 'q', 0xa,
		 (void *)0x10);
	assert_string_equal(a, b);
	assert_int_equal(n, strlen(b));
	msg_fmt(a, sizeof(a), "%*s|%-*d|%.*s", 4, "x", 3, 7, 2, "abc");
	assert_string_equal(a, "   x|7  |ab");
	const char *volatile null = NULL;

	msg_fmt(a, sizeof(a), "%s|%m", null);
	assert_memory_equal(a, "(null)|", 7);
}

/* A 100 KB glob: the value is cut, the reason after it stays whole. */
static void test_long_value_keeps_reason(void **state)
{
	size_t big = 100000;
	char *glob = malloc(big + 1), err[512], tail[128];

	(void)state;
	memset(glob, 'a', big);
	glob[big] = '\0';
	msg_fmt(err, sizeof(err), "%s '%s': matches no traceable function", "-l", glob);
	assert_true(strlen(err) < sizeof(err));
	assert_non_null(strstr(err, "...(100000 bytes)': matches no traceable function"));
	assert_memory_equal(err, "-l 'aaaa", 8);
	/* the head: as much as room allows, at most MSG_VALUE_HEAD bytes */
	snprintf(tail, sizeof(tail), "%.100s", err + 4 + MSG_VALUE_HEAD - 2);
	assert_string_equal(tail, "aa...(100000 bytes)': matches no traceable function");
	assert_int_equal(strlen(err), 4 + MSG_VALUE_HEAD +
					  strlen("...(100000 bytes)': matches no "
						 "traceable function"));
	free(glob);
}

/* Two long values: the longer is cut first, and both when needed; a short value is never cut. */
static void test_two_values(void **state)
{
	char a[300], b[300], err[200];

	(void)state;
	memset(a, 'x', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memset(b, 'y', 150);
	b[150] = '\0';
	msg_fmt(err, sizeof(err), "--trigger '%s' on %s: %s is not a traced function", a, "fib", b);
	assert_true(strlen(err) < sizeof(err));
	assert_non_null(strstr(err, "...(299 bytes)' on fib: "));
	assert_non_null(strstr(err, "...(150 bytes) is not a traced function"));
	assert_null(strstr(err,
			   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"));
}

/* Words the message itself holds are never cut while a value can give; a message without values
 * that does not fit is cut at its end, as snprintf cuts it. */
static void test_no_value_cut_at_end(void **state)
{
	char err[16];
	size_t n;

	(void)state;
	n = msg_fmt(err, sizeof(err), "abcdefghijklmnopqrstuvwxyz %d", 5);
	assert_string_equal(err, "abcdefghijklmno");
	assert_int_equal(n, 15);
	n = msg_fmt(err, 1, "%s", "abc");
	assert_string_equal(err, "");
	assert_int_equal(n, 0);
}

/* A cut never ends inside a UTF-8 sequence. */
static void test_utf8_head(void **state)
{
	char v[400], err[120];
	size_t o = 0;

	(void)state;
	while (o + 2 < sizeof(v)) {
		v[o++] = (char)0xc3;
		v[o++] = (char)0xb6;
	}
	v[o] = '\0';
	msg_fmt(err, sizeof(err), "--kernel %s: No such file or directory", v);
	char *mark = strstr(err, "...(");

	assert_non_null(mark);
	assert_int_equal((mark - err - 9) % 2, 0);
	assert_non_null(strstr(err, "bytes): No such file or directory"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fits_like_snprintf),
	    cmocka_unit_test(test_long_value_keeps_reason),
	    cmocka_unit_test(test_two_values),
	    cmocka_unit_test(test_no_value_cut_at_end),
	    cmocka_unit_test(test_utf8_head),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* host/util/peer_text: a peer's bytes in hvtrace's lines, escaped (issue 37, class 7). */
#include "host/util/peer_text.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

/* The terminal attack of a hostile QMP peer: title, clear screen, a forged hvtrace line. */
static void test_controls_escaped(void **state)
{
	const char in[] = "\x1b]0;pwned\x07\x1b[2Jok\nhvtrace: fake second line\\ \t\r\x7f\xc3\xb6";
	char out[256];

	(void)state;
	peer_str(in, out, sizeof(out));
	assert_string_equal(out,
			    "\\x1b]0;pwned\\x07\\x1b[2Jok\\nhvtrace: fake second line\\\\ \\t\\r"
			    "\\x7f\\xc3\\xb6");
	for (const char *c = out; *c; c++)
		assert_true(*c >= 0x20 && *c < 0x7f);
}

/* NUL bytes inside a length-given text are shown too. */
static void test_nul_shown(void **state)
{
	char out[32];

	(void)state;
	peer_text("a\0b", 3, out, sizeof(out));
	assert_string_equal(out, "a\\x00b");
}

/* Cut: the head that fits, then the whole length; never half an escape. */
static void test_cut(void **state)
{
	char in[100], out[24];

	(void)state;
	memset(in, '\x1b', sizeof(in));
	peer_text(in, sizeof(in), out, sizeof(out));
	assert_string_equal(out, "\\x1b\\x1b...(100 bytes)");
	assert_true(strlen(out) < sizeof(out));
	peer_text("abc", 3, out, 16);
	assert_string_equal(out, "abc");
	peer_str(NULL, out, 16);
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_controls_escaped),
	    cmocka_unit_test(test_nul_shown),
	    cmocka_unit_test(test_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

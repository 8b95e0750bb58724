/* docs/hvtrace.1: groff and man render it without a warning; it names every command, every option of
 * the usage text and every exit status; `make install PREFIX=...` installs it with the binary, where
 * man(1) finds it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/session/exitcode.h"
#include "host/cli/session_args.h"
#include "tests/common/hv_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE "docs/hvtrace.1"
#define PREFIX "/tmp/sess-unit-prefix"

/* The page's source with groff's \- as a plain '-'. */
static char *page_text(void)
{
	char *src = hv_command_output("sed 's/\\\\-/-/g' " PAGE);

	assert_non_null(src);
	return src;
}

static void test_renders_without_warnings(void **state)
{
	char *out;

	(void)state;
	out = hv_command_output("groff -man -Tutf8 -ww -z " PAGE " 2>&1");
	assert_non_null(out);
	assert_string_equal(out, "");
	free(out);
	out = hv_command_output("MANWIDTH=80 man --warnings -l " PAGE " 2>&1 >/dev/null");
	assert_non_null(out);
	assert_string_equal(out, "");
	free(out);
	out = hv_command_output("MANWIDTH=80 man -l " PAGE " 2>/dev/null");
	assert_non_null(out);
	assert_non_null(strstr(out, "hvtrace - ftrace for a guest kernel, driven from the host"));
	free(out);
}

/* Every --option of the usage text, every command and section, every exit status. */
static void test_complete(void **state)
{
	static const char *const sections[] = {"\n.SH SYNOPSIS\n", "\n.SH COMMANDS\n",
					       "\n.SH OPTIONS\n", "\n.SH EVENT GRAMMAR\n",
					       "\n.SH EXPECTATIONS\n", "\n.SH SESSION FILES\n",
					       "\n.SH EXIT STATUS\n"};
	static const char *const commands[] = {"run", "attach", "record", "report", "list-functions",
					       "help"};
	static const int statuses[] = {EXIT_BAD_INPUT,	 EXIT_GUEST_FAULT, EXIT_HOST_ERROR,
				       EXIT_GUEST_PANIC, EXIT_QEMU_FAILED, EXIT_EXPECT,
				       EXIT_TIMEOUT};
	char *src = page_text(), key[96];
	const char *exits;
	size_t options = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		assert_non_null(strstr(src, sections[i]));
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		snprintf(key, sizeof(key), "\n.B %s\n", commands[i]);
		if (!strstr(src, key))
			fail_msg("command %s is not described", commands[i]);
	}
	for (const char *p = session_usage; (p = strstr(p, "--")); p += 2) {
		size_t n = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");

		if (!n)
			continue;
		snprintf(key, sizeof(key), "%.*s", (int)(n + 2), p);
		if (!strstr(src, key))
			fail_msg("%s is in the usage text, not in the man page", key);
		options++;
	}
	assert_true(options > 40);
	exits = strstr(src, "\n.SH EXIT STATUS\n");
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		snprintf(key, sizeof(key), "\n.B %d\n", statuses[i]);
		if (!strstr(exits, key))
			fail_msg("exit status %d is not described", statuses[i]);
	}
	assert_non_null(strstr(exits, "\n.BI 128+ N\n"));
	free(src);
}

/* make install PREFIX=...: the binary and the page, which man finds there. */
static void test_install(void **state)
{
	char *out, *want;

	(void)state;
	/* a make of its own, not a job of the make running the tests (its jobserver would warn) */
	out = hv_command_output("rm -rf " PREFIX " && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s "
				"install PREFIX=" PREFIX " 2>&1 && cd " PREFIX " && find . -type f -perm -u+x | sort");
	assert_non_null(out);
	assert_string_equal(out, "./bin/hvtrace\n");
	free(out);
	out = hv_command_output(PREFIX "/bin/hvtrace --version");
	want = hv_command_output("./hvtrace --version");
	assert_non_null(out);
	assert_non_null(want);
	assert_string_equal(out, want);
	free(out);
	free(want);
	out = hv_command_output("cmp " PAGE " " PREFIX "/share/man/man1/hvtrace.1 && "
				"MANPATH=" PREFIX "/share/man man -w hvtrace");
	assert_non_null(out);
	assert_string_equal(out, PREFIX "/share/man/man1/hvtrace.1\n");
	free(out);
	out = hv_command_output("rm -rf " PREFIX);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_renders_without_warnings),
	    cmocka_unit_test(test_complete),
	    cmocka_unit_test(test_install),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

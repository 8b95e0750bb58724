/* host/cli/session_file.c through session_parse_args: `--session FILE` expanded in place, the same
 * options as the command line, errors naming the file and line, hostile files refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/cli/session_args.h"
#include "host/session/session_file.h"
#include "tests/common/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARGC(v) ((int)(sizeof(v) / sizeof((v)[0])))
#define FILE1	"/tmp/sess-unit-session-1.txt"
#define FILE2	"/tmp/sess-unit-session-2.txt"

static struct session s;
static char err[512];

static int setup(void **state)
{
	(void)state;
	session_init(&s);
	err[0] = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	session_free(&s);
	unlink(FILE1);
	unlink(FILE2);
	return 0;
}

static int parse(int argc, char **argv)
{
	session_free(&s);
	session_init(&s);
	err[0] = 0;
	return session_parse_args(&s, argc, argv, err, sizeof(err));
}

static void expect_error(int argc, char **argv, const char *msg)
{
	assert_int_equal(parse(argc, argv), -EINVAL);
	assert_string_equal(err, msg);
}

/* Every form a line can take gives what the command line gives. */
static void test_forms(void **state)
{
	char *argv[] = {"hvtrace", "run", "--session", FILE1, "--qemu", "--kernel", "k"};

	(void)state;
	hv_write_text(FILE1, "# a comment\n"
			     "\n"
			     "   \t\n"
			     "  # an indented comment\n"
			     "tracer function_graph\r\n"
			     "filter=vfs_*\n"
			     "filter = 'tree_*'\n"
			     "--notrace \"x y\"  \n"
			     "event do_sys_openat2(int dfd, string name)\n"
			     "funcgraph-tail\n"
			     "max-depth\t3\n"
			     "append console=ttyS0 quiet\n"
			     "console '/tmp/a b'\n"
			     "stats"); /* no newline at the end */
	assert_int_equal(parse(ARGC(argv), argv), 0);
	assert_int_equal(s.cmd, CMD_RUN);
	assert_string_equal(s.kernel, "k");
	assert_int_equal(s.tracer, TRACER_FUNCTION_GRAPH);
	assert_int_equal(s.nr_filter, 2);
	assert_string_equal(s.filter[0], "vfs_*");
	assert_string_equal(s.filter[1], "tree_*");
	assert_int_equal(s.nr_notrace, 1);
	assert_string_equal(s.notrace[0], "x y");
	assert_int_equal(s.nr_events, 1);
	assert_string_equal(s.events[0].func, "do_sys_openat2");
	assert_int_equal(s.events[0].nr_args, 2);
	assert_true(s.funcgraph_tail);
	assert_int_equal(s.max_depth, 3);
	assert_string_equal(s.append, "console=ttyS0 quiet");
	assert_string_equal(s.console, "/tmp/a b");
	assert_true(s.stats);
}

/* Options after --session win over the file's (scalars), repeatable ones add up in order; options
 * before it are overridden by the file. */
static void test_precedence(void **state)
{
	char *after[] = {"hvtrace", "run", "--session", FILE1, "--smp", "4", "-l", "b*", "g.elf"};
	char *before[] = {"hvtrace", "run", "--smp", "4", "-l", "b*", "--session", FILE1, "g.elf"};
	char eq[64];
	char *two[] = {"hvtrace", "run", eq, "--sess", FILE2, "g.elf"};

	(void)state;
	snprintf(eq, sizeof(eq), "--session=%s", FILE1);
	hv_write_text(FILE1, "smp 1\nfilter a*\n");
	hv_write_text(FILE2, "smp 3\nfilter c*\n");
	assert_int_equal(parse(ARGC(after), after), 0);
	assert_int_equal(s.smp, 4);
	assert_int_equal(s.nr_filter, 2);
	assert_string_equal(s.filter[0], "a*");
	assert_string_equal(s.filter[1], "b*");
	assert_int_equal(parse(ARGC(before), before), 0);
	assert_int_equal(s.smp, 1);
	assert_int_equal(s.nr_filter, 2);
	assert_string_equal(s.filter[0], "b*");
	assert_string_equal(s.filter[1], "a*");
	/* --session=FILE and an abbreviation, each in place */
	assert_int_equal(parse(ARGC(two), two), 0);
	assert_int_equal(s.smp, 3);
	assert_int_equal(s.nr_filter, 2);
	assert_string_equal(s.filter[1], "c*");
}

/* record, record attach and attach take session files; an option's argument that reads "--session"
 * is that option's argument; nothing after "--" is an option. */
static void test_commands(void **state)
{
	char *rec[] = {"hvtrace", "record", "attach", "--session", FILE1, "vm1"};
	char *att[] = {"hvtrace", "attach", "vm1", "--session", FILE1};
	char *as_arg[] = {"hvtrace", "run", "-o", "--session", "g.elf"};
	char *as_long_arg[] = {"hvtrace", "run",      "--append", "--session",
			       "--qemu",  "--kernel", "k"};
	char *grouped[] = {"hvtrace", "run", "-lo", "--session", "g.elf"};

	(void)state;
	hv_write_text(FILE1, "tracer function_graph\noutput x.dat\n");
	assert_int_equal(parse(ARGC(rec), rec), 0);
	assert_int_equal(s.cmd, CMD_ATTACH);
	assert_true(s.record);
	assert_string_equal(s.output, "x.dat");
	assert_string_equal(s.attach.domain, "vm1");
	assert_int_equal(s.tracer, TRACER_FUNCTION_GRAPH);
	assert_int_equal(parse(ARGC(att), att), 0);
	assert_int_equal(s.cmd, CMD_ATTACH);
	assert_false(s.record);
	assert_string_equal(s.output, "x.dat");
	assert_int_equal(parse(ARGC(as_arg), as_arg), 0);
	assert_string_equal(s.output, "--session");
	assert_string_equal(s.guest, "g.elf");
	assert_int_equal(parse(ARGC(as_long_arg), as_long_arg), 0);
	assert_string_equal(s.append, "--session");
	/* -lo: -l takes "o" as its glob, so --session is an option again (and FILE1 missing) */
	unlink(FILE1);
	expect_error(ARGC(grouped), grouped, "--session g.elf: No such file or directory");
}

/* Errors name the file and line; a value's own error keeps its wording. */
static void test_errors(void **state)
{
	char *argv[] = {"hvtrace", "run", "--session", FILE1, "g.elf"};
	char *missing[] = {"hvtrace", "run", "g.elf", "--session"};
	char *empty[] = {"hvtrace", "run", "--session=", "g.elf"};
	char *nofile[] = {"hvtrace", "run", "--session", "/nonexistent/s.txt", "g.elf"};
	char *dir[] = {"hvtrace", "run", "--session", "/tmp", "g.elf"};
	static const struct {
		const char *text, *msg;
	} cases[] = {
	    {"tracer function\n\n# x\ntracr nop\n", FILE1 ":4: unknown option 'tracr'"},
	    {"tracer\n", FILE1 ":1: option 'tracer' needs a value"},
	    {"tracer ''\n", FILE1 ":1: option 'tracer' needs a value"},
	    {"smp 2\nstats yes\n", FILE1 ":2: option 'stats' takes no value"},
	    {"smp 2\nsession other.txt\n",
	     FILE1 ":2: 'session' in a session file (session files do not nest)"},
	    {"--session=" FILE1 "\n",
	     FILE1 ":1: 'session' in a session file (session files do not nest)"},
	    {"help\n", FILE1 ":1: unknown option 'help'"},
	    {"p function\n", FILE1 ":1: unknown option 'p'"},
	    {"trace function\n",
	     FILE1 ":1: unknown option 'trace'"}, /* no abbreviations in files */
	    {"=function\n", FILE1 ":1: unknown option ''"},
	    {"\n\nsmp 0\n", FILE1 ":3: --smp '0': expected an integer in 1..64"},
	    {"mem 99999\n", FILE1 ":1: --mem '99999': expected an integer in 2..3072"},
	    {"tracer fn\n",
	     FILE1 ":1: -p 'fn': unknown tracer (available: function function_graph nop)"},
	    {"event f(int\n", FILE1 ":1: -e: expected a field name\n  f(int\n       ^"},
	    {"probe fast\n", FILE1 ":1: --probe 'fast': expected trap, stub or auto"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hv_write_text(FILE1, cases[i].text);
		expect_error(ARGC(argv), argv, cases[i].msg);
	}
	/* combination errors are the command line's, with no line to name */
	hv_write_text(FILE1, "max-depth 2\n");
	expect_error(ARGC(argv), argv, "--max-depth: needs -p function_graph");
	expect_error(ARGC(missing), missing, "--session: missing argument");
	expect_error(ARGC(empty), empty, "--session=: missing argument");
	expect_error(ARGC(nofile), nofile,
		     "--session /nonexistent/s.txt: No such file or directory");
	expect_error(ARGC(dir), dir, "--session /tmp: not a regular file (a directory)");
}

/* Hostile files: NUL bytes, lines too long, files too large, binary junk. */
static void test_hostile(void **state)
{
	char *argv[] = {"hvtrace", "run", "--session", FILE1, "g.elf"};
	static const char nul[] = "smp 1\nfilter a\0b\n";
	size_t big = SESSION_FILE_MAX_SIZE + 10;
	char *buf = malloc(big);
	char msg[128];

	(void)state;
	assert_non_null(buf);
	hv_write_file(FILE1, nul, sizeof(nul) - 1);
	expect_error(ARGC(argv), argv, FILE1 ":2: a NUL byte in the line");
	/* a line one byte over the limit is refused; one at the limit is read */
	memset(buf, 'a', SESSION_FILE_MAX_LINE + 1);
	memcpy(buf, "filter ", 7);
	hv_write_file(FILE1, buf, SESSION_FILE_MAX_LINE + 1);
	snprintf(msg, sizeof(msg), FILE1 ":1: line longer than %u bytes", SESSION_FILE_MAX_LINE);
	expect_error(ARGC(argv), argv, msg);
	hv_write_file(FILE1, buf, SESSION_FILE_MAX_LINE);
	assert_int_equal(parse(ARGC(argv), argv), 0);
	assert_int_equal(strlen(s.filter[0]), SESSION_FILE_MAX_LINE - 7);
	/* a file over the size limit, made of blank lines */
	memset(buf, '\n', big);
	hv_write_file(FILE1, buf, big);
	snprintf(msg, sizeof(msg),
		 "--session " FILE1 ": %zu bytes, larger than the %u bytes an input may have", big,
		 SESSION_FILE_MAX_SIZE);
	expect_error(ARGC(argv), argv, msg);
	/* blank lines up to the limit are fine */
	hv_write_file(FILE1, buf, SESSION_FILE_MAX_SIZE);
	assert_int_equal(parse(ARGC(argv), argv), 0);
	/* junk bytes: no text, named by the first of them, escaped (issue 37) */
	for (size_t i = 0; i < 200; i++)
		buf[i] = (char)(0x80 + i % 100);
	hv_write_file(FILE1, buf, 200);
	expect_error(ARGC(argv), argv,
		     FILE1 ":1: byte \\x80 at column 1: not UTF-8 text (session files are text)");
	/* a long unknown word is shown at most 64 bytes long */
	memset(buf, 'z', 200);
	hv_write_file(FILE1, buf, 200);
	assert_int_equal(parse(ARGC(argv), argv), -EINVAL);
	assert_int_equal(strncmp(err, FILE1 ":1: unknown option '", strlen(FILE1) + 20), 0);
	assert_int_equal(strlen(err), strlen(FILE1) + 20 + 64 + 1);
	free(buf);
}

/* Whether @s holds a byte that is no printable ASCII (an escape, a newline, anything raw). */
static bool has_raw_byte(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return true;
	return false;
}

/* Issue 37, class 8: bytes of a session file never reach an error line raw. A terminal escape in
 * a value, in an option's name, a C1 control in UTF-8, a bare CR: each refused, the byte named
 * escaped; whatever the option that would echo the value later. UTF-8 text and CRLF lines are
 * fine. */
static void test_control_bytes(void **state)
{
	char *argv[] = {"hvtrace", "run", "--session", FILE1, "g.elf"};
	static const struct {
		const char *text, *msg;
	} cases[] = {
	    {"tracer \x1b]0;title\x07\x1b[2J\n",
	     FILE1 ":1: byte \\x1b at column 8: a control character (session files are text)"},
	    {"smp 1\n\x1b[31mtracer nop\n",
	     FILE1 ":2: byte \\x1b at column 1: a control character (session files are text)"},
	    {"filter a\rhvtrace: forged\n",
	     FILE1 ":1: byte \\r at column 9: a control character (session files are text)"},
	    {"filter \xc2\x9b"
	     "2J\n",
	     FILE1 ":1: byte \\xc2 at column 8: a control character (session files are text)"},
	    {"filter \xff\n",
	     FILE1 ":1: byte \\xff at column 8: not UTF-8 text (session files are text)"},
	    {"filter a\x7f\n",
	     FILE1 ":1: byte \\x7f at column 9: a control character (session files are text)"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hv_write_text(FILE1, cases[i].text);
		expect_error(ARGC(argv), argv, cases[i].msg);
		assert_false(has_raw_byte(err));
	}
	hv_write_text(FILE1, "filter caf\xc3\xa9_*\r\ntracer\tfunction\r\n");
	assert_int_equal(parse(ARGC(argv), argv), 0);
	assert_string_equal(s.filter[0], "caf\xc3\xa9_*");
	assert_int_equal(s.tracer, TRACER_FUNCTION);
}

/* A UTF-8 byte order mark before the first line is no part of it. */
static void test_bom(void **state)
{
	char *argv[] = {"hvtrace", "run", "--session", FILE1, "g.elf"};

	(void)state;
	hv_write_text(FILE1, "\xef\xbb\xbftracer nop\n");
	assert_int_equal(parse(ARGC(argv), argv), 0);
	assert_int_equal(s.tracer, TRACER_NOP);
	hv_write_text(FILE1, "\xef\xbb\xbf\xef\xbb\xbftracer nop\n"); /* only one */
	expect_error(ARGC(argv), argv, FILE1 ":1: unknown option '\\xef\\xbb\\xbftracer'");
}

/* A FIFO is refused at once, never waited on (issue 37, class 5): the test would hang else, so
 * an alarm ends it. */
static void test_fifo(void **state)
{
	char *argv[] = {"hvtrace", "run", "--session", FILE1, "g.elf"};

	(void)state;
	unlink(FILE1);
	assert_int_equal(mkfifo(FILE1, 0600), 0);
	alarm(20);
	expect_error(ARGC(argv), argv, "--session " FILE1 ": not a regular file (a FIFO)");
	alarm(0);
	unlink(FILE1);
}

/* --session - reads standard input, once. */
static void test_stdin(void **state)
{
	char *argv[] = {"hvtrace", "run", "--session", "-", "g.elf"};
	char *twice[] = {"hvtrace", "run", "--session", "-", "--session", "-", "g.elf"};
	int saved = dup(0), fd;

	(void)state;
	hv_write_text(FILE1, "tracer nop\nbogus 1\n");
	fd = open(FILE1, O_RDONLY);
	assert_true(fd >= 0 && saved >= 0);
	assert_int_equal(dup2(fd, 0), 0);
	close(fd);
	expect_error(ARGC(argv), argv, "<stdin>:2: unknown option 'bogus'");
	hv_write_text(FILE1, "tracer nop\n");
	fd = open(FILE1, O_RDONLY);
	assert_int_equal(dup2(fd, 0), 0);
	close(fd);
	assert_int_equal(parse(ARGC(argv), argv), 0);
	assert_int_equal(s.tracer, TRACER_NOP);
	expect_error(ARGC(twice), twice, "--session -: standard input given twice");
	assert_int_equal(dup2(saved, 0), 0);
	close(saved);
}

/* session_expand alone: the words, and the origin of each. */
static void test_expand_words(void **state)
{
	static const struct option opts[] = {
	    {"tracer", required_argument, NULL, 'p'},
	    {"stats", no_argument, NULL, 1},
	    {"session", required_argument, NULL, 2},
	    {NULL, 0, NULL, 0},
	};
	char *argv[] = {"hvtrace", "-p", "nop", "--session", FILE1, "--", "--session", "x"};
	struct session_words w;

	(void)state;
	hv_write_text(FILE1, "stats\n\ntracer  function  \n");
	assert_int_equal(session_expand(ARGC(argv), argv, opts, ":p:", &w, err, sizeof(err)), 0);
	assert_int_equal(w.argc, 8);
	assert_string_equal(w.argv[1], "-p");
	assert_string_equal(w.argv[2], "nop");
	assert_string_equal(w.argv[3], "--stats");
	assert_string_equal(w.argv[4], "--tracer=function");
	assert_string_equal(w.argv[5], "--");
	assert_string_equal(w.argv[6], "--session");
	assert_null(w.argv[8]);
	assert_null(session_words_origin(&w, w.argv[2]));
	assert_int_equal(session_words_origin(&w, w.argv[4] + 9)->line, 3);
	assert_string_equal(session_words_origin(&w, w.argv[3])->file, FILE1);
	session_words_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_forms, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_control_bytes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bom, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fifo, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_precedence, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_commands, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stdin, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_expand_words, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

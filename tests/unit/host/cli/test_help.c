/* host/cli/help.c: per-command help (`hvtrace CMD --help`, `hvtrace help CMD`), through the parser and
 * through ./hvtrace itself. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/cli/help.h"
#include "host/cli/session_args.h"
#include "tests/common/hv_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARGC(v) ((int)(sizeof(v) / sizeof((v)[0])))

static char *help_of(const char *cmd)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(help_print(f, session_usage, cmd), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* Whether @help describes option --@name (at the start of its line). */
static bool shows(const char *help, const char *name)
{
	char key[64];

	snprintf(key, sizeof(key), "--%s ", name);
	for (const char *p = help; (p = strstr(p, key)); p++) {
		const char *bol = p;

		while (bol > help && bol[-1] != '\n')
			bol--;
		if (strspn(bol, " -abcdefghijklmnopqrstuvwxyz,") >= (size_t)(p - bol))
			return true;
	}
	return false;
}

static void test_run_attach(void **state)
{
	char *run = help_of("run"), *attach = help_of("attach"), *rec = help_of("record");
	static const char *const common[] = {"tracer", "filter", "event", "output", "session",
					     "duration", "expect-call", "probe", NULL};

	(void)state;
	assert_int_equal(strncmp(run, "usage: hvtrace run [options] GUEST.elf ", 39), 0);
	assert_int_equal(strncmp(attach, "usage: hvtrace attach [-c URI] NAME ", 36), 0);
	assert_int_equal(strncmp(rec, "usage: hvtrace record [attach] ", 31), 0);
	for (const char *const *o = common; *o; o++) {
		assert_true(shows(run, *o));
		assert_true(shows(attach, *o));
		assert_true(shows(rec, *o));
	}
	/* launching QEMU is run's, joining one attach's */
	assert_true(shows(run, "kernel") && shows(run, "smp") && shows(run, "qemu"));
	assert_false(shows(run, "qmp") || shows(run, "pid") || shows(run, "connect"));
	assert_true(shows(attach, "qmp") && shows(attach, "pid") && shows(attach, "connect"));
	assert_false(shows(attach, "kernel") || shows(attach, "smp") || shows(attach, "qemu"));
	assert_true(shows(rec, "kernel") && shows(rec, "qmp"));
	/* --format is every command's (one vocabulary; record's: tracedat); --quiet is everyone's */
	assert_true(shows(run, "format") && shows(attach, "format") && shows(rec, "format"));
	assert_true(shows(run, "quiet") && shows(attach, "quiet") && shows(rec, "quiet"));
	/* no other command's synopsis */
	assert_null(strstr(run, "hvtrace attach"));
	assert_null(strstr(attach, "hvtrace run"));
	assert_null(strstr(run, "hvtrace report"));
	assert_non_null(strstr(run, "\nGLOBs are ftrace's"));
	free(run);
	free(attach);
	free(rec);
}

static void test_report_list(void **state)
{
	char *rep = help_of("report"), *list = help_of("list-functions"), *all = help_of(NULL);

	(void)state;
	assert_int_equal(strncmp(rep, "usage: hvtrace report [-i FILE] ", 32), 0);
	assert_true(shows(rep, "input") && shows(rep, "format") && shows(rep, "funcgraph-tail"));
	assert_false(shows(rep, "tracer") || shows(rep, "smp"));
	assert_int_equal(strncmp(list, "usage: hvtrace list-functions GUEST.elf | NAME ", 47), 0);
	assert_true(shows(list, "qmp") && shows(list, "pid") && shows(list, "connect"));
	assert_false(shows(list, "tracer") || shows(list, "filter") || shows(list, "kernel"));
	assert_null(strstr(list, "GLOBs"));
	assert_string_equal(all, session_usage);
	free(rep);
	free(list);
	free(all);
}

/* Which help the parser asks for. */
static void test_parse(void **state)
{
	static const struct {
		const char *argv[5];
		const char *cmd;
	} cases[] = {
	    {{"hvtrace", "run", "--help"}, "run"},
	    {{"hvtrace", "run", "-p", "nop", "-h"}, "run"},
	    {{"hvtrace", "attach", "--help"}, "attach"},
	    {{"hvtrace", "record", "--help"}, "record"},
	    {{"hvtrace", "record", "attach", "--help"}, "record"},
	    {{"hvtrace", "report", "--help"}, "report"},
	    {{"hvtrace", "list-functions", "--help"}, "list-functions"},
	    {{"hvtrace", "list-functions", "g.elf", "--help"}, "list-functions"},
	    {{"hvtrace", "help", "attach"}, "attach"},
	    {{"hvtrace", "--help", "report"}, "report"},
	    {{"hvtrace", "help"}, NULL},
	    {{"hvtrace", "--help"}, NULL},
	};
	char *bad[] = {"hvtrace", "help", "trace"};
	char *extra[] = {"hvtrace", "help", "run", "x"};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct session s;
		int argc = 0;

		while (argc < 5 && cases[i].argv[argc])
			argc++;
		session_init(&s);
		assert_int_equal(session_parse_args(&s, argc, (char **)cases[i].argv, err, sizeof(err)),
				 0);
		assert_int_equal(s.cmd, CMD_HELP);
		if (cases[i].cmd)
			assert_string_equal(s.help_cmd, cases[i].cmd);
		else
			assert_null(s.help_cmd);
		session_free(&s);
	}
	for (int k = 0; k < 2; k++) {
		struct session s;

		session_init(&s);
		assert_int_equal(session_parse_args(&s, k ? ARGC(extra) : ARGC(bad), k ? extra : bad, err,
						    sizeof(err)),
				 -EINVAL);
		assert_string_equal(err, k ? "'x': unexpected argument after help run"
					   : "help trace: expected one of run, attach, record, report, "
					     "list-functions");
		session_free(&s);
	}
}

/* ./hvtrace: CMD --help and help CMD print the same, exit 0. */
static void test_binary(void **state)
{
	static const char *const cmds[] = {"run", "attach", "record", "report", "list-functions"};
	char cmd[512];

	(void)state;
	for (size_t i = 0; i < 5; i++) {
		char *a, *b, *want = help_of(cmds[i]);

		snprintf(cmd, sizeof(cmd), "%s %s --help", hv_binary(), cmds[i]);
		a = hv_command_output(cmd);
		snprintf(cmd, sizeof(cmd), "%s help %s", hv_binary(), cmds[i]);
		b = hv_command_output(cmd);
		assert_non_null(a);
		assert_non_null(b);
		assert_string_equal(a, want);
		assert_string_equal(b, want);
		free(a);
		free(b);
		free(want);
	}
	snprintf(cmd, sizeof(cmd), "%s help nosuch 2>&1", hv_binary());
	assert_null(hv_command_output(cmd)); /* exit status 2 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_run_attach),
	    cmocka_unit_test(test_report_list),
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_binary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

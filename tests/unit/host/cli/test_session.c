/* host/session.c: `hvtrace` command-line parsing into a session, and its error messages. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/cli/session_args.h"
#include "host/sink/sink_format.h"
#include "host/qemu/qemu_launch.h"

#include <errno.h>
#include <string.h>

#define ARGC(v) ((int)(sizeof(v) / sizeof((v)[0])))

/* Each test gets a fresh session (session_init) and frees it afterwards (session_free). */
struct cli {
	struct session s;
	char err[256];
};

static struct cli cli;

static int cli_setup(void **state)
{
	(void)state;
	session_init(&cli.s);
	memset(cli.err, 0, sizeof(cli.err));
	return 0;
}

static int cli_teardown(void **state)
{
	(void)state;
	session_free(&cli.s);
	return 0;
}

/* Parses @argv; on error returns the code with the message in cli.err. */
static int parse(int argc, char **argv)
{
	return session_parse_args(&cli.s, argc, argv, cli.err, sizeof(cli.err));
}

/* Parses and expects -EINVAL with exactly @msg. Re-initialises the session first. */
static void expect_error(int argc, char **argv, const char *msg)
{
	session_free(&cli.s);
	session_init(&cli.s);
	cli.err[0] = 0;
	assert_int_equal(parse(argc, argv), -EINVAL);
	assert_string_equal(cli.err, msg);
}

/* ---- defaults and the full option set ------------------------------------------------------- */

/* record: run or attach into trace.dat; report: its input and format. */
static void test_record_report(void **state)
{
	char *rec[] = {"hvtrace", "record", "-p", "function_graph", "g.elf"};
	char *rec_o[] = {"hvtrace", "record", "-o", "x.dat", "--qemu", "--kernel", "vmlinuz"};
	char *rec_attach[] = {"hvtrace", "record", "attach", "vm1", "-e", "f(int a)"};
	char *rep[] = {"hvtrace", "report"};
	char *rep_all[] = {"hvtrace", "report", "-i", "a.dat", "--format", "folded",
			   "--funcgraph-retval"};
	char *bad_fmt[] = {"hvtrace", "report", "--format", "xml"};
	char *bad_arg[] = {"hvtrace", "report", "a.dat"};
	char *bad_opt[] = {"hvtrace", "report", "-p", "function"};

	(void)state;
	assert_int_equal(parse(ARGC(rec), rec), 0);
	assert_int_equal(cli.s.cmd, CMD_RUN);
	assert_true(cli.s.record);
	assert_string_equal(cli.s.output, "trace.dat");
	assert_string_equal(cli.s.guest, "g.elf");
	assert_int_equal(cli.s.tracer, TRACER_FUNCTION_GRAPH);
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(ARGC(rec_o), rec_o), 0);
	assert_true(cli.s.record && cli.s.vmm == VMM_QEMU);
	assert_string_equal(cli.s.output, "x.dat");
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(ARGC(rec_attach), rec_attach), 0);
	assert_int_equal(cli.s.cmd, CMD_ATTACH);
	assert_true(cli.s.record);
	assert_string_equal(cli.s.attach.domain, "vm1");
	assert_int_equal(cli.s.nr_events, 1);
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(ARGC(rep), rep), 0);
	assert_int_equal(cli.s.cmd, CMD_REPORT);
	assert_string_equal(cli.s.input, "trace.dat");
	assert_null(cli.s.format); /* the default: graph or text by the file's events */
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(ARGC(rep_all), rep_all), 0);
	assert_string_equal(cli.s.input, "a.dat");
	assert_ptr_equal(cli.s.format, sink_format_find("folded"));
	assert_true(cli.s.funcgraph_retval);
	{
		char *host[] = {"hvtrace", "record", "--qemu", "--kernel", "vmlinuz", "--host",
				"--host-event", "irq:irq_handler_entry", "--host-event", "kvm:kvm_mmio"};
		char *host_run[] = {"hvtrace", "run", "--qemu", "--kernel", "vmlinuz", "--host"};
		char *host_event_run[] = {"hvtrace", "attach", "vm1", "--host-event", "irq:x"};
		char *host_elf[] = {"hvtrace", "record", "--host", "g.elf"};
		char *host_pipe[] = {"hvtrace", "record", "attach", "vm1", "--host", "-o", "-"};
		char *host_bad[] = {"hvtrace", "record", "attach", "vm1", "--host-event", "sched"};
		char *host_bad2[] = {"hvtrace", "record", "attach", "vm1", "--host-event", "a:b/c"};

		session_free(&cli.s);
		session_init(&cli.s);
		assert_int_equal(parse(ARGC(host), host), 0);
		assert_true(cli.s.host);
		assert_int_equal(cli.s.nr_host_events, 2);
		assert_string_equal(cli.s.host_events[1], "kvm:kvm_mmio");
		expect_error(ARGC(host_run), host_run,
			     "--host: the host's trace goes beside a trace.dat (use record)");
		expect_error(ARGC(host_event_run), host_event_run,
			     "--host-event: the host's trace goes beside a trace.dat (use record)");
		session_free(&cli.s);
		session_init(&cli.s);
		assert_int_equal(parse(ARGC(host_elf), host_elf), 0);
		assert_true(cli.s.host && cli.s.record);
		expect_error(ARGC(host_pipe), host_pipe,
			     "--host: -o - (a pipe) has no name to put the host's file beside");
		expect_error(ARGC(host_bad), host_bad, "--host-event sched: expected SYSTEM:EVENT");
		expect_error(ARGC(host_bad2), host_bad2, "--host-event a:b/c: expected SYSTEM:EVENT");
	}
	{
		char *exits[] = {"hvtrace", "report", "--exits", "-i", "g.dat", "--host-input", "h.dat"};
		char *no_exits[] = {"hvtrace", "report", "--host-input", "h.dat"};
		char *exits_fmt[] = {"hvtrace", "report", "--exits", "--format", "text"};

		session_free(&cli.s);
		session_init(&cli.s);
		assert_int_equal(parse(ARGC(exits), exits), 0);
		assert_true(cli.s.report_exits);
		assert_string_equal(cli.s.host_input, "h.dat");
		expect_error(ARGC(no_exits), no_exits, "--host-input: goes with --exits");
		expect_error(ARGC(exits_fmt), exits_fmt,
			     "--exits: a table of its own (no --format, --funcgraph-*)");
	}
	expect_error(ARGC(bad_fmt), bad_fmt,
		     "--format 'xml': expected text, graph, json, jsonl, folded or tracedat");
	expect_error(ARGC(bad_arg), bad_arg, "'a.dat': unexpected argument (report -i FILE)");
	expect_error(ARGC(bad_opt), bad_opt, "-p: unknown report option");
}

static void test_defaults(void **state)
{
	char *argv[] = {"hvtrace", "run", "g.elf"};

	(void)state;
	assert_int_equal(cli.s.cmd, CMD_NONE);
	assert_int_equal(cli.s.tracer, TRACER_FUNCTION);
	assert_int_equal(cli.s.smp, 2);
	assert_int_equal(cli.s.mem_mb, 64);
	assert_int_equal(cli.s.buffer_size_kb, 4096);

	assert_int_equal(parse(ARGC(argv), argv), 0);
	assert_int_equal(cli.s.cmd, CMD_RUN);
	assert_int_equal(cli.s.tracer, TRACER_FUNCTION);
	assert_ptr_equal(cli.s.guest, argv[2]);
	assert_int_equal(cli.s.nr_filter, 0);
	assert_null(cli.s.filter);
	assert_int_equal(cli.s.nr_notrace, 0);
	assert_null(cli.s.notrace);
	assert_null(cli.s.output);
	assert_null(cli.s.console);
	assert_int_equal(cli.s.smp, 2);
	assert_int_equal(cli.s.mem_mb, 64);
	assert_true(cli.s.timeout == 0.0);
	assert_true(cli.s.duration == 0.0);
	assert_int_equal(cli.s.buffer_size_kb, 4096);
	assert_false(cli.s.buffer_size_set);
	assert_false(cli.s.stats);
	assert_string_equal(cli.err, "");
}

static void test_all_options(void **state)
{
	/* clang-format off */
	char *argv[] = {"hvtrace", "run",
			"-p", "function_graph",
			"-l", "fib",
			"-l", "tree_*",
			"-n", "tree_leaf",
			"-o", "out",
			"--console", "con",
			"--smp", "4",
			"--mem", "128",
			"--timeout", "2.5",
			"--buffer-size-kb", "64",
			"--stats",
			"g.elf"};
	/* clang-format on */

	(void)state;
	assert_int_equal(parse(ARGC(argv), argv), 0);
	assert_int_equal(cli.s.cmd, CMD_RUN);
	assert_int_equal(cli.s.tracer, TRACER_FUNCTION_GRAPH);
	assert_int_equal(cli.s.nr_filter, 2);
	assert_string_equal(cli.s.filter[0], "fib");
	assert_string_equal(cli.s.filter[1], "tree_*");
	assert_int_equal(cli.s.nr_notrace, 1);
	assert_string_equal(cli.s.notrace[0], "tree_leaf");
	assert_string_equal(cli.s.output, "out");
	assert_string_equal(cli.s.console, "con");
	assert_int_equal(cli.s.smp, 4);
	assert_int_equal(cli.s.mem_mb, 128);
	assert_true(cli.s.timeout == 2.5);
	assert_int_equal(cli.s.buffer_size_kb, 64);
	assert_true(cli.s.buffer_size_set);
	assert_true(cli.s.stats);
	assert_string_equal(cli.s.guest, "g.elf");
	/* strings point into argv */
	assert_ptr_equal(cli.s.filter[1], argv[7]);
	assert_ptr_equal(cli.s.guest, argv[ARGC(argv) - 1]);
}

/* --trigger FUNC:hist goes to the hist triggers, the function commands stay triggers; a bad hist
 * spec is one line naming what is wrong. */
static void test_hist_triggers(void **state)
{
	char *argv[] = {"hvtrace", "attach", "--qmp", "q.sock", "-p", "nop", "-l", "vfs_read",
			"--trigger", "vfs_read:hist:keys=common_pid.execname", "--trigger",
			"vfs_read:traceoff", "--trigger", "vfs_read:hist:keys=duration.log2"};
	char *bad[] = {"hvtrace", "attach", "--qmp", "q.sock", "--trigger",
		       "vfs_read:hist:keys=common_pid:sort=ip"};

	(void)state;
	assert_int_equal(parse(ARGC(argv), argv), 0);
	assert_int_equal(cli.s.nr_hists, 2);
	assert_int_equal(cli.s.nr_triggers, 1);
	assert_string_equal(cli.s.hists[0].func, "vfs_read");
	assert_int_equal(cli.s.hists[0].keys[0].mod, HIST_MOD_EXECNAME);
	assert_int_equal(cli.s.hists[1].keys[0].src, HIST_SRC_DURATION);
	assert_int_equal(cli.s.triggers[0].cmd, TRIG_TRACEOFF);
	expect_error(ARGC(bad), bad,
		     "--trigger 'vfs_read:hist:keys=common_pid:sort=ip': sort: ip: sort field must "
		     "be a key or a val");
}

/* Long spellings, --opt=value, and range limits accepted. */
static void test_long_forms(void **state)
{
	char *argv[] = {"hvtrace",
			"run",
			"--tracer=function",
			"--filter",
			"a*",
			"--notrace=b",
			"--output",
			"o",
			"--smp=64",
			"--mem=3072",
			"--buffer-size-kb=4",
			"--timeout=1e-3",
			"--duration",
			"1.5",
			"x.elf"};
	char *argv2[] = {"hvtrace",	     "run",	"--smp", "1", "--mem", "2",
			 "--buffer-size-kb", "1048576", "x.elf"};

	(void)state;
	assert_int_equal(parse(ARGC(argv), argv), 0);
	assert_int_equal(cli.s.tracer, TRACER_FUNCTION);
	assert_int_equal(cli.s.nr_filter, 1);
	assert_string_equal(cli.s.filter[0], "a*");
	assert_int_equal(cli.s.nr_notrace, 1);
	assert_string_equal(cli.s.notrace[0], "b");
	assert_string_equal(cli.s.output, "o");
	assert_int_equal(cli.s.smp, 64);
	assert_int_equal(cli.s.mem_mb, 3072);
	assert_int_equal(cli.s.buffer_size_kb, 4);
	assert_true(cli.s.timeout == 1e-3);
	assert_true(cli.s.duration == 1.5);

	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(ARGC(argv2), argv2), 0);
	assert_int_equal(cli.s.smp, 1);
	assert_int_equal(cli.s.mem_mb, 2);
	assert_int_equal(cli.s.buffer_size_kb, 1048576);
	assert_true(cli.s.buffer_size_set);
}

/* function_graph and its options: -g globs, --max-depth, return values, tail names, profile. */
static void test_graph_options(void **state)
{
	/* clang-format off */
	char *argv[] = {"hvtrace", "run",
			"-p", "function_graph",
			"-g", "tree_root",
			"--graph-function", "fib",
			"--max-depth", "3",
			"--funcgraph-retval",
			"--funcgraph-tail",
			"--profile",
			"g.elf"};
	/* clang-format on */

	(void)state;
	assert_int_equal(cli.s.nr_graph, 0);
	assert_int_equal(cli.s.max_depth, 0);
	assert_int_equal(parse(ARGC(argv), argv), 0);
	assert_int_equal(cli.s.tracer, TRACER_FUNCTION_GRAPH);
	assert_int_equal(cli.s.nr_graph, 2);
	assert_string_equal(cli.s.graph[0], "tree_root");
	assert_string_equal(cli.s.graph[1], "fib");
	assert_int_equal(cli.s.max_depth, 3);
	assert_true(cli.s.funcgraph_retval);
	assert_false(cli.s.funcgraph_retval_hex);
	assert_true(cli.s.funcgraph_tail);
	assert_true(cli.s.profile);
	assert_string_equal(cli.s.guest, "g.elf");
}

/* --funcgraph-retval-hex prints return values, all in hex: it implies --funcgraph-retval. */
static void test_graph_retval_hex(void **state)
{
	char *argv[] = {"hvtrace", "run", "-p", "function_graph", "--funcgraph-retval-hex", "g.elf"};

	(void)state;
	assert_int_equal(parse(ARGC(argv), argv), 0);
	assert_true(cli.s.funcgraph_retval);
	assert_true(cli.s.funcgraph_retval_hex);
}

/* The graph-only options need -p function_graph; --max-depth is 1..255. */
static void test_error_graph_options(void **state)
{
	(void)state;
	expect_error(5, (char *[]){"hvtrace", "run", "-g", "fib", "g.elf"},
		     "-g: needs -p function_graph");
	expect_error(7, (char *[]){"hvtrace", "run", "-p", "nop", "--max-depth", "2", "g.elf"},
		     "--max-depth: needs -p function_graph");
	expect_error(4, (char *[]){"hvtrace", "run", "--funcgraph-retval", "g.elf"},
		     "--funcgraph-retval: needs -p function_graph");
	expect_error(4, (char *[]){"hvtrace", "run", "--funcgraph-tail", "g.elf"},
		     "--funcgraph-tail: needs -p function_graph");
	expect_error(4, (char *[]){"hvtrace", "run", "--funcgraph-retval-hex", "g.elf"},
		     "--funcgraph-retval-hex: needs -p function_graph");
	expect_error(
	    7, (char *[]){"hvtrace", "run", "-p", "function_graph", "--max-depth", "0", "g.elf"},
	    "--max-depth '0': expected an integer in 1..255");
	expect_error(
	    7, (char *[]){"hvtrace", "run", "-p", "function_graph", "--max-depth", "256", "g.elf"},
	    "--max-depth '256': expected an integer in 1..255");
}

/* Parsing twice in a row works: getopt's state is reset by the parser. */
static void test_reparse(void **state)
{
	char *a[] = {"hvtrace", "run", "--smp", "3", "a.elf"};
	char *b[] = {"hvtrace", "run", "-l", "x", "--smp", "5", "b.elf"};

	(void)state;
	assert_int_equal(parse(ARGC(a), a), 0);
	assert_int_equal(cli.s.smp, 3);
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(ARGC(b), b), 0);
	assert_int_equal(cli.s.smp, 5);
	assert_int_equal(cli.s.nr_filter, 1);
	assert_string_equal(cli.s.guest, "b.elf");
}

/* ---- commands ------------------------------------------------------------------------------- */

static void test_commands(void **state)
{
	char *lf[] = {"hvtrace", "list-functions", "g.elf"};
	char *help1[] = {"hvtrace", "--help"};
	char *help2[] = {"hvtrace", "-h"};
	char *help3[] = {"hvtrace", "help"};
	char *help4[] = {"hvtrace", "run", "--help"};
	char *version[] = {"hvtrace", "--version"};

	(void)state;
	assert_int_equal(parse(ARGC(lf), lf), 0);
	assert_int_equal(cli.s.cmd, CMD_LIST_FUNCTIONS);
	assert_string_equal(cli.s.guest, "g.elf");

	assert_int_equal(parse(ARGC(help1), help1), 0);
	assert_int_equal(cli.s.cmd, CMD_HELP);
	cli.s.cmd = CMD_NONE;
	assert_int_equal(parse(ARGC(help2), help2), 0);
	assert_int_equal(cli.s.cmd, CMD_HELP);
	cli.s.cmd = CMD_NONE;
	assert_int_equal(parse(ARGC(help3), help3), 0);
	assert_int_equal(cli.s.cmd, CMD_HELP);
	cli.s.cmd = CMD_NONE;
	assert_int_equal(parse(ARGC(help4), help4), 0);
	assert_int_equal(cli.s.cmd, CMD_HELP);

	assert_int_equal(parse(ARGC(version), version), 0);
	assert_int_equal(cli.s.cmd, CMD_VERSION);

	assert_non_null(strstr(session_usage, "usage: hvtrace run [options] GUEST.elf"));
	assert_string_equal(tracer_name(TRACER_FUNCTION), "function");
	assert_string_equal(tracer_name(TRACER_NOP), "nop");
	assert_string_equal(tracer_name(TRACER_FUNCTION_GRAPH), "function_graph");
}

/* ---- errors --------------------------------------------------------------------------------- */

static void test_error_commands(void **state)
{
	(void)state;
	expect_error(1, (char *[]){"hvtrace"}, "missing command (see hvtrace --help)");
	expect_error(3, (char *[]){"hvtrace", "trace", "g.elf"},
		     "'trace': unknown command (run, attach, record, report, list-functions)");
	expect_error(2, (char *[]){"hvtrace", "list-functions"},
		     "list-functions: give exactly one of GUEST.elf, NAME, --qmp SOCKET, --pid PID");
	expect_error(4, (char *[]){"hvtrace", "list-functions", "a.elf", "b.elf"},
		     "list-functions: expected exactly one GUEST.elf");
	expect_error(3, (char *[]){"hvtrace", "list-functions", "-x"}, "-x: unknown option");
	expect_error(4, (char *[]){"hvtrace", "list-functions", "vm1", "vm2"},
		     "'vm2': unexpected argument after NAME");
}

static void test_error_guest_args(void **state)
{
	(void)state;
	expect_error(2, (char *[]){"hvtrace", "run"},
		     "run: missing GUEST.elf (see hvtrace --help)");
	expect_error(4, (char *[]){"hvtrace", "run", "--smp", "4"},
		     "run: missing GUEST.elf (see hvtrace --help)");
	expect_error(4, (char *[]){"hvtrace", "run", "a.elf", "b.elf"},
		     "'b.elf': unexpected argument after GUEST.elf");
	/* options may also follow the guest (GNU argument order, like `attach NAME --duration 3`) */
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(5, (char *[]){"hvtrace", "run", "a.elf", "--smp", "4", NULL}), 0);
	assert_string_equal(cli.s.guest, "a.elf");
	assert_int_equal(cli.s.smp, 4);
	expect_error(6, (char *[]){"hvtrace", "run", "a.elf", "--smp", "4", "b.elf"},
		     "'b.elf': unexpected argument after GUEST.elf");
}

static void test_error_tracer(void **state)
{
	(void)state;
	expect_error(5, (char *[]){"hvtrace", "run", "-p", "bogus", "g.elf"},
		     "-p 'bogus': unknown tracer (available: function function_graph nop)");
	expect_error(4, (char *[]){"hvtrace", "run", "--tracer=graph", "g.elf"},
		     "-p 'graph': unknown tracer (available: function function_graph nop)");
	expect_error(5, (char *[]){"hvtrace", "run", "-p", "", "g.elf"},
		     "-p '': unknown tracer (available: function function_graph nop)");
}

static void test_error_numbers(void **state)
{
	(void)state;
	expect_error(5, (char *[]){"hvtrace", "run", "--smp", "0", "g.elf"},
		     "--smp '0': expected an integer in 1..64");
	expect_error(5, (char *[]){"hvtrace", "run", "--smp", "abc", "g.elf"},
		     "--smp 'abc': expected an integer in 1..64");
	expect_error(5, (char *[]){"hvtrace", "run", "--smp", "65", "g.elf"},
		     "--smp '65': expected an integer in 1..64");
	expect_error(5, (char *[]){"hvtrace", "run", "--smp", "4x", "g.elf"},
		     "--smp '4x': expected an integer in 1..64");
	expect_error(5, (char *[]){"hvtrace", "run", "--smp", "-1", "g.elf"},
		     "--smp '-1': expected an integer in 1..64");
	expect_error(5, (char *[]){"hvtrace", "run", "--smp", "", "g.elf"},
		     "--smp '': expected an integer in 1..64");
	expect_error(5, (char *[]){"hvtrace", "run", "--mem", "1", "g.elf"},
		     "--mem '1': expected an integer in 2..3072");
	expect_error(5, (char *[]){"hvtrace", "run", "--mem", "3073", "g.elf"},
		     "--mem '3073': expected an integer in 2..3072");
	expect_error(5, (char *[]){"hvtrace", "run", "--mem", "99999999999999999999", "g.elf"},
		     "--mem '99999999999999999999': expected an integer in 2..3072");
	expect_error(5, (char *[]){"hvtrace", "run", "--buffer-size-kb", "3", "g.elf"},
		     "--buffer-size-kb '3': expected an integer in 4..1048576");
	expect_error(5, (char *[]){"hvtrace", "run", "--buffer-size-kb", "1048577", "g.elf"},
		     "--buffer-size-kb '1048577': expected an integer in 4..1048576");
	expect_error(5, (char *[]){"hvtrace", "run", "--timeout", "-1", "g.elf"},
		     "--timeout '-1': expected seconds > 0");
	expect_error(5, (char *[]){"hvtrace", "run", "--timeout", "0", "g.elf"},
		     "--timeout '0': expected seconds > 0");
	expect_error(5, (char *[]){"hvtrace", "run", "--timeout", "soon", "g.elf"},
		     "--timeout 'soon': expected seconds > 0");
	expect_error(5, (char *[]){"hvtrace", "run", "--timeout", "nan", "g.elf"},
		     "--timeout 'nan': expected seconds > 0");
	expect_error(5, (char *[]){"hvtrace", "run", "--timeout", "2s", "g.elf"},
		     "--timeout '2s': expected seconds > 0");
	expect_error(5, (char *[]){"hvtrace", "run", "--duration", "0", "g.elf"},
		     "--duration '0': expected seconds > 0");
	expect_error(4, (char *[]){"hvtrace", "run", "--duration=-3", "g.elf"},
		     "--duration '-3': expected seconds > 0");
}

static void test_error_options(void **state)
{
	(void)state;
	expect_error(4, (char *[]){"hvtrace", "run", "--bogus", "g.elf"},
		     "--bogus: unknown option");
	expect_error(4, (char *[]){"hvtrace", "run", "-x", "g.elf"}, "-x: unknown option");
	expect_error(3, (char *[]){"hvtrace", "run", "--smp"}, "--smp: missing argument");
	expect_error(3, (char *[]){"hvtrace", "run", "-l"}, "-l: missing argument");
	expect_error(5, (char *[]){"hvtrace", "run", "-l", "fib", "-n"}, "-n: missing argument");
	expect_error(3, (char *[]){"hvtrace", "run", "--output"}, "--output: missing argument");
}

/* An unknown option inside a group of short options is named, not the argument before the group. */
static void test_error_grouped_short_option(void **state)
{
	(void)state;
	expect_error(5, (char *[]){"hvtrace", "run", "-xp", "nop", "g.elf"}, "-x: unknown option");
	expect_error(6, (char *[]){"hvtrace", "run", "-p", "nop", "-xq", "g.elf"},
		     "-x: unknown option");
}

/* ---- Linux guests: run --qemu and attach ---------------------------------------------------- */

static void test_qemu_run(void **state)
{
	char *argv[] = {"hvtrace", "run", "--qemu", "--accel", "tcg", "--kernel", "vmlinuz",
			"--initrd", "initrd.gz", "--append", "quiet hvt.wait=2", "--system-map",
			"System.map", "--smp", "3", "-p", "function_graph", "-g", "do_sys_openat2",
			"--expect-call", "vfs_read", "--expect-call", "do_sys_openat2",
			"--expect-no-call", "panic", NULL};

	(void)state;
	assert_int_equal(parse(25, argv), 0);
	assert_int_equal(cli.s.cmd, CMD_RUN);
	assert_true(cli.s.vmm == VMM_QEMU);
	assert_string_equal(cli.s.accel, "tcg");
	assert_string_equal(cli.s.kernel, "vmlinuz");
	assert_string_equal(cli.s.initrd, "initrd.gz");
	assert_string_equal(cli.s.append, "quiet hvt.wait=2");
	assert_string_equal(cli.s.system_map, "System.map");
	assert_null(cli.s.guest);
	assert_int_equal(cli.s.smp, 3);
	assert_int_equal(cli.s.mem_mb, 256); /* the --qemu default */
	assert_int_equal(cli.s.nr_expects, 3);
	assert_int_equal(cli.s.expects[1].kind, EXPECT_CALL);
	assert_string_equal(cli.s.expects[1].funcs[0], "do_sys_openat2");
	assert_int_equal(cli.s.expects[2].kind, EXPECT_NO_CALL);
	assert_string_equal(cli.s.expects[2].spec, "panic");
}

/* --machine and a --mem of any size with --qemu, whatever the order; QEMU's -M follows */
static void test_qemu_machine_mem(void **state)
{
	char *argv[] = {"hvtrace", "run", "--machine", "q35", "--mem", "4096", "--qemu", "--kernel",
			"K", "--system-map", "M", NULL};
	struct qemu_launch_cfg cfg = {.kernel = "K", .qmp_path = "/tmp/q.sock"};
	const char *qargv[64];
	char buf[1024];
	int n;

	(void)state;
	assert_int_equal(parse(11, argv), 0);
	assert_string_equal(cli.s.machine, "q35");
	assert_int_equal(cli.s.mem_mb, 4096);
	expect_error(8, (char *[]){"hvtrace", "run", "--qemu", "--machine", "virt", "--kernel", "K",
				   "g.elf"},
		     "--machine 'virt': expected pc or q35");
	expect_error(5, (char *[]){"hvtrace", "run", "--machine", "q35", "g.elf"},
		     "--machine: needs --qemu (or attach)");
	expect_error(9, (char *[]){"hvtrace", "run", "--qemu", "--mem", "16777217", "--kernel", "K",
				   "--system-map", "M"},
		     "--mem '16777217': expected an integer in 2..16777216");
	/* the default machine is pc, as before --machine */
	n = qemu_launch_argv(&cfg, qargv, 64, buf, sizeof(buf));
	assert_true(n > 4);
	assert_string_equal(qargv[3], "-M");
	assert_string_equal(qargv[4], "pc");
	cfg.machine = "q35";
	cfg.mem_mb = 4096;
	n = qemu_launch_argv(&cfg, qargv, 64, buf, sizeof(buf));
	assert_string_equal(qargv[4], "q35");
	for (int i = 0; i < n - 1; i++)
		if (!strcmp(qargv[i], "-m"))
			assert_string_equal(qargv[i + 1], "4096");
	/* the CPU model: max under TCG, host under KVM (max hangs or panics the nested lane's L1) */
	assert_string_equal(qargv[5], "-cpu");
	assert_string_equal(qargv[6], cfg.accel && !strcmp(cfg.accel, "kvm") ? "host" : "max");
	cfg.accel = "kvm";
	n = qemu_launch_argv(&cfg, qargv, 64, buf, sizeof(buf));
	assert_string_equal(qargv[2], "kvm");
	assert_string_equal(qargv[5], "-cpu");
	assert_string_equal(qargv[6], "host");
	cfg.accel = "tcg";
	n = qemu_launch_argv(&cfg, qargv, 64, buf, sizeof(buf));
	assert_string_equal(qargv[2], "tcg,thread=multi");
	assert_string_equal(qargv[6], "max");
}

static void test_attach(void **state)
{
	char *a1[] = {"hvtrace", "attach", "--system-map", "M", "-l", "vfs_read", "guest1", NULL};
	char *a2[] = {"hvtrace", "attach", "--qmp", "/run/q.sock", "--system-map", "M", NULL};
	char *a3[] = {"hvtrace", "attach", "--pid", "4242", "--system-map", "M", "--duration", "3",
		      NULL};

	(void)state;
	assert_int_equal(parse(7, a1), 0);
	assert_int_equal(cli.s.cmd, CMD_ATTACH);
	assert_string_equal(cli.s.attach.domain, "guest1");
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(6, a2), 0);
	assert_string_equal(cli.s.attach.qmp, "/run/q.sock");
	assert_null(cli.s.attach.domain);
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(8, a3), 0);
	assert_int_equal(cli.s.attach.pid, 4242);
	assert_true(cli.s.duration == 3.0);
	assert_null(cli.s.attach.uri);
	/* libvirt's URI: -c before or after NAME, or --connect */
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(7, (char *[]){"hvtrace", "attach", "-c", "qemu:///session", "vm",
					     "--system-map", "M", NULL}),
			 0);
	assert_string_equal(cli.s.attach.uri, "qemu:///session");
	assert_string_equal(cli.s.attach.domain, "vm");
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(6, (char *[]){"hvtrace", "attach", "vm", "--connect=test:///default",
					     "--system-map", "M", NULL}),
			 0);
	assert_string_equal(cli.s.attach.uri, "test:///default");
	/* symbols from the guest's kallsyms: no --system-map */
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(3, (char *[]){"hvtrace", "attach", "vm", NULL}), 0);
	assert_string_equal(cli.s.attach.domain, "vm");
	assert_null(cli.s.system_map);
	/* list-functions of a running VM: by name, --qmp or --pid, as attach */
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(3, (char *[]){"hvtrace", "list-functions", "vm", NULL}), 0);
	assert_int_equal(cli.s.cmd, CMD_LIST_FUNCTIONS);
	assert_true(cli.s.list_running);
	assert_string_equal(cli.s.attach.domain, "vm");
	assert_null(cli.s.guest);
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(4, (char *[]){"hvtrace", "list-functions", "--qmp", "/q.sock", NULL}),
			 0);
	assert_true(cli.s.list_running);
	assert_string_equal(cli.s.attach.qmp, "/q.sock");
}

static void test_error_linux_guest(void **state)
{
	(void)state;
	expect_error(4, (char *[]){"hvtrace", "run", "--qemu", "--system-map"},
		     "--system-map: missing argument");
	expect_error(5, (char *[]){"hvtrace", "run", "--qemu", "--system-map", "M"},
		     "--qemu: missing --kernel FILE");
	expect_error(8, (char *[]){"hvtrace", "run", "--qemu", "--kernel", "K", "--system-map", "M",
				   "g.elf"},
		     "'g.elf': --qemu takes --kernel, not a GUEST.elf");
	/* --kernel without --qemu: Linux in the embedded VMM, which takes no GUEST.elf nor QEMU's
	 * options */
	expect_error(5, (char *[]){"hvtrace", "run", "--kernel", "K", "g.elf"},
		     "'g.elf': --kernel boots a bzImage, not a GUEST.elf");
	expect_error(6, (char *[]){"hvtrace", "run", "--kernel", "K", "--accel", "kvm"},
		     "--accel: needs --qemu (or attach)");
	expect_error(5, (char *[]){"hvtrace", "run", "--initrd", "I", "g.elf"},
		     "--initrd: needs --qemu (or attach)");
	/* expectations work in the embedded VMM too */
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(5, (char *[]){"hvtrace", "run", "--expect-call", "f", "g.elf"}), 0);
	expect_error(8, (char *[]){"hvtrace", "run", "--qemu", "--accel", "hvf", "--kernel", "K",
				   "g.elf"},
		     "--accel 'hvf': expected tcg or kvm");
	expect_error(4, (char *[]){"hvtrace", "attach", "--system-map", "M"},
		     "attach: give exactly one of NAME, --qmp SOCKET, --pid PID");
	expect_error(7, (char *[]){"hvtrace", "attach", "--qmp", "S", "--system-map", "M", "vm"},
		     "attach: give exactly one of NAME, --qmp SOCKET, --pid PID");
	expect_error(6, (char *[]){"hvtrace", "attach", "--system-map", "M", "vm1", "vm2"},
		     "'vm2': unexpected argument after NAME");
	expect_error(6, (char *[]){"hvtrace", "attach", "--pid", "0", "--system-map", "M"},
		     "--pid '0': expected an integer in 1..1073741824");
	expect_error(8, (char *[]){"hvtrace", "attach", "-c", "qemu:///system", "--qmp", "S",
				   "--system-map", "M"},
		     "-c qemu:///system: a libvirt URI goes with attach NAME");
	expect_error(9, (char *[]){"hvtrace", "run", "--qemu", "--kernel", "K", "--system-map", "M",
				   "-c", "qemu:///system"},
		     "-c qemu:///system: a libvirt URI goes with attach NAME");
	expect_error(4, (char *[]){"hvtrace", "attach", "vm", "-c"}, "-c: missing argument");
}

/* --probe: the three kinds, trap by default, for run, run --qemu and attach alike. */
static void test_probe(void **state)
{
	(void)state;
	assert_int_equal(cli.s.probe, PROBE_TRAP);
	assert_int_equal(parse(5, (char *[]){"hvtrace", "run", "--probe", "stub", "g.elf", NULL}), 0);
	assert_int_equal(cli.s.probe, PROBE_STUB);
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(4, (char *[]){"hvtrace", "run", "--probe=auto", "g.elf", NULL}), 0);
	assert_int_equal(cli.s.probe, PROBE_AUTO);
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(7, (char *[]){"hvtrace", "attach", "vm", "--system-map", "M", "--probe",
					     "trap", NULL}),
			 0);
	assert_int_equal(cli.s.probe, PROBE_TRAP);
	expect_error(5, (char *[]){"hvtrace", "run", "--probe", "fast", "g.elf"},
		     "--probe 'fast': expected trap, stub or auto");
	expect_error(5, (char *[]){"hvtrace", "run", "--probe", "", "g.elf"},
		     "--probe '': expected trap, stub or auto");
}

/* --format: one vocabulary for run, attach, record and report (host/sink/sink_format.c), the same
 * word the same format everywhere (json: Chrome's trace-event JSON; jsonl: JSON Lines), and one
 * line naming the format and the command that does not write it; and --quiet. */
static void test_live_format(void **state)
{
	const struct sink_format *json = sink_format_find("json"), *jsonl = sink_format_find("jsonl");

	(void)state;
	assert_non_null(json);
	assert_non_null(jsonl);
	assert_null(sink_format_find("JSONL"));
	assert_false(cli.s.format || cli.s.quiet);
	assert_int_equal(parse(6, (char *[]){"hvtrace", "run", "--format", "jsonl", "--quiet", "g.elf",
					     NULL}),
			 0);
	assert_true(cli.s.format == jsonl && cli.s.quiet);
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(6, (char *[]){"hvtrace", "attach", "vm", "--format=jsonl",
					     "--format", "text", NULL}),
			 0);
	assert_ptr_equal(cli.s.format, sink_format_find("text")); /* the last one wins */
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(6, (char *[]){"hvtrace", "report", "--format", "json", "-i", "t.dat",
					     NULL}),
			 0);
	assert_ptr_equal(cli.s.format, json);
	/* json is Chrome's JSON for run too, and report writes JSON Lines as run does */
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(5, (char *[]){"hvtrace", "run", "--format", "json", "g.elf", NULL}), 0);
	assert_ptr_equal(cli.s.format, json);
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(4, (char *[]){"hvtrace", "report", "--format", "jsonl", NULL}), 0);
	assert_ptr_equal(cli.s.format, jsonl);
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(7, (char *[]){"hvtrace", "run", "-p", "function_graph", "--format",
					     "graph", "g.elf", NULL}),
			 0);
	assert_ptr_equal(cli.s.format, sink_format_find("graph"));
	session_free(&cli.s);
	session_init(&cli.s);
	assert_int_equal(parse(5, (char *[]){"hvtrace", "record", "--format", "tracedat", "g.elf",
					     NULL}),
			 0);
	assert_ptr_equal(cli.s.format, sink_format_find("tracedat"));
	expect_error(5, (char *[]){"hvtrace", "run", "--format", "JSONL", "g.elf"},
		     "--format 'JSONL': expected text, graph, json, jsonl, folded or tracedat");
	expect_error(5, (char *[]){"hvtrace", "record", "--format", "jsonl", "g.elf"},
		     "--format jsonl: record does not write it (run, attach, report do)");
	expect_error(6, (char *[]){"hvtrace", "record", "attach", "vm", "--format", "json"},
		     "--format json: record does not write it (run, attach, report do)");
	expect_error(5, (char *[]){"hvtrace", "run", "--format", "tracedat", "g.elf"},
		     "--format tracedat: run does not write it (record does)");
	expect_error(5, (char *[]){"hvtrace", "attach", "vm", "--format", "tracedat"},
		     "--format tracedat: attach does not write it (record does)");
	expect_error(4, (char *[]){"hvtrace", "report", "--format", "tracedat"},
		     "--format tracedat: report does not write it (record does)");
	expect_error(5, (char *[]){"hvtrace", "run", "--format", "graph", "g.elf"},
		     "--format graph: goes with -p function_graph (the calls' returns)");
}

/* --smp and --mem are checked together at parse time for the embedded VMM (its stacks and page
 * tables live in guest RAM): one error naming both, exit 2 instead of a failed vm_create (4).
 * QEMU's guests are not the VMM's business. */
static void test_error_smp_mem(void **state)
{
	(void)state;
	expect_error(7, (char *[]){"hvtrace", "run", "--smp", "64", "--mem", "8", "g.elf"},
		     "--smp 64 --mem 8: 64 vCPUs need --mem 9 or more");
	expect_error(7, (char *[]){"hvtrace", "run", "--mem", "2", "--smp", "16", "g.elf"},
		     "--smp 16 --mem 2: 16 vCPUs need --mem 3 or more");
	assert_int_equal(
	    parse(7, (char *[]){"hvtrace", "run", "--smp", "64", "--mem", "9", "g.elf"}), 0);
	assert_int_equal(
	    parse(7, (char *[]){"hvtrace", "run", "--smp", "1", "--mem", "2", "g.elf"}), 0);
	assert_int_equal(parse(10, (char *[]){"hvtrace", "run", "--qemu", "--kernel", "K",
					      "--system-map", "M", "--smp", "64", "--mem=8"}),
			 0);
}

/* -e / -r: a number of the spec grammar out of its range is refused with a caret under it (it
 * overflowed int64 in the parser: UBSan); a long -r spec is parsed whole, never a truncated copy.
 */
/* Integer options are digits only (strtoul took " 4" and "+4"). */
static void test_error_number_forms(void **state)
{
	(void)state;
	expect_error(5, (char *[]){"hvtrace", "run", "--smp", " 4", "g.elf"},
		     "--smp ' 4': expected an integer in 1..64");
	expect_error(5, (char *[]){"hvtrace", "run", "--mem", "+64", "g.elf"},
		     "--mem '+64': expected an integer in 2..3072");
	expect_error(5, (char *[]){"hvtrace", "run", "--max-depth", "0x10", "g.elf"},
		     "--max-depth '0x10': expected an integer in 1..255");
}

static void test_error_spec_numbers(void **state)
{
	char spec[400];

	(void)state;
	expect_error(5,
		     (char *[]){"hvtrace", "run", "-e", "f(long a[9223372036854775807])", "g.elf"},
		     "-e: index out of range (-536870912..536870912)\n"
		     "  f(long a[9223372036854775807])\n"
		     "           ^");
	/* "f(x64 r)", blanks up to byte 300, then junk: a 300-byte copy parsed as valid */
	memset(spec, ' ', sizeof(spec));
	memcpy(spec, "f(x64 r)", 8);
	strcpy(spec + 300, "junk");
	assert_int_equal(parse(5, (char *[]){"hvtrace", "run", "-r", spec, "g.elf"}), -EINVAL);
	assert_int_equal(strncmp(cli.err, "-r: unexpected text after ')'", 29), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_defaults, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_record_report, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_all_options, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_hist_triggers, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_long_forms, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_graph_options, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_graph_retval_hex, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_reparse, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_commands, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_error_commands, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_error_guest_args, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_error_tracer, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_error_numbers, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_error_options, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_error_graph_options, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_error_grouped_short_option, cli_setup,
					    cli_teardown),
	    cmocka_unit_test_setup_teardown(test_qemu_run, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_qemu_machine_mem, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_attach, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_error_linux_guest, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_probe, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_live_format, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_error_smp_mem, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_error_spec_numbers, cli_setup, cli_teardown),
	    cmocka_unit_test_setup_teardown(test_error_number_forms, cli_setup, cli_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

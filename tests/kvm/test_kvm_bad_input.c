/* Bad input: one clear error line on stderr, exit status 2, and the guest never starts (its console
 * stays empty). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/hv_expect.h"
#include "tests/kvm/kvm_common.h"
#include "arch/x86/x86_insn.h"
#include "vmi/vmi_elf.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A refusal: exit 2, stderr exactly @line, the guest never started, no trace. */
#define REFUSED(line) {.status = 2, .err_is = (line), .console_is = "", .no_lines = true}

/* In a case's args: the test guest (hv_guest(NULL)). */
#define GUEST "<guest>"

static const char *arg(const char *a)
{
	return strcmp(a, GUEST) ? a : hv_guest(NULL);
}

static void play(const struct hv_run_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++)
		hv_case_play(&cases[i], arg);
}

/* The same for a command line made at run time. */
static void expect_refusal(const char *const *argv, const char *err_line)
{
	struct hv_run_case c = {.label = argv[1], .expect = REFUSED(err_line)};

	for (size_t i = 0; argv[i] && i + 1 < ARRAY_LEN(c.args); i++)
		c.args[i] = argv[i];
	hv_case_play(&c, NULL);
}

static void test_missing_file(void **state)
{
	static const struct hv_run_case c[] = {
	    {"missing file",
	     {"run", "/nonexistent/guest.elf"},
	     REFUSED("hvtrace: /nonexistent/guest.elf: No such file or directory\n")},
	};

	(void)state;
	play(c, ARRAY_LEN(c));
}

static void test_not_elf(void **state)
{
	char path[] = "/tmp/hvt-notelf-XXXXXX";
	int fd = mkstemp(path);
	char want[128];

	(void)state;
	assert_true(write(fd, "#!/bin/sh\necho hello\n", 21) == 21);
	close(fd);
	const char *argv[] = {"run", path, NULL};

	snprintf(want, sizeof(want), "hvtrace: %s: not an ELF64 file\n", path);
	expect_refusal(argv, want);
	unlink(path);
}

static void test_no_mcount_loc(void **state)
{
	/* an x86_64 program built without -mrecord-mcount is traced at its functions' first
	 * instructions (tests/kvm/test_kvm_nopg.c); a stripped one has nothing to trace */
	static const struct hv_run_case c[] = {
	    {"no __mcount_loc, stripped",
	     {"run", "/bin/true"},
	     REFUSED("hvtrace: /bin/true: no __mcount_loc section and no function symbols: nothing "
		     "to trace (build the guest with -pg -mfentry -mnop-mcount -mrecord-mcount, or "
		     "keep its symbol table)\n")},
	};

	(void)state;
	play(c, ARRAY_LEN(c));
}

static void test_glob_matches_nothing(void **state)
{
	static const struct hv_run_case c[] = {
	    {"-l nosuch_*",
	     {"run", "-l", "fib", "-l", "nosuch_*", GUEST},
	     REFUSED("hvtrace: -l 'nosuch_*': matches no traceable function\n")},
	    {"-n zzz?",
	     {"run", "-n", "zzz?", GUEST},
	     REFUSED("hvtrace: -n 'zzz?': matches no traceable function\n")},
	    {"-n f*",
	     {"run", "-l", "fib", "-n", "f*", GUEST},
	     REFUSED("hvtrace: -n: excludes every function the filter selected\n")},
	};

	(void)state;
	play(c, ARRAY_LEN(c));
}

static void test_bad_arguments(void **state)
{
	static const struct hv_run_case c[] = {
	    {"--smp 0",
	     {"run", "--smp", "0", GUEST},
	     REFUSED("hvtrace: --smp '0': expected an integer in 1..64\n")},
	    {"-p function_graf",
	     {"run", "-p", "function_graf", GUEST},
	     REFUSED("hvtrace: -p 'function_graf': unknown tracer (available: function "
		     "function_graph nop)\n")},
	    {"--bogus", {"run", "--bogus", GUEST}, REFUSED("hvtrace: --bogus: unknown option\n")},
	    {"no guest", {"run"}, REFUSED("hvtrace: run: missing GUEST.elf (see hvtrace --help)\n")},
	};

	(void)state;
	play(c, ARRAY_LEN(c));
}

/* A copy of the guest whose fib entry holds a CALL instead of the NOP5. */
static void test_site_not_nop5(void **state)
{
	struct vmi_elf img;
	char err[256], path[] = "/tmp/hvt-badsite-XXXXXX", want[256];
	const struct vmi_sym *fib;
	const uint8_t *site;
	uint8_t *copy;
	int fd;

	(void)state;
	assert_int_equal(vmi_elf_open(&img, hv_guest(NULL), 1, err, sizeof(err)), 0);
	fib = vmi_symtab_find(&img.funcs, "fib");
	assert_non_null(fib);
	site = vmi_elf_bytes_at(&img, fib->addr, X86_NOP5_LEN);
	assert_non_null(site);
	assert_true(x86_is_nop5(site));
	copy = malloc(img.file_size);
	memcpy(copy, img.file, img.file_size);
	memcpy(copy + (site - img.file), "\xe8\x12\x34\x56\x78", 5);
	fd = mkstemp(path);
	assert_true(write(fd, copy, img.file_size) == (ssize_t)img.file_size);
	close(fd);
	snprintf(want, sizeof(want), "hvtrace: fib: site 0x%" PRIx64 " holds e8 12 34 56 78, not a NOP5\n",
		 fib->addr);

	const char *argv[] = {"run", "-l", "tree_*", path, NULL};

	/* refused even when fib is not selected: the image is checked whole */
	expect_refusal(argv, want);
	unlink(path);
	free(copy);
	vmi_elf_close(&img);
}

/* --smp and --mem that the VMM cannot fit together: refused at parse time, both named (was exit 4
 * from vm_create, after the guest image was read). */
static void test_smp_mem(void **state)
{
	const char *argv[] = {"run", "--smp", "64", "--mem", "8", hv_guest(NULL), NULL};

	(void)state;
	expect_refusal(argv, "hvtrace: --smp 64 --mem 8: 64 vCPUs need --mem 9 or more\n");
}

/* A trace that cannot be written is not a success: the first failed write ends the run (the guest
 * does not run its course for nothing), one line names the output and the reason, exit 4 (it
 * exited 0 with the trace lost). Both tracers' sinks. */
static void test_output_write_error(void **state)
{
	const char *tracers[] = {"function", "function_graph"};

	(void)state;
	kvm_require_test("output_write_error");
	for (int i = 0; i < 2; i++) {
		const char *out[] = {"-o", "/dev/full"};
		const char *argv[] = {"run",  "-p",   tracers[i],     "-l", "tree_*",
				      out[0], out[1], hv_guest(NULL), NULL};
		struct hv_result r;

		hv_run(&r, argv, 0, 0);
		assert_int_equal(r.status, 4);
		assert_string_equal(r.err, "hvtrace: -o /dev/full: No space left on device\n");
		hv_result_free(&r);
	}
}

/* The same for the guest's console (its first line already fails: the run ends there); the trace
 * of what ran is complete, with its trailer. */
static void test_console_write_error(void **state)
{
	const char *con[] = {"--console", "/dev/full"};
	const char *argv[] = {"run", "-l", "tree_leaf", con[0], con[1], hv_guest(NULL), NULL};
	struct hv_result r;

	(void)state;
	kvm_require_test("console_write_error");
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 4);
	assert_string_equal(r.err, "hvtrace: --console /dev/full: No space left on device\n");
	assert_int_equal(r.nr_lines, trace_count(&r, "tree_leaf", -1));
	assert_int_equal(count_text(r.trace, "# entries-written: "), 1);
	hv_result_free(&r);
}

/* @args run with stdout on /dev/full: exit 4 and exactly the line "hvtrace: stdout: ...". */
static void expect_stdout_full(const char *const *args)
{
	char errpath[] = "/tmp/hvt-stdout-XXXXXX", buf[256] = "";
	int fd = mkstemp(errpath), st;
	pid_t pid = fork();

	if (pid == 0) {
		int full = open("/dev/full", O_WRONLY);

		dup2(full, 1);
		dup2(fd, 2);
		execv(args[0], (char *const *)args);
		_exit(127);
	}
	assert_true(waitpid(pid, &st, 0) == pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 4);
	assert_true(pread(fd, buf, sizeof(buf) - 1, 0) >= 0);
	assert_string_equal(buf, "hvtrace: stdout: No space left on device\n");
	close(fd);
	unlink(errpath);
}

/* Without -o the trace and the console go to stdout; list-functions and --help write there too. */
static void test_stdout_write_error(void **state)
{
	const char *run[] = {hv_binary(), "run",       "--probe",      test_probe(),
			     "-l",	  "tree_leaf", hv_guest(NULL), NULL};
	const char *list[] = {hv_binary(), "list-functions", hv_guest(NULL), NULL};
	const char *help[] = {hv_binary(), "--help", NULL};

	(void)state;
	kvm_require_test("stdout_write_error");
	expect_stdout_full(run);
	expect_stdout_full(list);
	expect_stdout_full(help);
}

/* ---- issue 37: long values keep their reason (class 6), option sets that could only give an
 * empty trace (class 10), wording that says what is wrong (class 13); none needs /dev/kvm ---- */

/* @n bytes of @c, NUL-terminated (malloc'd). */
static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memset(s, c, n);
	s[n] = 0;
	return s;
}

/* hvtrace @argv; its stderr is one line, exit @status, and the line ends with @tail. */
static void expect_tail(const char *const *argv, int status, const char *tail)
{
	struct hv_result r;
	size_t n, t = strlen(tail);

	hv_run(&r, argv, 0, 0);
	n = strlen(r.err);
	assert_int_equal(r.status, status);
	assert_int_equal(count_lines(r.err), 1);
	if (n < t || strcmp(r.err + n - t, tail))
		fail_msg("stderr does not end with \"%s\": \"%s\"", tail, r.err);
	assert_true(n < 1024); /* the echoed value was shortened */
	assert_memory_equal(r.err, "hvtrace: ", 9);
	hv_result_free(&r);
}

/* Class 6: a 100 KB -l glob, a 10 KB --qmp path and a 500-character --filter-event print their
 * reason; the value is shortened to its head and its length. */
static void test_long_values_keep_reason(void **state)
{
	char *glob = repeat('a', 100000), *name = repeat('n', 10000), *fe = repeat('x', 480);
	char expr[600];

	(void)state;
	{
		const char *argv[] = {"run", "-l", glob, hv_guest(NULL), NULL};

		expect_tail(argv, 2, "aaaa...(100000 bytes)': matches no traceable function\n");
	}
	{
		const char *argv[] = {"attach", "--qmp", name, NULL};

		expect_tail(argv, 2, "nnnn...(10000 bytes): longer than 127 bytes\n");
	}
	snprintf(expr, sizeof(expr), "fib: n == 1 && %s == 2", fe); /* 500 characters */
	{
		const char *argv[] = {"run", "-e",	     "fib(int n)", "--filter-event",
				      expr,  hv_guest(NULL), NULL};

		expect_tail(argv, 2, "xxxx...(500 bytes)': field name too long at column 16\n");
	}
	free(glob);
	free(name);
	free(fe);
}

/* Class 10: what can only give an empty trace is refused, as --max-depth without function_graph. */
static void test_empty_trace_refused(void **state)
{
	static const struct hv_run_case c[] = {
	    {"-p nop -l fib",
	     {"run", "-p", "nop", "-l", "fib", GUEST},
	     REFUSED("hvtrace: -l: -p nop traces no function (use -p function or function_graph, "
		     "or a --trigger FUNC:hist or --profile on them)\n")},
	    {"-p nop -n fib",
	     {"run", "-p", "nop", "-n", "fib", "-e", "fib(int n)", GUEST},
	     REFUSED("hvtrace: -n: -p nop traces no function (use -p function or function_graph, "
		     "or a --trigger FUNC:hist or --profile on them)\n")},
	    {"--tracing-off without traceon",
	     {"run", "--tracing-off", "--trigger", "fib:traceoff", GUEST},
	     REFUSED(
		 "hvtrace: --tracing-off: no --trigger FUNC:traceon turns tracing on (the trace "
		 "would be empty)\n")},
	    {"--cpu 99 of 2",
	     {"run", "--cpu", "99", GUEST},
	     REFUSED("hvtrace: --cpu: CPU 99: the guest has 2 vCPUs (0-1)\n")},
	    {"--cpu 0-1 of 1",
	     {"run", "--smp", "1", "--cpu", "0-1", GUEST},
	     REFUSED("hvtrace: --cpu: CPU 1: the guest has 1 vCPU (0)\n")},
	    {"--cpu 3 of 2",
	     {"run", "--smp", "2", "--cpu", "3", GUEST},
	     REFUSED("hvtrace: --cpu: CPU 3: the guest has 2 vCPUs (0-1)\n")},
	};

	(void)state;
	play(c, ARRAY_LEN(c));
}

/* Class 13: a --qmp that is empty, a directory or a regular file; report inputs that are missing or
 * directories; a --filter-event number out of 64 bits. */
static void test_wording(void **state)
{
	char dir[] = "/tmp/hvt-refusals-XXXXXX", file[64], want[256];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/plain", dir);
	hv_write_text(file, "not a socket\n");
	{
		const struct hv_run_case c[] = {
		    {"--qmp ''",
		     {"attach", "--qmp", ""},
		     {.status = 2,
		      .err_is =
			  "hvtrace: qmp: an empty address (unix:PATH, PATH or tcp:HOST:PORT)\n"}},
		    {"--filter-event number out of 64 bits",
		     {"run", "-e", "fib(int n)", "--filter-event", "fib: n > 99999999999999999999",
		      GUEST},
		     REFUSED(
			 "hvtrace: --filter-event 'fib: n > 99999999999999999999': a number out of "
			 "range (64 bits) at column 10\n")},
		};

		play(c, ARRAY_LEN(c));
	}
	{
		const char *argv[] = {"attach", "--qmp", dir, NULL};

		snprintf(want, sizeof(want), "hvtrace: qmp %s: a directory, not a socket\n", dir);
		expect_tail(argv, 2, want);
	}
	{
		const char *argv[] = {"attach", "--qmp", file, NULL};

		snprintf(want, sizeof(want), "hvtrace: qmp %s: a regular file, not a socket\n",
			 file);
		expect_tail(argv, 2, want);
	}
	{
		/* QEMU's inputs, before QEMU starts (it failed after its monitor was up: "qmp:
		 * qmp_capabilities: Connection reset by peer", exit 6) */
		const char *argv[] = {"run", "--qemu", "--kernel", dir, NULL};

		snprintf(want, sizeof(want), "hvtrace: --kernel %s: not a regular file (a directory)\n", dir);
		expect_tail(argv, 2, want);
	}
	{
		const char *argv[] = {
		    "run", "--qemu", "--kernel", file, "--initrd", "/nonexistent/initrd", NULL};

		expect_tail(argv, 2,
			    "hvtrace: --initrd /nonexistent/initrd: No such file or directory\n");
	}
	{
		/* a function_graph recording whose host file is missing: named as missing, not as
		 * "bad or truncated" */
		const char *argv[] = {
		    "report",  "-i",	       "tests/fuzz/corpus/tracedat/graph-events-chain.dat",
		    "--exits", "--host-input", "/nonexistent/host.dat",
		    NULL};

		expect_tail(argv, 2,
			    "hvtrace: --host-input /nonexistent/host.dat: No such file or "
			    "directory\n");
	}
	{
		const char *argv[] = {"report", "-i", dir, NULL};

		snprintf(want, sizeof(want), "hvtrace: -i %s: not a regular file (a directory)\n",
			 dir);
		expect_tail(argv, 2, want);
	}
	unlink(file);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_missing_file),
	    cmocka_unit_test(test_not_elf),
	    cmocka_unit_test(test_no_mcount_loc),
	    cmocka_unit_test(test_glob_matches_nothing),
	    cmocka_unit_test(test_bad_arguments),
	    cmocka_unit_test(test_site_not_nop5),
	    cmocka_unit_test(test_smp_mem),
	    cmocka_unit_test(test_output_write_error),
	    cmocka_unit_test(test_console_write_error),
	    cmocka_unit_test(test_stdout_write_error),
	    cmocka_unit_test(test_long_values_keep_reason),
	    cmocka_unit_test(test_empty_trace_refused),
	    cmocka_unit_test(test_wording),
	};

	return cmocka_run_group_tests_name("bad_input", tests, NULL, NULL);
}

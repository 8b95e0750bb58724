/* host/session/out_paths.c through session_parse_args: outputs that are one file with another
 * output or an input (however spelled, existing or not, stdout included) are refused with one line
 * naming both, nothing created or changed; character devices may be shared; --trigger snapshot
 * needs a regular -o; an output that cannot be created (no directory, a directory) is refused
 * before anything starts (issue 37, classes 2, 3 and 12). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/cli/session_args.h"
#include "host/session/out_paths.h"
#include "tests/common/files.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARGC(v) ((int)(sizeof(v) / sizeof((v)[0])))

static char dir[64], cwd[4096];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/hvt-out-paths-XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	hv_write_text("guest.elf", "not really an ELF: the check reads nothing");
	hv_write_text("kept.txt", "what must stay\n");
	assert_int_equal(mkdir("sub", 0755), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	assert_int_equal(chdir(cwd), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* out_paths_check on the command line @argv (argc @argc): 0, or -1 with the line in @err. */
static int check(int argc, const char **argv, char *err, size_t errlen)
{
	struct session s;
	int ret;

	session_init(&s);
	err[0] = 0;
	assert_int_equal(session_parse_args(&s, argc, (char **)argv, err, errlen), 0);
	ret = out_paths_check(&s, err, errlen) < 0 ? -1 : 0;
	session_free(&s);
	return ret;
}

#define REFUSED(line, ...)                                                                         \
	do {                                                                                       \
		const char *argv_[] = {"hvtrace", __VA_ARGS__};                                    \
		char err_[1024];                                                                   \
		assert_int_equal(check(ARGC(argv_), argv_, err_, sizeof(err_)), -1);               \
		assert_string_equal(err_, line);                                                   \
	} while (0)

#define ACCEPTED(...)                                                                              \
	do {                                                                                       \
		const char *argv_[] = {"hvtrace", __VA_ARGS__};                                    \
		char err_[1024];                                                                   \
		assert_int_equal(check(ARGC(argv_), argv_, err_, sizeof(err_)), 0);                \
	} while (0)

/* Whether the file @path holds exactly @text. */
static void holds(const char *path, const char *text)
{
	char *got = hv_slurp(path);

	assert_string_equal(got, text);
	free(got);
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Two outputs, one file: refused, named both, nothing created or truncated. */
static void test_outputs_alias(void **state)
{
	(void)state;
	REFUSED("-o F and --console F are the same file: one output would overwrite the other",
		"run", "-o", "F", "--console", "F", "guest.elf");
	REFUSED("-o kept.txt and --summary ./sub/../kept.txt are the same file: one output would "
		"overwrite the other",
		"run", "-o", "kept.txt", "--summary", "./sub/../kept.txt", "guest.elf");
	REFUSED("--summary sub/x.json and --junit ./sub/x.json are the same file: one output would "
		"overwrite the other",
		"run", "--summary", "sub/x.json", "--junit", "./sub/x.json", "guest.elf");
	REFUSED("--junit t-host.dat and the host's file (record --host) t-host.dat are the same "
		"file: one "
		"output would overwrite the other",
		"record", "--host", "-o", "t.dat", "--junit", "t-host.dat", "guest.elf");
	assert_false(exists("F"));
	assert_false(exists("sub/x.json"));
	holds("kept.txt", "what must stay\n");
	/* a symbolic link is the file it names */
	assert_int_equal(symlink("kept.txt", "link"), 0);
	REFUSED("-o link and --console kept.txt are the same file: one output would overwrite the "
		"other",
		"run", "-o", "link", "--console", "kept.txt", "guest.elf");
	/* distinct files, and character devices (nothing to overwrite), pass */
	ACCEPTED("run", "-o", "a.txt", "--console", "b.txt", "--summary", "c.json", "guest.elf");
	ACCEPTED("run", "-o", "/dev/null", "--console", "/dev/null", "--summary", "/dev/null",
		 "guest.elf");
}

/* An output that is an input: the guest, --kernel, --initrd, --system-map, --session, report's -i
 * and --host-input. */
static void test_output_is_input(void **state)
{
	(void)state;
	REFUSED(
	    "-o guest.elf and the guest guest.elf are the same file: the output would overwrite "
	    "the input",
	    "run", "-o", "guest.elf", "guest.elf");
	REFUSED("--summary kept.txt and --kernel ./kept.txt are the same file: the output would "
		"overwrite the input",
		"run", "--qemu", "--kernel", "./kept.txt", "--summary", "kept.txt");
	REFUSED("--console guest.elf and --initrd guest.elf are the same file: the output would "
		"overwrite the input",
		"run", "--qemu", "--kernel", "kept.txt", "--initrd", "guest.elf", "--console",
		"guest.elf");
	REFUSED("--junit kept.txt and --system-map kept.txt are the same file: the output would "
		"overwrite the input",
		"attach", "--qmp", "/nonexistent.sock", "--system-map", "kept.txt", "--junit",
		"kept.txt");
	hv_write_text("s.txt", "smp 1\n");
	REFUSED("-o s.txt and --session s.txt are the same file: the output would overwrite the "
		"input",
		"run", "--session", "s.txt", "-o", "s.txt", "guest.elf");
	holds("s.txt", "smp 1\n");
	holds("guest.elf", "not really an ELF: the check reads nothing");
}

/* stdout as an output: the file the shell redirected it to is that file. */
static void test_stdout(void **state)
{
	int saved = dup(STDOUT_FILENO), fd = open("out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	const char *a1[] = {"hvtrace", "run", "-o", "out.txt", "guest.elf"};
	const char *a2[] = {"hvtrace", "run", "-o", "/dev/stdout", "guest.elf"};
	const char *a3[] = {"hvtrace", "report", "-i", "out.txt"};
	const char *a4[] = {"hvtrace", "run", "guest.elf"};
	char e1[1024], e2[1024], e3[1024], e4[1024];
	int r1, r2, r3, r4;

	(void)state;
	assert_true(saved >= 0 && fd >= 0);
	fflush(stdout);
	dup2(fd, STDOUT_FILENO);
	r1 = check(ARGC(a1), a1, e1, sizeof(e1));
	r2 = check(ARGC(a2), a2, e2, sizeof(e2));
	r3 = check(ARGC(a3), a3, e3, sizeof(e3));
	r4 = check(ARGC(a4), a4, e4, sizeof(e4)); /* -o and --console left to stdout: one stream */
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(fd);
	assert_int_equal(r1, -1);
	assert_string_equal(e1, "-o out.txt and stdout (the console) are the same file: one output "
				"would overwrite the other");
	assert_int_equal(r2, -1);
	assert_string_equal(e2, "-o /dev/stdout and stdout (the console) are the same file: one "
				"output would overwrite the other");
	assert_int_equal(r3, -1);
	assert_string_equal(e3, "stdout (the report) and -i out.txt are the same file: the output "
				"would overwrite the input");
	assert_int_equal(r4, 0);
}

/* --trigger snapshot copies the -o file beside it: a device, a FIFO is refused. */
static void test_snapshot_place(void **state)
{
	(void)state;
	REFUSED(
	    "--trigger fib:snapshot: -o /dev/null is not a regular file (snapshots are copies of "
	    "the -o file beside it, FILE.snapshot-N)",
	    "run", "-o", "/dev/null", "--trigger", "fib:snapshot", "guest.elf");
	assert_int_equal(mkfifo("fifo", 0644), 0);
	REFUSED("--trigger fib:snapshot: -o fifo is not a regular file (snapshots are copies of "
		"the -o file beside it, FILE.snapshot-N)",
		"run", "-o", "fifo", "--trigger", "fib:snapshot:2", "guest.elf");
	ACCEPTED("run", "-o", "trace.txt", "--trigger", "fib:snapshot", "guest.elf");
	/* the copies are outputs too */
	hv_write_text("trace.txt.snapshot-2", "an input\n");
	REFUSED("--trigger fib:snapshot: its copies of -o trace.txt (trace.txt.snapshot-N) would "
		"overwrite the guest sub/../trace.txt.snapshot-2",
		"run", "-o", "trace.txt", "--trigger", "fib:snapshot",
		"sub/../trace.txt.snapshot-2");
	REFUSED(
	    "--trigger fib:snapshot: its copies of -o ./trace.txt (./trace.txt.snapshot-N) would "
	    "overwrite --summary trace.txt.snapshot-1",
	    "run", "-o", "./trace.txt", "--trigger", "fib:snapshot", "--summary",
	    "trace.txt.snapshot-1", "guest.elf");
	holds("trace.txt.snapshot-2", "an input\n");
	ACCEPTED("run", "-o", "/dev/null", "--trigger", "fib:stacktrace", "guest.elf");
}

/* Every output is checked before anything starts: --summary and --junit too. */
static void test_not_creatable(void **state)
{
	(void)state;
	REFUSED("--summary nodir/s.json: No such file or directory", "run", "--summary",
		"nodir/s.json", "guest.elf");
	REFUSED("--junit sub: Is a directory", "run", "--junit", "sub", "guest.elf");
	REFUSED("--console guest.elf/x: Not a directory", "run", "--console", "guest.elf/x",
		"guest.elf");
	REFUSED("-o nodir/t.txt: No such file or directory", "run", "-o", "nodir/t.txt",
		"--summary", "s.json", "guest.elf");
	assert_false(exists("s.json"));
	if (geteuid() != 0) { /* root writes anywhere: no permission to refuse */
		assert_int_equal(chmod("sub", 0555), 0);
		REFUSED("--summary sub/s.json: Permission denied", "run", "--summary", "sub/s.json",
			"guest.elf");
		assert_int_equal(chmod("sub", 0755), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_outputs_alias, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_output_is_input, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stdout, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_snapshot_place, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_creatable, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

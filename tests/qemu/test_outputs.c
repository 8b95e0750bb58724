/* hvtrace's outputs as a whole (issue 37, classes 1, 2, 3, 12, 15), through the binary:
 *
 * - the first failed write ends the run at once: `run --qemu` on a guest that runs for minutes with
 *   its stdout a pipe its reader closed after one line, with -o /dev/full, with --console
 * /dev/full, and `report` into a closed pipe: exit 4, one line naming the output, no "stopped by";
 * - outputs that are one file with another output or an input, a snapshot trigger beside a device,
 *   an output that cannot be created: exit 2 before the guest starts, nothing created (no QEMU
 *   started either: no run-time directory appears);
 * - QEMU's QMP socket lives in a private directory (mode 0700) under $TMPDIR, gone after every end
 *   (normal, a write error, SIGTERM), and nothing is left at the old /tmp/hvtrace-qmp-PID.sock.
 *
 * The refusals need neither KVM nor a Linux guest (the embedded VMM's refusals come before
 * /dev/kvm is opened); the runs need QEMU and the Linux test guest (make guest), else they skip. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/files.h"
#include "tests/common/hv_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The guest's workload runs this long: a run that ends within RUN_LIMIT_S was ended by hvtrace. */
#define LONG_APPEND "hvt.yes_sec=300"
#define RUN_LIMIT_S 120

static char kernel[256], initrd[256], sysmap[256], guest_elf[256];
static bool have_linux;
static char tmpdir[64]; /* the runs' $TMPDIR, and where the refusals' files go */

/* One run of hvtrace. */
struct out_run {
	int status;   /* exit status, 128+N if killed by signal N, -1 if it outlived its limit */
	char *err;    /* the whole of stderr */
	double secs;  /* how long it ran */
	pid_t pid;    /* hvtrace's */
	bool tmp_dir; /* a run-time directory (hvtrace-*) was seen in $TMPDIR while it ran */
	mode_t tmp_mode;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The first hvtrace-* entry of $TMPDIR (the test's @tmpdir), its mode in *@mode; false if none. */
static bool run_dir_seen(mode_t *mode)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	bool seen = false;

	assert_non_null(d);
	while (!seen && (e = readdir(d))) {
		char path[512];
		struct stat st;

		if (strncmp(e->d_name, "hvtrace-", 8))
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmpdir, e->d_name);
		seen = stat(path, &st) == 0;
		*mode = st.st_mode;
	}
	closedir(d);
	return seen;
}

/* Runs hvtrace @argv (NULL-terminated, without the program name) with $TMPDIR set to @tmpdir, its
 * stdout @out_fd (-1: /dev/null). With @read_line, @out_fd's other end @reader is read up to the
 * first newline and then closed (a `| head -1`). With @sig_after > 0, @sig after that many
 * seconds (to hvtrace only: its guardian lives on). Killed (status -1) after RUN_LIMIT_S. */
static void run(struct out_run *r, const char *const *argv, int out_fd, int reader, bool read_line,
		double sig_after, int sig)
{
	char errpath[96];
	const char *args[40];
	size_t n = 0;
	double t0 = now_s();
	bool signalled = false;
	int st;

	memset(r, 0, sizeof(*r));
	snprintf(errpath, sizeof(errpath), "%s/stderr.txt", tmpdir);
	args[n++] = hv_binary();
	for (size_t i = 0; argv[i] && n + 1 < ARRAY_LEN(args); i++)
		args[n++] = argv[i];
	args[n] = NULL;
	r->pid = fork();
	assert_true(r->pid >= 0);
	if (r->pid == 0) {
		int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int o = out_fd >= 0 ? out_fd : open("/dev/null", O_WRONLY);

		if (reader >= 0)
			close(reader);
		dup2(o, STDOUT_FILENO);
		dup2(e, STDERR_FILENO);
		setenv("TMPDIR", tmpdir, 1);
		signal(SIGPIPE, SIG_DFL); /* as a shell starts it (this test ignores it) */
		execv(args[0], (char *const *)args);
		_exit(127);
	}
	if (out_fd >= 0)
		close(out_fd);
	if (read_line) {
		char c;

		while (read(reader, &c, 1) == 1 && c != '\n')
			;
		close(reader);
	}
	for (;;) {
		pid_t w = waitpid(r->pid, &st, WNOHANG);

		if (w == r->pid)
			break;
		if (!r->tmp_dir)
			r->tmp_dir = run_dir_seen(&r->tmp_mode);
		if (sig_after > 0 && !signalled && now_s() - t0 > sig_after) {
			kill(r->pid, sig);
			signalled = true;
		}
		if (now_s() - t0 > RUN_LIMIT_S) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, &st, 0);
			st = -1;
			break;
		}
		usleep(50000);
	}
	r->secs = now_s() - t0;
	r->status = st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r->err = hv_slurp(errpath);
	unlink(errpath);
}

/* After any run: nothing left in $TMPDIR, nor at the QMP socket's old place. */
static void nothing_left(const struct out_run *r)
{
	char old[64];
	mode_t mode;

	assert_false(run_dir_seen(&mode));
	snprintf(old, sizeof(old), "/tmp/hvtrace-qmp-%d.sock", (int)r->pid);
	assert_int_equal(access(old, F_OK), -1);
}

/* The error output holds @line as a whole line, and no "stopped by". */
static void err_has(const struct out_run *r, const char *line)
{
	if (!strstr(r->err, line) || strstr(r->err, "stopped by"))
		fail_msg("stderr lacks '%s' (or says it was stopped):\n%s", line, r->err);
}

/* `run --qemu` on the Linux guest with @extra after it, the workload running for minutes. */
static void run_qemu(struct out_run *r, const char *const *extra, int out_fd, int reader,
		     bool read_line, double sig_after, int sig)
{
	const char *argv[32] = {"run",	    "--qemu",	 "--kernel",	 kernel,
				"--initrd", initrd,	 "--system-map", sysmap,
				"--append", LONG_APPEND, "-l",		 "vfs_read"};
	size_t n = 12;

	for (size_t i = 0; extra[i]; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	run(r, argv, out_fd, reader, read_line, sig_after, sig);
}

static void need_linux(void)
{
	if (!have_linux)
		skip();
}

/* Class 1: `| head -1`: the first write after the reader left ends the run, exit 4. */
static void test_closed_pipe_ends_run(void **state)
{
	const char *extra[] = {"--console", "/dev/null", NULL};
	struct out_run r;
	int p[2];

	(void)state;
	need_linux();
	assert_int_equal(pipe(p), 0);
	run_qemu(&r, extra, p[1], p[0], true, 0, 0);
	if (r.status != 4)
		fail_msg("status %d after %.0f s, want 4:\n%s", r.status, r.secs, r.err);
	err_has(&r, "hvtrace: stdout: Broken pipe\n");
	nothing_left(&r);
	free(r.err);
}

/* Class 1: a full disk, for the trace and for the console. */
static void test_full_disk_ends_run(void **state)
{
	char summary[128];
	const char *trace[] = {"-o",	    "/dev/full", "--console", "/dev/null",
			       "--summary", summary,	 NULL};
	const char *console[] = {"-o", "/dev/null", "--console", "/dev/full", NULL};
	struct out_run r;

	char *json;

	(void)state;
	need_linux();
	snprintf(summary, sizeof(summary), "%s/summary.json", tmpdir);
	run_qemu(&r, trace, -1, -1, false, 0, 0);
	if (r.status != 4)
		fail_msg("-o /dev/full: status %d after %.0f s, want 4:\n%s", r.status, r.secs,
			 r.err);
	err_has(&r, "hvtrace: -o /dev/full: No space left on device\n");
	nothing_left(&r);
	free(r.err);
	/* the verdict says the run failed as the exit status does */
	json = hv_slurp(summary);
	if (!strstr(json, "\"exit_status\":4,\"exit_reason\":\"host-error\""))
		fail_msg("--summary does not say exit 4, host-error: %s", json);
	free(json);
	run_qemu(&r, console, -1, -1, false, 0, 0);
	if (r.status != 4)
		fail_msg("--console /dev/full: status %d after %.0f s, want 4:\n%s", r.status,
			 r.secs, r.err);
	err_has(&r, "hvtrace: --console /dev/full: No space left on device\n");
	nothing_left(&r);
	free(r.err);
}

/* Class 1, report: a closed pipe is a write error too (not a death by SIGPIPE), and a full disk. */
static void test_report_write_error(void **state)
{
	const char *argv[] = {"report", "-i", "tests/fuzz/corpus/tracedat/graph-events-chain.dat",
			      NULL};
	struct out_run r;
	int p[2], full = open("/dev/full", O_WRONLY);

	(void)state;
	assert_int_equal(pipe(p), 0);
	close(p[0]); /* the reader is gone before the first line */
	run(&r, argv, p[1], -1, false, 0, 0);
	assert_int_equal(r.status, 4);
	assert_string_equal(r.err, "hvtrace: stdout: Broken pipe\n");
	free(r.err);
	assert_true(full >= 0);
	run(&r, argv, full, -1, false, 0, 0);
	assert_int_equal(r.status, 4);
	assert_string_equal(r.err, "hvtrace: stdout: No space left on device\n");
	free(r.err);
}

/* Class 15: the QMP socket in a private directory under $TMPDIR, mode 0700, gone after a normal
 * end, after SIGTERM, and after a SIGKILL of hvtrace (its guardian's work). */
static void test_qmp_socket_private(void **state)
{
	const char *quick[] = {
	    "run",  "--qemu",	    "--kernel",	 kernel,      "--initrd",
	    initrd, "--system-map", sysmap,	 "--append",  "hvt.yes_sec=1 hvt.rounds=1",
	    "-l",   "vfs_read",	    "--console", "/dev/null", NULL};
	const char *extra[] = {"--console", "/dev/null", NULL};
	struct out_run r;
	mode_t mode;

	(void)state;
	need_linux();
	run(&r, quick, -1, -1, false, 0, 0);
	if (r.status != 0)
		fail_msg("status %d, want 0:\n%s", r.status, r.err);
	assert_true(r.tmp_dir);
	assert_int_equal(r.tmp_mode & 07777, 0700);
	assert_true(S_ISDIR(r.tmp_mode));
	nothing_left(&r);
	free(r.err);
	run_qemu(&r, extra, -1, -1, false, 25, SIGTERM);
	if (r.status != 128 + SIGTERM)
		fail_msg("status %d, want %d:\n%s", r.status, 128 + SIGTERM, r.err);
	assert_true(r.tmp_dir);
	nothing_left(&r);
	free(r.err);
	/* hvtrace killed: its guardian restores the guest, ends the QEMU it launched, removes the
	 * directory (it is no child of this test: waited for by what it leaves) */
	run_qemu(&r, extra, -1, -1, false, 25, SIGKILL);
	if (r.status != 128 + SIGKILL)
		fail_msg("status %d, want %d:\n%s", r.status, 128 + SIGKILL, r.err);
	assert_true(r.tmp_dir);
	for (int i = 0; i < 200 && run_dir_seen(&mode); i++)
		usleep(50000);
	nothing_left(&r);
	free(r.err);
}

/* Classes 2, 3, 12 through the binary: refused before anything starts, nothing created, no QEMU
 * launched (no run-time directory ever appeared). */
static void test_refused_before_start(void **state)
{
	char f[128], nodir[128], snap[160], g[128];
	struct out_run r;

	(void)state;
	snprintf(f, sizeof(f), "%s/F", tmpdir);
	snprintf(nodir, sizeof(nodir), "%s/nodir/s.json", tmpdir);
	snprintf(g, sizeof(g), "%s/g.elf", tmpdir);
	hv_write_text(g, "guest image");
	{
		const char *argv[] = {"run", "-o", f, "--console", f, guest_elf, NULL};
		char want[512];

		run(&r, argv, -1, -1, false, 0, 0);
		snprintf(want, sizeof(want),
			 "hvtrace: -o %s and --console %s are the same file: one output would "
			 "overwrite the other\n",
			 f, f);
		assert_int_equal(r.status, 2);
		assert_string_equal(r.err, want);
		assert_int_equal(access(f, F_OK), -1);
		free(r.err);
	}
	{
		const char *argv[] = {"run", "-o", g, g, NULL};
		char want[512], *kept;

		run(&r, argv, -1, -1, false, 0, 0);
		snprintf(want, sizeof(want),
			 "hvtrace: -o %s and the guest %s are the same file: the output would "
			 "overwrite the input\n",
			 g, g);
		assert_int_equal(r.status, 2);
		assert_string_equal(r.err, want);
		kept = hv_slurp(g);
		assert_string_equal(kept, "guest image");
		free(kept);
		free(r.err);
	}
	{
		const char *argv[] = {"run",	      "-o",	 "/dev/null", "--trigger",
				      "fib:snapshot", guest_elf, NULL};

		run(&r, argv, -1, -1, false, 0, 0);
		assert_int_equal(r.status, 2);
		assert_string_equal(
		    r.err, "hvtrace: --trigger fib:snapshot: -o /dev/null is not a regular "
			   "file (snapshots are copies of the -o file beside it, "
			   "FILE.snapshot-N)\n");
		snprintf(snap, sizeof(snap), "/dev/null.snapshot-1");
		assert_int_equal(access(snap, F_OK), -1);
		free(r.err);
	}
	if (have_linux) { /* --summary checked before QEMU is launched */
		const char *argv[] = {
		    "run",  "--qemu",	 "--kernel", kernel,	"--initrd", initrd, "--system-map",
		    sysmap, "--summary", nodir,	     "--junit", f,	    NULL};
		char want[512];

		run(&r, argv, -1, -1, false, 0, 0);
		snprintf(want, sizeof(want), "hvtrace: --summary %s: No such file or directory\n",
			 nodir);
		assert_int_equal(r.status, 2);
		assert_string_equal(r.err, want);
		assert_false(r.tmp_dir);
		assert_int_equal(access(f, F_OK), -1);
		assert_true(r.secs < 10);
		free(r.err);
	}
	unlink(g);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/hvt-outputs-XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const char *dir = getenv("LINUX_GUEST_DIR") ? getenv("LINUX_GUEST_DIR") : "build/guest";
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_refused_before_start, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_write_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_closed_pipe_ends_run, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_full_disk_ends_run, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_qmp_socket_private, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", dir);
	snprintf(initrd, sizeof(initrd), "%s/initramfs.cpio.gz", dir);
	snprintf(sysmap, sizeof(sysmap), "%s/System.map", dir);
	snprintf(guest_elf, sizeof(guest_elf), "%s",
		 getenv("GUEST") ? getenv("GUEST") : "build/guest/test-guest.elf");
	have_linux = system("command -v qemu-system-x86_64 >/dev/null") == 0 &&
		     !access(kernel, R_OK) && !access(initrd, R_OK) && !access(sysmap, R_OK);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* host/qemu/qemu_find: what the kernel says of a --pid target (issue 37, class 9): which program it
 * runs (its exe, or the QEMU the dynamic loader runs), whether an address is loopback, and whether
 * a loopback listener is the process's own. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/qemu/qemu_find.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOADER "/lib64/ld-linux-x86-64.so.2"

static char dir[] = "/tmp/hvt-test-find-XXXXXX", qemu[96];
static pid_t live; /* the process start() ran last, ended by stop() or at teardown */

/* A copy of /bin/sh named qemu-system-x86_64. */
static int setup(void **state)
{
	char *sh = realpath("/bin/sh", NULL), cmd[512];

	(void)state;
	if (!sh || !mkdtemp(dir))
		return -1;
	snprintf(qemu, sizeof(qemu), "%s/qemu-system-x86_64", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", sh, qemu);
	free(sh);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	if (live > 0) {
		kill(live, SIGKILL);
		waitpid(live, NULL, 0);
	}
	unlink(qemu);
	rmdir(dir);
	return 0;
}

/* Runs @argv (a shell that sleeps), keeping @hold open in it (-1 none); returns once it has
 * exec'd (its cmdline ends with "sleeper"). */
static pid_t start(const char *const *argv, int hold)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 1); /* not the test's output: it would outlive a failed test */
		dup2(null, 2);
		if (hold >= 0)
			fcntl(hold, F_SETFD, 0);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		char path[64], buf[512];
		ssize_t n;
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
		if (fd >= 0)
			close(fd);
		if (n > 8 && !memcmp(buf + n - 8, "sleeper", 8))
			break;
		usleep(10000);
	}
	usleep(50000); /* the loader has mapped the program */
	live = pid;
	return pid;
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	live = 0;
}

static void test_exe(void **state)
{
	const char *as_qemu[] = {qemu, "-c", "while :; do sleep 1; done", "sleeper", NULL};
	const char *as_sh[] = {"/bin/sh", "-c", "while :; do sleep 1; done", "sleeper", NULL};
	const char *loaded_qemu[] = {LOADER,	qemu, "-c", "while :; do sleep 1; done",
				     "sleeper", NULL};
	const char *loaded_sh[] = {LOADER,    "/bin/sh", "-c", "while :; do sleep 1; done",
				   "sleeper", NULL};
	char err[256];
	pid_t pid;

	(void)state;
	pid = start(as_qemu, -1);
	assert_int_equal(qemu_find_check_exe(pid, err, sizeof(err)), 0);
	stop(pid);
	pid = start(as_sh, -1);
	assert_int_equal(qemu_find_check_exe(pid, err, sizeof(err)), -ENOEXEC);
	assert_non_null(strstr(err, " is not a QEMU (it runs /"));
	stop(pid);
	if (access(LOADER, X_OK) < 0) {
		printf("SKIPPED: test_exe: no %s\n", LOADER);
		return;
	}
	/* through the dynamic loader: the QEMU it maps, not the loader's name */
	pid = start(loaded_qemu, -1);
	assert_int_equal(qemu_find_check_exe(pid, err, sizeof(err)), 0);
	stop(pid);
	pid = start(loaded_sh, -1);
	assert_int_equal(qemu_find_check_exe(pid, err, sizeof(err)), -ENOEXEC);
	assert_non_null(strstr(err, "(it runs /"));
	assert_non_null(strstr(err, "ld-linux"));
	stop(pid);
	assert_int_equal(qemu_find_check_exe(999999999, err, sizeof(err)), -ENOENT);
}

static void test_loopback(void **state)
{
	(void)state;
	assert_true(qemu_find_is_loopback("127.0.0.1"));
	assert_true(qemu_find_is_loopback("127.1.2.3"));
	assert_true(qemu_find_is_loopback("::1"));
	assert_true(qemu_find_is_loopback("::ffff:127.0.0.1"));
	assert_true(qemu_find_is_loopback("localhost"));
	assert_false(qemu_find_is_loopback("10.0.0.1"));
	assert_false(qemu_find_is_loopback("128.0.0.1"));
	assert_false(qemu_find_is_loopback("example.com"));
	assert_false(qemu_find_is_loopback("::2"));
	assert_false(qemu_find_is_loopback(""));
}

static int listen_on(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static void test_listener(void **state)
{
	const char *as_qemu[] = {qemu, "-c", "while :; do sleep 1; done", "sleeper", NULL};
	char err[256], want[160];
	int port, l = listen_on(&port);
	pid_t pid;

	(void)state;
	/* held by this test only */
	pid = start(as_qemu, -1);
	assert_int_equal(qemu_find_check_listener(pid, (unsigned)port, err, sizeof(err)), -EPERM);
	/* (the holder is the caller itself, which the search for a holder leaves out) */
	snprintf(want, sizeof(want), "port %d is held by another process than %d", port, (int)pid);
	assert_string_equal(err, want);
	stop(pid);
	/* held by the process too */
	pid = start(as_qemu, l);
	assert_int_equal(qemu_find_check_listener(pid, (unsigned)port, err, sizeof(err)), 0);
	stop(pid);
	close(l); /* (its sleep children may hold it a second longer) */
	/* a port nothing listens on */
	close(listen_on(&port));
	assert_int_equal(qemu_find_check_listener(getpid(), (unsigned)port, err, sizeof(err)),
			 -ECONNREFUSED);
	snprintf(want, sizeof(want), "nothing listens on loopback port %d", port);
	assert_string_equal(err, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exe),
	    cmocka_unit_test(test_loopback),
	    cmocka_unit_test(test_listener),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

/* host/util/proc_state: the state letter and task flags of a process or thread from /proc, past a
 * comm that holds ')' and spaces; a zombie is told from a running process, a gone one from both, a
 * kernel worker from the program's threads. */
#include "host/util/proc_state.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* This process is running ('R': it is reading its own stat), and so is this thread. */
static void test_self_running(void **state)
{
	char s = '?';

	(void)state;
	assert_int_equal(proc_state(getpid(), 0, &s), 0);
	assert_int_equal(s, 'R');
	s = '?';
	assert_int_equal(proc_state(getpid(), (pid_t)syscall(SYS_gettid), &s), 0);
	assert_int_equal(s, 'R');
	assert_false(PROC_STATE_EXITED(s));
}

/* A child named "a) Z (b" (a comm that looks like a state) that has exited and is not reaped: 'Z',
 * by the last ')'; once reaped, gone: -ENOENT. A stopped child: 'T'. */
static void test_zombie_stopped_gone(void **state)
{
	pid_t c = fork();
	char s = 0;
	int st;

	(void)state;
	assert_true(c >= 0);
	if (c == 0) {
		prctl(PR_SET_NAME, "a) Z (b");
		raise(SIGSTOP);
		_exit(0);
	}
	assert_int_equal(waitpid(c, &st, WUNTRACED), c);
	assert_true(WIFSTOPPED(st));
	assert_int_equal(proc_state(c, 0, &s), 0);
	assert_int_equal(s, 'T');
	kill(c, SIGCONT);
	/* exited, not reaped: waitid with WNOWAIT leaves it a zombie */
	siginfo_t si;
	assert_int_equal(waitid(P_PID, (id_t)c, &si, WEXITED | WNOWAIT), 0);
	assert_int_equal(proc_state(c, 0, &s), 0);
	assert_int_equal(s, 'Z');
	assert_true(PROC_STATE_EXITED(s));
	assert_int_equal(proc_state(c, c, &s), 0); /* its one thread */
	assert_int_equal(s, 'Z');
	assert_int_equal(waitpid(c, &st, 0), c);
	assert_int_equal(proc_state(c, 0, &s), -ENOENT);
	assert_int_equal(s, 0);
}

/* A thread id that is not one of the process's threads: -ENOENT. */
static void test_no_such_thread(void **state)
{
	char s;

	(void)state;
	assert_int_equal(proc_state(getpid(), 1, &s), -ENOENT);
}

/* The task flags past a comm holding ") ": this process is no kernel worker; kthreadd (pid 2,
 * where it is there) is one. */
static void test_flags(void **state)
{
	unsigned long f = 1;
	char comm[32] = "";
	FILE *k;

	(void)state;
	prctl(PR_SET_NAME, "a) 1 2 (b");
	assert_int_equal(proc_flags(getpid(), (pid_t)syscall(SYS_gettid), &f), 0);
	assert_false(PROC_FLAGS_KERNEL_WORKER(f));
	assert_int_equal(proc_flags(getpid(), 0, &f), 0);
	assert_false(PROC_FLAGS_KERNEL_WORKER(f));
	k = fopen("/proc/2/comm", "r");
	if (k && fgets(comm, sizeof(comm), k) && !strcmp(comm, "kthreadd\n")) {
		assert_int_equal(proc_flags(2, 0, &f), 0);
		assert_true(PROC_FLAGS_KERNEL_WORKER(f));
	}
	if (k)
		fclose(k);
	assert_int_equal(proc_flags(getpid(), 999999999, &f), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_self_running),
	    cmocka_unit_test(test_zombie_stopped_gone),
	    cmocka_unit_test(test_no_such_thread),
	    cmocka_unit_test(test_flags),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

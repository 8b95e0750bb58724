/* host/vmm/guardian.h: which guardian runs its takeover when the process it watches dies. A forked
 * stand-in "hvtrace" starts a guardian (and hands over to a new one, as the QEMU backend does once
 * its tracer is up), then dies without a goodbye (_exit, as SIGKILL would leave it) or says goodbye;
 * each takeover writes its guardian's name into a pipe the test reads to its end. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/vmm/guardian.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int report_fd = -1; /* the write end of the test's pipe, in the stand-in and its guardians */

/* The takeover: the guardian's name, one line. */
static void takeover(void *ctx)
{
	const char *name = ctx;
	char line[32];
	int n = snprintf(line, sizeof(line), "%s\n", name);

	if (write(report_fd, line, (size_t)n) != n)
		_exit(9);
}

enum end { DIES, SAYS_GOODBYE };

/* Runs the stand-in: guardian "A", then @handovers handovers to "B", "C"..., then @how; returns
 * every takeover's lines once the stand-in and all its guardians are gone. */
static char *play(int handovers, enum end how)
{
	static char got[256];
	static const char *const names[] = {"A", "B", "C", "D"};
	int p[2];
	size_t len = 0;
	pid_t pid;
	int st;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct guardian g = {0};

		close(p[0]);
		report_fd = p[1];
		if (guardian_start(&g, takeover, (void *)names[0]) < 0)
			_exit(2);
		for (int i = 1; i <= handovers; i++)
			if (guardian_handover(&g, takeover, (void *)names[i]) < 0)
				_exit(3);
		if (how == SAYS_GOODBYE)
			guardian_stop(&g);
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* EOF once every guardian has ended (each holds the write end); at most 10 s */
	for (;;) {
		struct pollfd pf = {p[0], POLLIN, 0};
		ssize_t n;

		assert_int_equal(poll(&pf, 1, 10000), 1);
		n = read(p[0], got + len, sizeof(got) - 1 - len);
		assert_true(n >= 0);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(p[0]);
	got[len] = 0;
	return got;
}

/* The guardian alone: its takeover runs once at the death, never after a goodbye. */
static void test_start(void **state)
{
	(void)state;
	assert_string_equal(play(0, DIES), "A\n");
	assert_string_equal(play(0, SAYS_GOODBYE), "");
}

/* After a handover the new guardian alone takes over (the old one was told goodbye, and even if it
 * saw the death it is no longer in charge); after three, the last; a goodbye leaves none. */
static void test_handover(void **state)
{
	(void)state;
	assert_string_equal(play(1, DIES), "B\n");
	assert_string_equal(play(3, DIES), "D\n");
	assert_string_equal(play(2, SAYS_GOODBYE), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_start),
	    cmocka_unit_test(test_handover),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

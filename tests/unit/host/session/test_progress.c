/* The progress line (host/cli/progress.c): its text, when it is wanted (a terminal, not --quiet),
 * and its thread over a tracer's rings: redrawn in place from the rings' heads and the lost
 * counters, erased when stopped, and erased around a message (progress_hold / progress_release). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/session/progress.h"
#include "host/trace/tracer.h"
#include "host/trace/tracer_int.h" /* white-box: the tracer's fields */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void test_format(void **state)
{
	char buf[128];

	(void)state;
	assert_int_equal(progress_format(buf, sizeof(buf), 21232, 16522.4, 3, 1.46), 46);
	assert_string_equal(buf, "hvtrace: 21232 events (16522/s), 3 lost, 1.5 s");
	/* nothing negative, whatever the clock did */
	progress_format(buf, sizeof(buf), 0, -5, 0, -0.2);
	assert_string_equal(buf, "hvtrace: 0 events (0/s), 0 lost, 0.0 s");
}

/* Only on a terminal, and not with --quiet. */
static void test_wanted(void **state)
{
	int p[2], master = posix_openpt(O_RDWR | O_NOCTTY), slave;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_false(progress_wanted(p[1], false));
	assert_true(master >= 0);
	assert_int_equal(grantpt(master), 0);
	assert_int_equal(unlockpt(master), 0);
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	assert_true(slave >= 0);
	assert_true(progress_wanted(slave, false));
	assert_false(progress_wanted(slave, true));
	close(slave);
	close(master);
	close(p[0]);
	close(p[1]);
}

static void sleep_ms_(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* The thread over a tracer of one vCPU: 10 records, then 30 and 2 lost; a message in between;
 * what reaches the fd is only "\r\e[K"-led lines and the final erase. */
static void test_thread(void **state)
{
	struct ring ring;
	struct tracer_cpu cpu = {.lost = 0};
	struct tracer tr;
	struct progress p;
	int fds[2];
	char buf[4096], *s;
	ssize_t n;
	long last = -1;
	unsigned lines = 0;

	(void)state;
	memset(&tr, 0, sizeof(tr));
	memset(&ring, 0, sizeof(ring));
	tr.rings = &ring;
	tr.nr_rings = 1;
	tr.cpu = &cpu;
	tr.nr_cpus = 1;
	assert_int_equal(pipe(fds), 0);
	atomic_store(&ring.head, 10);
	assert_int_equal(progress_start(&p, &tr, fds[1], 50), 0);
	sleep_ms_(120);
	atomic_store(&ring.head, 30);
	cpu.lost = 2;
	progress_hold();
	assert_int_equal(write(fds[1], "message\n", 8), 8);
	progress_release();
	sleep_ms_(120);
	progress_stop(&p);
	progress_stop(&p); /* idempotent: one erase */
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	close(fds[0]);
	assert_true(n > 0);
	buf[n] = 0;
	/* the message came right after an erase, on a line of its own */
	assert_non_null(strstr(buf, "\r\033[Kmessage\n"));
	for (s = buf; (s = strstr(s, "\r\033[Khvtrace: ")); s++) {
		long events, lost;

		assert_int_equal(sscanf(s, "\r\033[Khvtrace: %ld events (%*[0-9]/s), %ld lost", &events,
					&lost),
				 2);
		assert_true(events == 10 || events == 30);
		assert_true(events >= last);
		assert_int_equal(lost, events == 30 ? 2 : 0);
		last = events;
		lines++;
	}
	assert_true(lines >= 3);
	assert_int_equal(last, 30);
	/* the end: the last line erased, once */
	assert_true(n > 5);
	assert_string_equal(buf + n - 4, "\r\033[K");
	assert_int_equal(buf[n - 5], 's');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_wanted),
	    cmocka_unit_test(test_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

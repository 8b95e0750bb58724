/* hvtrace attach against QEMU peers that misbehave, played by scripted monitors and gdbstubs
 * (tests/common/fake_server): a monitor or a gdbstub that stalls gives way to SIGINT or SIGTERM at
 * once; one that floods or lies ends the run with exit 6 and one line saying what it did. No QEMU
 * is needed: the fake monitor names the fake gdbstub's port in its answer to `info chardev`. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/fake_server.h"
#include "tests/common/hv_run.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GREETING                                                                                   \
	"{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 22, \"minor\": 2, \"major\": 7}, "         \
	"\"package\": \"\"}, \"capabilities\": [\"oob\"]}}\r\n"
#define CAPS	  "{\"execute\":\"qmp_capabilities\"}\n"
#define RET_EMPTY "{\"return\": {}}\r\n"
#define CHARDEV                                                                                    \
	"{\"execute\":\"human-monitor-command\",\"arguments\":{\"command-line\":\"info "           \
	"chardev\"}}\n"
#define EVENT "{\"event\": \"RTC_CHANGE\", \"data\": {\"offset\": 0}}\r\n"

static char sysmap[64], sock[64];

static int setup(void **state)
{
	FILE *f;

	(void)state;
	strcpy(sysmap, "/tmp/hvt-hostile-map-XXXXXX");
	close(mkstemp(sysmap));
	f = fopen(sysmap, "w");
	fputs("ffffffff81000000 T _stext\nffffffff81000100 T vfs_read\nffffffff81200000 T _etext\n"
	      "ffffffff82000000 D linux_banner\n",
	      f);
	fclose(f);
	snprintf(sock, sizeof(sock), "/tmp/hvt-hostile-qmp-%d.sock", (int)getpid());
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(sysmap);
	unlink(sock);
	return 0;
}

/* `hvtrace attach --qmp` to the fake monitor, with @sig after 1 s if not 0. */
static void attach(struct hv_result *r, int sig)
{
	const char *argv[] = {"attach", "--qmp",    sock, "--system-map", sysmap, "--gdb-memory",
			      "-l",	"vfs_read", NULL};

	hv_run(r, argv, sig ? 1.0 : 0, sig);
}

/* The monitor plays @qmp; with @gdb, it names a gdbstub that plays @gdb. Returns hvtrace's result
 * in @r. */
static void play(const struct fake_step *qmp, size_t nq, const struct fake_step *gdb, size_t ng,
		 int sig, struct hv_result *r)
{
	struct fake_server ms, gs;
	struct fake_step steps[4];
	char chardev[160];

	memcpy(steps, qmp, nq * sizeof(*qmp));
	if (gdb) {
		int port = fake_server_listen_tcp(&gs, NULL, gdb, ng, FAKE_SERVER_HOLD);

		snprintf(
		    chardev, sizeof(chardev),
		    "{\"return\": \"gdb: filename=disconnected:tcp:127.0.0.1:%d,server=on\\r\\n\"}"
		    "\r\n",
		    port);
		steps[nq++] = (struct fake_step){CHARDEV, chardev};
	}
	unlink(sock);
	fake_server_listen_unix(&ms, sock, GREETING, steps, nq, FAKE_SERVER_HOLD);
	alarm(60); /* an hvtrace that hangs fails the test (its peers' sockets then close too) */
	attach(r, sig);
	alarm(0);
	fake_server_finish(&ms);
	if (gdb)
		fake_server_finish(&gs);
}

/* hvtrace ended with @status and said exactly @err. */
static void check(struct hv_result *r, int status, const char *err)
{
	assert_string_equal(r->err, err);
	assert_int_equal(r->status, status);
	hv_result_free(r);
}

/* A monitor that never answers qmp_capabilities: SIGINT ends the wait at once (exit 130), not the
 * command's deadline 4 s later. */
static void test_sigint_ends_stalled_monitor(void **state)
{
	static const struct fake_step qmp[] = {{CAPS, ""}};
	struct hv_result r;

	(void)state;
	play(qmp, 1, NULL, 0, SIGINT, &r);
	check(&r, 128 + SIGINT, "hvtrace: stopped while connecting to QEMU\n");
}

/* A monitor that sends events without end instead of the answer: given up at the command's deadline
 * (events are what a running VM sends, thousands while it is traced; the deadline bounds them). */
static void test_flooding_monitor(void **state)
{
	static const struct fake_step qmp[] = {{CAPS, "", EVENT, 0}};
	struct hv_result r;

	(void)state;
	play(qmp, 1, NULL, 0, 0, &r);
	check(&r, 6, "hvtrace: qmp: no answer to 'qmp_capabilities' within 5000 ms\n");
}

/* A gdbstub that answers qSupported with console output forever. */
static void test_flooding_gdbstub(void **state)
{
	static const struct fake_step qmp[] = {{CAPS, RET_EMPTY}};
	char q[64], o[64];
	const struct fake_step gdb[] = {{fake_gdb_packet(q, sizeof(q), "", "qSupported"), "+",
					 fake_gdb_packet(o, sizeof(o), "", "O6869"), 0}};
	struct hv_result r;

	(void)state;
	play(qmp, 1, gdb, 1, 0, &r);
	check(&r, 6,
	      "hvtrace: gdbstub: 257 console or stop packets and no reply to 'qSupported'\n");
}

/* A gdbstub that stops half-way through its answer: SIGTERM ends the wait (exit 143). */
static void test_sigterm_ends_stalled_gdbstub(void **state)
{
	static const struct fake_step qmp[] = {{CAPS, RET_EMPTY}};
	char q[64];
	const struct fake_step gdb[] = {
	    {fake_gdb_packet(q, sizeof(q), "", "qSupported"), "+$Packet"}};
	struct hv_result r;

	(void)state;
	play(qmp, 1, gdb, 1, SIGTERM, &r);
	check(&r, 128 + SIGTERM, "hvtrace: stopped while connecting to QEMU\n");
}

/* A gdbstub that lists one vCPU twice. */
static void test_lying_gdbstub(void **state)
{
	static const struct fake_step qmp[] = {{CAPS, RET_EMPTY}};
	char b[8][64];
	const struct fake_step gdb[] = {
	    {fake_gdb_packet(b[0], 64, "", "qSupported"),
	     fake_gdb_packet(b[1], 64, "+", "PacketSize=1000;QStartNoAckMode+")},
	    {fake_gdb_packet(b[2], 64, "+", "QStartNoAckMode"),
	     fake_gdb_packet(b[3], 64, "+", "OK")},
	    {fake_gdb_packet(b[4], 64, "+", "vCont?"), fake_gdb_packet(b[5], 64, "", "")},
	    {fake_gdb_packet(b[6], 64, "", "?"), "$S05#b8"},
	    {"$qfThreadInfo#bb", fake_gdb_packet(b[7], 64, "", "m01,01")},
	};
	struct hv_result r;

	(void)state;
	play(qmp, 1, gdb, FAKE_NSTEPS(gdb), 0, &r);
	check(&r, 6, "hvtrace: gdbstub: thread 1 listed twice\n");
}

/* A monitor whose error text is a terminal attack: an OSC title, BEL, a screen clear and a forged
 * second line. Every byte of it reaches stderr escaped, on hvtrace's one line (issue 37, class 7). */
static void test_monitor_error_escaped(void **state)
{
	static const struct fake_step qmp[] = {
	    {CAPS, "{\"error\": {\"class\": \"GenericError\", \"desc\": "
		   "\"\\u001b]0;pwned\\u0007\\u001b[2Jok\\nhvtrace: fake second line\"}}\r\n"}};
	struct hv_result r;

	(void)state;
	play(qmp, 1, NULL, 0, 0, &r);
	for (const char *c = r.err; *c; c++)
		assert_true((*c >= 0x20 && *c < 0x7f) || (*c == '\n' && !c[1]));
	check(&r, 6,
	      "hvtrace: qmp: qmp_capabilities: Invalid argument: \\x1b]0;pwned\\x07\\x1b[2Jok\\n"
	      "hvtrace: fake second line\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sigint_ends_stalled_monitor),
	    cmocka_unit_test(test_flooding_monitor),
	    cmocka_unit_test(test_flooding_gdbstub),
	    cmocka_unit_test(test_sigterm_ends_stalled_gdbstub),
	    cmocka_unit_test(test_lying_gdbstub),
	    cmocka_unit_test(test_monitor_error_escaped),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("hostile_qemu", tests, setup, teardown);
}

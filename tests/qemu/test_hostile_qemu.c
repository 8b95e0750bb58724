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

#include <stdbool.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* `hvtrace attach --qmp` to the fake monitor (with the options of @extra, NULL-terminated, if not
 * NULL), with @sig after 1 s if not 0. */
static void attach(struct hv_result *r, int sig, const char *const *extra)
{
	const char *argv[16] = {"attach", "--qmp",	  sock, "--system-map",
				sysmap,	  "--gdb-memory", "-l", "vfs_read"};
	size_t n = 8;

	for (; extra && *extra && n + 1 < 16; extra++)
		argv[n++] = *extra;
	hv_run(r, argv, sig ? 1.0 : 0, sig);
}

/* The gdbstub's side of the connection up to its thread list, answered with @threads
 * ("m01,02"): five steps into @st, their bytes in @b. Returns 5. */
static size_t gdb_handshake(struct fake_step *st, char b[][64], const char *threads)
{
	st[0] =
	    (struct fake_step){fake_gdb_packet(b[0], 64, "", "qSupported"),
			       fake_gdb_packet(b[1], 64, "+", "PacketSize=1000;QStartNoAckMode+")};
	st[1] = (struct fake_step){fake_gdb_packet(b[2], 64, "+", "QStartNoAckMode"),
				   fake_gdb_packet(b[3], 64, "+", "OK")};
	st[2] = (struct fake_step){fake_gdb_packet(b[4], 64, "+", "vCont?"),
				   fake_gdb_packet(b[5], 64, "", "")};
	st[3] = (struct fake_step){fake_gdb_packet(b[6], 64, "", "?"), "$S05#b8"};
	st[4] = (struct fake_step){"$qfThreadInfo#bb", fake_gdb_packet(b[7], 64, "", threads)};
	return 5;
}

/* The monitor plays @qmp; with @gdb, it names a gdbstub that plays @gdb; hvtrace is given the
 * options @extra (or none). Returns hvtrace's result in @r. */
static void play(const struct fake_step *qmp, size_t nq, const struct fake_step *gdb, size_t ng,
		 int sig, const char *const *extra, struct hv_result *r)
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
	attach(r, sig, extra);
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
	play(qmp, 1, NULL, 0, SIGINT, NULL, &r);
	check(&r, 128 + SIGINT, "hvtrace: stopped while connecting to QEMU\n");
}

/* A monitor that sends events without end instead of the answer: given up at the command's deadline
 * (events are what a running VM sends, thousands while it is traced; the deadline bounds them). */
static void test_flooding_monitor(void **state)
{
	static const struct fake_step qmp[] = {{CAPS, "", EVENT, 0}};
	struct hv_result r;

	(void)state;
	play(qmp, 1, NULL, 0, 0, NULL, &r);
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
	play(qmp, 1, gdb, 1, 0, NULL, &r);
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
	play(qmp, 1, gdb, 1, SIGTERM, NULL, &r);
	check(&r, 128 + SIGTERM, "hvtrace: stopped while connecting to QEMU\n");
}

/* A gdbstub that lists one vCPU twice. */
static void test_lying_gdbstub(void **state)
{
	static const struct fake_step qmp[] = {{CAPS, RET_EMPTY}};
	char b[8][64];
	struct fake_step gdb[5];
	struct hv_result r;

	(void)state;
	play(qmp, 1, gdb, gdb_handshake(gdb, b, "m01,01"), 0, NULL, &r);
	check(&r, 6, "hvtrace: gdbstub: thread 1 listed twice\n");
}

/* attach --cpu 5 to a VM whose gdbstub lists two vCPUs: refused as soon as they are known, before
 * anything is patched (issue 37, class 10). */
static void test_cpu_beyond_vcpus(void **state)
{
	static const struct fake_step qmp[] = {{CAPS, RET_EMPTY}};
	static const char *const cpu[] = {"--cpu", "5", NULL};
	char b[14][64];
	struct fake_step gdb[8];
	size_t n = gdb_handshake(gdb, b, "m01,02");
	struct hv_result r;

	(void)state;
	gdb[n++] = (struct fake_step){fake_gdb_packet(b[8], 64, "", "qsThreadInfo"),
				      fake_gdb_packet(b[9], 64, "", "l")};
	/* the target description: the guest's ISA (issue 38) */
	gdb[n++] = (struct fake_step){
	    fake_gdb_packet(b[10], 64, "", "qXfer:features:read:target.xml:0,ffb"),
	    fake_gdb_packet(b[11], 64, "", "l<target><architecture>i386:x86-64</architecture></target>")};
	gdb[n++] = (struct fake_step){fake_gdb_packet(b[12], 64, "", "Qqemu.PhyMemMode:1"),
				      fake_gdb_packet(b[13], 64, "", "OK")};
	play(qmp, 1, gdb, n, 0, cpu, &r);
	check(&r, 2, "hvtrace: --cpu: CPU 5: the guest has 2 vCPUs (0-1)\n");
}

/* A monitor whose error text is a terminal attack: an OSC title, BEL, a screen clear and a forged
 * second line. Every byte of it reaches stderr escaped, on hvtrace's one line (issue 37, class 7).
 */
static void test_monitor_error_escaped(void **state)
{
	static const struct fake_step qmp[] = {
	    {CAPS, "{\"error\": {\"class\": \"GenericError\", \"desc\": "
		   "\"\\u001b]0;pwned\\u0007\\u001b[2Jok\\nhvtrace: fake second line\"}}\r\n"}};
	struct hv_result r;

	(void)state;
	play(qmp, 1, NULL, 0, 0, NULL, &r);
	for (const char *c = r.err; *c; c++)
		assert_true((*c >= 0x20 && *c < 0x7f) || (*c == '\n' && !c[1]));
	check(&r, 6,
	      "hvtrace: qmp: qmp_capabilities: Invalid argument: \\x1b]0;pwned\\x07\\x1b[2Jok\\n"
	      "hvtrace: fake second line\n");
}

/* ---- attach --pid: a process whose command line names a gdbstub (issue 37, class 9) ---------- */

/* A listening socket on 127.0.0.1 (close-on-exec unless @inherit); its port in *@port. */
static int listen_loopback(int *port, bool inherit)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | (inherit ? 0 : SOCK_CLOEXEC), 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* Starts @exe (a shell) as `@exe -c 'while :; do sleep 1; done' -gdb @gdb`: a process whose argv
 * says it has a gdbstub there; with @hold >= 0 it holds that socket (inherited across the exec).
 * Returns its pid once it runs @exe. */
static pid_t spawn_claimant(const char *exe, const char *gdb, int hold)
{
	pid_t pid = fork();
	char link[4096], want[4096];

	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		/* not the test's output: a pipe it holds would outlive the test */
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		for (int fd = 3; fd < 64; fd++)
			if (fd != hold)
				close(fd);
		execl(exe, exe, "-c", "while :; do sleep 1; done", "-gdb", gdb, (char *)NULL);
		_exit(127);
	}
	assert_non_null(realpath(exe, want));
	for (int i = 0; i < 500; i++) { /* until the exec is done */
		char path[64];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			if (!strcmp(link, want))
				return pid;
		}
		usleep(10000);
	}
	fail_msg("%s did not start", exe);
	return -1;
}

static void end_claimant(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* `attach --pid @pid`: exit @status, stderr @lines lines holding @a and @b (the claimant @pid is
 * ended on a failure too). */
static void attach_pid(pid_t pid, int status, int lines, const char *a, const char *b)
{
	char num[16];
	const char *argv[] = {"attach", "--pid", num,	     "--system-map",
			      sysmap,	"-l",	 "vfs_read", NULL};
	struct hv_result r;

	snprintf(num, sizeof(num), "%d", (int)pid);
	alarm(60);
	hv_run(&r, argv, 0, 0);
	alarm(0);
	if (!strstr(r.err, a) || (b && !strstr(r.err, b)) || count_lines(r.err) != lines ||
	    r.status != status) {
		end_claimant(pid);
		fail_msg("--pid %d: expected exit %d, %d line(s) with \"%s\" and \"%s\": exit %d, "
			 "\"%s\"",
			 (int)pid, status, lines, a, b ? b : "", r.status, r.err);
	}
	hv_result_free(&r);
}

static void fake_qemu_remove(const char *dir, const char *exe)
{
	unlink(exe);
	rmdir(dir);
}

/* A copy of /bin/sh named as QEMU is: what the exe check lets through. */
static void fake_qemu(char *dir, char *exe, size_t len)
{
	char *sh = hv_sh("readlink -f /bin/sh");

	assert_non_null(mkdtemp(dir));
	sh[strcspn(sh, "\n")] = 0;
	snprintf(exe, len, "%s/qemu-system-x86_64", dir);
	free(hv_sh("cp %s %s", sh, exe));
	free(sh);
}

/* A loopback listener and a claimant @exe whose argv names it (-gdb tcp:127.0.0.1:PORT), holding
 * it when @own; its port in *@port. Returns the claimant; *@lfd the listener this test keeps (-1
 * when the claimant has it alone). */
static pid_t claim_port(const char *exe, bool own, int *port, int *lfd)
{
	char gdb[64];
	int l = listen_loopback(port, own);
	pid_t pid;

	snprintf(gdb, sizeof(gdb), "tcp:127.0.0.1:%d", *port);
	pid = spawn_claimant(exe, gdb, own ? l : -1);
	if (own) {
		close(l);
		l = -1;
	}
	*lfd = l;
	return pid;
}

/* A process that is no QEMU at all, with -gdb in its argv and the listener on its port its own:
 * refused before any connection, by what the kernel says it runs. */
static void test_pid_not_qemu(void **state)
{
	char want[96];
	int port, l;
	pid_t pid = claim_port("/bin/sh", true, &port, &l);

	(void)state;
	snprintf(want, sizeof(want), "hvtrace: --pid %d: process %d is not a QEMU (it runs /",
		 (int)pid, (int)pid);
	attach_pid(pid, 2, 1, want, NULL);
	end_claimant(pid);
}

/* A "QEMU" whose argv names a port another process (this test) listens on: refused, the holder
 * named; and one whose argv names another host: refused, nothing connected. */
static void test_pid_gdbstub_not_its_own(void **state)
{
	char dir[] = "/tmp/hvt-fakeqemu-XXXXXX", exe[96], a[160];
	int port, l;
	pid_t pid;

	(void)state;
	fake_qemu(dir, exe, sizeof(exe));
	pid = claim_port(exe, false, &port, &l);
	snprintf(a, sizeof(a),
		 "hvtrace: --pid %d: its gdbstub tcp:127.0.0.1:%d: port %d is held by "
		 "process %d, not by process %d\n",
		 (int)pid, port, port, (int)getpid(), (int)pid);
	attach_pid(pid, 2, 1, a, NULL);
	end_claimant(pid);
	close(l);

	pid = spawn_claimant(exe, "tcp:192.0.2.1:1234", -1);
	snprintf(a, sizeof(a),
		 "hvtrace: --pid %d: its gdbstub tcp:192.0.2.1:1234 is not on loopback", (int)pid);
	attach_pid(pid, 2, 1, a, "(hvtrace connects to no other host)\n");
	end_claimant(pid);
	fake_qemu_remove(dir, exe);
}

/* The same "QEMU" holding its own listener passes both checks: hvtrace connects and then meets a
 * gdbstub that never answers (exit 6, a gdbstub line): the checks refuse only what they should. */
static void test_pid_gdbstub_its_own(void **state)
{
	char dir[] = "/tmp/hvt-fakeqemu-XXXXXX", exe[96];
	int port, l;
	pid_t pid;

	(void)state;
	fake_qemu(dir, exe, sizeof(exe));
	pid = claim_port(exe, true, &port, &l);
	attach_pid(pid, 6, 2, "its gdbstub (tcp:127.0.0.1:",
		   "\nhvtrace: gdbstub: no reply to 'qSupported' within 5000 ms\n");
	end_claimant(pid);
	fake_qemu_remove(dir, exe);
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
	    cmocka_unit_test(test_cpu_beyond_vcpus),
	    cmocka_unit_test(test_pid_not_qemu),
	    cmocka_unit_test(test_pid_gdbstub_not_its_own),
	    cmocka_unit_test(test_pid_gdbstub_its_own),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("hostile_qemu", tests, setup, teardown);
}

/* Reaching a running QEMU (host/qemu/qemu_attach.c) with this process standing in for it: a QMP
 * monitor on a unix socket (a peer thread that answers each command as a test says), a gdbstub on
 * loopback TCP (the scripted fake_server), and for --pid a child whose command line names them. The
 * gdbstub already listening is reused and never stopped; one hvtrace starts is stopped through the
 * monitor once (`gdbserver none`); a monitor socket held by another process than --pid is refused;
 * what cannot be reached is one line. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/qemu/qemu_attach.h"
#include "tests/common/fake_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define GREETING                                                                                   \
	"{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 22, \"minor\": 2, \"major\": 7}, "         \
	"\"package\": \"\"}, \"capabilities\": [\"oob\"]}}\r\n"
#define HMP	 "{\"execute\":\"human-monitor-command\",\"arguments\":{\"command-line\":\""
#define MAX_CMDS 8

/* A QMP monitor: accepts one connection on @path, greets, and answers each command line with
 * reply(); every command is kept in cmd[]. */
struct qmp_peer {
	char path[108];
	int lfd;
	pthread_t thread;
	char cmd[MAX_CMDS][256];
	unsigned nr;
	int gdb_port;	  /* the port `info chardev` shows a gdbstub on (0: none) */
	const char *host; /* and its host */
	bool refuse_gdbserver, refuse_none;
	bool silent_gdbserver; /* `gdbserver tcp:...` answered with an empty text */
};

/* The HMP command line of a QMP command, or "" for another command. */
static const char *hmp_of(const char *cmd, char *out, size_t len)
{
	size_t n = strlen(HMP);

	out[0] = 0;
	if (!strncmp(cmd, HMP, n))
		snprintf(out, len, "%.*s", (int)strcspn(cmd + n, "\""), cmd + n);
	return out;
}

static void peer_reply(struct qmp_peer *p, const char *cmd, char *out, size_t len)
{
	char hmp[256];

	hmp_of(cmd, hmp, sizeof(hmp));
	if (!strcmp(cmd, "{\"execute\":\"qmp_capabilities\"}"))
		snprintf(out, len, "{\"return\": {}}\r\n");
	else if (!strcmp(hmp, "info chardev") && p->gdb_port)
		snprintf(out, len,
			 "{\"return\": \"serial0: filename=pty:/dev/pts/7\\r\\n"
			 "gdb: filename=disconnected:tcp:%s:%d,server=on\\r\\n\"}\r\n",
			 p->host, p->gdb_port);
	else if (!strcmp(hmp, "info chardev"))
		snprintf(out, len, "{\"return\": \"serial0: filename=pty:/dev/pts/7\\r\\n\"}\r\n");
	else if (!strncmp(hmp, "gdbserver tcp:", 14) && p->silent_gdbserver)
		snprintf(out, len, "{\"return\": \"\"}\r\n");
	else if (!strncmp(hmp, "gdbserver tcp:", 14) && !p->refuse_gdbserver)
		snprintf(out, len,
			 "{\"return\": \"Waiting for gdb connection on device '%s'\\r\\n\"}\r\n",
			 hmp + 10);
	else if (!strncmp(hmp, "gdbserver tcp:", 14))
		snprintf(out, len,
			 "{\"return\": \"Could not open gdbserver on device '%s'\\r\\n\"}\r\n",
			 hmp + 10);
	else if (!strcmp(hmp, "gdbserver none") && !p->refuse_none)
		snprintf(out, len, "{\"return\": \"Disabled gdbserver\\r\\n\"}\r\n");
	else if (!strcmp(hmp, "gdbserver none"))
		snprintf(out, len, "{\"return\": \"no gdbserver today\\r\\n\"}\r\n");
	else
		snprintf(out, len,
			 "{\"error\": {\"class\": \"CommandNotFound\", \"desc\": \"no\"}}\r\n");
}

static void *peer_thread(void *arg)
{
	struct qmp_peer *p = arg;
	struct pollfd pfd = {.fd = p->lfd, .events = POLLIN};
	char line[256], out[512];
	size_t n = 0;
	int fd;

	if (poll(&pfd, 1, 10000) <= 0)
		return NULL;
	fd = accept(p->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	if (write(fd, GREETING, strlen(GREETING)) < 0)
		goto out;
	for (;;) {
		char c;

		pfd = (struct pollfd){.fd = fd, .events = POLLIN};
		if (poll(&pfd, 1, 10000) <= 0 || read(fd, &c, 1) != 1)
			break;
		if (c != '\n') {
			if (n < sizeof(line) - 1)
				line[n++] = c;
			continue;
		}
		line[n] = 0;
		n = 0;
		if (p->nr < MAX_CMDS)
			snprintf(p->cmd[p->nr++], sizeof(p->cmd[0]), "%s", line);
		peer_reply(p, line, out, sizeof(out));
		if (write(fd, out, strlen(out)) < 0)
			break;
	}
out:
	close(fd);
	return NULL;
}

static void peer_start(struct qmp_peer *p)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};

	snprintf(p->path, sizeof(p->path), "/tmp/hvt-test-attach-%d.sock", (int)getpid());
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", p->path);
	unlink(p->path);
	p->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(p->lfd >= 0);
	assert_int_equal(bind(p->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(p->lfd, 1), 0);
	assert_int_equal(pthread_create(&p->thread, NULL, peer_thread, p), 0);
}

/* After the client closed its end. */
static void peer_finish(struct qmp_peer *p)
{
	pthread_join(p->thread, NULL);
	close(p->lfd);
	unlink(p->path);
}

/* The HMP command line of the @i-th command the peer got. */
static const char *peer_hmp(const struct qmp_peer *p, unsigned i)
{
	static char out[256];

	assert_true(i < p->nr);
	return hmp_of(p->cmd[i], out, sizeof(out));
}

/* A gdbstub's answers to the handshake, on a loopback port (no-ack mode). */
static char gdb_bytes[8][64];

static int gdbstub_start(struct fake_server *s)
{
	static struct fake_step st[4];

	st[0] = (struct fake_step){
	    fake_gdb_packet(gdb_bytes[0], 64, "", "qSupported"),
	    fake_gdb_packet(gdb_bytes[1], 64, "+", "PacketSize=4000;QStartNoAckMode+")};
	st[1] = (struct fake_step){fake_gdb_packet(gdb_bytes[2], 64, "+", "QStartNoAckMode"),
				   fake_gdb_packet(gdb_bytes[3], 64, "+", "OK")};
	st[2] = (struct fake_step){fake_gdb_packet(gdb_bytes[4], 64, "+", "vCont?"),
				   fake_gdb_packet(gdb_bytes[5], 64, "", "")};
	st[3] = (struct fake_step){fake_gdb_packet(gdb_bytes[6], 64, "", "?"),
				   fake_gdb_packet(gdb_bytes[7], 64, "", "S05")};
	return fake_server_listen_tcp(s, NULL, st, 4, FAKE_SERVER_HOLD);
}

/* A copy of /bin/sh named qemu-system-x86_64 (what --pid's check of the executable lets through),
 * made once; removed at exit. */
static char fake_dir[] = "/tmp/hvt-test-fakeqemu-XXXXXX", fake_exe[96];

static void fake_exe_remove(void)
{
	unlink(fake_exe);
	rmdir(fake_dir);
}

static const char *fake_qemu_exe(void)
{
	if (!fake_exe[0]) {
		char *sh = realpath("/bin/sh", NULL), *cmd;

		assert_non_null(sh);
		assert_non_null(mkdtemp(fake_dir));
		snprintf(fake_exe, sizeof(fake_exe), "%s/qemu-system-x86_64", fake_dir);
		assert_true(asprintf(&cmd, "cp %s %s", sh, fake_exe) > 0);
		assert_int_equal(system(cmd), 0);
		free(cmd);
		free(sh);
		atexit(fake_exe_remove);
	}
	return fake_exe;
}

/* A process whose command line holds @args after "qemu-system-x86_64" (a shell that sleeps, its
 * executable named as QEMU's); it also holds @hold (a listening socket; -1 none). */
static pid_t fake_qemu_holding(const char *a1, const char *a2, int hold)
{
	const char *exe = fake_qemu_exe();
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (hold >= 0)
			fcntl(hold, F_SETFD, 0); /* kept across the exec */
		execl(exe, "sh", "-c", "sleep 30; :", "qemu-system-x86_64", a1, a2, (char *)NULL);
		_exit(127);
	}
	/* its command line is the shell's once it runs */
	for (int i = 0; i < 200; i++) {
		char path[64], buf[8] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
		f = fopen(path, "re");
		if (f) {
			size_t n = fread(buf, 1, 3, f);

			fclose(f);
			if (n == 3 && !memcmp(buf, "sh", 3))
				break;
		}
		usleep(10000);
	}
	return pid;
}

static pid_t fake_qemu(const char *a1, const char *a2)
{
	return fake_qemu_holding(a1, a2, -1);
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* --qmp: the gdbstub QEMU already listens on (loopback) is the one used, and it stays. */
static void test_qmp_existing_gdbstub(void **state)
{
	struct qmp_peer p = {.host = "127.0.0.1"};
	struct fake_server g;
	struct qemu_attach_cfg cfg = {0};
	struct qemu_conn c = {0};
	char err[256] = "";

	(void)state;
	p.gdb_port = gdbstub_start(&g);
	peer_start(&p);
	cfg.qmp = p.path;
	assert_int_equal(qemu_attach_open(&c, &cfg, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(c.pid, getpid()); /* the socket's peer, as the kernel tells it */
	assert_true(c.have_qmp);
	assert_false(c.launched);
	assert_string_equal(c.qmp_addr, p.path);
	assert_string_equal(c.version, "7.2.22");
	assert_true(c.have_gdb);
	assert_false(c.started_gdb);
	assert_false(c.no_monitor);
	assert_string_equal(c.gdb_host, "127.0.0.1");
	assert_int_equal(c.gdb_port, p.gdb_port);
	assert_non_null(c.hmp);
	assert_non_null(c.qmp_cmd);
	/* not started by hvtrace: the monitor is not asked to stop it */
	assert_int_equal(qemu_attach_stop_gdbstub(&c, err, sizeof(err)), 0);
	assert_false(c.have_gdb);
	qemu_attach_close(&c);
	qemu_attach_close(&c); /* idempotent */
	fake_server_finish(&g);
	assert_string_equal(g.tail, "");
	peer_finish(&p);
	assert_int_equal(p.nr, 2);
	assert_string_equal(p.cmd[0], "{\"execute\":\"qmp_capabilities\"}");
	assert_string_equal(peer_hmp(&p, 1), "info chardev");
}

/* A gdbstub on another host is never connected to: hvtrace starts its own on a free loopback port
 * and, when the attach fails after that, stops it through the monitor (once). */
static void test_qmp_started_gdbstub_stopped(void **state)
{
	struct qmp_peer p = {.host = "10.1.2.3", .gdb_port = 1234};
	struct qemu_attach_cfg cfg = {0};
	struct qemu_conn c = {0};
	char err[256], want[256];
	int port = 0;

	(void)state;
	peer_start(&p);
	cfg.qmp = p.path;
	/* nothing listens on the port QEMU was told to listen on: refused */
	assert_int_equal(qemu_attach_open(&c, &cfg, err, sizeof(err)), -ECONNREFUSED);
	assert_true(c.started_gdb);
	assert_false(c.have_gdb);
	assert_string_equal(c.gdb_host, "127.0.0.1");
	assert_true(c.gdb_port > 0 && c.gdb_port < 65536);
	snprintf(want, sizeof(want), "gdbstub 127.0.0.1:%d: connect: Connection refused",
		 c.gdb_port);
	assert_string_equal(err, want);
	qemu_attach_close(&c);
	assert_false(c.started_gdb);
	assert_false(c.have_qmp);
	peer_finish(&p);
	assert_int_equal(p.nr, 4);
	assert_string_equal(peer_hmp(&p, 1), "info chardev");
	assert_int_equal(sscanf(peer_hmp(&p, 2), "gdbserver tcp:127.0.0.1:%d", &port), 1);
	assert_int_equal(port, c.gdb_port);
	assert_string_equal(peer_hmp(&p, 3), "gdbserver none");
}

/* Attaching through the monitor @p, whose `gdbserver tcp:...` fails: -EIO, the error is @fmt with
 * the port (printf, the port given twice), no `gdbserver none` after (it could close a gdbstub
 * that was there before). */
static void expect_gdbserver_failure(struct qmp_peer *p, const char *fmt)
{
	struct qemu_attach_cfg cfg = {0};
	struct qemu_conn c = {0};
	char err[256], want[256];
	int port = 0;

	peer_start(p);
	cfg.qmp = p->path;
	assert_int_equal(qemu_attach_open(&c, &cfg, err, sizeof(err)), -EIO);
	assert_false(c.started_gdb);
	assert_int_equal(sscanf(err, "monitor 'gdbserver tcp:127.0.0.1:%d'", &port), 1);
	snprintf(want, sizeof(want), fmt, port, port);
	assert_string_equal(err, want);
	qemu_attach_close(&c);
	peer_finish(p);
	assert_int_equal(p->nr, 3);
}

/* QEMU refuses the gdbserver command: its words in the error. */
static void test_qmp_gdbserver_refused(void **state)
{
	struct qmp_peer p = {.refuse_gdbserver = true};

	(void)state;
	expect_gdbserver_failure(&p,
				 "monitor 'gdbserver tcp:127.0.0.1:%d': Could not open gdbserver "
				 "on device 'tcp:127.0.0.1:%d'");
}

/* A monitor that answers `gdbserver tcp:...` with nothing: the line says it was an empty reply,
 * rather than ending at its colon (issue 37, class 13). */
static void test_qmp_gdbserver_silent(void **state)
{
	struct qmp_peer p = {.silent_gdbserver = true};

	(void)state;
	expect_gdbserver_failure(&p, "monitor 'gdbserver tcp:127.0.0.1:%d': an empty reply");
}

/* `gdbserver none` not acknowledged while QEMU lives: one line saying the stub may still listen,
 * and the monitor is asked only once. */
static void test_stop_gdbstub_not_acknowledged(void **state)
{
	struct qmp_peer p = {.refuse_none = true};
	struct qemu_attach_cfg cfg = {0};
	struct qemu_conn c = {0};
	char err[256], want[256];

	(void)state;
	peer_start(&p);
	cfg.qmp = p.path;
	assert_int_equal(qemu_attach_open(&c, &cfg, err, sizeof(err)), -ECONNREFUSED);
	assert_true(c.started_gdb);
	assert_int_equal(qemu_attach_stop_gdbstub(&c, err, sizeof(err)), -EIO);
	snprintf(want, sizeof(want),
		 "the gdbstub hvtrace started on tcp:127.0.0.1:%d may still listen: monitor "
		 "'gdbserver none': no gdbserver today",
		 c.gdb_port);
	assert_string_equal(err, want);
	err[0] = 0;
	assert_int_equal(qemu_attach_stop_gdbstub(&c, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	qemu_attach_close(&c);
	peer_finish(&p);
	assert_int_equal(p.nr, 4); /* caps, info chardev, gdbserver tcp:..., gdbserver none */
	assert_string_equal(peer_hmp(&p, 3), "gdbserver none");
}

/* A started gdbstub with no monitor to stop it through. */
static void test_stop_gdbstub_no_monitor(void **state)
{
	struct qemu_conn c = {.started_gdb = true, .gdb_port = 4321};
	char err[256];

	(void)state;
	assert_int_equal(qemu_attach_stop_gdbstub(&c, err, sizeof(err)), -ENOTCONN);
	assert_string_equal(err, "the gdbstub hvtrace started on tcp:127.0.0.1:4321 may still "
				 "listen: no monitor");
	assert_false(c.started_gdb);
	assert_int_equal(qemu_attach_stop_gdbstub(&c, err, sizeof(err)), 0);
}

/* --pid whose command line names a QMP socket another process holds: refused, never trusted. */
static void test_pid_socket_of_another_process(void **state)
{
	struct qmp_peer p = {0};
	struct qemu_attach_cfg cfg = {0};
	struct qemu_conn c = {0};
	char err[256], want[512], qmp[160];
	pid_t child;

	(void)state;
	peer_start(&p);
	snprintf(qmp, sizeof(qmp), "unix:%s,server=on,wait=off", p.path);
	child = fake_qemu("-qmp", qmp);
	cfg.pid = child;
	assert_int_equal(qemu_attach_open(&c, &cfg, err, sizeof(err)), -EPERM);
	snprintf(want, sizeof(want), "--pid %d: its QMP socket unix:%s is held by process %d",
		 (int)child, p.path, (int)getpid());
	assert_string_equal(err, want);
	assert_false(c.have_gdb);
	qemu_attach_close(&c);
	reap(child);
	peer_finish(&p);
	assert_int_equal(p.nr, 1); /* the capabilities, nothing asked of it after */
}

/* --pid of a QEMU with a gdbstub and no monitor: the gdbstub as found, guest memory through it. */
static void test_pid_gdbstub_only(void **state)
{
	struct qemu_attach_cfg cfg = {0};
	struct qemu_conn c = {0};
	struct fake_server g;
	char err[256] = "", gdb[64];
	pid_t child;

	(void)state;
	snprintf(gdb, sizeof(gdb), "tcp:127.0.0.1:%d", gdbstub_start(&g));
	child = fake_qemu_holding("-gdb", gdb, g.lfd); /* its gdbstub's socket is its own */
	cfg.pid = child;
	assert_int_equal(qemu_attach_open(&c, &cfg, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(c.pid, child);
	assert_true(c.no_monitor);
	assert_false(c.have_qmp);
	assert_null(c.hmp);
	assert_true(c.have_gdb);
	assert_false(c.started_gdb);
	assert_string_equal(c.gdb_host, "127.0.0.1");
	qemu_attach_close(&c);
	fake_server_finish(&g);
	reap(child);
}

/* --pid of a process that offers no way in, or of no process at all. */
static void test_pid_unreachable(void **state)
{
	struct qemu_attach_cfg cfg = {0};
	struct qemu_conn c = {0};
	char err[256], want[256];
	pid_t child;

	(void)state;
	child = fake_qemu("-m", "512");
	cfg.pid = child;
	assert_int_equal(qemu_attach_open(&c, &cfg, err, sizeof(err)), -ENOENT);
	snprintf(
	    want, sizeof(want),
	    "--pid %d: neither a QMP monitor (-qmp, -mon) nor a gdbstub (-s, -gdb tcp:) on its "
	    "command line, and not a KVM VMM: no anon_inode:kvm-vm among its ",
	    (int)child);
	assert_memory_equal(err, want, strlen(want)); /* then its number of open files */
	assert_non_null(strstr(err, " open files"));
	qemu_attach_close(&c);
	reap(child);
	/* reaped: no such process now */
	memset(&c, 0, sizeof(c));
	assert_int_equal(qemu_attach_open(&c, &cfg, err, sizeof(err)), -ESRCH);
	snprintf(want, sizeof(want), "--pid %d: no such process", (int)child);
	assert_string_equal(err, want);
	qemu_attach_close(&c);
}

/* --qmp at a socket nobody listens on. */
static void test_qmp_nobody(void **state)
{
	struct qemu_attach_cfg cfg = {.qmp = "/tmp/hvt-test-attach-nobody.sock"};
	struct qemu_conn c = {0};
	char err[256];

	(void)state;
	unlink(cfg.qmp);
	assert_int_equal(qemu_attach_open(&c, &cfg, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "qmp /tmp/hvt-test-attach-nobody.sock: No such file or directory");
	assert_false(c.have_qmp);
	assert_false(c.have_gdb);
	qemu_attach_close(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_qmp_existing_gdbstub),
	    cmocka_unit_test(test_qmp_started_gdbstub_stopped),
	    cmocka_unit_test(test_qmp_gdbserver_refused),
	    cmocka_unit_test(test_qmp_gdbserver_silent),
	    cmocka_unit_test(test_stop_gdbstub_not_acknowledged),
	    cmocka_unit_test(test_stop_gdbstub_no_monitor),
	    cmocka_unit_test(test_pid_socket_of_another_process),
	    cmocka_unit_test(test_pid_gdbstub_only),
	    cmocka_unit_test(test_pid_unreachable),
	    cmocka_unit_test(test_qmp_nobody),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

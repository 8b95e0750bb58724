#include "host/qemu/qemu_attach.h"
#include "host/qemu/qemu_find.h"
#include "host/vmm/kvm_proc.h"
#include "host/vmm/tcp.h"
#include "host/util/msg_fmt.h"
#include "host/util/proc_state.h"
#include "host/util/peer_text.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <signal.h>
#include <unistd.h>

/* The QMP connections retried after a command's deadline passed, for a QEMU hvtrace launched (and
 * that still runs): seen at a load of 9 on 2 cores, QEMU 11's first answer later than 5 s */
#define QMP_LAUNCH_RETRIES 4

static int qmp_hmp_fn(void *ctx, const char *cmd, char *out, size_t len)
{
	return qmp_hmp(ctx, cmd, out, len);
}

static int qmp_execute_fn(void *ctx, const char *cmd, char *reply, size_t len)
{
	return qmp_execute(ctx, cmd, reply, len);
}

/* A free TCP port on loopback for the gdbstub. */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* What @pid is for KVM, in the words of a refusal (@why: the line so far): a KVM VMM (its vCPUs),
 * or not one (no VM among its files), so that a process hvtrace cannot attach to is named for
 * what it is. */
static void say_kvm_vmm(pid_t pid, const char *why, char *err, size_t errlen)
{
	struct kvm_proc *kp = malloc(sizeof(*kp));
	char line[320];
	int rc;

	if (!kp) {
		msg_fmt(err, errlen, "--pid %d: %s", (int)pid, why);
		return;
	}
	rc = kvm_proc_discover(pid, kp, line, sizeof(line));
	if (rc == 0)
		msg_fmt(
		    err, errlen,
		    "--pid %d: %s; it is a KVM VMM (%u vCPUs, VM fd %d), but attaching to a VMM "
		    "other than QEMU with QMP or a gdbstub (issue 41) is not built yet",
		    (int)pid, why, kp->nr_vcpus, kp->vm_fd);
	else if (rc == -ENODEV && kp->vm_fd < 0)
		msg_fmt(err, errlen,
			"--pid %d: %s, and not a KVM VMM: no anon_inode:kvm-vm among its "
			"%u open files",
			(int)pid, why, kp->nr_fds);
	else
		msg_fmt(err, errlen, "--pid %d: %s", (int)pid, why);
	free(kp);
}

bool qemu_attach_pid_generic(pid_t pid)
{
	struct kvm_proc *kp = malloc(sizeof(*kp));
	struct qemu_cmdline cl;
	char why[320], *buf;
	size_t n;
	bool vm, channel;

	if (!kp)
		return false;
	int ret = kvm_proc_discover(pid, kp, why, sizeof(why));

	vm = ret == 0;
	free(kp);
	if (ret == -ESRCH)
		return true; /* gone (or never there): the generic backend says so, status 2 */
	if (!vm)
		return false;
	if (qemu_find_check_exe(pid, why, sizeof(why)) < 0)
		return true;
	if (qemu_cmdline_read(pid, &buf, &n) < 0)
		return false;
	qemu_cmdline_parse(buf, n, &cl);
	free(buf);
	channel = cl.qmp[0] || cl.gdb_port;
	return !channel;
}

/* How to reach QEMU @pid from its command line: its QMP monitor's address in @addr, or (no monitor)
 * its gdbstub in c->gdb_host/port with c->no_monitor. */
static int monitor_of_pid(struct qemu_conn *c, pid_t pid, char *addr, size_t len, char *err,
			  size_t errlen)
{
	struct qemu_cmdline cl;
	char *buf, why[256];
	size_t n;
	int ret = qemu_cmdline_read(pid, &buf, &n);

	if (ret < 0) {
		msg_fmt(err, errlen, "--pid %d: %s", (int)pid,
			ret == -ESRCH ? "no such process" : strerror(-ret));
		return ret;
	}
	/* its command line is its own word: the kernel says which program it runs */
	ret = qemu_find_check_exe(pid, why, sizeof(why));
	if (ret < 0) {
		free(buf);
		say_kvm_vmm(pid, why, err, errlen);
		return ret;
	}
	qemu_cmdline_parse(buf, n, &cl);
	free(buf);
	if (cl.qmp[0]) {
		snprintf(addr, len, "%s", cl.qmp);
		return 0;
	}
	if (cl.gdb_port) {
		/* loopback only, and the port must be the process's own: the command line could
		 * name any host, or a port another process listens on */
		if (!qemu_find_is_loopback(cl.gdb_host)) {
			msg_fmt(err, errlen,
				"--pid %d: its gdbstub tcp:%s:%d is not on loopback (hvtrace "
				"connects to no other host)",
				(int)pid, cl.gdb_host, cl.gdb_port);
			return -EADDRNOTAVAIL;
		}
		ret = qemu_find_check_listener(pid, (unsigned)cl.gdb_port, why, sizeof(why));
		if (ret < 0) {
			msg_fmt(err, errlen, "--pid %d: its gdbstub tcp:%s:%d: %s", (int)pid,
				cl.gdb_host, cl.gdb_port, why);
			return ret;
		}
		c->no_monitor = true;
		snprintf(c->gdb_host, sizeof(c->gdb_host), "%s", cl.gdb_host);
		c->gdb_port = cl.gdb_port;
		fprintf(stderr,
			"hvtrace: --pid %d: no QMP monitor%s%s; its gdbstub (tcp:%s:%d) is used as "
			"found, guest memory through it (physical mode)\n",
			(int)pid, cl.why[0] ? ": " : "", cl.why, cl.gdb_host, cl.gdb_port);
		return 0;
	}
	say_kvm_vmm(pid,
		    cl.why[0]
			? cl.why
			: "neither a QMP monitor (-qmp, -mon) nor a gdbstub (-s, -gdb tcp:) on "
			  "its command line",
		    err, errlen);
	return -ENOENT;
}

/* Reaches the VM's monitor: launches QEMU, or finds it. */
static int connect_monitor(struct qemu_conn *c, const struct qemu_attach_cfg *how, char *err,
			   size_t errlen)
{
	char path[QEMU_ADDR_MAX], why[256], reply[512];
	pid_t peer;
	int ret;

	if (how->domain) {
		ret = libvirt_dom_open(&c->dom, how->uri, how->domain, err, errlen);
		if (ret < 0)
			return ret;
		c->have_dom = true;
		c->pid = c->dom.pid;
		c->ram = c->dom.ram_size;
		c->hmp = libvirt_dom_hmp;
		c->qmp_cmd = libvirt_dom_qmp;
		c->hmp_ctx = &c->dom;
		/* libvirt took the greeting: the version asked (none, as unknown, if that fails) */
		if (c->qmp_cmd(c->hmp_ctx, "{\"execute\":\"query-version\"}", reply,
			       sizeof(reply)) == 0)
			qmp_version_string(reply, strlen(reply), c->version, sizeof(c->version));
		return 0;
	}
	if (how->launch) {
		struct qemu_launch_cfg cfg = how->qemu;

		cfg.qmp_path = NULL; /* in a private directory, removed when QEMU is gone */
		ret = qemu_launch(&cfg, &c->proc, err, errlen);
		if (ret < 0)
			return ret;
		snprintf(path, sizeof(path), "%s", c->proc.qmp_path);
		c->launched = true;
		c->pid = c->proc.pid;
		c->ram = (uint64_t)cfg.mem_mb << 20;
	} else if (how->pid) {
		c->pid = how->pid;
		ret = monitor_of_pid(c, c->pid, path, sizeof(path), err, errlen);
		if (ret < 0)
			return ret;
		if (c->no_monitor)
			return 0; /* guest memory through the gdbstub: no monitor to learn the map from */
	} else if (strlen(how->qmp) >= sizeof(path)) {
		msg_fmt(err, errlen, "--qmp %s: longer than %zu bytes", how->qmp, sizeof(path) - 1);
		return -ENAMETOOLONG;
	} else {
		snprintf(path, sizeof(path), "%s", how->qmp);
	}
	ret = qmp_connect(&c->qmp, path, err, errlen);
	/* a QEMU just launched binds its socket (which qemu_launch waits for) before it listens on
	 * it: refused until then, for as long as it lives (10 s at most); and on a host loaded
	 * enough, its monitor can take longer than a command's deadline to answer the first ones:
	 * asked again, a few times, while it lives */
	for (int i = 0, slow = 0;
	     (ret == -ECONNREFUSED || (ret == -ETIMEDOUT && slow++ < QMP_LAUNCH_RETRIES)) &&
	     c->launched && i < 1000;
	     i++) {
		if (tcp_interrupted() || qemu_proc_wait(&c->proc, 10) != -ETIMEDOUT)
			break;
		ret = qmp_connect(&c->qmp, path, err, errlen);
	}
	/* a QEMU just launched that went away: what it said is why, not the broken connection */
	if (ret < 0 && c->launched && ret != -EINTR) {
		int st = qemu_proc_wait(&c->proc, 1000);
		char text[sizeof(c->proc.err_text)];

		if (st >= 0)
			msg_fmt(err, errlen, "QEMU exited with status %d: %s", st,
				c->proc.err_text[0] ? peer_str(c->proc.err_text, text, sizeof(text))
						    : "nothing on its stderr");
	}
	if (ret < 0)
		return ret;
	c->have_qmp = true;
	snprintf(c->qmp_addr, sizeof(c->qmp_addr), "%s", path);
	snprintf(c->version, sizeof(c->version), "%s", c->qmp.version);
	c->hmp = qmp_hmp_fn;
	c->qmp_cmd = qmp_execute_fn;
	c->hmp_ctx = &c->qmp;
	/* the process behind the socket, as the kernel tells it: never what the peer says */
	peer = qemu_find_socket_peer(c->qmp.fd, why, sizeof(why));
	if (peer <= 0) {
		msg_fmt(err, errlen, "QMP %s: %s", path, why);
		return peer < 0 ? peer : -ENOENT;
	}
	if (c->pid && peer != c->pid) {
		msg_fmt(err, errlen, "--pid %d: its QMP socket %s is held by process %d",
			(int)c->pid, path, (int)peer);
		return -EPERM;
	}
	c->pid = peer;
	return 0;
}

/* The loopback port of a gdbstub QEMU already listens on ("gdb:
 * filename=disconnected:tcp:HOST:PORT, server=on" in `info chardev`, HOST loopback or a wildcard),
 * its host in @host; or -1. The monitor's text is untrusted: another host is never connected to. */
static int existing_gdbstub(struct qemu_conn *c, char *host, size_t hlen)
{
	char out[4096], *line, *save;
	int port;

	if (c->hmp(c->hmp_ctx, "info chardev", out, sizeof(out)) < 0)
		return -1;
	for (line = strtok_r(out, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
		const char *tcp = strstr(line, "tcp:");

		if (!strncmp(line, "gdb: filename=", 14) && tcp &&
		    qemu_cmdline_tcp(tcp, host, hlen, &port) == 0 &&
		    (!strcmp(host, "127.0.0.1") || !strcmp(host, "::1")))
			return port;
	}
	return -1;
}

/* Connects to QEMU's gdbstub: the one already listening (QEMU 7.2 cannot open a second TCP
 * gdbserver: "duplicate yank instance"), or a new one on a free loopback port started through the
 * monitor. */
static int connect_gdbstub(struct qemu_conn *c, char *err, size_t errlen)
{
	char cmd[64], out[512];
	int port, ret;

	if (c->no_monitor) {
		ret = gdb_connect(&c->gdb, c->gdb_host, c->gdb_port, err, errlen);
		if (ret < 0)
			return ret;
		c->have_gdb = true;
		return 0;
	}
	port = existing_gdbstub(c, c->gdb_host, sizeof(c->gdb_host));
	if (port < 0) {
		snprintf(c->gdb_host, sizeof(c->gdb_host), "127.0.0.1");
		port = free_port();
		if (port < 0) {
			msg_fmt(err, errlen, "no free loopback port for the gdbstub");
			return -EADDRINUSE;
		}
		snprintf(cmd, sizeof(cmd), "gdbserver tcp:127.0.0.1:%d", port);
		ret = c->hmp(c->hmp_ctx, cmd, out, sizeof(out));
		if (ret < 0 || !strstr(out, "Waiting for gdb connection")) {
			char text[200];

			peer_text(out, strcspn(out, "\r\n"), text, sizeof(text));
			/* not marked as started: a `gdbserver none` could close a gdbstub that was
			 * there before (one this monitor did not show) */
			msg_fmt(err, errlen, "monitor '%s': %s", cmd,
				text[0]	  ? text
				: ret < 0 ? strerror(-ret)
					  : "an empty reply");
			return ret < 0 ? ret : -EIO;
		}
		c->started_gdb = true;
	}
	c->gdb_port = port;
	ret = gdb_connect(&c->gdb, c->gdb_host, port, err, errlen);
	if (ret < 0)
		return ret;
	c->have_gdb = true;
	return 0;
}

int qemu_attach_open(struct qemu_conn *c, const struct qemu_attach_cfg *cfg, char *err,
		     size_t errlen)
{
	int ret = connect_monitor(c, cfg, err, errlen);

	return ret < 0 ? ret : connect_gdbstub(c, err, errlen);
}

/* Whether QEMU @pid has exited (a zombie too): then nothing of it listens. */
static bool qemu_exited(pid_t pid)
{
	char state;
	int ret;

	if (pid <= 0)
		return false;
	ret = proc_state(pid, 0, &state);
	if (ret == 0)
		return PROC_STATE_EXITED(state);
	return ret == -ENOENT || ret == -ENODATA;
}

/* `gdbserver none` through the monitor: QEMU closes the gdbstub's chardev, listening socket
 * included ("Disabled gdbserver"). */
static int gdbserver_none(struct qemu_conn *c, char *err, size_t errlen)
{
	char out[512] = "", text[200];
	int ret = c->hmp(c->hmp_ctx, "gdbserver none", out, sizeof(out));

	if (ret == 0 && strstr(out, "Disabled gdbserver"))
		return 0;
	if (qemu_exited(c->pid))
		return 0; /* the VM went away: its gdbstub with it */
	peer_text(out, strcspn(out, "\r\n"), text, sizeof(text));
	if (!text[0]) /* nothing said: the error, or that the reply was empty */
		snprintf(text, sizeof(text), "%s", ret < 0 ? strerror(-ret) : "an empty reply");
	msg_fmt(err, errlen,
		"the gdbstub hvtrace started on tcp:127.0.0.1:%d may still listen: "
		"monitor 'gdbserver none': %s",
		c->gdb_port, text);
	return ret < 0 ? ret : -EIO;
}

int qemu_attach_stop_gdbstub(struct qemu_conn *c, char *err, size_t errlen)
{
	if (c->have_gdb)
		gdb_close(&c->gdb);
	c->have_gdb = false;
	if (!c->started_gdb)
		return 0;
	c->started_gdb = false; /* one try: a monitor that failed once is not asked again */
	if (!c->hmp) {
		snprintf(
		    err, errlen,
		    "the gdbstub hvtrace started on tcp:127.0.0.1:%d may still listen: no monitor",
		    c->gdb_port);
		return -ENOTCONN;
	}
	return gdbserver_none(c, err, errlen);
}

int qemu_attach_takeover_stop_gdbstub(struct qemu_conn *c, char *err, size_t errlen)
{
	int ret;

	if (!c->started_gdb)
		return 0;
	if (c->have_dom) {
		ret = libvirt_dom_reopen(&c->dom, err, errlen);
		if (ret < 0)
			return ret;
	} else if (c->have_qmp) {
		/* QEMU serves one client per monitor socket: it takes the new connection once the
		 * inherited one is closed (the parent's end closed when it died) */
		qmp_close(&c->qmp);
		c->have_qmp = false;
		ret = qmp_connect(&c->qmp, c->qmp_addr, err, errlen);
		if (ret < 0)
			return ret;
		c->have_qmp = true;
	}
	return qemu_attach_stop_gdbstub(c, err, errlen);
}

void qemu_attach_close(struct qemu_conn *c)
{
	char err[320];

	/* an error path (QEMU launched by hvtrace is killed below) */
	if (c->started_gdb && !c->launched && qemu_attach_stop_gdbstub(c, err, sizeof(err)) < 0)
		fprintf(stderr, "hvtrace: %s\n", err);
	c->started_gdb = false;
	if (c->have_gdb)
		gdb_close(&c->gdb);
	c->have_gdb = false;
	if (c->have_dom)
		libvirt_dom_close(&c->dom);
	c->have_dom = false;
	if (c->launched && c->proc.pid > 0) {
		/* an error before the guest ran its course: do not leave our QEMU behind */
		qemu_attach_end_qemu(c);
	}
	if (c->have_qmp)
		qmp_close(&c->qmp);
	c->have_qmp = false;
}

/* How long a launched QEMU has to exit after QMP's quit before it is killed. */
#define QUIT_WAIT_MS 3000

void qemu_attach_end_qemu(struct qemu_conn *c)
{
	char reply[256];
	int timeout, ret;

	if (!c->launched || c->proc.pid < 0)
		return;
	if (c->have_qmp) {
		timeout = c->qmp.timeout_ms;
		c->qmp.timeout_ms = QUIT_WAIT_MS;
		/* QEMU answers, then closes the monitor as it exits (or closes it at once) */
		ret = qmp_execute(&c->qmp, "{\"execute\":\"quit\"}", reply, sizeof(reply));
		c->qmp.timeout_ms = timeout;
		if (ret == 0 || ret == -ECONNRESET)
			(void)qemu_proc_wait(&c->proc, QUIT_WAIT_MS);
	}
	qemu_proc_kill(&c->proc); /* still there (or no monitor): SIGKILL; reaped either way */
}

void qemu_attach_takeover_end_qemu(struct qemu_conn *c)
{
	char err[256], reply[256];

	if (!c->launched || c->proc.pid < 0)
		return;
	/* the inherited connection may hold half a message of the dead process: a fresh one */
	if (c->have_qmp)
		qmp_close(&c->qmp);
	c->have_qmp = false;
	if (qmp_connect(&c->qmp, c->qmp_addr, err, sizeof(err)) == 0) {
		c->qmp.timeout_ms = QUIT_WAIT_MS;
		(void)qmp_execute(&c->qmp, "{\"execute\":\"quit\"}", reply, sizeof(reply));
		qmp_close(&c->qmp);
	}
	/* not this process's child: gone when kill(0) says so (or reaped by whoever adopted it) */
	for (int i = 0; i < QUIT_WAIT_MS / 10 && kill(c->proc.pid, 0) == 0; i++)
		usleep(10000);
	if (kill(c->proc.pid, 0) == 0)
		kill(c->proc.pid, SIGKILL);
	qemu_proc_remove_run_dir(&c->proc);
}

#include "host/qemu/qemu_attach.h"
#include "host/qemu/tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int qmp_hmp_fn(void *ctx, const char *cmd, char *out, size_t len)
{
	return qmp_hmp(ctx, cmd, out, len);
}

/* The process at the other end of the QMP unix socket (SO_PEERCRED). */
static pid_t qmp_peer_pid(const struct qmp *q)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(q->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -1;
	return cred.pid;
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

/* The unix socket of a `-qmp unix:PATH,...` on QEMU @pid's command line. */
static int qmp_path_of(pid_t pid, char *path, size_t len)
{
	char f[64], *buf = NULL, *prev = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *cmd;
	int found = -ENOENT;

	snprintf(f, sizeof(f), "/proc/%d/cmdline", (int)pid);
	cmd = fopen(f, "r");
	if (!cmd)
		return -errno;
	while ((n = getdelim(&buf, &cap, 0, cmd)) > 0) {
		if (prev && !strcmp(prev, "-qmp") && !strncmp(buf, "unix:", 5)) {
			snprintf(path, len, "%.*s", (int)strcspn(buf + 5, ","), buf + 5);
			found = 0;
		}
		free(prev);
		prev = strdup(buf);
	}
	free(prev);
	free(buf);
	fclose(cmd);
	return found;
}

/* Reaches the VM's monitor: launches QEMU, or finds it. */
static int connect_monitor(struct qemu_conn *c, const struct qemu_attach_cfg *how, char *err,
			   size_t errlen)
{
	char path[256];
	int ret;

	if (how->domain) {
		ret = libvirt_dom_open(&c->dom, how->domain, err, errlen);
		if (ret < 0)
			return ret;
		c->have_dom = true;
		c->pid = c->dom.pid;
		c->ram = c->dom.ram_size;
		c->hmp = libvirt_dom_hmp;
		c->hmp_ctx = &c->dom;
		return 0;
	}
	if (how->launch) {
		struct qemu_launch_cfg cfg = how->qemu;

		cfg.qmp_path = path;
		snprintf(path, sizeof(path), "/tmp/hvtrace-qmp-%d.sock", (int)getpid());
		ret = qemu_launch(&cfg, &c->proc, err, errlen);
		if (ret < 0)
			return ret;
		c->launched = true;
		c->pid = c->proc.pid;
		c->ram = (uint64_t)cfg.mem_mb << 20;
	} else if (how->pid) {
		c->pid = how->pid;
		if (qmp_path_of(c->pid, path, sizeof(path)) < 0) {
			snprintf(err, errlen, "--pid %d: no -qmp unix:SOCKET on its command line",
				 how->pid);
			return -ENOENT;
		}
	} else {
		snprintf(path, sizeof(path), "%s", how->qmp);
	}
	ret = qmp_connect(&c->qmp, path, err, errlen);
	if (ret < 0)
		return ret;
	c->have_qmp = true;
	c->hmp = qmp_hmp_fn;
	c->hmp_ctx = &c->qmp;
	if (!c->pid) {
		c->pid = qmp_peer_pid(&c->qmp);
		if (c->pid <= 0) {
			snprintf(err, errlen, "--qmp %s: cannot tell the QEMU process", path);
			return -ENOENT;
		}
	}
	return 0;
}

/* The loopback port of a gdbstub QEMU already listens on ("gdb:
 * filename=...tcp:HOST:PORT,server=on" in `info chardev`), or -1. */
static int existing_gdbstub(struct qemu_conn *c)
{
	char out[4096], *line, *save;
	int port;

	if (c->hmp(c->hmp_ctx, "info chardev", out, sizeof(out)) < 0)
		return -1;
	for (line = strtok_r(out, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
		const char *tcp = strstr(line, "tcp:127.0.0.1:");

		if (!strncmp(line, "gdb: filename=", 14) && tcp &&
		    sscanf(tcp + 14, "%d", &port) == 1)
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
	int port = existing_gdbstub(c), ret;

	if (port < 0) {
		port = free_port();
		if (port < 0) {
			snprintf(err, errlen, "no free loopback port for the gdbstub");
			return -EADDRINUSE;
		}
		snprintf(cmd, sizeof(cmd), "gdbserver tcp:127.0.0.1:%d", port);
		ret = c->hmp(c->hmp_ctx, cmd, out, sizeof(out));
		if (ret < 0 || !strstr(out, "Waiting for gdb connection")) {
			char text[200];

			tcp_printable(out, strcspn(out, "\r\n"), text, sizeof(text));
			snprintf(err, errlen, "monitor '%s': %s", cmd, text);
			return ret < 0 ? ret : -EIO;
		}
	}
	ret = gdb_connect(&c->gdb, "127.0.0.1", port, err, errlen);
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

void qemu_attach_close(struct qemu_conn *c)
{
	if (c->have_gdb)
		gdb_close(&c->gdb);
	c->have_gdb = false;
	if (c->have_qmp)
		qmp_close(&c->qmp);
	c->have_qmp = false;
	if (c->have_dom)
		libvirt_dom_close(&c->dom);
	c->have_dom = false;
	if (c->launched && c->proc.pid > 0) {
		/* an error before the guest ran its course: do not leave our QEMU behind */
		qemu_proc_kill(&c->proc);
	}
}

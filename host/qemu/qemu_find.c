#include "host/qemu/qemu_find.h"
#include "host/qemu/qemu_cmdline.h"
#include "host/util/msg_fmt.h"
#include "host/util/peer_text.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_FDS_SCANNED (1u << 20) /* /proc/PID/fd entries looked at, all processes together */

/* An address as /proc/net/tcp6 has it: IPv4 as ::ffff:a.b.c.d. */
struct endpoint {
	unsigned char ip[16];
	unsigned port;
};

static int endpoint_of(const struct sockaddr_storage *ss, struct endpoint *e)
{
	memset(e, 0, sizeof(*e));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;

		e->ip[10] = e->ip[11] = 0xff;
		memcpy(e->ip + 12, &a->sin_addr, 4);
		e->port = ntohs(a->sin_port);
		return 0;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;

		memcpy(e->ip, &a->sin6_addr, 16);
		e->port = ntohs(a->sin6_port);
		return 0;
	}
	return -EAFNOSUPPORT;
}

/* "0100007F:1F90" (tcp: one native-order word) or 32 hex digits (tcp6: four words). */
static int endpoint_parse(const char *s, struct endpoint *e)
{
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : 0;
	char word[9];

	memset(e, 0, sizeof(*e));
	if (n != 8 && n != 32)
		return -EINVAL;
	for (size_t i = 0; i < n / 8; i++) {
		uint32_t w;

		memcpy(word, s + 8 * i, 8);
		word[8] = 0;
		w = (uint32_t)strtoul(word, NULL, 16);
		if (n == 8) {
			e->ip[10] = e->ip[11] = 0xff;
			memcpy(e->ip + 12, &w, 4);
		} else {
			memcpy(e->ip + 4 * i, &w, 4);
		}
	}
	e->port = (unsigned)strtoul(colon + 1, NULL, 16);
	return 0;
}

static bool same(const struct endpoint *a, const struct endpoint *b)
{
	return a->port == b->port && !memcmp(a->ip, b->ip, 16);
}

/* The inode of the socket whose local end is @local and remote end @remote, from @table. 0 if none.
 */
static unsigned long tcp_inode(const char *table, const struct endpoint *local,
			       const struct endpoint *remote)
{
	FILE *f = fopen(table, "re");
	char line[512], l[64], r[64];
	unsigned long inode = 0, ino;

	if (!f)
		return 0;
	while (!inode && fgets(line, sizeof(line), f)) {
		struct endpoint el, er;

		if (sscanf(line, " %*u: %63s %63s %*x %*x:%*x %*x:%*x %*x %*u %*d %lu", l, r,
			   &ino) != 3)
			continue;
		if (endpoint_parse(l, &el) == 0 && endpoint_parse(r, &er) == 0 &&
		    same(&el, local) && same(&er, remote))
			inode = ino;
	}
	fclose(f);
	return inode;
}

/* The process holding socket @inode (the first found), or 0. */
static pid_t socket_owner(unsigned long inode)
{
	char want[48], path[600], link[64];
	DIR *proc = opendir("/proc");
	struct dirent *p;
	unsigned scanned = 0;
	pid_t found = 0;

	if (!proc)
		return 0;
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	while (!found && scanned < MAX_FDS_SCANNED && (p = readdir(proc))) {
		DIR *fds;
		struct dirent *f;

		if (!isdigit((unsigned char)p->d_name[0]) || atoi(p->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd", p->d_name);
		fds = opendir(path);
		if (!fds)
			continue;
		while (!found && scanned++ < MAX_FDS_SCANNED && (f = readdir(fds))) {
			ssize_t n;

			if (f->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/fd/%s", p->d_name, f->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n > 0) {
				link[n] = 0;
				if (!strcmp(link, want))
					found = atoi(p->d_name);
			}
		}
		closedir(fds);
	}
	closedir(proc);
	return found;
}

pid_t qemu_find_socket_peer(int fd, char *err, size_t errlen)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof(me), pl = sizeof(peer);
	struct endpoint el, ep;
	unsigned long inode;
	pid_t pid;

	if (getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) < 0) {
		msg_fmt(err, errlen, "cannot tell the monitor's peer: %s", strerror(errno));
		return -errno;
	}
	if (me.ss_family == AF_UNIX) {
		struct ucred cred;
		socklen_t len = sizeof(cred);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0) {
			msg_fmt(err, errlen,
				"cannot tell the process at the other end of the socket");
			return -ENOENT;
		}
		return cred.pid;
	}
	if (endpoint_of(&me, &el) < 0 || endpoint_of(&peer, &ep) < 0) {
		msg_fmt(err, errlen, "the monitor is neither a unix nor a TCP socket");
		return -EAFNOSUPPORT;
	}
	/* the peer's socket: its local end is our remote end */
	inode = tcp_inode("/proc/net/tcp", &ep, &el);
	if (!inode)
		inode = tcp_inode("/proc/net/tcp6", &ep, &el);
	pid = inode ? socket_owner(inode) : 0;
	if (pid <= 0) {
		msg_fmt(err, errlen,
			"no process on this host holds the other end of the connection (hvtrace "
			"must run on the VM's host, in its network namespace)");
		return -ENOENT;
	}
	return pid;
}

pid_t qemu_find_by_uuid(const char *uuid, char *err, size_t errlen)
{
	DIR *proc = opendir("/proc");
	struct dirent *p;
	pid_t found = 0, other = 0;

	if (!proc) {
		msg_fmt(err, errlen, "/proc: %s", strerror(errno));
		return -errno;
	}
	while ((p = readdir(proc))) {
		char *buf;
		size_t len;
		pid_t pid;

		if (!isdigit((unsigned char)p->d_name[0]))
			continue;
		pid = atoi(p->d_name);
		if (pid == getpid() || qemu_cmdline_read(pid, &buf, &len) < 0)
			continue;
		if (qemu_cmdline_has_uuid(buf, len, uuid)) {
			if (found)
				other = pid;
			else
				found = pid;
		}
		free(buf);
	}
	closedir(proc);
	if (other) {
		msg_fmt(err, errlen, "processes %d and %d both have -uuid %s", (int)found,
			(int)other, uuid);
		return -EEXIST;
	}
	if (!found) {
		msg_fmt(err, errlen,
			"no process on this host has -uuid %s (hvtrace must run on the VM's host)",
			uuid);
		return -ENOENT;
	}
	return found;
}

static bool qemu_name(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "qemu-", 5) || !strcmp(base, "qemu");
}

/* Whether process @pid has a QEMU executable mapped executable (/proc/PID/maps, the kernel's
 * view): a QEMU started through the dynamic loader (`ld-linux-x86-64.so.2 ... qemu-system-x86_64`),
 * whose exe is the loader. */
static bool maps_qemu(pid_t pid)
{
	char path[64], line[4608];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char perms[8];
		int file = 0;

		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%*s %7s %*s %*s %*s %n", perms, &file) == 1 && file > 0 &&
		    perms[2] == 'x' && line[file] == '/')
			found = qemu_name(line + file);
	}
	fclose(f);
	return found;
}

int qemu_find_check_exe(pid_t pid, char *err, size_t errlen)
{
	char path[64], exe[4096], name[96];
	const char *base;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0) {
		int e = errno;

		msg_fmt(err, errlen, "cannot tell which program process %d runs (%s): %s", (int)pid,
			path, strerror(e));
		return -e;
	}
	exe[n] = 0;
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	if (qemu_name(exe) || (!strncmp(base, "ld-", 3) && maps_qemu(pid)))
		return 0;
	msg_fmt(err, errlen, "process %d is not a QEMU (it runs %s)", (int)pid,
		peer_str(exe, name, sizeof(name)));
	return -ENOEXEC;
}

bool qemu_find_is_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (!strcmp(host, "localhost"))
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6) ||
		       (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
	return false;
}

/* Whether @e is an address a connection to loopback reaches: loopback itself or a wildcard. */
static bool reaches_loopback(const struct endpoint *e)
{
	static const unsigned char any[16], v4any[16] = {[10] = 0xff, [11] = 0xff};
	static const unsigned char lo6[16] = {[15] = 1};

	return !memcmp(e->ip, any, 16) || !memcmp(e->ip, v4any, 16) || !memcmp(e->ip, lo6, 16) ||
	       (!memcmp(e->ip, v4any, 12) && e->ip[12] == 127);
}

/* The inodes of the sockets listening (state 0A) on @port at an address reaching loopback, from
 * @table, appended to @inodes (at most @max, *@n of them). */
static void listeners(const char *table, unsigned port, unsigned long *inodes, size_t max,
		      size_t *n)
{
	FILE *f = fopen(table, "re");
	char line[512], l[64];
	unsigned long ino;
	unsigned st;

	if (!f)
		return;
	while (*n < max && fgets(line, sizeof(line), f)) {
		struct endpoint el;

		if (sscanf(line, " %*u: %63s %*s %x %*x:%*x %*x:%*x %*x %*u %*d %lu", l, &st,
			   &ino) != 3)
			continue;
		if (st == 0x0A && endpoint_parse(l, &el) == 0 && el.port == port &&
		    reaches_loopback(&el))
			inodes[(*n)++] = ino;
	}
	fclose(f);
}

/* Whether process @pid has socket @inode among its fds: 1, 0, or -errno (its fds unreadable). */
static int holds(pid_t pid, unsigned long inode)
{
	char want[48], path[96], link[64];
	unsigned scanned = 0;
	struct dirent *f;
	DIR *fds;
	int found = 0;

	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	fds = opendir(path);
	if (!fds)
		return -errno;
	while (!found && scanned++ < MAX_FDS_SCANNED && (f = readdir(fds))) {
		ssize_t n;

		if (f->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd/%.32s", (int)pid, f->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			found = !strcmp(link, want);
		}
	}
	closedir(fds);
	return found;
}

int qemu_find_check_listener(pid_t pid, unsigned port, char *err, size_t errlen)
{
	unsigned long inodes[16];
	size_t n = 0;

	listeners("/proc/net/tcp", port, inodes, 16, &n);
	listeners("/proc/net/tcp6", port, inodes, 16, &n);
	if (!n) {
		msg_fmt(err, errlen, "nothing listens on loopback port %u", port);
		return -ECONNREFUSED;
	}
	for (size_t i = 0; i < n; i++) {
		int h = inodes[i] ? holds(pid, inodes[i]) : 0;
		pid_t other;

		if (h < 0) {
			msg_fmt(err, errlen, "cannot read the fds of process %d: %s", (int)pid,
				strerror(-h));
			return h;
		}
		if (h)
			continue;
		other = inodes[i] ? socket_owner(inodes[i]) : 0;
		if (other > 0)
			msg_fmt(err, errlen, "port %u is held by process %d, not by process %d",
				port, (int)other, (int)pid);
		else
			msg_fmt(err, errlen, "port %u is held by another process than %d", port,
				(int)pid);
		return -EPERM;
	}
	return 0;
}

#include "host/qemu/qemu_find.h"
#include "host/qemu/qemu_cmdline.h"
#include "host/util/msg_fmt.h"

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

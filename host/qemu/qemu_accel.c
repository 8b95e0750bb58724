#include "host/qemu/qemu_accel.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CMDLINE_MAX 65536 /* bytes of /proc/PID/cmdline read */

int qemu_accel_info_kvm(const char *out, size_t len)
{
	static const char key[] = "kvm support: ";
	const char *p = memmem(out, len, key, sizeof(key) - 1);
	size_t left;

	if (!p)
		return -1;
	p += sizeof(key) - 1;
	left = len - (size_t)(p - out);
	if (left >= 7 && !memcmp(p, "enabled", 7))
		return 1;
	if ((left >= 8 && !memcmp(p, "disabled", 8)) ||
	    (left >= 12 && !memcmp(p, "not compiled", 12)))
		return 0;
	return -1;
}

/* Whether @arg (@len bytes) starts with @s. */
static bool starts(const char *arg, size_t len, const char *s)
{
	size_t n = strlen(s);

	return len >= n && !memcmp(arg, s, n);
}

/* Whether an option value (@len bytes) holds accel=kvm (first in a kvm:tcg list included). */
static bool has_accel_kvm(const char *v, size_t len)
{
	static const char key[] = "accel=kvm";
	const char *p = v;

	while (len >= sizeof(key) - 1) {
		const char *q = memmem(p, len, key, sizeof(key) - 1);

		if (!q)
			return false;
		/* at the start of the value or of a comma-separated option */
		if (q == v || q[-1] == ',')
			return true;
		len -= (size_t)(q + 1 - p);
		p = q + 1;
	}
	return false;
}

int qemu_accel_cmdline_kvm(const char *buf, size_t len)
{
	const char *prev = NULL;
	size_t prev_len = 0;

	for (size_t i = 0; i < len;) {
		const char *arg = buf + i;
		const char *nul = memchr(arg, 0, len - i);
		size_t n = nul ? (size_t)(nul - arg) : len - i;

		if ((n == 11 && !memcmp(arg, "-enable-kvm", 11)) ||
		    (n == 12 && !memcmp(arg, "--enable-kvm", 12)))
			return 1;
		if (prev &&
		    (starts(prev, prev_len, "-accel") || starts(prev, prev_len, "--accel")) &&
		    (n == 3 || starts(arg, n, "kvm,")) && starts(arg, n, "kvm"))
			return 1;
		if (prev && has_accel_kvm(arg, n))
			return 1;
		prev = arg;
		prev_len = n;
		i += n + 1;
	}
	return 0;
}

/* The command line of process @pid, into @buf. Bytes read or -errno. */
static ssize_t read_cmdline(pid_t pid, char *buf, size_t len)
{
	char path[64];
	size_t got = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return (ssize_t)got;
}

int qemu_uses_kvm(struct qemu_conn *c)
{
	static char buf[CMDLINE_MAX];
	char out[512];
	ssize_t n;
	int r;

	if (c->hmp && c->hmp(c->hmp_ctx, "info kvm", out, sizeof(out)) == 0) {
		r = qemu_accel_info_kvm(out, strnlen(out, sizeof(out)));
		if (r >= 0)
			return r;
	}
	if (c->pid <= 0)
		return -ESRCH;
	n = read_cmdline(c->pid, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return qemu_accel_cmdline_kvm(buf, (size_t)n);
}

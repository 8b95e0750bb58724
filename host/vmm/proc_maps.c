/* /proc/PID/maps line by line, every field bounded. */
#include "host/vmm/proc_maps.h"
#include "host/util/peer_text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Hex digits at *p (at most 16) into *v; advances *p. false if there are none or too many. */
static bool hex_field(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	unsigned n = 0;

	while (s < end && n <= 16) {
		char c = *s;
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			break;
		x = x << 4 | d;
		s++;
		n++;
	}
	if (n == 0 || n > 16)
		return false;
	*p = s;
	*v = x;
	return true;
}

/* Skips one field of non-blank bytes and the blanks after it; false if the field is empty. */
static bool skip_field(const char **p, const char *end)
{
	const char *s = *p;

	while (s < end && *s != ' ' && *s != '\t')
		s++;
	if (s == *p)
		return false;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	*p = s;
	return true;
}

static bool blanks(const char **p, const char *end)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s == *p)
		return false;
	*p = s;
	return true;
}

int proc_maps_parse_line(const char *line, size_t len, struct proc_maps_entry *e)
{
	const char *p = line, *end = line + len;
	size_t n;

	memset(e, 0, sizeof(*e));
	if (!hex_field(&p, end, &e->lo) || p >= end || *p++ != '-' || !hex_field(&p, end, &e->hi) ||
	    e->lo >= e->hi || !blanks(&p, end))
		return -EINVAL;
	if (end - p < 4)
		return -EINVAL;
	if ((p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 's' && p[3] != 'p'))
		return -EINVAL;
	e->r = p[0] == 'r';
	e->w = p[1] == 'w';
	e->x = p[2] == 'x';
	e->shared = p[3] == 's';
	p += 4;
	if (!blanks(&p, end) || !hex_field(&p, end, &e->offset) || !blanks(&p, end) ||
	    !skip_field(&p, end)) /* device */
		return -EINVAL;
	/* inode: decimal digits, then blanks and the name (or the end) */
	if (p >= end || *p < '0' || *p > '9')
		return -EINVAL;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	if (p < end && !blanks(&p, end))
		return -EINVAL;
	n = (size_t)(end - p);
	if (n >= sizeof(e->name)) {
		n = sizeof(e->name) - 1;
		e->cut = true;
	}
	memcpy(e->name, p, n);
	e->name[n] = 0;
	if (memchr(e->name, 0, n)) /* a NUL inside the name: not a line of the kernel's */
		return -EINVAL;
	return 0;
}

int proc_maps_each(pid_t pid, int (*each)(void *ctx, const struct proc_maps_entry *e), void *ctx)
{
	char path[64], buf[PROC_MAPS_LINE_MAX + 1];
	size_t have = 0;
	unsigned lines = 0;
	bool skipping = false; /* inside a line too long to keep */
	int fd, rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t k = read(fd, buf + have, sizeof(buf) - 1 - have);
		size_t start = 0;

		if (k < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (k == 0)
			break;
		have += (size_t)k;
		for (;;) {
			char *nl = memchr(buf + start, '\n', have - start);
			struct proc_maps_entry e;

			if (!nl)
				break;
			if (!skipping && lines++ < PROC_MAPS_MAX_LINES &&
			    proc_maps_parse_line(buf + start, (size_t)(nl - buf - start), &e) ==
				0) {
				rc = each(ctx, &e);
				if (rc)
					goto out;
			}
			skipping = false;
			start = (size_t)(nl - buf) + 1;
		}
		if (lines >= PROC_MAPS_MAX_LINES)
			break;
		if (start == 0 && have == sizeof(buf) - 1) { /* a line longer than the buffer */
			skipping = true;
			have = 0;
			continue;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
	}
out:
	close(fd);
	return rc;
}

const char *proc_comm(pid_t pid, pid_t tid, char *out, size_t outlen)
{
	char path[80], raw[32];
	int fd;
	ssize_t k = -1;

	if (tid > 0)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		k = read(fd, raw, 16);
		close(fd);
	}
	if (k <= 0) {
		snprintf(out, outlen, "?");
		return out;
	}
	if (raw[k - 1] == '\n')
		k--;
	return peer_text(raw, (size_t)k, out, outlen);
}

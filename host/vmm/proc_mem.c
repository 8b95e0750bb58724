/* Guest RAM through a VMM process's /proc/PID/mem at the regions of a guest-physical map. */
#include "host/vmm/proc_mem.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int proc_mem_open(struct proc_mem *m, pid_t pid, char *err, size_t errlen)
{
	char path[64];
	int rc;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	m->fd = open(path, O_RDWR | O_CLOEXEC);
	if (m->fd < 0) {
		rc = -errno;
		msg_fmt(err, errlen, "pid %d: %s: %s", (int)pid, path, strerror(-rc));
		return rc;
	}
	return 0;
}

int proc_mem_host_read(const struct proc_mem *m, uint64_t hva, void *buf, size_t len)
{
	return pread(m->fd, buf, len, (off_t)hva) == (ssize_t)len ? 0 : -EFAULT;
}

/* The region holding @gpa, or NULL (binary search). */
static const struct proc_mem_region *region_of(const struct proc_mem *m, uint64_t gpa)
{
	unsigned lo = 0, hi = m->nr;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		const struct proc_mem_region *r = &m->region[mid];

		if (gpa < r->gpa)
			hi = mid;
		else if (gpa - r->gpa >= r->len)
			lo = mid + 1;
		else
			return r;
	}
	return NULL;
}

/* Is guest-physical [gpa, gpa+len) all RAM (in regions that follow each other)? */
static bool all_ram(const struct proc_mem *m, uint64_t gpa, size_t len)
{
	const struct proc_mem_region *r = region_of(m, gpa), *end = m->region + m->nr;

	if (!r || gpa + len < gpa)
		return false;
	while (len > r->len - (gpa - r->gpa)) {
		uint64_t n = r->len - (gpa - r->gpa);

		gpa += n;
		len -= n;
		if (++r == end || r->gpa != gpa)
			return false;
	}
	return true;
}

/* [gpa, gpa+len) through the process's memory, region by region (all_ram said yes). */
static int access_ram(const struct proc_mem *m, uint64_t gpa, void *buf, size_t len, bool write)
{
	const struct proc_mem_region *r = region_of(m, gpa);
	uint8_t *p = buf;

	while (len) {
		uint64_t in = gpa - r->gpa, n = r->len - in < len ? r->len - in : len;
		ssize_t k = write ? pwrite(m->fd, p, n, (off_t)(r->hva + in))
				  : pread(m->fd, p, n, (off_t)(r->hva + in));

		if (k != (ssize_t)n)
			return -EFAULT;
		p += n;
		gpa += n;
		len -= n;
		r++;
	}
	return 0;
}

int proc_mem_read(const struct proc_mem *m, uint64_t gpa, void *buf, size_t len)
{
	if (m->fd < 0 || !all_ram(m, gpa, len))
		return -EFAULT;
	return access_ram(m, gpa, buf, len, false);
}

int proc_mem_write(const struct proc_mem *m, uint64_t gpa, const void *buf, size_t len)
{
	if (m->fd < 0 || !all_ram(m, gpa, len))
		return -EFAULT;
	return access_ram(m, gpa, (void *)buf, len, true);
}

#define SCAN_CHUNK (1u << 20)

int proc_mem_scan(const struct proc_mem *m, uint64_t lo, uint64_t hi,
		  bool (*hit)(void *ctx, uint64_t v, uint64_t next), void *ctx)
{
	uint64_t *buf;
	int ret = 0;

	if (m->fd < 0)
		return -EFAULT;
	buf = malloc(SCAN_CHUNK + 8);
	if (!buf)
		return -ENOMEM;
	for (unsigned r = 0; r < m->nr && ret == 0; r++) {
		const struct proc_mem_region *g = &m->region[r];

		for (uint64_t off = 0; off + 8 <= g->len && ret == 0; off += SCAN_CHUNK) {
			uint64_t n = g->len - off < SCAN_CHUNK + 8 ? g->len - off : SCAN_CHUNK + 8;
			size_t words = (size_t)(n / 8);

			if (access_ram(m, g->gpa + off, buf, words * 8, false) < 0) {
				ret = -EFAULT;
				break;
			}
			/* the word after the piece's last is read with it (and offered next time)
			 */
			for (size_t i = 0; i < words && i < SCAN_CHUNK / 8; i++)
				if (buf[i] >= lo && buf[i] <= hi &&
				    hit(ctx, buf[i], i + 1 < words ? buf[i + 1] : 0)) {
					ret = 1;
					break;
				}
		}
	}
	free(buf);
	return ret;
}

void proc_mem_close(struct proc_mem *m)
{
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
	m->nr = 0;
}

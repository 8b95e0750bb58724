#include "host/qemu/qemu_mem.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOWMEM_MAX 0xc0000000ull /* pc/q35 keep at most 3 GiB below 4 GiB (gigabyte alignment) */
#define HIGHMEM_BASE 0x100000000ull

int qemu_mem_open(struct qemu_mem *m, pid_t pid, uint64_t ram_size, char *err, size_t errlen)
{
	char path[64], line[512];
	FILE *maps;
	int found = 0;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "r");
	if (!maps) {
		int e = errno;

		snprintf(err, errlen, "QEMU pid %d: %s: %s", (int)pid, path, strerror(e));
		return -e;
	}
	while (fgets(line, sizeof(line), maps)) {
		unsigned long long lo, hi, off;
		char perms[8], dev[16];
		unsigned long inode;
		int n = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %15s %lu %n", &lo, &hi, perms, &off, dev, &inode,
			   &n) < 6)
			continue;
		/* anonymous (no path), readable and writable, exactly the RAM size */
		if (inode || hi - lo != ram_size || perms[0] != 'r' || perms[1] != 'w')
			continue;
		if (line[n] && line[n] != '\n')
			continue;
		m->hva = lo;
		found++;
	}
	fclose(maps);
	if (found != 1) {
		snprintf(err, errlen,
			 "QEMU pid %d: %s anonymous mapping of %" PRIu64 " MiB (the guest RAM) in %s",
			 (int)pid, found ? "more than one" : "no", ram_size >> 20, path);
		return -ENOENT;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	m->fd = open(path, O_RDWR | O_CLOEXEC);
	if (m->fd < 0) {
		int e = errno;

		snprintf(err, errlen, "QEMU pid %d: %s: %s", (int)pid, path, strerror(e));
		return -e;
	}
	m->size = ram_size;
	m->lowmem = ram_size < LOWMEM_MAX ? ram_size : LOWMEM_MAX;
	return 0;
}

/* Host offset in the mapping for guest-physical [gpa, gpa+len), or -1 if that is not all RAM. */
static int64_t hva_of(const struct qemu_mem *m, uint64_t gpa, size_t len)
{
	if (gpa < m->lowmem && len <= m->lowmem - gpa)
		return (int64_t)(m->hva + gpa);
	if (gpa >= HIGHMEM_BASE && gpa - HIGHMEM_BASE < m->size - m->lowmem &&
	    len <= m->size - m->lowmem - (gpa - HIGHMEM_BASE))
		return (int64_t)(m->hva + m->lowmem + (gpa - HIGHMEM_BASE));
	return -1;
}

int qemu_mem_read(const struct qemu_mem *m, uint64_t gpa, void *buf, size_t len)
{
	int64_t at = hva_of(m, gpa, len);

	if (at < 0 || pread(m->fd, buf, len, at) != (ssize_t)len)
		return -EFAULT;
	return 0;
}

int qemu_mem_write(const struct qemu_mem *m, uint64_t gpa, const void *buf, size_t len)
{
	int64_t at = hva_of(m, gpa, len);

	if (at < 0 || pwrite(m->fd, buf, len, at) != (ssize_t)len)
		return -EFAULT;
	return 0;
}

uint64_t qemu_mem_ram_size(pid_t pid)
{
	char path[64], *buf = NULL, *p;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	uint64_t size = 128ull << 20; /* QEMU's default */

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = getdelim(&buf, &cap, 0, f);
	while (n > 0) {
		if (!strcmp(buf, "-m")) {
			n = getdelim(&buf, &cap, 0, f);
			if (n <= 0)
				break;
			p = strstr(buf, "size=");
			p = p ? p + 5 : buf;
			char *end;
			double v = strtod(p, &end);

			switch (*end) {
			case 'G': case 'g': size = (uint64_t)(v * (1ull << 30)); break;
			case 'K': case 'k': size = (uint64_t)(v * (1ull << 10)); break;
			case 'B': case 'b': size = (uint64_t)v; break;
			default: size = (uint64_t)(v * (1ull << 20)); break;
			}
		}
		n = getdelim(&buf, &cap, 0, f);
	}
	free(buf);
	fclose(f);
	return size;
}

void qemu_mem_close(struct qemu_mem *m)
{
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
}

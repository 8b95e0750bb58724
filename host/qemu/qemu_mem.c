#include "host/qemu/qemu_mem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HMP_OUT (1u << 20) /* `info mtree -f` of a machine with many devices: tens of KiB */

static int host_read(void *ctx, uint64_t hva, void *buf, size_t len)
{
	const struct qemu_mem *m = ctx;

	return pread(m->fd, buf, len, (off_t)hva) == (ssize_t)len ? 0 : -EFAULT;
}

/* Runs @cmd into @out (HMP_OUT bytes); a reply that fills it may have been cut: refused. */
static int monitor(qemu_hmp_fn hmp, void *ctx, const char *cmd, char *out, char *err, size_t errlen)
{
	int rc;

	out[0] = 0;
	rc = hmp(ctx, cmd, out, HMP_OUT);
	if (rc < 0 || strnlen(out, HMP_OUT) >= HMP_OUT - 1) {
		snprintf(err, errlen, "monitor '%s': %s", cmd,
			 rc == -ENOSPC || rc >= 0 ? "its answer is too long" : strerror(-rc));
		return rc < 0 ? rc : -E2BIG;
	}
	return 0;
}

/* The map of QEMU @pid into @m (whose fd is open). */
static int learn_map(struct qemu_mem *m, pid_t pid, qemu_hmp_fn hmp, qemu_qmp_fn qmp,
		     void *hmp_ctx, qemu_memmap_read_fn phys_read, void *phys_ctx, char *err,
		     size_t errlen)
{
	static struct qemu_ram_range ranges[QEMU_MEMMAP_MAX_RANGES];
	static struct qemu_ramblock blocks[QEMU_MEMMAP_MAX_BLOCKS];
	static char memdevs[QEMU_MEMMAP_MAX_BLOCKS][QEMU_MEMMAP_NAME];
	static struct qemu_host_map maps[QEMU_MEMMAP_MAX_MAPS];
	uint64_t sizes[QEMU_MEMMAP_MAX_BLOCKS];
	unsigned nsizes = 0;
	struct qemu_memmap_in in = {.ranges = ranges,
				    .blocks = blocks,
				    .memdevs = memdevs,
				    .maps = maps,
				    .host_read = host_read,
				    .host_ctx = m,
				    .phys_read = phys_read,
				    .phys_ctx = phys_ctx};
	char *out = malloc(HMP_OUT), path[64];
	FILE *f;
	int rc;

	if (!out) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = monitor(hmp, hmp_ctx, "info mtree -f", out, err, errlen);
	if (!rc)
		rc = qemu_mtree_parse(out, ranges, QEMU_MEMMAP_MAX_RANGES, &in.nr_ranges, err,
				      errlen);
	if (!rc)
		rc = monitor(hmp, hmp_ctx, "info ramblock", out, err, errlen);
	if (!rc)
		rc = qemu_ramblock_parse(out, blocks, QEMU_MEMMAP_MAX_BLOCKS, &in.nr_blocks, err,
					 errlen);
	/* the backends: QMP's structured answer where QEMU gives one (1: ask the HMP text) */
	if (!rc)
		rc = qmp && !qmp(hmp_ctx, "{\"execute\":\"query-memdev\"}", out, HMP_OUT) ? 0 : 1;
	if (!rc) {
		rc = qemu_memdev_parse_qmp(out, memdevs, QEMU_MEMMAP_MAX_BLOCKS, &in.nr_memdevs,
					   err, errlen);
		rc = rc == -ENOENT ? 1 : rc;
	}
	if (rc == 1) {
		rc = monitor(hmp, hmp_ctx, "info memdev", out, err, errlen);
		if (!rc)
			rc = qemu_memdev_parse(out, memdevs, QEMU_MEMMAP_MAX_BLOCKS,
					       &in.nr_memdevs, err, errlen);
	}
	free(out);
	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < in.nr_blocks; i++) /* only the backends' sizes: ROMs are small */
		if (qemu_memmap_wanted(&in, blocks[i].name))
			sizes[nsizes++] = blocks[i].used;
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "QEMU pid %d: %s: %s", (int)pid, path, strerror(-rc));
		return rc;
	}
	rc =
	    qemu_maps_parse(f, sizes, nsizes, maps, QEMU_MEMMAP_MAX_MAPS, &in.nr_maps, err, errlen);
	fclose(f);
	if (!rc)
		rc = qemu_memmap_resolve(&in, m->region, QEMU_MEM_MAX_REGIONS, &m->nr, err, errlen);
	return rc;
}

int qemu_mem_open(struct qemu_mem *m, pid_t pid, qemu_hmp_fn hmp, qemu_qmp_fn qmp, void *mon_ctx,
		  qemu_memmap_read_fn phys_read, void *phys_ctx, char *err, size_t errlen)
{
	char path[64];
	int rc;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	m->fd = open(path, O_RDWR | O_CLOEXEC);
	if (m->fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "QEMU pid %d: %s: %s", (int)pid, path, strerror(-rc));
		return rc;
	}
	rc = learn_map(m, pid, hmp, qmp, mon_ctx, phys_read, phys_ctx, err, errlen);
	if (rc < 0)
		qemu_mem_close(m);
	return rc;
}

/* The region holding @gpa, or NULL (binary search). */
static const struct qemu_mem_region *region_of(const struct qemu_mem *m, uint64_t gpa)
{
	unsigned lo = 0, hi = m->nr;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		const struct qemu_mem_region *r = &m->region[mid];

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
static bool all_ram(const struct qemu_mem *m, uint64_t gpa, size_t len)
{
	const struct qemu_mem_region *r = region_of(m, gpa), *end = m->region + m->nr;

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
static int access_ram(const struct qemu_mem *m, uint64_t gpa, void *buf, size_t len, bool write)
{
	const struct qemu_mem_region *r = region_of(m, gpa);
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

int qemu_mem_read(const struct qemu_mem *m, uint64_t gpa, void *buf, size_t len)
{
	if (m->fd < 0 || !all_ram(m, gpa, len))
		return -EFAULT;
	return access_ram(m, gpa, buf, len, false);
}

int qemu_mem_write(const struct qemu_mem *m, uint64_t gpa, const void *buf, size_t len)
{
	if (m->fd < 0 || !all_ram(m, gpa, len))
		return -EFAULT;
	return access_ram(m, gpa, (void *)buf, len, true);
}

#define SCAN_CHUNK (1u << 20)

int qemu_mem_scan(const struct qemu_mem *m, uint64_t lo, uint64_t hi,
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
		const struct qemu_mem_region *g = &m->region[r];

		for (uint64_t off = 0; off + 8 <= g->len && ret == 0; off += SCAN_CHUNK) {
			uint64_t n = g->len - off < SCAN_CHUNK + 8 ? g->len - off : SCAN_CHUNK + 8;
			size_t words = (size_t)(n / 8);

			if (access_ram(m, g->gpa + off, buf, words * 8, false) < 0) {
				ret = -EFAULT;
				break;
			}
			/* the word after the piece's last is read with it (and offered next time) */
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

void qemu_mem_close(struct qemu_mem *m)
{
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
	m->nr = 0;
}

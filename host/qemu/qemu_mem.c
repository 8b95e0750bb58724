/* The guest-physical map of a running QEMU learned through its monitor and smaps, into the
 * QEMU process's memory (proc_mem). */
#include "host/qemu/qemu_mem.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HMP_OUT (1u << 20) /* `info mtree -f` of a machine with many devices: tens of KiB */

static int host_read(void *ctx, uint64_t hva, void *buf, size_t len)
{
	return proc_mem_host_read(ctx, hva, buf, len);
}

/* Runs @cmd into @out (HMP_OUT bytes); a reply that fills it may have been cut: refused. */
static int monitor(qemu_hmp_fn hmp, void *ctx, const char *cmd, char *out, char *err, size_t errlen)
{
	int rc;

	out[0] = 0;
	rc = hmp(ctx, cmd, out, HMP_OUT);
	if (rc < 0 || strnlen(out, HMP_OUT) >= HMP_OUT - 1) {
		msg_fmt(err, errlen, "monitor '%s': %s", cmd,
			rc == -ENOSPC || rc >= 0 ? "its answer is too long" : strerror(-rc));
		return rc < 0 ? rc : -E2BIG;
	}
	return 0;
}

/* The map of QEMU @pid into @m (whose fd is open). */
static int learn_map(struct proc_mem *m, pid_t pid, qemu_hmp_fn hmp, qemu_qmp_fn qmp, void *hmp_ctx,
		     qemu_memmap_read_fn phys_read, void *phys_ctx, char *err, size_t errlen)
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
		msg_fmt(err, errlen, "out of memory");
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
			rc = qemu_memdev_parse(out, memdevs, QEMU_MEMMAP_MAX_BLOCKS, &in.nr_memdevs,
					       err, errlen);
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
		msg_fmt(err, errlen, "QEMU pid %d: %s: %s", (int)pid, path, strerror(-rc));
		return rc;
	}
	rc =
	    qemu_maps_parse(f, sizes, nsizes, maps, QEMU_MEMMAP_MAX_MAPS, &in.nr_maps, err, errlen);
	fclose(f);
	if (!rc)
		rc = qemu_memmap_resolve(&in, m->region, PROC_MEM_MAX_REGIONS, &m->nr, err, errlen);
	return rc;
}

int qemu_mem_open(struct proc_mem *m, pid_t pid, qemu_hmp_fn hmp, qemu_qmp_fn qmp, void *mon_ctx,
		  qemu_memmap_read_fn phys_read, void *phys_ctx, char *err, size_t errlen)
{
	int rc = proc_mem_open(m, pid, err, errlen);

	if (rc < 0) {
		char why[256];

		msg_fmt(why, sizeof(why), "%s", err);
		msg_fmt(err, errlen, "QEMU %s", why);
		return rc;
	}
	rc = learn_map(m, pid, hmp, qmp, mon_ctx, phys_read, phys_ctx, err, errlen);
	if (rc < 0)
		proc_mem_close(m);
	return rc;
}

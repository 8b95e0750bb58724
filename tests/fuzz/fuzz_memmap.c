/* libFuzzer harness for the guest-physical map of QEMU (host/qemu/qemu_memmap.c, qemu_mem.c): what
 * a (hostile) QEMU prints for `info mtree -f`, `info ramblock` and `info memdev` (or QMP's
 * query-memdev answer, when the section starts with '['), and a /proc/PID/smaps text, as four sections of the input separated by 0x01 bytes. Each parser gets its
 * section; when all parse, the map is resolved (host and guest reads give bytes derived from the
 * address) and checked: sorted, disjoint, every region inside the mapping its backend was given;
 * then reads and writes at addresses from the input go through proc_mem_read/write (on /dev/zero).
 */
#include "host/qemu/qemu_mem.h"
#include "host/qemu/qemu_memmap.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	memset(buf, (int)((addr >> 12) * 0x9e3779b1u >> 24), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct qemu_ram_range ranges[QEMU_MEMMAP_MAX_RANGES];
	static struct qemu_ramblock blocks[QEMU_MEMMAP_MAX_BLOCKS];
	static char memdevs[QEMU_MEMMAP_MAX_BLOCKS][QEMU_MEMMAP_NAME];
	static struct qemu_host_map maps[QEMU_MEMMAP_MAX_MAPS];
	static int zero = -1;
	struct qemu_memmap_in in = {.ranges = ranges,
				    .blocks = blocks,
				    .memdevs = memdevs,
				    .maps = maps,
				    .host_read = fake_read,
				    .phys_read = fake_read};
	uint64_t sizes[QEMU_MEMMAP_MAX_BLOCKS];
	unsigned nsizes = 0;
	struct proc_mem m = {.fd = -1};
	char *text = malloc(size + 1), *sec[4] = {"", "", "", ""}, err[256];
	int ok = 0;
	FILE *f;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	sec[0] = text;
	for (int i = 1; i < 4; i++) {
		char *sep = strchr(sec[i - 1], 1);

		if (!sep)
			break;
		*sep = 0;
		sec[i] = sep + 1;
	}
	ok |= qemu_mtree_parse(sec[0], ranges, QEMU_MEMMAP_MAX_RANGES, &in.nr_ranges, err,
			       sizeof(err));
	ok |= qemu_ramblock_parse(sec[1], blocks, QEMU_MEMMAP_MAX_BLOCKS, &in.nr_blocks, err,
				  sizeof(err));
	if (sec[2][0] == '[')
		ok |= qemu_memdev_parse_qmp(sec[2], memdevs, QEMU_MEMMAP_MAX_BLOCKS, &in.nr_memdevs,
					    err, sizeof(err));
	else
		ok |= qemu_memdev_parse(sec[2], memdevs, QEMU_MEMMAP_MAX_BLOCKS, &in.nr_memdevs,
					err, sizeof(err));
	for (unsigned i = 0; i < in.nr_blocks; i++)
		if (qemu_memmap_wanted(&in, blocks[i].name))
			sizes[nsizes++] = blocks[i].used;
	f = fmemopen(sec[3], strlen(sec[3]) + 1, "r");
	if (f) {
		ok |= qemu_maps_parse(f, sizes, nsizes, maps, QEMU_MEMMAP_MAX_MAPS, &in.nr_maps,
				      err, sizeof(err));
		fclose(f);
	}
	if (!ok &&
	    !qemu_memmap_resolve(&in, m.region, PROC_MEM_MAX_REGIONS, &m.nr, err, sizeof(err))) {
		if (!m.nr || m.nr > PROC_MEM_MAX_REGIONS)
			abort();
		for (unsigned i = 0; i < m.nr; i++) {
			const struct proc_mem_region *r = &m.region[i];
			int inside = 0;

			if (!r->len || r->gpa + r->len < r->gpa ||
			    (i && r->gpa < m.region[i - 1].gpa + m.region[i - 1].len))
				abort(); /* empty, wrapping, unsorted or overlapping */
			for (unsigned k = 0; k < in.nr_maps; k++)
				inside |= r->hva >= maps[k].lo && r->len <= maps[k].hi - r->hva;
			if (!inside)
				abort(); /* outside every mapping */
		}
		if (zero < 0)
			zero = open("/dev/zero", O_RDWR);
		m.fd = zero;
		for (size_t i = 0; i + 12 <= size && i < 12 * 64; i += 12) {
			uint64_t gpa;
			uint32_t len;
			uint8_t buf[256];

			memcpy(&gpa, data + i, 8);
			memcpy(&len, data + i + 8, 4);
			len %= sizeof(buf) + 1;
			proc_mem_read(&m, gpa, buf, len);
			proc_mem_write(&m,
				       m.region[gpa % m.nr].gpa + m.region[gpa % m.nr].len - 1 -
					   (gpa >> 40) % 8,
				       buf, len);
		}
	}
	free(text);
	return 0;
}

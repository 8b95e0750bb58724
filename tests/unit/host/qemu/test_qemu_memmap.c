/* The guest-physical map of QEMU (host/qemu/qemu_memmap.c, qemu_mem.c): the monitor's outputs as
 * QEMU 7.2 printed them (tests/unit/data/qemu_memmap/: pc 256 MiB, q35 4 GiB, two NUMA nodes, a
 * memfd and a file backend; their /proc/PID/maps cut to the mappings of 1 MiB and more) and as QEMU
 * 10.0 of bookworm-backports prints them (*_qemu10: `info ramblock` with HVA and RO columns), QMP's
 * query-memdev of both (*.qmp-memdev: the "return" value as sent), hostile ones, and backends told apart by content in this process's own memory
 * (reads and writes of the map: tests/unit/host/vmm/test_proc_mem.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/qemu/qemu_mem.h"
#include "host/qemu/qemu_memmap.h"
#include "tests/common/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define DATA "tests/unit/data/qemu_memmap/"
#define GiB  (1ull << 30)
#define MiB  (1ull << 20)

/* The capture @name.@kind of tests/unit/data/qemu_memmap (malloc'd). */
static char *slurp(const char *name, const char *kind)
{
	char path[256];

	snprintf(path, sizeof(path), DATA "%s.%s", name, kind);
	return hv_slurp(path);
}

/* Everything qemu_memmap_resolve takes, parsed from the captures of one QEMU. */
struct capture {
	struct qemu_ram_range ranges[QEMU_MEMMAP_MAX_RANGES];
	struct qemu_ramblock blocks[QEMU_MEMMAP_MAX_BLOCKS];
	char memdevs[QEMU_MEMMAP_MAX_BLOCKS][QEMU_MEMMAP_NAME];
	struct qemu_host_map maps[QEMU_MEMMAP_MAX_MAPS];
	struct qemu_memmap_in in;
	struct proc_mem_region out[PROC_MEM_MAX_REGIONS];
	unsigned nr;
	char err[256];
};

static void load(struct capture *c, const char *name)
{
	char *t;
	uint64_t sizes[QEMU_MEMMAP_MAX_BLOCKS];
	unsigned nsizes = 0;
	char path[256];
	FILE *f;

	memset(c, 0, sizeof(*c));
	c->in = (struct qemu_memmap_in){
	    .ranges = c->ranges, .blocks = c->blocks, .memdevs = c->memdevs, .maps = c->maps};
	t = slurp(name, "mtree");
	assert_int_equal(qemu_mtree_parse(t, c->ranges, QEMU_MEMMAP_MAX_RANGES, &c->in.nr_ranges,
					  c->err, sizeof(c->err)),
			 0);
	free(t);
	t = slurp(name, "ramblock");
	assert_int_equal(qemu_ramblock_parse(t, c->blocks, QEMU_MEMMAP_MAX_BLOCKS, &c->in.nr_blocks,
					     c->err, sizeof(c->err)),
			 0);
	free(t);
	t = slurp(name, "memdev");
	assert_int_equal(qemu_memdev_parse(t, c->memdevs, QEMU_MEMMAP_MAX_BLOCKS, &c->in.nr_memdevs,
					   c->err, sizeof(c->err)),
			 0);
	free(t);
	snprintf(path, sizeof(path), DATA "%s.qmp-memdev", name);
	if (!access(path, R_OK)) { /* QMP's answer names the same backends, in the same order */
		char ids[QEMU_MEMMAP_MAX_BLOCKS][QEMU_MEMMAP_NAME];
		unsigned n;

		t = slurp(name, "qmp-memdev");
		assert_int_equal(qemu_memdev_parse_qmp(t, ids, QEMU_MEMMAP_MAX_BLOCKS, &n, c->err,
						       sizeof(c->err)),
				 0);
		free(t);
		assert_int_equal(n, c->in.nr_memdevs);
		for (unsigned i = 0; i < n; i++)
			assert_string_equal(ids[i], c->memdevs[i]);
	}
	for (unsigned i = 0; i < c->in.nr_blocks; i++) /* as qemu_mem_open: the backends' sizes */
		if (qemu_memmap_wanted(&c->in, c->blocks[i].name))
			sizes[nsizes++] = c->blocks[i].used;
	snprintf(path, sizeof(path), DATA "%s.maps", name);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(qemu_maps_parse(f, sizes, nsizes, c->maps, QEMU_MEMMAP_MAX_MAPS,
					 &c->in.nr_maps, c->err, sizeof(c->err)),
			 0);
	fclose(f);
}

static int resolve(struct capture *c)
{
	return qemu_memmap_resolve(&c->in, c->out, PROC_MEM_MAX_REGIONS, &c->nr, c->err,
				   sizeof(c->err));
}

static void region_is(const struct capture *c, unsigned i, uint64_t gpa, uint64_t len, uint64_t hva)
{
	assert_true(i < c->nr);
	assert_int_equal(c->out[i].gpa, gpa);
	assert_int_equal(c->out[i].len, len);
	assert_int_equal(c->out[i].hva, hva);
}

/* ---- captures of QEMU 7.2 -------------------------------------------------------------------- */

static void test_pc_256m(void **state)
{
	struct capture *c = malloc(sizeof(*c));

	(void)state;
	load(c, "pc256");
	/* pc.ram below the VGA hole and from 1 MiB; ROMs and I/O left out */
	assert_int_equal(c->in.nr_ranges, 2);
	assert_string_equal(c->ranges[1].name, "pc.ram");
	assert_int_equal(c->ranges[1].gpa, 0x100000);
	assert_int_equal(c->ranges[1].offset, 0x100000);
	assert_int_equal(c->ranges[1].len, 256 * MiB - 0x100000);
	assert_int_equal(c->in.nr_blocks, 6);
	assert_string_equal(c->blocks[0].name, "pc.ram");
	assert_int_equal(c->blocks[0].used, 256 * MiB);
	assert_int_equal(c->blocks[0].psize, 4096);
	assert_string_equal(c->blocks[1].name, "/rom@etc/acpi/tables");
	assert_int_equal(c->in.nr_memdevs, 1);
	assert_string_equal(c->memdevs[0], "pc.ram");
	assert_int_equal(c->in.nr_maps, 1); /* the one anonymous rw mapping of 256 MiB */
	assert_int_equal(resolve(c), 0);
	assert_int_equal(c->nr, 2);
	region_is(c, 0, 0, 0xc0000, 0x7efe57e00000);
	region_is(c, 1, 0x100000, 256 * MiB - 0x100000, 0x7efe57e00000 + 0x100000);
	assert_true(qemu_memmap_wanted(&c->in, "pc.ram"));
	assert_false(qemu_memmap_wanted(&c->in, "pc.bios"));
	/* no backend listed (QEMU before 5.0): the blocks of RAM ranges count, not the ROMs */
	c->in.nr_memdevs = 0;
	assert_true(qemu_memmap_wanted(&c->in, "pc.ram"));
	assert_false(qemu_memmap_wanted(&c->in, "pc.bios"));
	assert_int_equal(resolve(c), 0);
	assert_int_equal(c->nr, 2);
	region_is(c, 1, 0x100000, 256 * MiB - 0x100000, 0x7efe57e00000 + 0x100000);
	free(c);
}

static void test_q35_4g(void **state)
{
	struct capture *c = malloc(sizeof(*c));

	(void)state;
	load(c, "q35_4g");
	assert_int_equal(resolve(c), 0);
	/* 2 GiB below 4 GiB (not pc's 3), the other 2 GiB at 4 GiB: offset 2 GiB in the block */
	assert_int_equal(c->nr, 3);
	region_is(c, 0, 0, 0xc0000, 0x7f1a17e00000);
	region_is(c, 1, 0x100000, 2 * GiB - 0x100000, 0x7f1a17e00000 + 0x100000);
	region_is(c, 2, 4 * GiB, 2 * GiB, 0x7f1a17e00000 + 2 * GiB);
	free(c);
}

static void test_memfd(void **state)
{
	struct capture *c = malloc(sizeof(*c));

	(void)state;
	load(c, "memfd");
	assert_string_equal(c->memdevs[0], "m0");
	assert_int_equal(c->in.nr_maps, 1); /* /memfd:memory-backend-memfd (deleted), rw-s */
	assert_int_equal(resolve(c), 0);
	assert_int_equal(c->nr, 2);
	region_is(c, 1, 0x100000, GiB - 0x100000, 0x7fe0d7fff000 + 0x100000);
	free(c);
}

static void test_file_backend(void **state)
{
	struct capture *c = malloc(sizeof(*c));

	(void)state;
	load(c, "file");
	assert_int_equal(c->in.nr_maps, 1); /* /dev/shm/memmap-cap-ram */
	assert_int_equal(resolve(c), 0);
	assert_int_equal(c->nr, 2);
	region_is(c, 1, 0x100000, 512 * MiB - 0x100000, 0x7fa92ffff000 + 0x100000);
	free(c);
}

/* Simulated memories of the NUMA capture's two 2 GiB mappings: every page of the mapping at @lo
 * holds one byte value, the other's another; the guest (phys_read) sees m0's bytes below 4 GiB and
 * m1's above, as the flat view says, m0 being in the mapping at @m0_hva. */
struct two_nodes {
	uint64_t m0_hva, m1_hva;
	bool alike; /* both mappings hold the same bytes */
	unsigned phys_reads;
};

static int node_host_read(void *ctx, uint64_t hva, void *buf, size_t len)
{
	const struct two_nodes *t = ctx;
	uint64_t lo = hva >= t->m1_hva && hva - t->m1_hva < 2 * GiB ? t->m1_hva : t->m0_hva;

	memset(buf, t->alike ? 0 : lo == t->m0_hva ? 0xa0 : 0xb1, len);
	return 0;
}

static int node_phys_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	struct two_nodes *t = ctx;

	t->phys_reads++;
	memset(buf, t->alike ? 0 : gpa < 4 * GiB ? 0xa0 : 0xb1, len);
	return 0;
}

static void numa(bool swapped, bool alike)
{
	struct capture *c = malloc(sizeof(*c));
	/* the capture's mappings: 7fe49fc00000 and 7fe51fe00000 */
	struct two_nodes t = {.m0_hva = swapped ? 0x7fe51fe00000 : 0x7fe49fc00000,
			      .m1_hva = swapped ? 0x7fe49fc00000 : 0x7fe51fe00000,
			      .alike = alike};

	load(c, "numa2");
	assert_int_equal(c->in.nr_memdevs, 2);
	assert_int_equal(c->in.nr_maps, 2);
	c->in.host_read = c->in.phys_read = NULL;
	c->in.host_read = node_host_read;
	c->in.phys_read = node_phys_read;
	c->in.host_ctx = c->in.phys_ctx = &t;
	if (alike) {
		assert_int_equal(resolve(c), -EEXIST);
		assert_non_null(strstr(c->err, "cannot tell them apart"));
		assert_int_equal(t.phys_reads, 0);
		free(c);
		return;
	}
	assert_int_equal(resolve(c), 0);
	assert_int_equal(c->nr, 3);
	region_is(c, 0, 0, 0xc0000, t.m0_hva);
	region_is(c, 1, 0x100000, 2 * GiB - 0x100000, t.m0_hva + 0x100000);
	region_is(c, 2, 4 * GiB, 2 * GiB, t.m1_hva);
	assert_int_equal(t.phys_reads, 2); /* one page per backend told them apart */
	free(c);
}

static void test_numa_two_nodes(void **state)
{
	(void)state;
	numa(false, false);
	numa(true, false);
}

static void test_numa_alike_refused(void **state)
{
	(void)state;
	numa(false, true);
}

/* The same with real memory: two mappings of this process told apart by content, read through
 * /proc/self/mem; phys_read gives the guest's view (node 1 is the mapping at the lower address). */
struct real_nodes {
	uint8_t *node[2];
	int fd;
	bool lie; /* the guest's view is in neither mapping */
};

static int self_read(void *ctx, uint64_t hva, void *buf, size_t len)
{
	const struct real_nodes *r = ctx;

	return pread(r->fd, buf, len, (off_t)hva) == (ssize_t)len ? 0 : -EFAULT;
}

static int guest_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	const struct real_nodes *r = ctx;
	const uint64_t size = 8 * MiB;

	if (gpa + len > 2 * size)
		return -EFAULT;
	if (r->lie) {
		memset(buf, 0xee, len);
		return 0;
	}
	memcpy(buf, r->node[gpa / size] + gpa % size, len);
	return 0;
}

static void test_numa_real_memory(void **state)
{
	static const char mtree[] = "FlatView #0\n AS \"memory\", root: system\n"
				    " Root memory region: system\n"
				    "  0000000000000000-00000000007fffff (prio 0, ram): n0\n"
				    "  0000000000800000-0000000000ffffff (prio 0, ram): n1\n\n";
	static const char blocks[] = "   Block Name    PSize   Offset   Used   Total\r\n"
				     "   n0  4 KiB  0x0 0x800000 0x800000\r\n"
				     "   n1  4 KiB  0x800000 0x800000 0x800000\r\n";
	static const char memdev[] = "memory backend: n1\r\n  size: 8388608\r\n"
				     "memory backend: n0\r\n  size: 8388608\r\n";
	struct capture *c = malloc(sizeof(*c));
	struct real_nodes r = {0};
	uint64_t sizes[2] = {8 * MiB, 8 * MiB};
	uint8_t *area;
	FILE *f;

	(void)state;
	memset(c, 0, sizeof(*c));
	/* two 8 MiB mappings that cannot merge with anything: guard pages around them */
	area = mmap(NULL, 16 * MiB + 3 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(area != MAP_FAILED);
	assert_int_equal(mprotect(area + 4096, 8 * MiB, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(mprotect(area + 8 * MiB + 8192, 8 * MiB, PROT_READ | PROT_WRITE), 0);
	r.node[1] = area + 4096;		 /* guest node 1 lies lower in this process */
	r.node[0] = area + 8 * MiB + 8192;	 /* node 0 */
	memset(r.node[0] + 3 * MiB, 0x5a, 4096); /* alike everywhere but two pages */
	memset(r.node[1] + 5 * MiB, 0xc3, 4096);
	r.fd = open("/proc/self/mem", O_RDONLY);
	assert_true(r.fd >= 0);
	c->in = (struct qemu_memmap_in){.ranges = c->ranges,
					.blocks = c->blocks,
					.memdevs = c->memdevs,
					.maps = c->maps,
					.host_read = self_read,
					.host_ctx = &r,
					.phys_read = guest_read,
					.phys_ctx = &r};
	assert_int_equal(
	    qemu_mtree_parse(mtree, c->ranges, 8, &c->in.nr_ranges, c->err, sizeof(c->err)), 0);
	assert_int_equal(
	    qemu_ramblock_parse(blocks, c->blocks, 8, &c->in.nr_blocks, c->err, sizeof(c->err)), 0);
	assert_int_equal(
	    qemu_memdev_parse(memdev, c->memdevs, 8, &c->in.nr_memdevs, c->err, sizeof(c->err)), 0);
	f = fopen("/proc/self/smaps", "r");
	assert_non_null(f);
	assert_int_equal(qemu_maps_parse(f, sizes, 2, c->maps, QEMU_MEMMAP_MAX_MAPS, &c->in.nr_maps,
					 c->err, sizeof(c->err)),
			 0);
	fclose(f);
	assert_true(c->in.nr_maps >= 2);
	assert_int_equal(resolve(c), 0);
	/* contiguous in guest-physical space, not in the process: two regions */
	assert_int_equal(c->nr, 2);
	region_is(c, 0, 0, 8 * MiB, (uint64_t)(uintptr_t)r.node[0]);
	region_is(c, 1, 8 * MiB, 8 * MiB, (uint64_t)(uintptr_t)r.node[1]);

	/* the same bytes in both: refused */
	memset(r.node[0] + 3 * MiB, 0, 4096);
	memset(r.node[1] + 5 * MiB, 0, 4096);
	assert_int_equal(resolve(c), -EEXIST);
	/* the guest holds bytes that neither mapping has: refused */
	memset(r.node[0] + 3 * MiB, 0x11, 4096);
	r.lie = true;
	assert_int_equal(resolve(c), -ENOENT);
	assert_string_equal(c->err,
			    "memory backend n0: no mapping in the QEMU process holds its bytes");
	close(r.fd);
	munmap(area, 16 * MiB + 3 * 4096);
	free(c);
}

/* ---- captures of QEMU 10.0 ------------------------------------------------------------------- */

static void test_q35_4g_qemu10(void **state)
{
	struct capture *c = malloc(sizeof(*c));

	(void)state;
	load(c, "q35_4g_qemu10");
	/* the 7.2 table and two more columns: where each block is, and whether it is read-only */
	assert_int_equal(c->in.nr_blocks, 6);
	assert_string_equal(c->blocks[0].name, "pc.ram");
	assert_int_equal(c->blocks[0].used, 4 * GiB);
	assert_int_equal(c->blocks[0].psize, 4096);
	assert_int_equal(c->blocks[0].hva, 0x7f2773e00000);
	assert_false(c->blocks[0].ro);
	assert_string_equal(c->blocks[1].name, "/rom@etc/acpi/tables");
	assert_int_equal(c->blocks[1].used, 0x20000);
	assert_true(c->blocks[1].ro);
	assert_int_equal(c->in.nr_memdevs, 1);
	assert_string_equal(c->memdevs[0], "pc.ram");
	assert_int_equal(c->in.nr_maps, 1);
	assert_int_equal(resolve(c), 0);
	assert_int_equal(c->nr, 3);
	region_is(c, 0, 0, 0xc0000, 0x7f2773e00000);
	region_is(c, 1, 0x100000, 2 * GiB - 0x100000, 0x7f2773e00000 + 0x100000);
	region_is(c, 2, 4 * GiB, 2 * GiB, 0x7f2773e00000 + 2 * GiB);
	/* the HVA QEMU shows must be a mapping of the block's size in the process */
	c->blocks[0].hva += 4096;
	assert_int_equal(resolve(c), -ENOENT);
	assert_string_equal(c->err, "memory backend pc.ram: no mapping of 4096 MiB in 4-KiB pages at "
				    "0x7f2773e01000 (info ramblock's HVA) in the QEMU process");
	free(c);
}

/* Two NUMA nodes of 2 GiB: the HVA column tells which mapping is whose, no content compared (m1 is
 * the lower one in this capture). */
static void test_numa_qemu10(void **state)
{
	struct capture *c = malloc(sizeof(*c));
	struct two_nodes t = {.m0_hva = 0x7fbfb3e00000, .m1_hva = 0x7fbf33c00000};

	(void)state;
	load(c, "numa2_qemu10");
	assert_int_equal(c->in.nr_memdevs, 2);
	assert_string_equal(c->memdevs[0], "m1");
	assert_int_equal(c->in.nr_maps, 2);
	c->in.host_read = node_host_read;
	c->in.phys_read = node_phys_read;
	c->in.host_ctx = c->in.phys_ctx = &t;
	assert_int_equal(resolve(c), 0);
	assert_int_equal(t.phys_reads, 0);
	assert_int_equal(c->nr, 3);
	region_is(c, 0, 0, 0xc0000, t.m0_hva);
	region_is(c, 1, 0x100000, 2 * GiB - 0x100000, t.m0_hva + 0x100000);
	region_is(c, 2, 4 * GiB, 2 * GiB, t.m1_hva);
	/* even when both hold the same bytes */
	t.alike = true;
	assert_int_equal(resolve(c), 0);
	region_is(c, 2, 4 * GiB, 2 * GiB, t.m1_hva);
	/* two blocks that say they are at the same place: refused */
	c->blocks[1].hva = c->blocks[0].hva;
	assert_int_equal(resolve(c), -ENOENT);
	assert_string_equal(c->err,
			    "memory backend m1: no mapping in the QEMU process holds its bytes");
	free(c);
}

/* `info ramblock` read by its header's names, whatever their order and whatever other column. */
static void test_ramblock_columns(void **state)
{
	struct qemu_ramblock b[2];
	unsigned nr;
	char err[256];

	(void)state;
	assert_int_equal(qemu_ramblock_parse(" RO HVA Used Block Name Flags PSize\r\n"
					     " rw 0x7f0000000000 0x40000000 pc.ram x 2 MiB\r\n",
					     b, 2, &nr, err, sizeof(err)),
			 0);
	assert_int_equal(nr, 1);
	assert_string_equal(b[0].name, "pc.ram");
	assert_int_equal(b[0].used, GiB);
	assert_int_equal(b[0].psize, 2 * MiB);
	assert_int_equal(b[0].hva, 0x7f0000000000);
	assert_false(b[0].ro);
	/* a header without Used is no table */
	assert_int_equal(qemu_ramblock_parse("Block Name PSize Offset Total\n"
					     "pc.ram 4 KiB 0x0 0x1000\n",
					     b, 2, &nr, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "info ramblock: no table (Block Name, PSize, ..., Used)");
	/* a column twice: no table either */
	assert_int_equal(qemu_ramblock_parse("Block Name PSize Used Used\npc.ram 4 KiB 0x1000 0x1000\n",
					     b, 2, &nr, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "info ramblock: no table (Block Name, PSize, ..., Used)");
	/* RO says rw or ro, HVA is hex */
	assert_int_equal(qemu_ramblock_parse("Block Name PSize Used HVA RO\n"
					     "pc.ram 4 KiB 0x1000 0x7f0000000000 yes\n",
					     b, 2, &nr, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(
	    err, "info ramblock: a block out of shape: 'pc.ram 4 KiB 0x1000 0x7f0000000000 yes'");
	assert_int_equal(qemu_ramblock_parse("Block Name PSize Used HVA RO\n"
					     "pc.ram 4 KiB 0x1000 here rw\n",
					     b, 2, &nr, err, sizeof(err)),
			 -EINVAL);
	/* QEMU 7.2's line under 10.0's header: two values short */
	assert_int_equal(qemu_ramblock_parse("Block Name PSize Offset Used Total HVA RO\n"
					     "pc.ram 4 KiB 0x0 0x1000 0x1000\n",
					     b, 2, &nr, err, sizeof(err)),
			 -EINVAL);
}

/* query-memdev's answer: the ids, or why not. */
static void test_qmp_memdev(void **state)
{
	char ids[2][QEMU_MEMMAP_NAME], err[256];
	unsigned nr;

	(void)state;
	assert_int_equal(qemu_memdev_parse_qmp(" [ ] ", ids, 2, &nr, err, sizeof(err)), 0);
	assert_int_equal(nr, 0);
	assert_int_equal(qemu_memdev_parse_qmp("[{\"size\": 1, \"id\": \"a\\u0062\"},{\"id\":\"c\"}]",
					       ids, 2, &nr, err, sizeof(err)),
			 0);
	assert_int_equal(nr, 2);
	assert_string_equal(ids[0], "ab");
	assert_string_equal(ids[1], "c");
	/* QEMU before 4.0: no id, the HMP text is asked */
	assert_int_equal(qemu_memdev_parse_qmp("[{\"size\": 1}]", ids, 2, &nr, err, sizeof(err)),
			 -ENOENT);
	assert_int_equal(qemu_memdev_parse_qmp("[{\"id\":\"a\"},{\"id\":\"b\"},{\"id\":\"c\"}]",
					       ids, 2, &nr, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "query-memdev: more than 2 backends");
	assert_int_equal(qemu_memdev_parse_qmp("[{\"id\":\"a\"},{\"id\":\"a\"}]", ids, 2, &nr, err,
					       sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "query-memdev: backend a listed twice");
	assert_int_equal(qemu_memdev_parse_qmp("[{\"id\":\"a b\"}]", ids, 2, &nr, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "query-memdev: a backend id out of shape");
	assert_int_equal(qemu_memdev_parse_qmp("[{\"id\":3}]", ids, 2, &nr, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(qemu_memdev_parse_qmp("[{\"id\":\"a\"}", ids, 2, &nr, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "query-memdev: not an array of backends");
	assert_int_equal(qemu_memdev_parse_qmp("[{\"id\":\"a\"}] x", ids, 2, &nr, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(qemu_memdev_parse_qmp("{\"id\":\"a\"}", ids, 2, &nr, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(qemu_memdev_parse_qmp("[{\"id\":\"a\"} {\"id\":\"b\"}]", ids, 2, &nr, err,
					       sizeof(err)),
			 -EINVAL);
}

/* ---- hugetlbfs: the page size must match ----------------------------------------------------- */

static void test_hugetlbfs_page_size(void **state)
{
	static const char smaps[] = "7f0000000000-7f0040000000 rw-s 00000000 00:2f 1234   "
				    "/dev/hugepages/qemu_back_mem.m0 (deleted)\n"
				    "Size:            1048576 kB\n"
				    "KernelPageSize:     2048 kB\n"
				    "MMUPageSize:        2048 kB\n"
				    "7f1000000000-7f1040000000 rw-p 00000000 00:00 0 \n"
				    "Size:            1048576 kB\n"
				    "KernelPageSize:        4 kB\n"
				    "7f2000000000-7f2040000000 rwxp 00000000 00:00 0 \n"
				    "KernelPageSize:        4 kB\n";
	static const char blocks[] = "Block Name PSize Offset Used Total\n"
				     "m0 2 MiB 0x0 0x40000000 0x40000000\n";
	struct capture *c = malloc(sizeof(*c));
	uint64_t size = GiB;
	FILE *f = fmemopen((void *)smaps, sizeof(smaps) - 1, "r");

	(void)state;
	memset(c, 0, sizeof(*c));
	c->in = (struct qemu_memmap_in){
	    .ranges = c->ranges, .blocks = c->blocks, .memdevs = c->memdevs, .maps = c->maps};
	assert_int_equal(
	    qemu_maps_parse(f, &size, 1, c->maps, 8, &c->in.nr_maps, c->err, sizeof(c->err)), 0);
	fclose(f);
	assert_int_equal(c->in.nr_maps, 2); /* not the executable one */
	assert_int_equal(c->maps[0].pagesize, 2 * MiB);
	assert_int_equal(c->maps[1].pagesize, 4096);
	assert_int_equal(
	    qemu_ramblock_parse(blocks, c->blocks, 8, &c->in.nr_blocks, c->err, sizeof(c->err)), 0);
	strcpy(c->memdevs[0], "m0");
	c->in.nr_memdevs = 1;
	c->ranges[0] = (struct qemu_ram_range){.gpa = 0, .len = GiB, .name = "m0"};
	c->in.nr_ranges = 1;
	/* one mapping of 1 GiB in 2 MiB pages: it, not the anonymous one of the same size */
	assert_int_equal(resolve(c), 0);
	region_is(c, 0, 0, GiB, 0x7f0000000000);
	c->blocks[0].psize = 1 * GiB;
	assert_int_equal(resolve(c), -ENOENT);
	assert_string_equal(c->err,
			    "memory backend m0: no mapping of 1024 MiB in 1048576-KiB pages "
			    "in the QEMU process");
	free(c);
}

/* ---- hostile outputs ------------------------------------------------------------------------- */

static int mtree(const char *text, char *err)
{
	struct qemu_ram_range r[4];
	unsigned nr;

	return qemu_mtree_parse(text, r, 4, &nr, err, 256);
}

#define VIEW "FlatView #1\n AS \"memory\", root: system\n Root memory region: system\n"

static void test_hostile_mtree(void **state)
{
	char err[256], line[2000];

	(void)state;
	assert_int_equal(mtree("", err), -EINVAL);
	assert_string_equal(err, "info mtree: no flat view of address space memory");
	assert_int_equal(mtree(VIEW "\n" VIEW, err), -EINVAL);
	assert_string_equal(err, "info mtree: two flat views of address space memory");
	assert_int_equal(
	    mtree(VIEW "  0000000000001000-0000000000000fff (prio 0, ram): pc.ram\n", err),
	    -EINVAL);
	assert_string_equal(
	    err, "info mtree: a range out of shape: '  0000000000001000-0000000000000fff "
		 "(prio 0, ram): pc.ram'");
	/* 17 hex digits */
	assert_int_equal(
	    mtree(VIEW "  00000000000000000-0000000000000fff (prio 0, ram): pc.ram\n", err),
	    -EINVAL);
	/* the whole 64-bit space: its length does not fit */
	assert_int_equal(
	    mtree(VIEW "  0000000000000000-ffffffffffffffff (prio 0, ram): pc.ram\n", err),
	    -EINVAL);
	assert_int_equal(mtree(VIEW "  0000000000000000-0000000000000fff (prio 0, ram): \n", err),
			 -EINVAL);
	assert_int_equal(
	    mtree(VIEW "  0000000000000000-0000000000000fff (prio 0, ram): pc.ram @zz\n", err),
	    -EINVAL);
	assert_int_equal(
	    mtree(VIEW "  0000000000000000-0000000000000fff (prio 0, ram) pc.ram\n", err), -EINVAL);
	snprintf(line, sizeof(line),
		 VIEW "  0000000000000000-0000000000000fff (prio 0, ram): %0100d\n", 0);
	assert_int_equal(mtree(line, err), -EINVAL); /* a name of 100 bytes */
	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = 0;
	assert_int_equal(mtree(line, err), -EINVAL);
	assert_string_equal(err, "info mtree: a line longer than 1023 bytes");
	assert_int_equal(mtree(VIEW "  0-fff (prio 0, ram): a\n  1000-1fff (prio 0, ram): a\n"
				    "  2000-2fff (prio 0, ram): a\n  3000-3fff (prio 0, ram): a\n"
				    "  4000-4fff (prio 0, ram): a\n",
			       err),
			 -EINVAL);
	assert_string_equal(err, "info mtree: more than 4 RAM ranges");
	/* I/O and ROM are no RAM; other address spaces are not read */
	assert_int_equal(
	    mtree(VIEW "  0-fff (prio 0, i/o): a\n  1000-1fff (prio 0, rom): a\n"
		       "  2000-2fff (prio 0, romd): a\n\nFlatView #2\n AS \"I/O\", root: io\n"
		       "  zz-zz junk\n",
		  err),
	    0);
}

static void test_hostile_ramblock(void **state)
{
	struct qemu_ramblock b[2];
	char err[256];
	unsigned nr;

	(void)state;
	assert_int_equal(
	    qemu_ramblock_parse("pc.ram 4 KiB 0x0 0x1000 0x1000\n", b, 2, &nr, err, sizeof(err)),
	    -EINVAL);
	assert_string_equal(err, "info ramblock: no table (Block Name, PSize, ..., Used)");
#define HDR "Block Name PSize Offset Used Total\r\n"
	assert_int_equal(qemu_ramblock_parse(HDR "pc.ram 3 KiB 0x0 0x1000 0x1000\r\n", b, 2, &nr,
					     err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(
	    err, "info ramblock: a block out of shape: 'pc.ram 3 KiB 0x0 0x1000 0x1000'");
	assert_int_equal(qemu_ramblock_parse(HDR "pc.ram 4 KiB 0x0 0x2000 0x1000\r\n", b, 2, &nr,
					     err, sizeof(err)),
			 -EINVAL); /* used > total */
	assert_int_equal(qemu_ramblock_parse(HDR "pc.ram 4 TiB 0x0 0x1000 0x1000\r\n", b, 2, &nr,
					     err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(
	    qemu_ramblock_parse(HDR "pc.ram 4 KiB 0x0 0x1000\r\n", b, 2, &nr, err, sizeof(err)),
	    -EINVAL);
	assert_int_equal(qemu_ramblock_parse(HDR "pc.ram 4 KiB 0x0 0x1000 0x1000 x\r\n", b, 2, &nr,
					     err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(qemu_ramblock_parse(HDR "a 4 KiB 0x0 0x1000 0x1000\r\n"
						 "a 4 KiB 0x0 0x1000 0x1000\r\n",
					     b, 2, &nr, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "info ramblock: block a listed twice");
	assert_int_equal(qemu_ramblock_parse(HDR
					     "a 4 KiB 0x0 0x1000 0x1000\r\nb 4 KiB 0 1000 1000\r\n"
					     "c 4 KiB 0 1000 1000\r\n",
					     b, 2, &nr, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "info ramblock: more than 2 blocks");
	assert_int_equal(qemu_ramblock_parse(HDR "a 2 MiB 0x0 0x200000 0x400000\r\n\r\n", b, 2, &nr,
					     err, sizeof(err)),
			 0);
	assert_int_equal(nr, 1);
	assert_int_equal(b[0].psize, 2 * MiB);
}

static void test_hostile_memdev(void **state)
{
	char ids[2][QEMU_MEMMAP_NAME], err[256], line[200];
	unsigned nr;

	(void)state;
	assert_int_equal(qemu_memdev_parse("memory backend: a\r\nmemory backend: b\r\n"
					   "memory backend: c\r\n",
					   ids, 2, &nr, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "info memdev: more than 2 backends");
	assert_int_equal(
	    qemu_memdev_parse("memory backend: a b\r\n", ids, 2, &nr, err, sizeof(err)), -EINVAL);
	snprintf(line, sizeof(line), "memory backend: %070d\n", 0);
	assert_int_equal(qemu_memdev_parse(line, ids, 2, &nr, err, sizeof(err)), -EINVAL);
	assert_int_equal(qemu_memdev_parse("", ids, 2, &nr, err, sizeof(err)), 0);
	assert_int_equal(nr, 0);
}

/* A map built by hand on the pc capture: ranges outside the block, overlapping ones. */
static void test_hostile_ranges(void **state)
{
	struct capture *c = malloc(sizeof(*c));

	(void)state;
	load(c, "pc256");
	c->ranges[1].len += 4096; /* one page past the end of pc.ram */
	assert_int_equal(resolve(c), -EINVAL);
	assert_string_equal(c->err,
			    "info mtree: range 0x100000+0xff01000 of pc.ram at offset 0x100000 "
			    "is outside its 256 MiB");
	load(c, "pc256");
	c->ranges[1].offset = UINT64_MAX - 10;
	assert_int_equal(resolve(c), -EINVAL);
	load(c, "pc256");
	c->ranges[1].gpa = 0x80000; /* over the first range */
	assert_int_equal(resolve(c), -EINVAL);
	assert_string_equal(c->err, "info mtree: RAM ranges at 0x0 and 0x80000 overlap");
	load(c, "pc256");
	c->ranges[1].gpa = UINT64_MAX - 0x1000; /* wraps */
	assert_int_equal(resolve(c), -EINVAL);
	/* no mapping of the backend's size in the process */
	load(c, "pc256");
	c->in.nr_maps = 0;
	assert_int_equal(resolve(c), -ENOENT);
	assert_string_equal(c->err,
			    "memory backend pc.ram: no mapping of 256 MiB in 4-KiB pages in the "
			    "QEMU process");
	/* two of them and no way to read guest memory to tell */
	load(c, "pc256");
	c->maps[1] = c->maps[0];
	c->maps[1].lo += 1ull << 40;
	c->maps[1].hi += 1ull << 40;
	c->in.nr_maps = 2;
	assert_int_equal(resolve(c), -EIO);
	assert_string_equal(c->err,
			    "memory backend pc.ram: cannot compare its candidate mappings with "
			    "guest memory");
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pc_256m),
	    cmocka_unit_test(test_q35_4g),
	    cmocka_unit_test(test_memfd),
	    cmocka_unit_test(test_file_backend),
	    cmocka_unit_test(test_numa_two_nodes),
	    cmocka_unit_test(test_numa_alike_refused),
	    cmocka_unit_test(test_numa_real_memory),
	    cmocka_unit_test(test_q35_4g_qemu10),
	    cmocka_unit_test(test_numa_qemu10),
	    cmocka_unit_test(test_ramblock_columns),
	    cmocka_unit_test(test_qmp_memdev),
	    cmocka_unit_test(test_hugetlbfs_page_size),
	    cmocka_unit_test(test_hostile_mtree),
	    cmocka_unit_test(test_hostile_ramblock),
	    cmocka_unit_test(test_hostile_memdev),
	    cmocka_unit_test(test_hostile_ranges),
	};

	return cmocka_run_group_tests_name("qemu_memmap", tests, NULL, NULL);
}

/* The kernel's symbols from its own kallsyms tables (synthetic ones in the 6.1 and 6.4+ layouts,
 * hostile ones too), read through a reader from the kernel-image mapping, and loaded modules walked
 * in (fake) guest memory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "vmi/vmi_kallsyms.h"
#include "vmi/vmi_linux.h"
#include "vmi/vmi_modules.h"
#include "tests/common/fake_mem.h"
#include "tests/common/kallsyms_image.h"
#include "tests/common/kernel_image.h"

#include <bpf/btf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BASE  0xffffffff81000000ull /* where the fake image is mapped */
#define NSYMS 700
#define CAP   (256u << 10)

static struct ks_sym syms[NSYMS];
static char names[NSYMS][300];

/* 700 symbols: two per-CPU ones, _text, _stext, functions (one with a 200-byte name: a 2-byte
 * length), linux_banner, _etext. */
static void make_syms(void)
{
	uint64_t a = BASE;

	for (size_t i = 0; i < NSYMS; i++) {
		if (i == 0)
			snprintf(names[i], sizeof(names[i]), "Afixed_percpu_data");
		else if (i == 1)
			snprintf(names[i], sizeof(names[i]), "Acurrent_task");
		else if (i == 2)
			snprintf(names[i], sizeof(names[i]), "T_text");
		else if (i == 3)
			snprintf(names[i], sizeof(names[i]), "T_stext");
		else if (i == 10) {
			memset(names[i], 'x', 200);
			names[i][0] = 't';
			names[i][200] = 0;
		} else if (i == 11)
			snprintf(names[i], sizeof(names[i]), "Tvfs_read");
		else if (i == NSYMS - 2)
			snprintf(names[i], sizeof(names[i]), "T_etext");
		else if (i == NSYMS - 1)
			snprintf(names[i], sizeof(names[i]), "Dlinux_banner");
		else
			snprintf(names[i], sizeof(names[i]), "%cfunc_%zu_do_sys_open",
				 i % 3 ? 'T' : 't', i);
		syms[i].name = names[i];
		syms[i].addr = i == 0 ? 0 : i == 1 ? 0x1fb80 : a;
		if (i >= 3)
			a += 0x40;
	}
}

struct got {
	size_t n;
	uint64_t addr[NSYMS];
	char name[NSYMS][300];
	int fail_at; /* return -ECANCELED at this symbol (0: never) */
};

static int collect(void *ctx, uint64_t addr, char type, const char *name)
{
	struct got *g = ctx;

	if (g->fail_at && g->n + 1 == (size_t)g->fail_at)
		return -ECANCELED;
	if (g->n >= NSYMS)
		return -E2BIG;
	g->addr[g->n] = addr;
	snprintf(g->name[g->n], sizeof(g->name[0]), "%c%s", type, name);
	g->n++;
	return 0;
}

/* 7.0+ (6.15+): per-CPU symbols are kernel addresses, no absolute ones; they sort first. */
static void make_syms_7_0(void)
{
	make_syms();
	names[0][0] = 'D';
	names[1][0] = 'D';
	syms[0].addr = BASE - 0x20000;
	syms[1].addr = BASE - 0x20000 + 0x1fb80;
}

static uint8_t *build(enum ks_layout lay, struct ks_where *w, size_t *len)
{
	uint8_t *img = malloc(CAP);

	/* 7.0's labels are aligned to 4 only: 4 bytes off 8 here */
	*len = ks_build(img, CAP, syms, NSYMS, lay, BASE, lay == KS_7_0 ? 4100 : 4096, w);
	assert_true(*len > 0);
	return img;
}

static void assert_all(const struct got *g)
{
	assert_int_equal(g->n, NSYMS);
	for (size_t i = 0; i < NSYMS; i++) {
		assert_string_equal(g->name[i], syms[i].name);
		assert_int_equal(g->addr[i], syms[i].addr);
	}
}

static void test_layouts(void **state)
{
	enum ks_layout lays[] = {KS_6_1_NOSEQS, KS_6_1, KS_6_4, KS_7_0, KS_7_0};

	(void)state;
	for (size_t k = 0; k < 5; k++) {
		struct ks_where w;
		size_t len;
		uint8_t *img;

		if (lays[k] == KS_7_0)
			make_syms_7_0();
		else
			make_syms();
		if (k == 4) /* 7.0 at 8: the alignment comes from the tables, not the layout */
			len = ks_build(img = malloc(CAP), CAP, syms, NSYMS, KS_7_0, BASE, 4096, &w);
		else
			img = build(lays[k], &w, &len);
		assert_true(len > 0);
		struct got *g = calloc(1, sizeof(*g));
		char err[256] = "";

		assert_int_equal(vmi_kallsyms_decode(img, len, BASE, collect, g, err, sizeof(err)),
				 NSYMS);
		assert_all(g);
		/* 6.4+: a kernel pointer right before num_syms does not pass for 6.1's relative
		 * base (its addresses would not come out sorted) */
		if (lays[k] == KS_6_4) {
			uint64_t ptr = BASE + 0x1234;

			memcpy(img + w.num - 8, &ptr, 8);
			memset(g, 0, sizeof(*g));
			assert_int_equal(
			    vmi_kallsyms_decode(img, len, BASE, collect, g, err, sizeof(err)),
			    NSYMS);
			assert_all(g);
		}
		/* more bytes after the tables change nothing */
		memset(g, 0, sizeof(*g));
		assert_int_equal(vmi_kallsyms_decode(img, CAP, BASE, collect, g, err, sizeof(err)),
				 NSYMS);
		assert_all(g);
		/* the caller's error stops the decoding and is returned */
		memset(g, 0, sizeof(*g));
		g->fail_at = 5;
		assert_int_equal(vmi_kallsyms_decode(img, len, BASE, collect, g, err, sizeof(err)),
				 -ECANCELED);
		assert_int_equal(g->n, 4);
		free(g);
		free(img);
	}
}

/* Decoding @img must fail with @ret and an error containing @msg. */
#define expect_fail(img, len, ret, msg) expect_fail_at(__LINE__, img, len, ret, msg)
static void expect_fail_at(int line, const uint8_t *img, size_t len, long ret, const char *msg)
{
	struct got *g = calloc(1, sizeof(*g));
	char err[256] = "";

	if (vmi_kallsyms_decode(img, len, BASE, collect, g, err, sizeof(err)) != ret)
		fail_msg("line %d: not %ld: %s (%s)", line, ret, err, msg);
	if (!strstr(err, msg))
		fail_msg("error \"%s\" lacks \"%s\"", err, msg);
	free(g);
}

static void test_hostile(void **state)
{
	struct ks_where w;
	size_t len;
	uint8_t *img;
	uint32_t v;
	uint64_t q;

	(void)state;
	make_syms();
	/* nothing but filler, and an image cut inside the token index */
	img = build(KS_6_1, &w, &len);
	expect_fail(img, 4096, -ENOENT, "no kallsyms tables");
	expect_fail(img, len - 1, -ENOENT, "no kallsyms tables");
	expect_fail(img, w.ti, -ENOENT, "no kallsyms tables");
	{
		struct got *g = calloc(1, sizeof(*g));
		char err[256];

		assert_int_equal(
		    vmi_kallsyms_decode(img, len, BASE + 4, collect, g, err, sizeof(err)), -ENOENT);
		free(g);
	}
	/* token index out of range, or not increasing */
	memcpy(img + w.ti + 2 * 77, (uint16_t[]){0xffff}, 2);
	expect_fail(img, len, -ENOENT, "no kallsyms tables");
	free(img);
	img = build(KS_6_1, &w, &len);
	memcpy(img + w.ti + 2 * 78, img + w.ti + 2 * 77, 2);
	expect_fail(img, len, -ENOENT, "no kallsyms tables");
	free(img);
	/* a token without its NUL */
	img = build(KS_6_4, &w, &len);
	img[w.tt + strlen(ks_token(0))] = 'x'; /* token 0's NUL */
	expect_fail(img, len, -ENOENT, "no kallsyms tables");
	free(img);
	/* num_syms huge, or one more than the names */
	img = build(KS_6_1, &w, &len);
	v = 0xffffffff;
	memcpy(img + w.num, &v, 4);
	expect_fail(img, len, -EINVAL, "no consistent kallsyms_markers");
	v = NSYMS + 1;
	memcpy(img + w.num, &v, 4);
	expect_fail(img, len, -EINVAL, "no consistent kallsyms_markers");
	free(img);
	/* a name whose length runs past the names (2-byte length 0x7fff) */
	img = build(KS_6_1_NOSEQS, &w, &len);
	img[w.names] = 0xff;
	img[w.names + 1] = 0xff;
	expect_fail(img, len, -EINVAL, "no consistent kallsyms_markers");
	free(img);
	/* a marker off by one */
	img = build(KS_6_4, &w, &len);
	memcpy(&v, img + w.markers + 4, 4);
	v++;
	memcpy(img + w.markers + 4, &v, 4);
	expect_fail(img, len, -EINVAL, "no consistent kallsyms_markers");
	free(img);
	/* truncated in the names: no markers, no tables */
	img = build(KS_6_1, &w, &len);
	memset(img + w.names + 100, 0, w.tt - (w.names + 100));
	expect_fail(img, len, -EINVAL, "no consistent kallsyms_markers");
	free(img);
	/* relative_base outside the kernel image, in both layouts */
	img = build(KS_6_1, &w, &len);
	q = 0x1000;
	memcpy(img + w.rbase, &q, 8);
	expect_fail(img, len, -EINVAL, "no kallsyms_offsets");
	free(img);
	img = build(KS_6_4, &w, &len);
	memcpy(img + w.rbase, &q, 8);
	expect_fail(img, len, -EINVAL, "no kallsyms_offsets");
	expect_fail(img, w.rbase + 4, -EINVAL, "no kallsyms_offsets"); /* cut in relative_base */
	free(img);
	/* 7.0: a place-relative offset out of order, one out of the kernel image, the offsets cut;
	 * num_syms one more than the names; a name's length byte zeroed */
	make_syms_7_0();
	img = build(KS_7_0, &w, &len);
	memcpy(&v, img + w.offsets + 4 * 300, 4);
	v += 0x100;
	memcpy(img + w.offsets + 4 * 300, &v, 4);
	expect_fail(img, len, -EINVAL, "no kallsyms_offsets");
	free(img);
	img = build(KS_7_0, &w, &len);
	v = 0x80000000u; /* 2 GiB below its place: under the kernel image mapping */
	memcpy(img + w.offsets, &v, 4);
	expect_fail(img, len, -EINVAL, "no kallsyms_offsets");
	expect_fail(img, w.offsets + 4 * NSYMS - 2, -EINVAL, "no kallsyms_offsets");
	free(img);
	img = build(KS_7_0, &w, &len);
	v = NSYMS + 1;
	memcpy(img + w.num, &v, 4);
	expect_fail(img, len, -EINVAL, "no consistent kallsyms_markers");
	free(img);
	img = build(KS_7_0, &w, &len);
	img[w.names] = 0;
	expect_fail(img, len, -EINVAL, "no consistent kallsyms_markers");
	free(img);
	make_syms();
	img = build(KS_6_4, &w, &len);
	/* a token index copied all over 16 MiB: the search gives up, it does not run for minutes */
	{
		size_t big = 16u << 20;
		uint8_t *many = malloc(big);

		for (size_t at = 0; at + 512 <= big; at += 512)
			memcpy(many + at, img + w.ti, 512);
		expect_fail(many, big, -E2BIG, "gave up after 268435456 steps");
		free(many);
	}
	free(img);
}

/* A name of 100 "kallsyms" tokens: 100 bytes in the table, 800 once expanded. */
static void test_name_too_long(void **state)
{
	static char longname[1024];
	struct ks_where w;
	size_t len;
	uint8_t *img;

	(void)state;
	make_syms();
	longname[0] = 'T';
	for (int i = 0; i < 100; i++)
		memcpy(longname + 1 + 8 * i, "kallsyms", 8);
	syms[20].name = longname;
	img = build(KS_6_1, &w, &len);
	expect_fail(img, len, -EINVAL, "kallsyms: symbol 20 of 700");
	free(img);
	make_syms();
	/* an empty name (only a type letter) */
	syms[30].name = "T";
	img = build(KS_6_1, &w, &len);
	expect_fail(img, len, -EINVAL, "name empty");
	free(img);
}

/* ---- through a reader, from the kernel-image mapping ---------------------------------------- */

struct stop_reader {
	struct fake_mem m;
	unsigned eintr_at; /* this read fails with -EINTR */
};

static int stop_read(void *ctx, uint64_t gva, void *buf, size_t len)
{
	struct stop_reader *s = ctx;

	if (s->eintr_at && s->m.reads + 1 == s->eintr_at) {
		s->m.reads++;
		return -EINTR;
	}
	return fake_mem_read(&s->m, gva, buf, len);
}

static void test_read(void **state)
{
	const uint64_t at = BASE + 0x4000000; /* a KASLR slide of 64 MiB */
	uint8_t *a = calloc(1, 1 << 20), *b = calloc(1, 3 << 20);
	struct stop_reader s = {0};
	struct got *g = calloc(1, sizeof(*g));
	struct ks_where w;
	char err[256] = "";
	size_t len;

	(void)state;
	make_syms();
	for (size_t i = 2; i < NSYMS; i++)
		syms[i].addr += 0x4000000;
	/* the tables in the first MiB; one page unmapped after it (zeros), the rest mapped */
	len = ks_build(a, 1 << 20, syms, NSYMS, KS_6_1, at, 8192, &w);
	assert_true(len > 0);
	fake_mem_init(&s.m);
	fake_mem_map(&s.m, at, a, 1 << 20);
	fake_mem_map(&s.m, at + (1 << 20) + 4096, b, (3 << 20) - 4096);
	assert_int_equal(vmi_kallsyms_read(stop_read, &s, collect, g, err, sizeof(err)), NSYMS);
	assert_all(g);
	/* 512 probes, 2 blocks, the 512 pages of the first */
	assert_int_equal(s.m.reads, 512 + 2 + 512);

	/* stopped by the reader */
	memset(g, 0, sizeof(*g));
	s.m.reads = 0;
	s.eintr_at = 600;
	assert_int_equal(vmi_kallsyms_read(stop_read, &s, collect, g, err, sizeof(err)), -EINTR);
	assert_int_equal(s.m.reads, 600);
	s.eintr_at = 3;
	s.m.reads = 0;
	assert_int_equal(vmi_kallsyms_read(stop_read, &s, collect, g, err, sizeof(err)), -EINTR);

	/* nothing mapped: the kernel is not up */
	fake_mem_init(&s.m);
	s.eintr_at = 0;
	assert_int_equal(vmi_kallsyms_read(stop_read, &s, collect, g, err, sizeof(err)), -ESRCH);
	assert_non_null(strstr(err, "no kernel image mapped"));

	/* two blocks 1 GiB apart "mapped" (a hostile guest): each run of mapped blocks searched
	 * alone (one 2 MiB read, then its 512 pages), never the 1 GiB between them */
	{
		static uint8_t one[1];
		struct fake_mem m;

		fake_mem_init(&m);
		fake_mem_map(&m, 0xffffffff80000000ull, one, 1);
		fake_mem_map(&m, 0xffffffffbfe00000ull, one, 1);
		assert_int_equal(vmi_kallsyms_read(fake_mem_read, &m, collect, g, err, sizeof(err)),
				 -ENOENT);
		assert_non_null(strstr(err, "no kernel image found in the 2 mapped run(s)"));
		assert_non_null(strstr(err, "1024 MiB mapped from the first to the last"));
		assert_int_equal(m.reads, 512 + 2 * (1 + 512));
		assert_int_equal(g->n, 0);
	}
	free(a);
	free(b);
	free(g);
}

/* The kernel image inside a linear map of all of RAM at 0xffffffff80000000 (300 MiB here: what
 * the embedded VMM's boot page tables and its loader's reader give, guest-physical = virtual -
 * 0xffffffff80000000), more than the 256 MiB an image may span: the tables found in a 64 MiB
 * window, the image bounded by its own symbols (_text to the last one, or _end), read and decoded
 * from there. At 16 MiB (the link address: the first window), at 200 MiB (the seventh window,
 * each 32 MiB after the one before), and with an _end 272 MiB after _text: refused, named. */
static void test_read_linear_map(void **state)
{
	const size_t ram = 300u << 20;
	const uint64_t map = 0xffffffff80000000ull;
	uint8_t *mem = calloc(1, ram);
	struct got *g = calloc(1, sizeof(*g));
	const uint64_t at[] = {BASE, map + (200u << 20)};
	const unsigned reads[] = {512 + 32 + 1, 512 + 6 * 32 + 1};
	struct fake_mem m;
	struct ks_where w;
	char err[320] = "";

	(void)state;
	assert_non_null(mem);
	for (int k = 0; k < 2; k++) {
		make_syms();
		for (size_t i = 2; i < NSYMS; i++)
			syms[i].addr += at[k] - BASE;
		if (k) /* the tables before, away */
			memset(mem + (at[k - 1] - map), 0, 1 << 20);
		assert_true(ks_build(mem + (at[k] - map), 1 << 20, syms, NSYMS, KS_6_1, at[k], 8192,
				     &w) > 0);
		fake_mem_init(&m);
		fake_mem_map(&m, map, mem, ram);
		memset(g, 0, sizeof(*g));
		if (vmi_kallsyms_read(fake_mem_read, &m, collect, g, err, sizeof(err)) != NSYMS)
			fail_msg("image at 0x%llx: %s", (unsigned long long)at[k], err);
		assert_all(g);
		/* 512 probes, the windows before the tables' (32 blocks each), the one they are
		 * in, then the image's one block (_text to linux_banner) */
		assert_int_equal(m.reads, reads[k]);
	}

	/* an _end 272 MiB after _text: the extent the symbols give is too large */
	make_syms();
	snprintf(names[NSYMS - 1], sizeof(names[0]), "B_end");
	syms[NSYMS - 1].addr = BASE + (272u << 20);
	memset(mem + (at[1] - map), 0, 1 << 20);
	assert_true(ks_build(mem + (BASE - map), 1 << 20, syms, NSYMS, KS_6_1, BASE, 8192, &w) > 0);
	fake_mem_init(&m);
	fake_mem_map(&m, map, mem, ram);
	memset(g, 0, sizeof(*g));
	assert_int_equal(vmi_kallsyms_read(fake_mem_read, &m, collect, g, err, sizeof(err)),
			 -E2BIG);
	assert_non_null(strstr(err, "0xffffffff81000000-0xffffffff92200000 by its own symbols (_text "
				    "to _end), spans 274 MiB (more than 256)"));
	assert_int_equal(g->n, 0);
	free(mem);
	free(g);
}

/* vmi_linux_open_kallsyms: tables, resolved symbols, the slide from _text. */
static void test_linux_open_kallsyms(void **state)
{
	const uint64_t at = BASE + 0x4000000;
	uint8_t *a = calloc(1, 2 << 20);
	struct fake_mem m;
	struct vmi_linux l;
	struct ks_where w;
	char err[256] = "";
	uint64_t off;

	(void)state;
	make_syms();
	for (size_t i = 2; i < NSYMS; i++)
		syms[i].addr += 0x4000000;
	assert_true(ks_build(a, 2 << 20, syms, NSYMS, KS_6_4, at, 0, &w) > 0);
	fake_mem_init(&m);
	fake_mem_map(&m, at, a, 2 << 20);
	if (vmi_linux_open_kallsyms(&l, fake_mem_read, &m, err, sizeof(err)))
		fail_msg("%s", err);
	assert_true(l.slid);
	assert_int_equal(l.slide, 0x4000000);
	assert_int_equal(l.stext, at);
	assert_int_equal(l.etext, syms[NSYMS - 2].addr);
	assert_int_equal(l.banner, syms[NSYMS - 1].addr);
	assert_int_equal(l.nr_kallsyms, NSYMS);
	/* per-CPU symbols at their section offsets, in the objects */
	assert_int_equal(l.current_task, 0x1fb80);
	assert_non_null(vmi_symtab_find(&l.funcs, "vfs_read"));
	assert_int_equal(vmi_symtab_find(&l.funcs, "vfs_read")->addr, syms[11].addr);
	assert_false(vmi_linux_cpu_gs(&l, &off)); /* no cpu_number in these tables */
	vmi_linux_close(&l);

	/* no linux_banner among them */
	syms[NSYMS - 1].name = "Dnot_the_banner";
	assert_true(ks_build(a, 2 << 20, syms, NSYMS, KS_6_4, at, 0, &w) > 0);
	assert_int_equal(vmi_linux_open_kallsyms(&l, fake_mem_read, &m, err, sizeof(err)),
			 -ENODATA);
	assert_non_null(strstr(err, "no linux_banner, _stext or _etext"));
	assert_int_equal(l.funcs.nr + l.objects.nr, 0);
	free(a);
}

/* 7.0's tables (6.15+ per-CPU data at kernel addresses, 6.18's data typed T): cpu_number and
 * current_task are kernel addresses; a T symbol between _sdata and _edata is data, one past
 * _edata stays a function. */
static void test_linux_open_kallsyms_7_0(void **state)
{
	const uint64_t at = BASE + 0x4000000;
	uint8_t *a = calloc(1, 2 << 20);
	struct fake_mem m;
	struct vmi_linux l;
	struct ks_where w;
	char err[256] = "";
	uint64_t off = 0;

	(void)state;
	make_syms_7_0();
	snprintf(names[0], sizeof(names[0]), "Dcpu_number");
	snprintf(names[NSYMS - 9], sizeof(names[0]), "T_etext");
	snprintf(names[NSYMS - 8], sizeof(names[0]), "D__start_rodata"); /* at _etext, as on 6.12 */
	snprintf(names[NSYMS - 7], sizeof(names[0]), "D__end_rodata");
	snprintf(names[NSYMS - 2], sizeof(names[0]), "Tlast_func");
	snprintf(names[NSYMS - 6], sizeof(names[0]), "D_sdata");
	snprintf(names[NSYMS - 5], sizeof(names[0]), "Tmodules");
	snprintf(names[NSYMS - 4], sizeof(names[0]), "D_edata");
	snprintf(names[NSYMS - 3], sizeof(names[0]), "Tafter_data");
	for (size_t i = 0; i < NSYMS; i++)
		syms[i].addr += 0x4000000;
	syms[NSYMS - 8].addr = syms[NSYMS - 9].addr;
	assert_true(ks_build(a, 2 << 20, syms, NSYMS, KS_7_0, at, 0, &w) > 0);
	fake_mem_init(&m);
	fake_mem_map(&m, at, a, 2 << 20);
	if (vmi_linux_open_kallsyms(&l, fake_mem_read, &m, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(l.slide, 0x4000000);
	assert_int_equal(l.nr_kallsyms, NSYMS);
	assert_int_equal(l.current_task, syms[1].addr);
	assert_true(vmi_linux_cpu_gs(&l, &off));
	assert_int_equal(off, syms[0].addr);
	assert_null(vmi_symtab_find(&l.funcs, "modules"));
	assert_non_null(vmi_symtab_find(&l.objects, "modules"));
	assert_int_equal(vmi_symtab_find(&l.objects, "modules")->addr, syms[NSYMS - 5].addr);
	assert_non_null(vmi_symtab_find(&l.funcs, "after_data"));
	assert_non_null(vmi_symtab_find(&l.funcs, "last_func"));
	assert_int_equal(l.etext, syms[NSYMS - 9].addr); /* _etext stays text */
	assert_non_null(vmi_symtab_find(&l.funcs, "vfs_read"));
	vmi_linux_close(&l);
	free(a);
}

/* Debian's symbol-less System.map: refused with what to do instead. */
static void test_symbolless_map(void **state)
{
	static const char stub[] = "ffffffffffffffff B The real System.map is in the "
				   "linux-image-6.1.0-57-cloud-amd64-dbg package\n";
	FILE *f = fmemopen((void *)stub, sizeof(stub) - 1, "r");
	struct vmi_linux l;
	char err[256];

	(void)state;
	assert_int_equal(vmi_linux_open_map(&l, f, "/boot/System.map", err, sizeof(err)), -EINVAL);
	assert_string_equal(
	    err, "/boot/System.map holds no symbols (Debian puts the real System.map in "
		 "the kernel's -dbg package): omit --system-map to read the symbols from "
		 "the guest's kallsyms");
	fclose(f);
}

/* ---- modules -------------------------------------------------------------------------------- */

#define MODS 0xffffffffc0000000ull /* module memory, and the list head in it */
enum {
	HEAD = 0x0,
	MOD1 = 0x100, /* struct module at MODS + MOD1 */
	MOD2 = 0x400,
	KS1 = 0x800, /* struct mod_kallsyms */
	SYMTAB1 = 0x900,
	STRTAB1 = 0xb00,
	TEXT1 = 0x1000, /* 0x1000 bytes of text */
};
static const struct vmi_module_layout lo = {
    .list = 8,
    .name = 24,
    .kallsyms = 0x100,
    .text = 0x120,
    .text_size = 0x130,
    .ks_symtab = 0,
    .ks_num = 8,
    .ks_strtab = 16,
};

static void put64(uint8_t *mem, size_t at, uint64_t v)
{
	memcpy(mem + at, &v, 8);
}

static void put_sym(uint8_t *mem, size_t i, uint32_t name, uint8_t info, uint64_t value,
		    uint64_t size)
{
	uint8_t *s = mem + SYMTAB1 + 24 * i;

	memcpy(s, &name, 4);
	s[4] = info;
	memcpy(s + 8, &value, 8);
	memcpy(s + 16, &size, 8);
}

/* Two modules: "bm" with three symbols (two functions in its text, an object), and "empty", without
 * kallsyms. */
static void make_modules(uint8_t *mem)
{
	uint32_t num = 4, tsize = 0x1000;

	memset(mem, 0, 0x4000);
	put64(mem, HEAD, MODS + MOD1 + lo.list);
	put64(mem, MOD1 + lo.list, MODS + MOD2 + lo.list);
	put64(mem, MOD2 + lo.list, MODS + HEAD);
	strcpy((char *)mem + MOD1 + lo.name, "bm\x01x");
	strcpy((char *)mem + MOD2 + lo.name, "empty");
	put64(mem, MOD1 + lo.kallsyms, MODS + KS1);
	put64(mem, MOD1 + lo.text, MODS + TEXT1);
	memcpy(mem + MOD1 + lo.text_size, &tsize, 4);
	put64(mem, KS1 + lo.ks_symtab, MODS + SYMTAB1);
	memcpy(mem + KS1 + lo.ks_num, &num, 4);
	put64(mem, KS1 + lo.ks_strtab, MODS + STRTAB1);
	memcpy(mem + STRTAB1, "\0bm_status_read\0bm_obj\0bm_entry_read\0outside\0", 46);
	put_sym(mem, 0, 1, 0x02, MODS + TEXT1 + 0x10, 0x40);	 /* FUNC */
	put_sym(mem, 1, 16, 0x01, MODS + TEXT1 + 0x100, 8);	 /* OBJECT */
	put_sym(mem, 2, 23, 0x12, MODS + TEXT1 + 0x200, 0x5000); /* GLOBAL FUNC, size cut */
	put_sym(mem, 3, 37, 0x02, MODS + TEXT1 + 0x1000, 0x10);	 /* just past the text */
}

static void test_modules(void **state)
{
	uint8_t *mem = calloc(1, 0x4000);
	struct vmi_modules mods = {0};
	struct vmi_symtab funcs = {0};
	struct fake_mem m;
	char err[256] = "";
	const struct vmi_sym *f;

	(void)state;
	make_modules(mem);
	fake_mem_init(&m);
	fake_mem_map(&m, MODS, mem, 0x4000);
	assert_int_equal(vmi_modules_read(&lo, MODS + HEAD, fake_mem_read, &m, &mods, &funcs, 100,
					  err, sizeof(err)),
			 2);
	vmi_symtab_sort(&funcs);
	assert_int_equal(mods.nr, 2);
	assert_string_equal(mods.v[0].name, "bm?x");
	assert_int_equal(mods.v[0].text, MODS + TEXT1);
	assert_int_equal(mods.v[0].text_size, 0x1000);
	assert_int_equal(mods.v[0].nr_funcs, 2);
	assert_string_equal(mods.v[1].name, "empty");
	assert_int_equal(mods.v[1].text_size, 0);
	assert_int_equal(funcs.nr, 2);
	f = vmi_symtab_find(&funcs, "bm_entry_read");
	assert_non_null(f);
	assert_int_equal(f->size, 0xe00); /* to the end of the text */
	assert_ptr_equal(vmi_modules_find(&mods, MODS + TEXT1 + 0x10), &mods.v[0]);
	assert_null(vmi_modules_find(&mods, MODS + TEXT1 + 0x1000));
	vmi_modules_free(&mods);
	vmi_symtab_free(&funcs);

	/* the symbol budget */
	assert_int_equal(vmi_modules_read(&lo, MODS + HEAD, fake_mem_read, &m, &mods, &funcs, 1,
					  err, sizeof(err)),
			 1);
	vmi_modules_free(&mods);
	vmi_symtab_free(&funcs);

	/* a cycle that misses the head */
	put64(mem, MOD2 + lo.list, MODS + MOD1 + lo.list);
	assert_int_equal(vmi_modules_read(&lo, MODS + HEAD, fake_mem_read, &m, &mods, &funcs, 100,
					  err, sizeof(err)),
			 -ELOOP);
	assert_non_null(strstr(err, "more than 1024 entries"));
	vmi_modules_free(&mods);
	vmi_symtab_free(&funcs);

	/* a link into nowhere; a huge symbol count and text size are skipped */
	make_modules(mem);
	put64(mem, MOD2 + lo.list, 0xffffffffdead0000ull);
	assert_int_equal(vmi_modules_read(&lo, MODS + HEAD, fake_mem_read, &m, &mods, &funcs, 100,
					  err, sizeof(err)),
			 -EIO);
	vmi_modules_free(&mods);
	vmi_symtab_free(&funcs);
	make_modules(mem);
	memcpy(mem + KS1 + lo.ks_num, (uint32_t[]){0x10000000}, 4);
	assert_int_equal(vmi_modules_read(&lo, MODS + HEAD, fake_mem_read, &m, &mods, &funcs, 100,
					  err, sizeof(err)),
			 0);
	vmi_modules_free(&mods);
	memcpy(mem + KS1 + lo.ks_num, (uint32_t[]){4}, 4);
	memcpy(mem + MOD1 + lo.text_size, (uint32_t[]){0xffffffff}, 4);
	assert_int_equal(vmi_modules_read(&lo, MODS + HEAD, fake_mem_read, &m, &mods, &funcs, 100,
					  err, sizeof(err)),
			 0);
	assert_int_equal(mods.v[0].text_size, 0);
	vmi_modules_free(&mods);
	/* a name without its NUL within 511 bytes */
	make_modules(mem);
	memset(mem + STRTAB1 + 1, 'a', 0x4000 - STRTAB1 - 1);
	assert_int_equal(vmi_modules_read(&lo, MODS + HEAD, fake_mem_read, &m, &mods, &funcs, 100,
					  err, sizeof(err)),
			 0);
	vmi_modules_free(&mods);
	vmi_symtab_free(&funcs);
	free(mem);
}

/* The layout from BTF: 6.1's core_layout, 6.4's mem[] array. */
static void test_module_layout_btf(void **state)
{
	for (int v64 = 0; v64 < 2; v64++) {
		struct btf *btf = btf__new_empty();
		struct vmi_module_layout got;
		int u64 = btf__add_int(btf, "long unsigned int", 8, 0);
		int u32 = btf__add_int(btf, "unsigned int", 4, 0);
		int chr = btf__add_int(btf, "char", 1, BTF_INT_SIGNED);
		int ptr = btf__add_ptr(btf, u64);
		int name = btf__add_array(btf, u32, chr, 56);
		int lh = btf__add_struct(btf, "list_head", 16);
		int layout, mks, arr, mksp;
		const void *raw;
		__u32 size;
		char err[128];

		(void)state;
		btf__add_field(btf, "next", ptr, 0, 0);
		btf__add_field(btf, "prev", ptr, 64, 0);
		layout = btf__add_struct(btf, v64 ? "module_memory" : "module_layout", 24);
		btf__add_field(btf, "base", ptr, 0, 0);
		btf__add_field(btf, v64 ? "size" : "text_size", u32, 64, 0);
		mks = btf__add_struct(btf, "mod_kallsyms", 32);
		btf__add_field(btf, "symtab", ptr, 0, 0);
		btf__add_field(btf, "num_symtab", u32, 64, 0);
		btf__add_field(btf, "strtab", ptr, 128, 0);
		arr = btf__add_array(btf, u32, layout, 7);
		mksp = btf__add_ptr(btf, mks);
		btf__add_struct(btf, "module", 1024);
		btf__add_field(btf, "state", u32, 0, 0);
		btf__add_field(btf, "list", lh, 64, 0);
		btf__add_field(btf, "name", name, 192, 0);
		btf__add_field(btf, v64 ? "mem" : "core_layout", v64 ? arr : layout, 8 * 320, 0);
		btf__add_field(btf, "kallsyms", mksp, 8 * 800, 0);
		raw = btf__raw_data(btf, &size);
		if (vmi_module_layout_btf(raw, size, &got, err, sizeof(err)))
			fail_msg("%s", err);
		assert_int_equal(got.list, 8);
		assert_int_equal(got.name, 24);
		assert_int_equal(got.text, 320);
		assert_int_equal(got.text_size, 328);
		assert_int_equal(got.kallsyms, 800);
		assert_int_equal(got.ks_symtab, 0);
		assert_int_equal(got.ks_num, 8);
		assert_int_equal(got.ks_strtab, 16);
		btf__free(btf);
	}
	{
		struct btf *btf = btf__new_empty();
		struct vmi_module_layout got;
		const void *raw;
		__u32 size;
		char err[128];

		btf__add_struct(btf, "module", 8);
		btf__add_field(btf, "state", btf__add_int(btf, "int", 4, 0), 0, 0);
		raw = btf__raw_data(btf, &size);
		assert_int_equal(vmi_module_layout_btf(raw, size, &got, err, sizeof(err)), -ENOENT);
		assert_string_equal(err, "modules: the kernel's BTF has no module.list");
		btf__free(btf);
	}
}

/* What a real kernel's kallsyms says of a few symbols. */
struct real {
	long n;
	uint64_t text, stext, etext, vfs_read;
	char vfs_read_type;
};

static int real_add(void *ctx, uint64_t addr, char type, const char *name)
{
	struct real *r = ctx;

	r->n++;
	if (!strcmp(name, "_text"))
		r->text = addr;
	else if (!strcmp(name, "_stext"))
		r->stext = addr;
	else if (!strcmp(name, "_etext"))
		r->etext = addr;
	else if (!strcmp(name, "vfs_read")) {
		r->vfs_read = addr;
		r->vfs_read_type = type;
	}
	return 0;
}

#define KERNELS "/var/cache/hvtrace/kernels/"

/* Debian's own images, when the machine has them (their System.map is only a stub file): 6.12
 * (base-relative offsets, labels aligned to 8) and 7.3 (7.0's place-relative layout, aligned to 4).
 * _text is where the image's text starts, vfs_read is text and starts as a function does with IBT:
 * ENDBR64, then the 5-byte ftrace site (CALL __fentry__ in the unbooted image). */
static void test_real_kernels(void **state)
{
	static const char *const k[] = {
	    KERNELS
	    "linux-image-6.12.117+deb13-cloud-amd64/boot/vmlinuz-6.12.117+deb13-cloud-amd64",
	    KERNELS "linux-binary-unsigned-7.3.4+deb13-cloud-amd64/usr/lib/modules/"
		    "7.3.4+deb13-cloud-amd64/vmlinuz.unsigned",
	};
	unsigned tried = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		struct kernel_image ki;
		struct real r = {0};
		char err[256] = "";
		long n;

		if (access(k[i], R_OK) || kernel_image_load(k[i], &ki) < 0)
			continue;
		tried++;
		n = vmi_kallsyms_decode(ki.img, ki.len, ki.base, real_add, &r, err, sizeof(err));
		if (n < 0)
			fail_msg("%s: %ld: %s", k[i], n, err);
		assert_int_equal(n, r.n);
		assert_true(n > 100000);
		assert_int_equal(r.text, ki.base);
		assert_true(r.stext >= r.text && r.stext < r.vfs_read && r.vfs_read < r.etext);
		assert_true(r.vfs_read_type == 'T' || r.vfs_read_type == 't');
		assert_memory_equal(ki.img + (r.vfs_read - ki.base), "\xf3\x0f\x1e\xfa\xe8", 5);
		free(ki.img);
	}
	if (!tried)
		skip(); /* no Debian kernel images (or no zstd) on this machine */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layouts),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_name_too_long),
	    cmocka_unit_test(test_read),
	    cmocka_unit_test(test_read_linear_map),
	    cmocka_unit_test(test_linux_open_kallsyms),
	    cmocka_unit_test(test_linux_open_kallsyms_7_0),
	    cmocka_unit_test(test_symbolless_map),
	    cmocka_unit_test(test_modules),
	    cmocka_unit_test(test_module_layout_btf),
	    cmocka_unit_test(test_real_kernels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

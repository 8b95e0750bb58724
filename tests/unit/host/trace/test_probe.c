/* host/trace/probe.h: the probe table (lookup by address) and probe_insert_all / probe_remove_all
 * through a fake target. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/probe.h"
#include "tests/common/fake_target.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- probe table ---------------------------------------------------------------------------- */

#define HASH_HOME(t, addr) (probe_hash((t), (addr)) & (t)->mask)

struct site_set {
	struct vmi_sym *syms;
	struct vmi_site *sites;
	const struct vmi_site **ptrs;
	size_t n;
};

/* @n sites at @base + i * @stride, each its own function. */
static void make_sites(struct site_set *s, size_t n, uint64_t base, uint64_t stride)
{
	s->n = n;
	s->syms = calloc(n ? n : 1, sizeof(*s->syms));
	s->sites = calloc(n ? n : 1, sizeof(*s->sites));
	s->ptrs = calloc(n ? n : 1, sizeof(*s->ptrs));
	assert_non_null(s->syms);
	assert_non_null(s->sites);
	assert_non_null(s->ptrs);
	for (size_t i = 0; i < n; i++) {
		s->syms[i] =
		    (struct vmi_sym){.addr = base + i * stride, .size = stride, .name = "f"};
		s->sites[i] = (struct vmi_site){.addr = base + i * stride, .func = &s->syms[i]};
		s->ptrs[i] = &s->sites[i];
	}
}

static void free_sites(struct site_set *s)
{
	free(s->syms);
	free(s->sites);
	free(s->ptrs);
}

/* A few sites: each is found with its function and id; neighbouring addresses are not. */
static void test_probe_small(void **state)
{
	struct site_set s;
	struct probe_table t;

	(void)state;
	make_sites(&s, 3, 0x401000, 0x40);
	assert_int_equal(probe_table_init(&t, s.ptrs, s.n), 0);
	assert_int_equal(t.nr, 3);
	assert_int_equal(t.mask + 1, 16);
	for (size_t i = 0; i < s.n; i++) {
		struct probe *p = probe_lookup(&t, s.sites[i].addr);

		assert_non_null(p);
		assert_ptr_equal(p, &t.v[i]);
		assert_int_equal(p->addr, s.sites[i].addr);
		assert_ptr_equal(p->func, &s.syms[i]);
		assert_int_equal(p->id, i);
		assert_false(p->inserted);
		assert_null(probe_lookup(&t, s.sites[i].addr + 1));
		assert_null(probe_lookup(&t, s.sites[i].addr - 1));
	}
	assert_null(probe_lookup(&t, 0));
	assert_null(probe_lookup(&t, UINT64_MAX));
	probe_table_free(&t);
	assert_null(t.v);
	free_sites(&s);
}

/* No sites: an empty table that finds nothing. */
/* The by-name index: every probe of a name in id order, whatever the order of the names; a name
 * that is no probe's finds none; count, probe_at and probe_for_each agree with the ids. */
static void test_probe_find_by_name(void **state)
{
	static const char *names[] = {"zeta", "alpha", "mid", "alpha", "omega", "mid", "alpha"};
	enum { N = sizeof(names) / sizeof(names[0]) };
	struct vmi_sym syms[N];
	struct vmi_site sites[N];
	const struct vmi_site *ptrs[N];
	const struct probe_name *first;
	struct probe_table t;
	size_t n, seen = 0;

	(void)state;
	for (size_t i = 0; i < N; i++) {
		syms[i] =
		    (struct vmi_sym){.addr = 0x1000 + i * 16, .size = 16, .name = (char *)names[i]};
		sites[i] = (struct vmi_site){.addr = syms[i].addr, .func = &syms[i]};
		ptrs[i] = &sites[i];
	}
	assert_int_equal(probe_table_init(&t, ptrs, N), 0);
	assert_int_equal(probe_count(&t), N);
	assert_null(probe_at(&t, N));
	probe_for_each(p, &t) {
		assert_ptr_equal(probe_at(&t, seen), p);
		assert_int_equal(p->id, seen++);
	}
	assert_int_equal(seen, N);

	n = probe_find_all(&t, "alpha", &first);
	assert_int_equal(n, 3);
	assert_int_equal(first[0].id, 1);
	assert_int_equal(first[1].id, 3);
	assert_int_equal(first[2].id, 6);
	assert_int_equal(probe_find_all(&t, "mid", &first), 2);
	assert_int_equal(first[0].id, 2);
	assert_int_equal(first[1].id, 5);
	assert_ptr_equal(probe_find(&t, "zeta"), probe_at(&t, 0));
	assert_ptr_equal(probe_find(&t, "omega"), probe_at(&t, 4));
	assert_ptr_equal(probe_find(&t, "alpha"), probe_at(&t, 1));
	assert_null(probe_find(&t, "alph"));
	assert_null(probe_find(&t, "alphaa"));
	assert_null(probe_find(&t, ""));
	assert_null(probe_find(&t, "zz"));
	assert_int_equal(probe_find_all(&t, "beta", &first), 0);
	probe_table_free(&t);

	/* an empty table finds nothing */
	assert_int_equal(probe_table_init(&t, ptrs, 0), 0);
	assert_int_equal(probe_count(&t), 0);
	assert_null(probe_find(&t, "alpha"));
	probe_table_free(&t);
}

static void test_probe_empty(void **state)
{
	struct probe_table t;

	(void)state;
	assert_int_equal(probe_table_init(&t, NULL, 0), 0);
	assert_int_equal(t.nr, 0);
	assert_null(probe_lookup(&t, 0x401000));
	probe_table_free(&t);
}

/* Repeated addresses give one probe each, numbered in first-seen order. */
static void test_probe_duplicates(void **state)
{
	struct site_set s;
	struct probe_table t;
	const struct vmi_site *dup[7];
	struct vmi_site other;

	(void)state;
	make_sites(&s, 3, 0xffffffff81000000ull, 0x100);
	other = s.sites[1]; /* a different site struct with the same address */
	dup[0] = &s.sites[2];
	dup[1] = &s.sites[0];
	dup[2] = &s.sites[2];
	dup[3] = &other;
	dup[4] = &s.sites[1];
	dup[5] = &s.sites[0];
	dup[6] = &s.sites[2];
	assert_int_equal(probe_table_init(&t, dup, 7), 0);
	assert_int_equal(t.nr, 3);
	assert_int_equal(t.v[0].addr, s.sites[2].addr);
	assert_int_equal(t.v[1].addr, s.sites[0].addr);
	assert_int_equal(t.v[2].addr, s.sites[1].addr);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(t.v[i].id, i);
		assert_ptr_equal(probe_lookup(&t, t.v[i].addr), &t.v[i]);
	}
	probe_table_free(&t);
	free_sites(&s);
}

/* Checks that every site of @s is found in @t and that addresses between sites are not; returns how
 * many probes do not sit in their home slot (they collided with another). */
static size_t check_table(const struct probe_table *t, const struct site_set *s)
{
	size_t displaced = 0;

	assert_int_equal(t->nr, s->n);
	assert_true(t->mask + 1 >= 2 * s->n);
	for (size_t i = 0; i < s->n; i++) {
		uint64_t a = s->sites[i].addr;
		struct probe *p = probe_lookup(t, a);

		assert_non_null(p);
		assert_int_equal(p->addr, a);
		assert_int_equal(p->id, i);
		assert_ptr_equal(p->func, &s->syms[i]);
		if (t->slots[HASH_HOME(t, a)] != i + 1)
			displaced++;
		/* sites are at least 2 bytes apart in every set below */
		if (i + 1 == s->n || s->sites[i + 1].addr != a + 1)
			assert_null(probe_lookup(t, a + 1));
	}
	return displaced;
}

/* Thousands of sites in arithmetic progressions (kernel-like 16-byte stride, odd strides, 1 MiB,
 * 4 GiB): the multiplicative hash takes the product's top bits, so all of them spread out (few
 * sites displaced from their home slot), and each is found. */
static void test_probe_many_progressions(void **state)
{
	static const struct {
		size_t n;
		uint64_t base, stride;
	} cases[] = {
	    {5000, 0xffffffff81000000ull, 16},
	    {4096, 0xffffffff81000000ull, 1ull << 20},
	    {10000, 0x401000, 5},
	    {3000, 0x1000, 1ull << 32},
	};

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct site_set s;
		struct probe_table t;
		size_t displaced;

		make_sites(&s, cases[c].n, cases[c].base, cases[c].stride);
		assert_int_equal(probe_table_init(&t, s.ptrs, s.n), 0);
		displaced = check_table(&t, &s);
		assert_true(displaced < s.n / 2); /* load <= 1/2: most sites sit at home */
		assert_null(probe_lookup(&t, cases[c].base - 1));
		assert_null(probe_lookup(&t, cases[c].base + cases[c].n * cases[c].stride));
		probe_table_free(&t);
		free_sites(&s);
	}
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* 8000 random 16-byte aligned addresses in 256 MiB of kernel text: collisions occur (probes
 * displaced from their home slot) and every site is still found, every other address missed. */
static void test_probe_many_random(void **state)
{
	enum { N = 8000 };
	uint64_t *addrs = malloc(N * sizeof(*addrs));
	uint64_t x = 0x243f6a8885a308d3ull;
	struct site_set s;
	struct probe_table t;
	size_t n = 0, displaced, misses = 0;

	(void)state;
	assert_non_null(addrs);
	for (size_t i = 0; i < N; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
		addrs[i] = 0xffffffff80000000ull + (x % (1u << 24)) * 16;
	}
	qsort(addrs, N, sizeof(*addrs), u64_cmp);
	for (size_t i = 0; i < N; i++)
		if (!n || addrs[n - 1] != addrs[i])
			addrs[n++] = addrs[i];
	assert_true(n > N - 100);

	make_sites(&s, n, 0, 0);
	for (size_t i = 0; i < n; i++) {
		s.syms[i].addr = s.sites[i].addr = addrs[i];
		s.syms[i].size = 16;
	}
	assert_int_equal(probe_table_init(&t, s.ptrs, s.n), 0);
	displaced = check_table(&t, &s);
	assert_true(displaced > 0);
	/* the 8 addresses in the middle of each 16-byte slot: none is a site */
	for (size_t i = 0; i < n; i++)
		for (uint64_t off = 4; off < 12; off++)
			misses += probe_lookup(&t, addrs[i] + off) == NULL;
	assert_int_equal(misses, 8 * n);
	probe_table_free(&t);
	free_sites(&s);
	free(addrs);
}

/* ---- probe_insert_all / probe_remove_all over a fake target --------------------------------- */

/* Guest text at 0x1000.. in a host buffer; optional failure of insert_bp at one address. */
#define TEXT_BASE 0x1000ull

static uint8_t text[0x400];

static const struct target_ops ft_ops = {
    .read_virt = fake_target_read_virt,
    .translate = fake_target_translate,
    .read_phys = fake_target_read_phys,
    .insert_bp = fake_target_insert_bp,
    .remove_bp = fake_target_remove_bp,
};

/* Four NOP5 sites at 0x1000, 0x1040, 0x1080, 0x10c0. */
static void ft_init(struct fake_target *f)
{
	static const uint8_t nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

	fake_target_init(f, &ft_ops, 1);
	memset(text, 0xc3, sizeof(text));
	for (unsigned i = 0; i < 4; i++)
		memcpy(text + i * 0x40, nop5, 5);
	fake_mem_map(&f->mem, TEXT_BASE, text, sizeof(text));
}

static void test_probe_insert_remove(void **state)
{
	struct site_set s;
	struct probe_table t;
	struct fake_target f;
	uint8_t before[sizeof(text)];
	char err[256] = "";

	(void)state;
	ft_init(&f);
	memcpy(before, text, sizeof(before));
	make_sites(&s, 4, TEXT_BASE, 0x40);
	assert_int_equal(probe_table_init(&t, s.ptrs, s.n), 0);
	assert_int_equal(probe_insert_all(&t, &f.t, err, sizeof(err)), 0);
	for (size_t i = 0; i < t.nr; i++) {
		assert_true(t.v[i].inserted);
		assert_int_equal(t.v[i].orig, 0x0f);
		assert_int_equal(text[i * 0x40], 0xcc);
		assert_int_equal(text[i * 0x40 + 1], 0x1f);
	}
	assert_int_equal(probe_remove_all(&t, &f.t), 0);
	assert_memory_equal(text, before, sizeof(before));
	for (size_t i = 0; i < t.nr; i++)
		assert_false(t.v[i].inserted);
	/* removing again does nothing */
	assert_int_equal(probe_remove_all(&t, &f.t), 0);
	assert_int_equal(f.removes, 4);
	probe_table_free(&t);
	free_sites(&s);
}

/* A site that is not a NOP5: nothing is written and the error names the site. */
static void test_probe_insert_refuses_non_nop(void **state)
{
	struct site_set s;
	struct probe_table t;
	struct fake_target f;
	uint8_t before[sizeof(text)];
	char err[256] = "";

	(void)state;
	ft_init(&f);
	memcpy(text + 0x80, (const uint8_t[]){0xe8, 0x12, 0x34, 0x56, 0x78}, 5);
	memcpy(before, text, sizeof(before));
	make_sites(&s, 4, TEXT_BASE, 0x40);
	s.syms[2].name = "tree_a";
	assert_int_equal(probe_table_init(&t, s.ptrs, s.n), 0);
	assert_int_equal(probe_insert_all(&t, &f.t, err, sizeof(err)), -EILSEQ);
	assert_string_equal(err, "tree_a: site 0x1080 holds e8 12 34 56 78, not a NOP5");
	assert_int_equal(f.inserts, 0);
	assert_memory_equal(text, before, sizeof(before));
	probe_table_free(&t);
	free_sites(&s);
}

/* probe_insert_all over @ops (NULL: the plain fake) refuses the first of two sites from @addr, of
 * function @name, with -EFAULT and @want, and writes nothing. */
static void assert_refused(const struct target_ops *ops, uint64_t addr, char *name,
			   const char *want)
{
	struct site_set s;
	struct probe_table t;
	struct fake_target f;
	char err[256] = "";

	ft_init(&f);
	if (ops)
		f.t.ops = ops;
	make_sites(&s, 2, addr, 0x40);
	s.syms[0].name = name;
	assert_int_equal(probe_table_init(&t, s.ptrs, s.n), 0);
	assert_int_equal(probe_insert_all(&t, &f.t, err, sizeof(err)), -EFAULT);
	assert_string_equal(err, want);
	assert_int_equal(f.inserts, 0);
	probe_table_free(&t);
	free_sites(&s);
}

/* A site outside guest memory: -EFAULT naming it. */
static void test_probe_insert_unmapped(void **state)
{
	(void)state;
	assert_refused(NULL, 0x8000, "far", "far: site 0x8000 is not mapped in the guest");
}

/* A failing INT3 write undoes the ones already written. */
static void test_probe_insert_failure_undoes(void **state)
{
	struct site_set s;
	struct probe_table t;
	struct fake_target f;
	uint8_t before[sizeof(text)];
	char err[256] = "";

	(void)state;
	ft_init(&f);
	memcpy(before, text, sizeof(before));
	f.fail_insert_at = TEXT_BASE + 0x80;
	make_sites(&s, 4, TEXT_BASE, 0x40);
	s.syms[2].name = "tree_b";
	assert_int_equal(probe_table_init(&t, s.ptrs, s.n), 0);
	assert_int_equal(probe_insert_all(&t, &f.t, err, sizeof(err)), -EIO);
	assert_string_equal(err, "tree_b: writing INT3 at 0x1080 failed: Input/output error");
	assert_int_equal(f.inserts, 3);
	assert_int_equal(f.removes, 2);
	assert_memory_equal(text, before, sizeof(before));
	for (size_t i = 0; i < t.nr; i++)
		assert_false(t.v[i].inserted);
	probe_table_free(&t);
	free_sites(&s);
}

/* Runs probe_report_rewritten with stderr going to a buffer: its count, the text in @out. */
static unsigned report_into(const struct probe_table *t, struct target *tgt, char *out, size_t len)
{
	FILE *saved = stderr, *f = tmpfile();
	unsigned n;
	size_t got;

	assert_non_null(f);
	stderr = f;
	n = probe_report_rewritten(t, tgt);
	stderr = saved;
	rewind(f);
	got = fread(out, 1, len - 1, f);
	out[got] = 0;
	fclose(f);
	return n;
}

/* A site whose INT3 the guest overwrote: the detach leaves the guest's byte, restores the others,
 * and names the site in one line. */
static void test_probe_remove_rewritten(void **state)
{
	struct site_set s;
	struct probe_table t;
	struct fake_target f;
	uint8_t before[sizeof(text)];
	char err[256] = "", out[512];

	(void)state;
	ft_init(&f);
	memcpy(before, text, sizeof(before));
	make_sites(&s, 4, TEXT_BASE, 0x40);
	s.syms[1].name = "tree_a";
	assert_int_equal(probe_table_init(&t, s.ptrs, s.n), 0);
	assert_int_equal(probe_insert_all(&t, &f.t, err, sizeof(err)), 0);
	memcpy(text + 0x40, "\x66\x66\x90\x66\x90", 5); /* the guest's own NOP5 over our INT3 */
	memcpy(before + 0x40, "\x66\x66\x90\x66\x90", 5);
	assert_int_equal(probe_remove_all(&t, &f.t), 0);
	assert_memory_equal(text, before, sizeof(before));
	for (size_t i = 0; i < t.nr; i++) {
		assert_false(t.v[i].inserted);
		assert_int_equal(t.v[i].rewritten, i == 1);
	}
	assert_int_equal(report_into(&t, &f.t, out, sizeof(out)), 1);
	assert_string_equal(out, "hvtrace: tree_a: site 0x1040 was rewritten by the guest "
				 "(guest-physical 0x1040 holds 66 66 90 66 90): left as it is\n");
	/* lazy arming again later: the site no longer holds the NOP5's byte, nothing is written */
	assert_int_equal(probe_insert(&t.v[1], &f.t), -ESTALE);
	assert_false(t.v[1].inserted);
	assert_memory_equal(text, before, sizeof(before));
	probe_table_free(&t);
	free_sites(&s);
}

/* A second address space for vCPU 0: site addresses translate to @offset above themselves. */
static uint64_t xlate_offset;

static int offset_translate(struct target *t, unsigned cpu, uint64_t gva, uint64_t *gpa)
{
	return fake_target_translate(t, cpu, gva + xlate_offset, gpa);
}

static const struct target_ops moving_ops = {
    .translate = offset_translate,
    .read_phys = fake_target_read_phys,
    .insert_bp = fake_target_insert_bp,
    .remove_bp = fake_target_remove_bp,
};

/* Sites are resolved once, at attach: when vCPU 0 later maps the text's addresses onto a copy, the
 * INT3s still come out of the real text, and the copy is never written. */
static void test_probe_patches_by_gpa(void **state)
{
	static uint8_t copy[sizeof(text)];
	struct site_set s;
	struct probe_table t;
	struct fake_target f;
	uint8_t before[sizeof(text)], copy_before[sizeof(copy)];
	char err[256] = "";

	(void)state;
	ft_init(&f);
	f.t.ops = &moving_ops;
	/* the real text moves to 0x11000 (guest-physical), the copy stands at the text's address */
	fake_mem_init(&f.mem);
	fake_mem_map(&f.mem, TEXT_BASE + 0x10000, text, sizeof(text));
	memset(copy, 0x90, sizeof(copy));
	fake_mem_map(&f.mem, TEXT_BASE, copy, sizeof(copy));
	memcpy(before, text, sizeof(before));
	memcpy(copy_before, copy, sizeof(copy));
	xlate_offset = 0x10000;
	make_sites(&s, 4, TEXT_BASE, 0x40);
	assert_int_equal(probe_table_init(&t, s.ptrs, s.n), 0);
	assert_int_equal(probe_insert_all(&t, &f.t, err, sizeof(err)), 0);
	for (size_t i = 0; i < t.nr; i++) {
		assert_int_equal(t.v[i].gpa, t.v[i].addr + 0x10000);
		assert_int_equal(text[i * 0x40], 0xcc);
	}
	xlate_offset = 0; /* vCPU 0 switches page tables */
	assert_int_equal(probe_remove_all(&t, &f.t), 0);
	assert_memory_equal(text, before, sizeof(before));
	assert_memory_equal(copy, copy_before, sizeof(copy));
	for (size_t i = 0; i < t.nr; i++)
		assert_false(t.v[i].rewritten);
	probe_table_free(&t);
	free_sites(&s);
}

/* A site whose five bytes span two pages that are not adjacent in guest-physical memory cannot be
 * patched by one guest-physical write: refused at attach, naming it. */
static int split_translate(struct target *t, unsigned cpu, uint64_t gva, uint64_t *gpa)
{
	(void)t, (void)cpu;
	*gpa = (gva & 0xfff) + ((gva >> 12) & 1 ? 0x5000 : 0x1000);
	return 0;
}

static void test_probe_refuses_split_site(void **state)
{
	static const struct target_ops split_ops = {
	    .translate = split_translate,
	    .read_phys = fake_target_read_phys,
	    .insert_bp = fake_target_insert_bp,
	    .remove_bp = fake_target_remove_bp,
	};

	(void)state;
	assert_refused(&split_ops, 0x2ffe, "straddle",
		       "straddle: site 0x2ffe spans two pages that are not adjacent in "
		       "guest-physical memory");
}

/* An entry probe (no fentry site): whatever instruction it sits on is not checked for a NOP5; on a
 * target that runs the instruction under a breakpoint in place, its first byte gets the INT3 and
 * gets it back; on one that cannot, nothing is written and the error names the function. */
static void test_probe_entry(void **state)
{
	struct site_set s;
	struct probe_table t;
	struct fake_target f;
	uint8_t before[sizeof(text)];
	char err[256] = "";

	(void)state;
	ft_init(&f);
	memcpy(text + 0x40, (const uint8_t[]){0x55, 0x48, 0x89, 0xe5, 0x41}, 5); /* push %rbp ... */
	memcpy(before, text, sizeof(before));
	make_sites(&s, 2, TEXT_BASE, 0x40);
	s.sites[1].entry = true;
	s.syms[1].name = "__schedule";
	assert_int_equal(probe_table_init(&t, s.ptrs, s.n), 0);
	assert_true(t.v[1].entry);
	assert_false(t.v[0].entry);
	/* the plain fake cannot run an instruction in place */
	assert_int_equal(probe_insert_all(&t, &f.t, err, sizeof(err)), -ENOTSUP);
	assert_string_equal(err, "__schedule: no fentry site, and this target cannot run an "
				 "instruction under a breakpoint in place");
	assert_int_equal(f.inserts, 0);
	assert_memory_equal(text, before, sizeof(before));
	f.t.bp_in_place = true;
	assert_int_equal(probe_insert_all(&t, &f.t, err, sizeof(err)), 0);
	assert_int_equal(t.v[1].orig, 0x55);
	assert_int_equal(text[0x40], 0xcc);
	assert_int_equal(text[0], 0xcc);
	assert_int_equal(probe_remove_all(&t, &f.t), 0);
	assert_memory_equal(text, before, sizeof(before));
	probe_table_free(&t);
	free_sites(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_probe_small),
	    cmocka_unit_test(test_probe_empty),
	    cmocka_unit_test(test_probe_find_by_name),
	    cmocka_unit_test(test_probe_duplicates),
	    cmocka_unit_test(test_probe_many_progressions),
	    cmocka_unit_test(test_probe_many_random),
	    cmocka_unit_test(test_probe_insert_remove),
	    cmocka_unit_test(test_probe_insert_refuses_non_nop),
	    cmocka_unit_test(test_probe_insert_unmapped),
	    cmocka_unit_test(test_probe_insert_failure_undoes),
	    cmocka_unit_test(test_probe_remove_rewritten),
	    cmocka_unit_test(test_probe_patches_by_gpa),
	    cmocka_unit_test(test_probe_refuses_split_site),
	    cmocka_unit_test(test_probe_entry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* host/kvm/step_slots.h: which entry sites a breakpoint can serve exactly in the embedded VMM, and
 * the out-of-line copies of their first instructions (relocated, a JMP back), found by site. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/kvm/step_slots.h"
#include "host/session/session.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TEXT 0x1000ull
#define AREA 0x100000ull

/* f (push rbp; mov rbp,rsp; pop rbp; ret), g (ENDBR64; lea rax,[rip+0x10]; ret), h (call *%rax;
 * ret: cannot run out of line), k (push rbp; dec rdi; jnz k; pop rbp; ret: jumps back to its
 * entry). */
static uint8_t text[0x400];

static int read_text(void *ctx, uint64_t gva, void *buf, size_t len)
{
	(void)ctx;
	if (gva < TEXT || gva - TEXT > sizeof(text) || len > sizeof(text) - (gva - TEXT))
		return -EFAULT;
	memcpy(buf, text + (gva - TEXT), len);
	return 0;
}

struct world {
	struct vmi_symtab funcs;
	struct vmi_sites sites;
	struct session s;
	char err[300];
};

static void put(uint64_t at, const uint8_t *b, size_t n)
{
	memcpy(text + (at - TEXT), b, n);
}

static void world_init(struct world *w)
{
	static const uint8_t f[] = {0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3};
	static const uint8_t g[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8d,
				    0x05, 0x10, 0x00, 0x00, 0x00, 0xc3};
	static const uint8_t h[] = {0xff, 0xd0, 0xc3};
	static const uint8_t k[] = {0x55, 0x48, 0xff, 0xcf, 0x75, 0xfa, 0x5d, 0xc3};
	static const struct {
		const char *name;
		uint64_t addr, site, size;
	} fn[] = {{"f", 0x1000, 0x1000, 6},
		  {"g", 0x1100, 0x1104, 12},
		  {"h", 0x1200, 0x1200, 3},
		  {"k", 0x1300, 0x1300, 8}};

	memset(w, 0, sizeof(*w));
	memset(text, 0xcc, sizeof(text));
	put(0x1000, f, sizeof(f));
	put(0x1100, g, sizeof(g));
	put(0x1200, h, sizeof(h));
	put(0x1300, k, sizeof(k));
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(vmi_symtab_add(&w->funcs, fn[i].addr, fn[i].size, fn[i].name), 0);
	vmi_symtab_sort(&w->funcs);
	w->sites.v = calloc(4, sizeof(*w->sites.v));
	assert_non_null(w->sites.v);
	for (size_t i = 0; i < 4; i++)
		w->sites.v[w->sites.nr++] =
		    (struct vmi_site){.addr = fn[i].site,
				      .func = vmi_symtab_find(&w->funcs, fn[i].name),
				      .entry = true};
}

static void world_free(struct world *w)
{
	vmi_sites_free(&w->sites);
	vmi_symtab_free(&w->funcs);
}

/* Selected by a glob (named nowhere): the two a breakpoint cannot serve are left out, one line
 * counting them; the others get copies: f's PUSH and a JMP back to f+1, g's LEA (after its
 * ENDBR64) with its displacement re-aimed at the same byte, then a JMP back past it. */
static void test_glob_left_out_and_copies(void **state)
{
	struct world w;
	struct step_slots ss;
	uint8_t area[4 * STEP_SLOT_SIZE];
	char note[300] = "";
	FILE *f = fmemopen(note, sizeof(note), "w");
	int32_t rel;

	(void)state;
	world_init(&w);
	assert_int_equal(
	    step_slots_check(&w.s, &w.sites, &w.funcs, read_text, NULL, f, w.err, sizeof(w.err)),
	    2);
	fclose(f);
	assert_string_equal(note, "hvtrace: 2 functions without an fentry site left out: a "
				  "breakpoint at their first instruction cannot trace them exactly "
				  "(name one with -l to see why)\n");
	assert_int_equal(w.sites.nr, 2);
	assert_int_equal(step_slots_count(&w.sites), 2);
	/* one slot too few: refused, nothing kept */
	assert_int_equal(
	    step_slots_write(&ss, &w.sites, area, AREA, 1, read_text, NULL, w.err, sizeof(w.err)),
	    -ENOSPC);
	memset(area, 0, sizeof(area));
	assert_int_equal(
	    step_slots_write(&ss, &w.sites, area, AREA, 4, read_text, NULL, w.err, sizeof(w.err)),
	    0);
	assert_int_equal(ss.nr, 2);
	/* f: 55, then e9 rel32 to 0x1001 */
	assert_int_equal(area[0], 0x55);
	assert_int_equal(area[1], 0xe9);
	memcpy(&rel, area + 2, 4);
	assert_int_equal(AREA + 6 + (int64_t)rel, 0x1001);
	/* g: 48 8d 05 disp32 reaching 0x110b + 0x10, then e9 rel32 to 0x110b */
	assert_memory_equal(area + STEP_SLOT_SIZE, ((const uint8_t[]){0x48, 0x8d, 0x05}), 3);
	memcpy(&rel, area + STEP_SLOT_SIZE + 3, 4);
	assert_int_equal(AREA + STEP_SLOT_SIZE + 7 + (int64_t)rel, 0x110b + 0x10);
	assert_int_equal(area[STEP_SLOT_SIZE + 7], 0xe9);
	memcpy(&rel, area + STEP_SLOT_SIZE + 8, 4);
	assert_int_equal(AREA + STEP_SLOT_SIZE + 12 + (int64_t)rel, 0x110b);
	assert_int_equal(step_slots_find(&ss, 0x1000), AREA);
	assert_int_equal(step_slots_find(&ss, 0x1104), AREA + STEP_SLOT_SIZE);
	assert_int_equal(step_slots_find(&ss, 0x1100), 0);
	assert_int_equal(step_slots_find(&ss, 0x1200), 0);
	step_slots_free(&ss);
	world_free(&w);
}

/* A function named exactly that a breakpoint cannot serve is refused with one line naming it and
 * the instruction. */
static void test_named_refused(void **state)
{
	static char *h[] = {"h"}, *k[] = {"k"};
	struct world w;

	(void)state;
	world_init(&w);
	w.s.filter = h;
	w.s.nr_filter = 1;
	assert_int_equal(
	    step_slots_check(&w.s, &w.sites, &w.funcs, read_text, NULL, NULL, w.err, sizeof(w.err)),
	    -EOPNOTSUPP);
	assert_non_null(strstr(w.err, "h: no fentry site, and a breakpoint at its first "
				      "instruction cannot trace it exactly: +0 at 0x1200 (ff d0)"));
	world_free(&w);
	world_init(&w);
	w.s.filter = k;
	w.s.nr_filter = 1;
	assert_int_equal(
	    step_slots_check(&w.s, &w.sites, &w.funcs, read_text, NULL, NULL, w.err, sizeof(w.err)),
	    -EOPNOTSUPP);
	assert_string_equal(w.err, "k: no fentry site, and a breakpoint at its first instruction "
				   "cannot trace it exactly: +4 at 0x1304 (75 fa): jnz: jumps back "
				   "to the function's first instruction");
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_glob_left_out_and_copies),
	    cmocka_unit_test(test_named_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

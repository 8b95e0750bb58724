/* host/session/entry_sites.h: which functions without an fentry site get an entry probe, and where
 * (after ENDBR64 or its sealed NOP), over a symbol table and text read through a reader. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/session/entry_sites.h"

#include <errno.h>
#include <string.h>

#define TEXT 0x1000ull

/* The guest text: a (fentry site), a2 (alias of a), b (ENDBR64 then push), __pfx_c (padding), c
 * (push), d (sealed ENDBR), and e past the readable text. */
static uint8_t text[0x100];

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
	uint64_t reserved; /* the tracer's trampoline */
	char err[256];
};

static void world_init(struct world *w)
{
	static const uint8_t endbr[4] = {0xf3, 0x0f, 0x1e, 0xfa};
	static const uint8_t sealed[4] = {0x66, 0x0f, 0x1f, 0x00};
	uint64_t a;

	memset(w, 0, sizeof(*w));
	memset(text, 0x55, sizeof(text));
	memcpy(text + 0x40, endbr, 4);
	memcpy(text + 0x80, sealed, 4);
	assert_int_equal(vmi_symtab_add(&w->funcs, TEXT + 0x00, 0x20, "a"), 0);
	assert_int_equal(vmi_symtab_add(&w->funcs, TEXT + 0x00, 0x20, "a2"), 0);
	assert_int_equal(vmi_symtab_add(&w->funcs, TEXT + 0x40, 0x10, "b"), 0);
	assert_int_equal(vmi_symtab_add(&w->funcs, TEXT + 0x50, 0x10, "__pfx_c"), 0);
	assert_int_equal(vmi_symtab_add(&w->funcs, TEXT + 0x60, 0x10, "c"), 0);
	assert_int_equal(vmi_symtab_add(&w->funcs, TEXT + 0x80, 0x10, "d"), 0);
	assert_int_equal(vmi_symtab_add(&w->funcs, TEXT + 0x1000, 0x10, "e"), 0);
	vmi_symtab_sort(&w->funcs);
	a = TEXT;
	assert_int_equal(vmi_sites_build(&w->sites, &a, 1, &w->funcs), 0);
	assert_int_equal(w->sites.nr, 1);
}

static void world_free(struct world *w)
{
	vmi_sites_free(&w->sites);
	vmi_symtab_free(&w->funcs);
}

static long add(struct world *w, const char *no_entry)
{
	return entry_sites_add(arch_default(), &w->s, &w->sites, &w->funcs, read_text, NULL,
			       no_entry, w->reserved, false, w->err, sizeof(w->err));
}

/* Names given exactly (-l, -e, -r, -g) get entry sites, after an ENDBR64 or a sealed one; a glob
 * does not; an alias of a function with a site does not; the result is sorted by address. */
static void test_exact_names(void **state)
{
	struct world w;
	char *filter[] = {"b", "c*"};
	char *graph[] = {"d"};
	struct fe_spec ev = {.func = "c"};

	(void)state;
	world_init(&w);
	w.s.filter = filter;
	w.s.nr_filter = 2;
	w.s.graph = graph;
	w.s.nr_graph = 1;
	w.s.events = &ev;
	w.s.nr_events = 1;
	assert_int_equal(add(&w, NULL), 3);
	assert_int_equal(w.sites.nr, 4);
	assert_int_equal(w.sites.v[0].addr, TEXT); /* a's (or its alias's) fentry site */
	assert_false(w.sites.v[0].entry);
	assert_string_equal(w.sites.v[1].func->name, "b");
	assert_int_equal(w.sites.v[1].addr, TEXT + 0x44);
	assert_true(w.sites.v[1].entry);
	assert_string_equal(w.sites.v[2].func->name, "c");
	assert_int_equal(w.sites.v[2].addr, TEXT + 0x60);
	assert_string_equal(w.sites.v[3].func->name, "d");
	assert_int_equal(w.sites.v[3].addr, TEXT + 0x84);
	/* again: every named function has its site now */
	assert_int_equal(add(&w, NULL), 0);
	assert_int_equal(w.sites.nr, 4);
	world_free(&w);
}

/* --entry: globs match functions without a site (padding never; one whose text cannot be read is
 * passed over); without -l or -g, every function. */
static void test_entry_all(void **state)
{
	struct world w;
	char *filter[] = {"[bc]*"};

	(void)state;
	world_init(&w);
	w.s.entry_all = true;
	w.s.filter = filter;
	w.s.nr_filter = 1;
	assert_int_equal(add(&w, NULL), 2);
	assert_string_equal(w.sites.v[1].func->name, "b");
	assert_string_equal(w.sites.v[2].func->name, "c");
	world_free(&w);

	world_init(&w);
	w.s.entry_all = true;
	assert_int_equal(add(&w, NULL), 3); /* b, c, d; not a2, __pfx_c, e */
	assert_int_equal(w.sites.nr, 4);
	world_free(&w);

	/* the function the tracer's return trampoline sits in (__fentry__) is never probed */
	world_init(&w);
	w.s.entry_all = true;
	for (size_t i = 0; i < w.funcs.nr; i++)
		if (!strcmp(w.funcs.syms[i].name, "c"))
			w.reserved = w.funcs.syms[i].addr;
	assert_int_not_equal(w.reserved, 0);
	assert_int_equal(add(&w, NULL), 2);
	for (size_t i = 0; i < w.sites.nr; i++)
		assert_string_not_equal(w.sites.v[i].func->name, "c");
	world_free(&w);
}

/* Where a target cannot probe an entry, a function that needs one is refused with the reason, and
 * one named exactly whose first bytes cannot be read is refused too; @sites is left as it was. */
static void test_refusals(void **state)
{
	struct world w;
	char *filter[] = {"c"};
	char *unreadable[] = {"e"};

	(void)state;
	world_init(&w);
	w.s.filter = filter;
	w.s.nr_filter = 1;
	assert_int_equal(add(&w, "INT3 does not exit"), -ENOTSUP);
	assert_string_equal(w.err, "c has no fentry site: INT3 does not exit");
	assert_int_equal(w.sites.nr, 1);
	w.s.filter = unreadable;
	assert_int_equal(add(&w, NULL), -EFAULT);
	assert_string_equal(w.err, "e: its first bytes at 0x2000 cannot be read");
	assert_int_equal(w.sites.nr, 1);
	/* a function with a site needs no entry probe, whatever the target */
	w.s.filter = (char *[]){"a"};
	assert_int_equal(add(&w, "INT3 does not exit"), 0);
	world_free(&w);
}

static long build_inside(struct world *w, struct inside_sites *in, const char *no_entry)
{
	return inside_sites_build(arch_default(), &w->s, &w->sites, &w->funcs, read_text, NULL,
				  no_entry, in, w->err, sizeof(w->err));
}

/* -e func+OFFSET: a site of its own ("b+0x5", inside) at an instruction's start inside the
 * function, one per place; refused with one line when the offset is past the function's end, in
 * the middle of an instruction, behind bytes that do not decode, on the function's own site, in an
 * unknown or unreadable function, or on a target that cannot probe there. */
static void test_inside(void **state)
{
	struct fe_spec ev[] = {{.func = "b", .offset = 5}, {.func = "b", .offset = 5},
			       {.func = "c", .offset = 1}, {.func = "b"}};
	struct inside_sites in;
	struct world w;

	(void)state;
	world_init(&w);
	w.s.events = ev;
	w.s.nr_events = 4;
	assert_int_equal(build_inside(&w, &in, NULL), 2);
	assert_int_equal(in.sites.nr, 2);
	assert_int_equal(in.sites.v[0].addr, TEXT + 0x45); /* ENDBR64, then PUSH RBP */
	assert_string_equal(in.sites.v[0].func->name, "b+0x5");
	assert_true(in.sites.v[0].inside && in.sites.v[0].entry);
	assert_int_equal(in.sites.v[1].addr, TEXT + 0x61);
	assert_string_equal(in.sites.v[1].func->name, "c+0x1");
	inside_sites_free(&in);

	w.s.nr_events = 1;
	assert_int_equal(build_inside(&w, &in, "INT3 does not exit"), -ENOTSUP);
	assert_string_equal(w.err, "-e b+0x5: INT3 does not exit");
	ev[0].offset = 2;
	assert_int_equal(build_inside(&w, &in, NULL), -EINVAL);
	assert_string_equal(w.err, "-e b+0x2: not an instruction's start (the instruction at +0x0 "
				   "ends at +0x4)");
	ev[0].offset = 0x10;
	assert_int_equal(build_inside(&w, &in, NULL), -EINVAL);
	assert_string_equal(w.err, "-e b+0x10: past the end of b (16 bytes)");
	text[0x62] = 0x06; /* PUSH ES: no instruction in 64-bit mode */
	ev[0] = (struct fe_spec){.func = "c", .offset = 3};
	assert_int_equal(build_inside(&w, &in, NULL), -EILSEQ);
	assert_string_equal(w.err, "-e c+0x3: the bytes of c at +0x2 do not decode as x86-64: no "
				   "instruction can be found there");
	text[0x63] = 0xf4; /* HLT: a step there, interrupts held off, might never end */
	text[0x62] = 0x55;
	ev[0] = (struct fe_spec){.func = "c", .offset = 3};
	assert_int_equal(build_inside(&w, &in, NULL), -EOPNOTSUPP);
	assert_string_equal(w.err, "-e c+0x3: an instruction that waits for an interrupt (HLT, "
				   "MWAIT): the step over it, interrupts held off, might never end");
	text[0x63] = 0x55;
	ev[0] = (struct fe_spec){.func = "zz", .offset = 1};
	assert_int_equal(build_inside(&w, &in, NULL), -ENOENT);
	assert_string_equal(w.err, "-e zz+0x1: no function zz in the guest's symbols");
	ev[0] = (struct fe_spec){.func = "e", .offset = 1};
	assert_int_equal(build_inside(&w, &in, NULL), -EFAULT);
	assert_string_equal(w.err, "-e e+0x1: the bytes of e at 0x2000 cannot be read");
	/* b's entry site (after its ENDBR64) is b's own: -e b(...) probes it */
	w.s.filter = (char *[]){"b"};
	w.s.nr_filter = 1;
	assert_int_equal(add(&w, NULL), 1);
	ev[0] = (struct fe_spec){.func = "b", .offset = 4};
	assert_int_equal(build_inside(&w, &in, NULL), -EEXIST);
	assert_string_equal(w.err, "-e b+0x4: the entry site of b, which -e b(...) probes");
	assert_int_equal(in.sites.nr, 0);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exact_names),
	    cmocka_unit_test(test_entry_all),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_inside),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

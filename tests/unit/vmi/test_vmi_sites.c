/* vmi/: the symbol table, patchable sites and their NOP5 check, reading guest ELF images (errors
 * and the real test guest), and the current task of a vCPU through a fake guest-memory reader. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/x86_insn.h"
#include "vmi/vmi_elf.h"
#include "vmi/vmi_sites.h"
#include "vmi/vmi_symtab.h"
#include "vmi/vmi_task.h"
#include "tests/common/fake_mem.h"
#include "tests/common/files.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GUEST_ELF "build/guest/test-guest.elf"

/* ---- vmi_symtab ----------------------------------------------------------------------------- */

/* foo [0x1000, 0x1100), bar at 0x2000 with unknown size, baz [0x3000, 0x3010); added out of order,
 * with an exact duplicate of foo. */
static void make_symtab(struct vmi_symtab *t)
{
	memset(t, 0, sizeof(*t));
	assert_int_equal(vmi_symtab_add(t, 0x3000, 0x10, "baz"), 0);
	assert_int_equal(vmi_symtab_add(t, 0x1000, 0x100, "foo"), 0);
	assert_int_equal(vmi_symtab_add(t, 0x2000, 0, "bar"), 0);
	assert_int_equal(vmi_symtab_add(t, 0x1000, 0x100, "foo"), 0);
	assert_int_equal(t->nr, 4);
	vmi_symtab_sort(t);
}

static const char *lookup_name(const struct vmi_symtab *t, uint64_t addr)
{
	const struct vmi_sym *s = vmi_symtab_lookup(t, addr);

	return s ? s->name : NULL;
}

/* Sorting orders by address, drops the duplicate and gives bar the distance to baz as its size. */
static void test_symtab_sort(void **state)
{
	struct vmi_symtab t;

	(void)state;
	make_symtab(&t);
	assert_int_equal(t.nr, 3);
	assert_string_equal(t.syms[0].name, "foo");
	assert_int_equal(t.syms[0].addr, 0x1000);
	assert_int_equal(t.syms[0].size, 0x100);
	assert_string_equal(t.syms[1].name, "bar");
	assert_int_equal(t.syms[1].addr, 0x2000);
	assert_int_equal(t.syms[1].size, 0x1000);
	assert_string_equal(t.syms[2].name, "baz");
	assert_int_equal(t.syms[2].size, 0x10);
	vmi_symtab_free(&t);
	assert_null(t.syms);
	assert_int_equal(t.nr, 0);
}

/* Lookup at the first byte, inside, at the last byte, in gaps, before the first symbol, past the
 * end. */
static void test_symtab_lookup(void **state)
{
	struct vmi_symtab t;

	(void)state;
	make_symtab(&t);
	assert_null(lookup_name(&t, 0));
	assert_null(lookup_name(&t, 0xfff));
	assert_string_equal(lookup_name(&t, 0x1000), "foo");
	assert_string_equal(lookup_name(&t, 0x1080), "foo");
	assert_string_equal(lookup_name(&t, 0x10ff), "foo");
	assert_null(lookup_name(&t, 0x1100)); /* gap after foo's size */
	assert_null(lookup_name(&t, 0x1fff));
	assert_string_equal(lookup_name(&t, 0x2000), "bar");
	assert_string_equal(lookup_name(&t, 0x2fff), "bar");
	assert_string_equal(lookup_name(&t, 0x3000), "baz");
	assert_string_equal(lookup_name(&t, 0x300f), "baz");
	assert_null(lookup_name(&t, 0x3010)); /* past the end of the last symbol */
	assert_null(lookup_name(&t, UINT64_MAX));
	assert_ptr_equal(vmi_symtab_lookup(&t, 0x2abc), &t.syms[1]);
	vmi_symtab_free(&t);
}

/* A last symbol of unknown size extends to the end of the address space; an empty table finds
 * nothing. */
static void test_symtab_lookup_open_end(void **state)
{
	struct vmi_symtab t = {0};

	(void)state;
	assert_null(vmi_symtab_lookup(&t, 0x1000));
	assert_null(vmi_symtab_find(&t, "x"));
	assert_int_equal(vmi_symtab_add(&t, 0x1000, 0x10, "a"), 0);
	assert_int_equal(vmi_symtab_add(&t, 0x5000, 0, "last"), 0);
	vmi_symtab_sort(&t);
	assert_int_equal(t.syms[1].size, 0);
	assert_string_equal(lookup_name(&t, 0x5000), "last");
	assert_string_equal(lookup_name(&t, UINT64_MAX), "last");
	assert_null(lookup_name(&t, 0x4fff));
	vmi_symtab_free(&t);
}

/* An empty table sorts to nothing (qsort never sees its NULL array: UBSan aborted here). */
static void test_symtab_sort_empty(void **state)
{
	struct vmi_symtab t = {0};

	(void)state;
	vmi_symtab_sort(&t);
	assert_int_equal(t.nr, 0);
	assert_null(t.syms);
	assert_null(vmi_symtab_lookup(&t, 0));
	vmi_symtab_free(&t);
}

/* A symbol whose end wraps past 2^64 (a forged size) still holds the addresses from its start. */
static void test_symtab_lookup_wrapping_size(void **state)
{
	struct vmi_symtab t = {0};

	(void)state;
	assert_int_equal(vmi_symtab_add(&t, 0x1000, 0x10, "low"), 0);
	assert_int_equal(vmi_symtab_add(&t, 0xfffffffffffff000ull, 0x2000, "top"), 0);
	vmi_symtab_sort(&t);
	assert_string_equal(lookup_name(&t, 0xfffffffffffff000ull), "top");
	assert_string_equal(lookup_name(&t, UINT64_MAX), "top");
	assert_null(lookup_name(&t, 0xffffffffffffefffull));
	assert_string_equal(lookup_name(&t, 0x100f), "low");
	vmi_symtab_free(&t);
}

/* Find by name returns the symbol; names are copies owned by the table. */
static void test_symtab_find(void **state)
{
	struct vmi_symtab t = {0};
	char name[16] = "changed";
	const struct vmi_sym *s;

	(void)state;
	assert_int_equal(vmi_symtab_add(&t, 0x4000, 8, name), 0);
	strcpy(name, "XXXXXXX"); /* the table kept its own copy */
	assert_int_equal(vmi_symtab_add(&t, 0x1000, 8, "foo"), 0);
	vmi_symtab_sort(&t);
	s = vmi_symtab_find(&t, "changed");
	assert_non_null(s);
	assert_int_equal(s->addr, 0x4000);
	assert_int_equal(s->size, 8);
	assert_ptr_equal(vmi_symtab_find(&t, "foo"), &t.syms[0]);
	assert_null(vmi_symtab_find(&t, "XXXXXXX"));
	assert_null(vmi_symtab_find(&t, "fo"));
	assert_null(vmi_symtab_find(&t, "foo2"));
	vmi_symtab_free(&t);
}

/* Aliases (same address, different names) are both kept; only exact duplicates are dropped. */
static void test_symtab_duplicates(void **state)
{
	struct vmi_symtab t = {0};

	(void)state;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(vmi_symtab_add(&t, 0x1000, 0x20, "f"), 0);
		assert_int_equal(vmi_symtab_add(&t, 0x1000, 0x20, "f_alias"), 0);
		assert_int_equal(vmi_symtab_add(&t, 0x2000, 0x20, "g"), 0);
	}
	vmi_symtab_sort(&t);
	assert_int_equal(t.nr, 3);
	assert_string_equal(t.syms[0].name, "f");
	assert_string_equal(t.syms[1].name, "f_alias");
	assert_string_equal(t.syms[2].name, "g");
	assert_non_null(vmi_symtab_find(&t, "f_alias"));
	vmi_symtab_free(&t);
}

/* Many symbols added in a scrambled order (grows the array past its first allocation): every lookup
 * by address and by name finds the right one. */
static void test_symtab_many(void **state)
{
	enum { N = 3001 };
	struct vmi_symtab t = {0};
	char name[32];

	(void)state;
	for (unsigned i = 0; i < N; i++) {
		unsigned k = (i * 1237) % N; /* a permutation of 0..N-1 */

		snprintf(name, sizeof(name), "fn%u", k);
		assert_int_equal(
		    vmi_symtab_add(&t, 0xffffffff81000000ull + k * 0x40ull, 0x30, name), 0);
	}
	vmi_symtab_sort(&t);
	assert_int_equal(t.nr, N);
	for (unsigned k = 0; k < N; k++) {
		uint64_t a = 0xffffffff81000000ull + k * 0x40ull;

		snprintf(name, sizeof(name), "fn%u", k);
		assert_string_equal(lookup_name(&t, a), name);
		assert_string_equal(lookup_name(&t, a + 0x2f), name);
		assert_null(lookup_name(&t, a + 0x30));
		assert_int_equal(vmi_symtab_find(&t, name)->addr, a);
	}
	vmi_symtab_free(&t);
}

/* ---- vmi_sites ------------------------------------------------------------------------------ */

/* Addresses in no function are skipped; a second address in the same function is skipped. */
/* vmi_lower_bound: the first element whose key (a u64 anywhere in the element) is >= the key. */
static void test_lower_bound(void **state)
{
	struct elem {
		uint32_t pad;
		uint64_t key;
	} v[] = {{1, 10}, {2, 20}, {3, 20}, {4, 30}};
	const size_t off = offsetof(struct elem, key);

	(void)state;
	assert_int_equal(vmi_lower_bound(v, 4, sizeof(v[0]), off, 0), 0);
	assert_int_equal(vmi_lower_bound(v, 4, sizeof(v[0]), off, 10), 0);
	assert_int_equal(vmi_lower_bound(v, 4, sizeof(v[0]), off, 11), 1);
	assert_int_equal(vmi_lower_bound(v, 4, sizeof(v[0]), off, 20), 1);
	assert_int_equal(vmi_lower_bound(v, 4, sizeof(v[0]), off, 21), 3);
	assert_int_equal(vmi_lower_bound(v, 4, sizeof(v[0]), off, 30), 3);
	assert_int_equal(vmi_lower_bound(v, 4, sizeof(v[0]), off, 31), 4);
	assert_int_equal(vmi_lower_bound(v, 4, sizeof(v[0]), off, UINT64_MAX), 4);
	assert_int_equal(vmi_lower_bound(v, 0, sizeof(v[0]), off, 10), 0);
	assert_int_equal(vmi_lower_bound(v, 1, sizeof(v[0]), off, 11), 1);
}

static void test_sites_build(void **state)
{
	struct vmi_symtab t = {0};
	struct vmi_sites s;
	static const uint64_t addrs[] = {0x500,	 0x1000, 0x1004, 0x1800,
					 0x2000, 0x2010, 0x2020, 0x9000};

	(void)state;
	assert_int_equal(vmi_symtab_add(&t, 0x1000, 0x10, "a"), 0);
	assert_int_equal(vmi_symtab_add(&t, 0x2000, 0x20, "b"), 0);
	assert_int_equal(vmi_symtab_add(&t, 0x3000, 0x20, "c"), 0);
	vmi_symtab_sort(&t);

	assert_int_equal(vmi_sites_build(&s, addrs, sizeof(addrs) / sizeof(addrs[0]), &t), 0);
	assert_int_equal(s.nr, 2);
	assert_int_equal(s.v[0].addr, 0x1000);
	assert_ptr_equal(s.v[0].func, vmi_symtab_find(&t, "a"));
	assert_int_equal(s.v[1].addr, 0x2000);
	assert_ptr_equal(s.v[1].func, vmi_symtab_find(&t, "b"));
	vmi_sites_free(&s);
	assert_null(s.v);
	assert_int_equal(s.nr, 0);

	/* no addresses: no sites */
	assert_int_equal(vmi_sites_build(&s, addrs, 0, &t), 0);
	assert_int_equal(s.nr, 0);
	vmi_sites_free(&s);
	/* only addresses in no function */
	assert_int_equal(vmi_sites_build(&s, (const uint64_t[]){0x10, 0x1fff, 0x5000}, 3, &t), 0);
	assert_int_equal(s.nr, 0);
	vmi_sites_free(&s);
	/* out of order, with the descent at an address in no function: still one site per function,
	 * the first recorded */
	assert_int_equal(
	    vmi_sites_build(&s, (const uint64_t[]){0x1004, 0x2000, 0x10, 0x1000, 0x3000, 0x2010}, 6,
			    &t),
	    0);
	assert_int_equal(s.nr, 3);
	assert_int_equal(s.v[0].addr, 0x1004);
	assert_int_equal(s.v[1].addr, 0x2000);
	assert_int_equal(s.v[2].addr, 0x3000);
	vmi_sites_free(&s);
	vmi_symtab_free(&t);
}

/* A function's entry: NOP5 at the start, after ENDBR64, or after the 4-byte NOP of a sealed ENDBR
 * (IBT: 66 0f 1f 00 as 6.12 seals it, 0f 1f 40 d6 as 7.3 does); a CALL (not patched yet), __pfx_
 * padding, or ENDBR64 and a CALL are no site, nor a 4-byte NOP no kernel seals an ENDBR into. The
 * vfs_read rows are the bytes of Debian's 7.3.4 cloud kernel: in its image, and read from the
 * running guest after boot. */
static void test_site_entry(void **state)
{
	static const struct {
		uint8_t b[9];
		bool ok;
		uint64_t off;
	} c[] = {
	    {{0x0f, 0x1f, 0x44, 0x00, 0x00, 0x55}, true, 0},
	    {{0xf3, 0x0f, 0x1e, 0xfa, 0x0f, 0x1f, 0x44, 0x00, 0x00}, true, 4},
	    {{0x66, 0x0f, 0x1f, 0x00, 0x0f, 0x1f, 0x44, 0x00, 0x00}, true, 4},
	    {{0xe8, 0x00, 0x00, 0x00, 0x00, 0x55}, false, 0},
	    {{0xf3, 0x0f, 0x1e, 0xfa, 0xe8, 0x01, 0x02, 0x03, 0x04}, false, 0},
	    {{0x66, 0x0f, 0x1f, 0x00, 0xe8, 0x01, 0x02, 0x03, 0x04}, false, 0},
	    {{0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90}, false, 0},
	    {{0x66, 0x0f, 0x1f, 0x01, 0x0f, 0x1f, 0x44, 0x00, 0x00}, false, 0},
	    /* vfs_read, 7.3: ENDBR64 and CALL __fentry__ in the image; sealed and NOPed after boot */
	    {{0xf3, 0x0f, 0x1e, 0xfa, 0xe8, 0x67, 0xaf, 0xb6, 0xff}, false, 0},
	    {{0x0f, 0x1f, 0x40, 0xd6, 0x0f, 0x1f, 0x44, 0x00, 0x00}, true, 4},
	    /* sealed, its CALL __fentry__ not NOPed yet */
	    {{0x0f, 0x1f, 0x40, 0xd6, 0xe8, 0x67, 0xaf, 0xb6, 0xff}, false, 0},
	    /* NOP4 (0f 1f 40 00), and the seal's NOP with another displacement: no seal */
	    {{0x0f, 0x1f, 0x40, 0x00, 0x0f, 0x1f, 0x44, 0x00, 0x00}, false, 0},
	    {{0x0f, 0x1f, 0x40, 0xd5, 0x0f, 0x1f, 0x44, 0x00, 0x00}, false, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint64_t site = 0;

		assert_int_equal(
		    vmi_site_entry(arch_default(), c[i].b, 0xffffffff81234560ull, &site), c[i].ok);
		if (c[i].ok)
			assert_int_equal(site, 0xffffffff81234560ull + c[i].off);
		else
			assert_int_equal(site, 0);
	}
}

/* A NOP5 passes (err untouched); anything else is -EILSEQ with the function, site and bytes. */
static void test_site_check(void **state)
{
	struct vmi_sym fn = {.addr = 0xffffffff81234560ull, .size = 0x40, .name = "do_work"};
	struct vmi_site site = {.addr = 0xffffffff81234560ull, .func = &fn};
	static const uint8_t nop[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
	static const uint8_t k8[5] = {0x66, 0x66, 0x66, 0x66, 0x90};
	static const uint8_t call[5] = {0xe8, 0x12, 0x34, 0x56, 0x78};
	static const uint8_t int3[5] = {0xcc, 0x1f, 0x44, 0x00, 0x00};
	char err[128] = "untouched";

	(void)state;
	assert_int_equal(vmi_site_check(arch_default(), &site, nop, err, sizeof(err)), 0);
	assert_int_equal(vmi_site_check(arch_default(), &site, k8, err, sizeof(err)), 0);
	assert_string_equal(err, "untouched");

	assert_int_equal(vmi_site_check(arch_default(), &site, call, err, sizeof(err)), -EILSEQ);
	assert_string_equal(err,
			    "do_work: site 0xffffffff81234560 holds e8 12 34 56 78, not a NOP5");

	site.addr = 0x401000;
	fn.name = "fib";
	assert_int_equal(vmi_site_check(arch_default(), &site, int3, err, sizeof(err)), -EILSEQ);
	assert_string_equal(err, "fib: site 0x401000 holds cc 1f 44 00 00, not a NOP5");
}

/* ---- vmi_elf_open --------------------------------------------------------------------------- */

/* A scratch directory for files made at test time. */
static char tmpdir[64];

static int tmpdir_setup(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/hvt-test-vmi-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int tmpdir_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Compiles @src into @out with @flags; fails the test if the compiler does. */
static void compile(const char *src, const char *out, const char *flags)
{
	char path[128], cmd[1024];

	snprintf(path, sizeof(path), "%s/src.c", tmpdir);
	hv_write_text(path, src);
	snprintf(cmd, sizeof(cmd), "cc %s -o '%s' '%s'", flags, out, path);
	assert_int_equal(system(cmd), 0);
}

/* A failed open leaves the image empty (nothing to free). */
static void assert_img_empty(const struct vmi_elf *img)
{
	assert_null(img->path);
	assert_null(img->file);
	assert_null(img->segs);
	assert_null(img->mcount);
	assert_int_equal(img->funcs.nr, 0);
}

static void test_elf_missing(void **state)
{
	struct vmi_elf img;
	char path[128], expect[256], err[256] = "";

	(void)state;
	snprintf(path, sizeof(path), "%s/no-such.elf", tmpdir);
	assert_int_equal(vmi_elf_open(&img, path, 1, err, sizeof(err)), -ENOENT);
	snprintf(expect, sizeof(expect), "%s/no-such.elf: No such file or directory", tmpdir);
	assert_string_equal(err, expect);
	assert_img_empty(&img);
}

static void test_elf_directory(void **state)
{
	struct vmi_elf img;
	char expect[256], err[256] = "";

	(void)state;
	assert_int_equal(vmi_elf_open(&img, tmpdir, 1, err, sizeof(err)), -EINVAL);
	snprintf(expect, sizeof(expect), "%s: not a regular file (a directory)", tmpdir);
	assert_string_equal(err, expect);
	assert_img_empty(&img);
}

/* A text file and an empty file are not ELF64. */
static void test_elf_not_elf(void **state)
{
	struct vmi_elf img;
	char path[128], expect[256], err[256] = "";

	(void)state;
	snprintf(path, sizeof(path), "%s/notes.txt", tmpdir);
	hv_write_text(path, "this is not an ELF file\n");
	assert_int_equal(vmi_elf_open(&img, path, 1, err, sizeof(err)), -ENOEXEC);
	snprintf(expect, sizeof(expect), "%s: not an ELF64 file", path);
	assert_string_equal(err, expect);
	assert_img_empty(&img);

	snprintf(path, sizeof(path), "%s/empty", tmpdir);
	hv_write_text(path, "");
	err[0] = 0;
	assert_int_equal(vmi_elf_open(&img, path, 0, err, sizeof(err)), -ENOEXEC);
	snprintf(expect, sizeof(expect), "%s: not an ELF64 file", path);
	assert_string_equal(err, expect);
	assert_img_empty(&img);
}

/* vmi_elf_open_mem: the same image from a buffer as from the file; garbage named in the message;
 * the buffer is the image's in both cases (freed by vmi_elf_close, or on failure). */
static void test_elf_open_mem(void **state)
{
	struct vmi_elf file, mem;
	char err[256] = "";
	uint8_t *copy;

	(void)state;
	assert_int_equal(vmi_elf_open(&file, GUEST_ELF, 1, err, sizeof(err)), 0);
	copy = malloc(file.file_size);
	assert_non_null(copy);
	memcpy(copy, file.file, file.file_size);
	assert_int_equal(vmi_elf_open_mem(&mem, copy, file.file_size, "guest", 1, err, sizeof(err)),
			 0);
	assert_int_equal(mem.funcs.nr, file.funcs.nr);
	assert_int_equal(mem.nr_mcount, file.nr_mcount);
	assert_int_equal(mem.entry, file.entry);
	assert_string_equal(mem.path, "guest");
	vmi_elf_close(&mem);
	vmi_elf_close(&file);

	copy = malloc(4);
	memcpy(copy, "\177EL", 4);
	assert_int_equal(vmi_elf_open_mem(&mem, copy, 4, "short", 0, err, sizeof(err)), -ENOEXEC);
	assert_string_equal(err, "short: not an ELF64 file");
	assert_img_empty(&mem);
}

/* An x86_64 relocatable object (ET_REL = 1, EM_X86_64 = 62) is not an executable. */
static void test_elf_relocatable(void **state)
{
	struct vmi_elf img;
	char obj[128], expect[256], err[256] = "";

	(void)state;
	snprintf(obj, sizeof(obj), "%s/tiny.o", tmpdir);
	compile("int tiny(int x) { return x + 1; }\n", obj, "-c -O1");
	assert_int_equal(vmi_elf_open(&img, obj, 0, err, sizeof(err)), -ENOEXEC);
	snprintf(expect, sizeof(expect), "%s: not an x86_64 executable (e_machine 62, e_type 1)",
		 obj);
	assert_string_equal(err, expect);
	assert_img_empty(&img);
}

/* /bin/true (ET_DYN, no __mcount_loc): -ENODATA when sites are needed, fine otherwise. */
static void test_elf_no_mcount_bin_true(void **state)
{
	struct vmi_elf img;
	char err[256] = "";

	(void)state;
	assert_int_equal(vmi_elf_open(&img, "/bin/true", 1, err, sizeof(err)), -ENODATA);
	assert_string_equal(err, "/bin/true: no __mcount_loc section (build the guest with -pg "
				 "-mfentry -mnop-mcount -mrecord-mcount)");
	assert_img_empty(&img);

	strcpy(err, "untouched");
	assert_int_equal(vmi_elf_open(&img, "/bin/true", 0, err, sizeof(err)), 0);
	assert_string_equal(err, "untouched");
	assert_string_equal(img.path, "/bin/true");
	assert_int_equal(img.nr_mcount, 0);
	assert_true(img.nr_segs > 0);
	assert_true(img.entry != 0);
	vmi_elf_close(&img);
	assert_img_empty(&img);
}

#define FREESTANDING                                                                               \
	"-O1 -ffreestanding -fno-pic -fno-pie -fcf-protection=none -nostdlib -static "             \
	"-no-pie -Wl,-e,alpha -Wl,--build-id=none"

static const char two_funcs[] = "__attribute__((noinline)) long beta(long x) { return x * 3; }\n"
				"__attribute__((noinline)) void alpha(void) { volatile long v = "
				"beta(2); (void)v; for (;;) ; }\n";

/* A static executable built without -pg has no __mcount_loc. */
static void test_elf_no_mcount_compiled(void **state)
{
	struct vmi_elf img;
	char elf[128], expect[256], err[256] = "";

	(void)state;
	snprintf(elf, sizeof(elf), "%s/plain.elf", tmpdir);
	compile(two_funcs, elf, FREESTANDING);
	assert_int_equal(vmi_elf_open(&img, elf, 1, err, sizeof(err)), -ENODATA);
	snprintf(expect, sizeof(expect),
		 "%s: no __mcount_loc section (build the guest with -pg -mfentry -mnop-mcount "
		 "-mrecord-mcount)",
		 elf);
	assert_string_equal(err, expect);
	assert_img_empty(&img);
}

/* The same built with -pg -mfentry -mnop-mcount -mrecord-mcount: one site per function, at the
 * function's first byte, holding a NOP5 in the file image. */
static void test_elf_compiled_with_mcount(void **state)
{
	struct vmi_elf img;
	struct vmi_sites sites;
	char elf[128], err[256] = "";
	const struct vmi_sym *alpha, *beta;

	(void)state;
	snprintf(elf, sizeof(elf), "%s/pg.elf", tmpdir);
	compile(two_funcs, elf, FREESTANDING " -pg -mfentry -mnop-mcount -mrecord-mcount");
	assert_int_equal(vmi_elf_open(&img, elf, 1, err, sizeof(err)), 0);
	alpha = vmi_symtab_find(&img.funcs, "alpha");
	beta = vmi_symtab_find(&img.funcs, "beta");
	assert_non_null(alpha);
	assert_non_null(beta);
	assert_int_equal(img.entry, alpha->addr);
	assert_int_equal(img.nr_mcount, 2);
	assert_true(img.mcount[0] < img.mcount[1]);
	assert_int_equal(img.mcount[0], beta->addr < alpha->addr ? beta->addr : alpha->addr);
	assert_int_equal(img.mcount[1], beta->addr < alpha->addr ? alpha->addr : beta->addr);
	for (size_t i = 0; i < img.nr_mcount; i++) {
		const uint8_t *b = vmi_elf_bytes_at(&img, img.mcount[i], X86_NOP5_LEN);

		assert_non_null(b);
		assert_true(x86_is_nop5(b));
	}
	assert_int_equal(vmi_sites_build(&sites, img.mcount, img.nr_mcount, &img.funcs), 0);
	assert_int_equal(sites.nr, 2);
	vmi_sites_free(&sites);
	vmi_elf_close(&img);
}

/* Two sections named __mcount_loc: refused (found by fuzzing: the first list leaked). The second is
 * made by giving .text the name of the real one. */
static void test_elf_two_mcount_loc(void **state)
{
	struct vmi_elf img;
	char elf[128], expect[256], err[256] = "";
	Elf64_Shdr *sh, *mc = NULL, *text = NULL;
	const char *names;
	Elf64_Ehdr *eh;
	uint8_t *buf;
	size_t size;
	FILE *f;

	(void)state;
	snprintf(elf, sizeof(elf), "%s/two.elf", tmpdir);
	compile(two_funcs, elf, FREESTANDING " -pg -mfentry -mnop-mcount -mrecord-mcount");
	assert_int_equal(vmi_elf_open(&img, elf, 1, err, sizeof(err)), 0);
	size = img.file_size; /* a copy of the image's (read-only) bytes, edited and written back */
	buf = malloc(size);
	assert_non_null(buf);
	memcpy(buf, img.file, size);
	vmi_elf_close(&img);
	eh = (Elf64_Ehdr *)buf;
	sh = (Elf64_Shdr *)(buf + eh->e_shoff);
	names = (const char *)buf + sh[eh->e_shstrndx].sh_offset;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (!strcmp(names + sh[i].sh_name, "__mcount_loc"))
			mc = &sh[i];
		if (!strcmp(names + sh[i].sh_name, ".text"))
			text = &sh[i];
	}
	assert_non_null(mc);
	assert_non_null(text);
	text->sh_name = mc->sh_name;
	f = fopen(elf, "w");
	assert_int_equal(fwrite(buf, 1, size, f), size);
	assert_int_equal(fclose(f), 0);
	free(buf);
	assert_int_equal(vmi_elf_open(&img, elf, 1, err, sizeof(err)), -ENOEXEC);
	snprintf(expect, sizeof(expect), "%s: more than one __mcount_loc section", elf);
	assert_string_equal(err, expect);
	assert_img_empty(&img);
}

/* __mcount_loc entries listed out of order (here by hand, in a section of their own) come out
 * sorted. */
static void test_elf_mcount_sorted(void **state)
{
	static const char src[] =
	    "__attribute__((noinline)) long beta(long x) { return x * 3; }\n"
	    "__attribute__((noinline)) void alpha(void) { volatile long v = beta(2); (void)v; for "
	    "(;;) ; }\n"
	    "__attribute__((noinline)) long gamma_(long x) { return x + 7; }\n"
	    "asm(\".pushsection __mcount_loc, \\\"a\\\"\\n"
	    ".quad gamma_\\n.quad beta\\n.quad alpha\\n.popsection\");\n";
	struct vmi_elf img;
	char elf[128], err[256] = "";
	uint64_t want[3];

	(void)state;
	snprintf(elf, sizeof(elf), "%s/unsorted.elf", tmpdir);
	compile(src, elf, FREESTANDING);
	assert_int_equal(vmi_elf_open(&img, elf, 1, err, sizeof(err)), 0);
	assert_int_equal(img.nr_mcount, 3);
	want[0] = vmi_symtab_find(&img.funcs, "beta")->addr;
	want[1] = vmi_symtab_find(&img.funcs, "alpha")->addr;
	want[2] = vmi_symtab_find(&img.funcs, "gamma_")->addr;
	assert_true(want[0] < want[1] && want[1] < want[2]); /* definition order */
	assert_int_equal(img.mcount[0], want[0]);
	assert_int_equal(img.mcount[1], want[1]);
	assert_int_equal(img.mcount[2], want[2]);
	vmi_elf_close(&img);
}

/* The freestanding test guest: its instrumented workloads are functions with sites, each site a
 * NOP5. */
static void test_elf_test_guest(void **state)
{
	static const char *const funcs[] = {"fib", "tree_a", "task_step"};
	struct vmi_elf img;
	struct vmi_sites sites;
	char err[256] = "";

	(void)state;
	if (access(GUEST_ELF, R_OK) != 0) {
		print_message("%s is missing: run `make %s` first\n", GUEST_ELF, GUEST_ELF);
		fail();
	}
	assert_int_equal(vmi_elf_open(&img, GUEST_ELF, 1, err, sizeof(err)), 0);
	assert_string_equal(img.path, GUEST_ELF);
	assert_true(img.nr_mcount >= 9);
	assert_true(img.nr_segs >= 1);
	assert_non_null(vmi_symtab_find(&img.objects, "hvtrace_current"));
	for (size_t i = 1; i < img.nr_mcount; i++)
		assert_true(img.mcount[i - 1] < img.mcount[i]);

	assert_int_equal(vmi_sites_build(&sites, img.mcount, img.nr_mcount, &img.funcs), 0);
	assert_true(sites.nr >= 9);
	for (size_t f = 0; f < sizeof(funcs) / sizeof(funcs[0]); f++) {
		const struct vmi_sym *sym = vmi_symtab_find(&img.funcs, funcs[f]);
		size_t i;

		assert_non_null(sym);
		assert_true(sym->size > 0);
		for (i = 0; i < sites.nr; i++)
			if (sites.v[i].func == sym)
				break;
		assert_true(i < sites.nr);
		assert_int_equal(sites.v[i].addr, sym->addr);
	}
	for (size_t i = 0; i < sites.nr; i++) {
		const uint8_t *b = vmi_elf_bytes_at(&img, sites.v[i].addr, X86_NOP5_LEN);

		assert_non_null(b);
		assert_int_equal(vmi_site_check(arch_default(), &sites.v[i], b, err, sizeof(err)),
				 0);
	}
	/* nothing is mapped at 0 */
	assert_null(vmi_elf_bytes_at(&img, 0, 1));
	vmi_sites_free(&sites);
	vmi_elf_close(&img);
}

/* vmi_elf_bytes_at: ranges inside a segment's file image, and ranges that are not, including one
 * whose end wraps past 2^64 (must not be mistaken for a range inside the segment). */
static void test_elf_bytes_at(void **state)
{
	struct vmi_elf img;
	char err[256] = "";
	const struct vmi_segment *seg;

	(void)state;
	if (access(GUEST_ELF, R_OK) != 0) {
		print_message("%s is missing: run `make %s` first\n", GUEST_ELF, GUEST_ELF);
		fail();
	}
	assert_int_equal(vmi_elf_open(&img, GUEST_ELF, 1, err, sizeof(err)), 0);
	assert_true(img.nr_segs >= 1);
	seg = &img.segs[0];
	assert_true(seg->filesz >= 16);
	assert_ptr_equal(vmi_elf_bytes_at(&img, seg->vaddr, 1), seg->data);
	assert_ptr_equal(vmi_elf_bytes_at(&img, seg->vaddr + seg->filesz - 5, 5),
			 seg->data + seg->filesz - 5);
	assert_null(
	    vmi_elf_bytes_at(&img, seg->vaddr + seg->filesz - 4, 5)); /* runs past the end */
	assert_null(vmi_elf_bytes_at(&img, seg->vaddr - 1, 5));	      /* starts before */
	/* vaddr + len wraps around to a small number */
	assert_null(vmi_elf_bytes_at(&img, UINT64_MAX - 1, 5));
	assert_null(vmi_elf_bytes_at(&img, UINT64_MAX, 2));
	vmi_elf_close(&img);
}

/* A hand-made ELF64 x86_64 executable with one PT_LOAD segment at file offset @off, @filesz bytes.
 */
static void write_elf_with_segment(const char *path, uint64_t off, uint64_t filesz)
{
	struct {
		Elf64_Ehdr e;
		Elf64_Phdr p;
		uint8_t text[16];
	} f;
	FILE *out = fopen(path, "wb");

	memset(&f, 0, sizeof(f));
	memcpy(f.e.e_ident, ELFMAG, SELFMAG);
	f.e.e_ident[EI_CLASS] = ELFCLASS64;
	f.e.e_ident[EI_DATA] = ELFDATA2LSB;
	f.e.e_ident[EI_VERSION] = EV_CURRENT;
	f.e.e_type = ET_EXEC;
	f.e.e_machine = EM_X86_64;
	f.e.e_version = EV_CURRENT;
	f.e.e_entry = 0x400000;
	f.e.e_phoff = offsetof(typeof(f), p);
	f.e.e_ehsize = sizeof(Elf64_Ehdr);
	f.e.e_phentsize = sizeof(Elf64_Phdr);
	f.e.e_phnum = 1;
	f.p.p_type = PT_LOAD;
	f.p.p_offset = off;
	f.p.p_vaddr = f.p.p_paddr = 0x400000;
	f.p.p_filesz = filesz;
	f.p.p_memsz = filesz;
	memset(f.text, 0x90, sizeof(f.text));
	assert_non_null(out);
	assert_int_equal(fwrite(&f, sizeof(f), 1, out), 1);
	assert_int_equal(fclose(out), 0);
}

/* Segments must lie inside the file: past the end, and with an offset so large that offset + size
 * wraps around 2^64. A segment that fits is accepted (no sections: no symbols, no sites). */
static void test_elf_segment_outside_file(void **state)
{
	struct vmi_elf img;
	char path[128], expect[256], err[256] = "";
	const size_t text_off = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr);

	(void)state;
	snprintf(path, sizeof(path), "%s/seg.elf", tmpdir);
	write_elf_with_segment(path, text_off, 16);
	assert_int_equal(vmi_elf_open(&img, path, 0, err, sizeof(err)), 0);
	assert_int_equal(img.nr_segs, 1);
	assert_int_equal(img.entry, 0x400000);
	assert_ptr_equal(img.segs[0].data, img.file + text_off);
	assert_int_equal(img.funcs.nr, 0);
	vmi_elf_close(&img);

	snprintf(expect, sizeof(expect),
		 "%s: program header 0 (PT_LOAD): p_offset 0x78 + p_filesz 0x11 lies past the end "
		 "of the file (136 bytes)",
		 path);
	write_elf_with_segment(path, text_off, 17);
	assert_int_equal(vmi_elf_open(&img, path, 0, err, sizeof(err)), -ENOEXEC);
	assert_string_equal(err, expect);

	err[0] = 0;
	write_elf_with_segment(path, UINT64_MAX - 7, 16); /* offset + size wraps to 8 */
	assert_int_equal(vmi_elf_open(&img, path, 0, err, sizeof(err)), -ENOEXEC);
	snprintf(expect, sizeof(expect),
		 "%s: program header 0 (PT_LOAD): p_offset 0xfffffffffffffff8 + p_filesz 0x10 lies "
		 "past the end of the file (136 bytes)",
		 path);
	assert_string_equal(err, expect);
	assert_img_empty(&img);
}

/* ---- vmi_task_current ----------------------------------------------------------------------- */

/* Guest-virtual memory: the per-vCPU task array at 0x1000 and two tasks at 0x5000 and 0x6000. */
struct fake_guest {
	uint8_t mem[0x8000];
	struct fake_mem m; /* mem at 0; counts the reads, fails the chosen one */
};

/* Slots at 0x1000 + 8 * cpu, like the freestanding guest's hvtrace_current array. */
static const struct vmi_task_layout layout = {
    .valid = true,
    .current_slot = {0x1000, 0x1008, 0x1010, 0x1018, 0x7ffc},
    .pid_off = 0x10,
    .comm_off = 0x20,
};

static void fake_guest_init(struct fake_guest *g)
{
	uint64_t t0 = 0x5000, t1 = 0x6000, none = 0, bad = 0x7fe0;
	int32_t pid0 = 101, pid1 = 7;

	memset(g, 0, sizeof(*g));
	fake_mem_init(&g->m);
	fake_mem_map(&g->m, 0, g->mem, sizeof(g->mem));
	memcpy(g->mem + 0x1000, &t0, 8);   /* cpu0 */
	memcpy(g->mem + 0x1008, &t1, 8);   /* cpu1 */
	memcpy(g->mem + 0x1010, &none, 8); /* cpu2: no task */
	memcpy(g->mem + 0x1018, &bad, 8);  /* cpu3: comm runs off the end of memory */
	memcpy(g->mem + 0x5010, &pid0, 4);
	strcpy((char *)g->mem + 0x5020, "worker1");
	memcpy(g->mem + 0x6010, &pid1, 4);
	memcpy(g->mem + 0x6020, "a-very-long-name-indeed", 16); /* no NUL in 16 bytes */
}

static void test_task_no_layout(void **state)
{
	struct vmi_task_layout none = {0};
	struct fake_guest g;
	struct vmi_task t;

	(void)state;
	fake_guest_init(&g);
	memset(&t, 0x55, sizeof(t));
	vmi_task_current(&none, 3, fake_mem_read, &g.m, &t);
	assert_string_equal(t.comm, "cpu3");
	assert_int_equal(t.pid, 0);
	assert_int_equal(g.m.reads, 0);
	vmi_task_current(&none, 63, fake_mem_read, &g.m, &t);
	assert_string_equal(t.comm, "cpu63");
}

static void test_task_success(void **state)
{
	struct fake_guest g;
	struct vmi_task t;

	(void)state;
	fake_guest_init(&g);
	memset(&t, 0x55, sizeof(t));
	vmi_task_current(&layout, 0, fake_mem_read, &g.m, &t);
	assert_int_equal(t.pid, 101);
	assert_string_equal(t.comm, "worker1");

	/* a 16-byte comm without NUL is cut to 15 characters; cpu1's slot is read */
	vmi_task_current(&layout, 1, fake_mem_read, &g.m, &t);
	assert_int_equal(t.pid, 7);
	assert_string_equal(t.comm, "a-very-long-nam");
}

/* Any failed read (array, pid, comm) or a NULL task pointer gives "<unknown>"-0. */
static void test_task_read_failure(void **state)
{
	struct fake_guest g;
	struct vmi_task t;

	(void)state;
	for (int fail = 1; fail <= 3; fail++) {
		fake_guest_init(&g);
		g.m.fail_read = fail;
		memset(&t, 0x55, sizeof(t));
		vmi_task_current(&layout, 0, fake_mem_read, &g.m, &t);
		assert_string_equal(t.comm, "<unknown>");
		assert_int_equal(t.pid, 0);
		assert_int_equal(g.m.reads, fail);
	}

	fake_guest_init(&g);
	memset(&t, 0x55, sizeof(t));
	vmi_task_current(&layout, 2, fake_mem_read, &g.m, &t); /* NULL task */
	assert_string_equal(t.comm, "<unknown>");
	assert_int_equal(t.pid, 0);

	memset(&t, 0x55, sizeof(t));
	vmi_task_current(&layout, 3, fake_mem_read, &g.m, &t); /* comm unreadable */
	assert_string_equal(t.comm, "<unknown>");
	assert_int_equal(t.pid, 0);

	memset(&t, 0x55, sizeof(t));
	/* slot runs off the end of memory */
	vmi_task_current(&layout, 4, fake_mem_read, &g.m, &t);
	assert_string_equal(t.comm, "<unknown>");
	assert_int_equal(t.pid, 0);

	/* a CPU past the layout's table has no task info */
	vmi_task_current(&layout, VMI_MAX_CPUS + 36, fake_mem_read, &g.m, &t);
	assert_string_equal(t.comm, "cpu100");
	assert_int_equal(t.pid, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_symtab_sort),
	    cmocka_unit_test(test_symtab_lookup),
	    cmocka_unit_test(test_symtab_lookup_open_end),
	    cmocka_unit_test(test_symtab_find),
	    cmocka_unit_test(test_symtab_sort_empty),
	    cmocka_unit_test(test_symtab_lookup_wrapping_size),
	    cmocka_unit_test(test_symtab_duplicates),
	    cmocka_unit_test(test_symtab_many),
	    cmocka_unit_test(test_lower_bound),
	    cmocka_unit_test(test_sites_build),
	    cmocka_unit_test(test_site_entry),
	    cmocka_unit_test(test_site_check),
	    cmocka_unit_test(test_elf_missing),
	    cmocka_unit_test(test_elf_directory),
	    cmocka_unit_test(test_elf_not_elf),
	    cmocka_unit_test(test_elf_relocatable),
	    cmocka_unit_test(test_elf_open_mem),
	    cmocka_unit_test(test_elf_two_mcount_loc),
	    cmocka_unit_test(test_elf_no_mcount_bin_true),
	    cmocka_unit_test(test_elf_no_mcount_compiled),
	    cmocka_unit_test(test_elf_compiled_with_mcount),
	    cmocka_unit_test(test_elf_mcount_sorted),
	    cmocka_unit_test(test_elf_test_guest),
	    cmocka_unit_test(test_elf_bytes_at),
	    cmocka_unit_test(test_elf_segment_outside_file),
	    cmocka_unit_test(test_task_no_layout),
	    cmocka_unit_test(test_task_success),
	    cmocka_unit_test(test_task_read_failure),
	};

	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}

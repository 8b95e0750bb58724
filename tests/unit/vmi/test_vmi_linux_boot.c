/* Boot tracing's view of a loaded, not yet started Linux kernel (vmi/vmi_linux_boot.c), over fake
 * guest memory: the sites __mcount_loc lists that still hold `call __fentry__` (.init.text's too),
 * each paired with its own entry; duplicates, NOP5s, padding and addresses outside the text
 * refused; hostile tables (outside the image, misaligned, oversized) refused in one line; and the
 * system_state reading that says whether init memory may be gone. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "vmi/vmi_linux_boot.h"
#include "tests/common/fake_mem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT 0xffffffff81000000ull
#define DATA 0xffffffff82000000ull
#define INIT 0xffffffff83000000ull
#define LOCS (DATA + 0x200)
#define NR_LOCS 9

static const char sysmap[] = "ffffffff81000000 T _stext\n"
			     "ffffffff81000000 T _text\n"
			     "ffffffff81000100 T f_a\n"
			     "ffffffff81000140 t f_b\n"
			     "ffffffff81000180 T f_c\n"
			     "ffffffff810001c0 T f_d\n"
			     "ffffffff810003c0 T __fentry__\n"
			     "ffffffff81000400 T _etext\n"
			     "ffffffff82000000 D linux_banner\n"
			     "ffffffff82000200 D __start_mcount_loc\n"
			     "ffffffff82000248 D __stop_mcount_loc\n"
			     "ffffffff82000300 D system_state\n"
			     "ffffffff83000000 T _sinittext\n"
			     "ffffffff83000010 T init_fn\n"
			     "ffffffff83000100 T _einittext\n";

struct fake_kernel {
	uint8_t text[0x400], data[0x400], init[0x100];
	struct fake_mem mem;
	struct vmi_linux l;
};

static void put_call(uint8_t *p, uint64_t at, uint64_t to)
{
	int32_t rel = (int32_t)(to - (at + 5));

	p[0] = 0xe8;
	memcpy(p + 1, &rel, 4);
}

static void open_map(struct vmi_linux *l, const char *map)
{
	FILE *f = fmemopen((void *)map, strlen(map), "r");
	char err[256];

	assert_non_null(f);
	assert_int_equal(vmi_linux_open_map(l, f, "test.map", err, sizeof(err)), 0);
	fclose(f);
	l->slid = true; /* a loaded kernel at its link address */
}

static void fake_kernel_init(struct fake_kernel *k)
{
	const uint64_t locs[NR_LOCS] = {TEXT + 0x1c0, TEXT + 0x100, 0,		  TEXT + 0x144,
					TEXT + 0x180, INIT + 0x10,  TEXT + 0x1c0, 0xffffffff90000000ull,
					TEXT + 0x3fe};

	memset(k, 0xcc, sizeof(*k));
	put_call(k->text + 0x100, TEXT + 0x100, TEXT + 0x3c0);		  /* f_a */
	memcpy(k->text + 0x140, "\xf3\x0f\x1e\xfa", 4);			  /* f_b: endbr64, */
	put_call(k->text + 0x144, TEXT + 0x144, TEXT + 0x3c0);		  /* then the call */
	memcpy(k->text + 0x180, "\x0f\x1f\x44\x00\x00", 5);		  /* f_c: a NOP5 already */
	put_call(k->text + 0x1c0, TEXT + 0x1c0, TEXT + 0x3c0);		  /* f_d: listed twice */
	k->text[0x3c0] = 0xc3;						  /* __fentry__ */
	put_call(k->init + 0x10, INIT + 0x10, TEXT + 0x3c0);		  /* init_fn */
	memcpy(k->data, "Linux version 6.1.0-test", 24);
	memcpy(k->data + 0x200, locs, sizeof(locs));
	memset(k->data + 0x300, 0, 4);
	fake_mem_init(&k->mem);
	fake_mem_map(&k->mem, TEXT, k->text, sizeof(k->text));
	fake_mem_map(&k->mem, DATA, k->data, sizeof(k->data));
	fake_mem_map(&k->mem, INIT, k->init, sizeof(k->init));
	memset(&k->l, 0, sizeof(k->l));
	open_map(&k->l, sysmap);
}

/* f_a, f_b (after its endbr64) and init_fn; f_d listed twice, f_c a NOP5 already, one address
 * outside the text and one whose five bytes run past _etext are skipped (the zero is padding). */
static void test_boot_sites(void **state)
{
	static struct fake_kernel k;
	struct vmi_sites sites;
	struct vmi_boot b;
	char err[256] = "";

	(void)state;
	fake_kernel_init(&k);
	assert_int_equal(vmi_linux_boot_sites(&k.l, fake_mem_read, &k.mem, &b, &sites, err,
					      sizeof(err)),
			 0);
	assert_int_equal(sites.nr, 3);
	assert_int_equal(sites.v[0].addr, TEXT + 0x100);
	assert_string_equal(sites.v[0].func->name, "f_a");
	assert_int_equal(sites.v[1].addr, TEXT + 0x144);
	assert_string_equal(sites.v[1].func->name, "f_b");
	assert_int_equal(sites.v[2].addr, INIT + 0x10);
	assert_string_equal(sites.v[2].func->name, "init_fn");
	assert_int_equal(b.skipped, 5);
	assert_int_equal(b.init_lo, INIT);
	assert_int_equal(b.init_hi, INIT + 0x100);
	/* each site's own entry, none for what was skipped */
	assert_int_equal(vmi_linux_boot_loc(&b, TEXT + 0x100), LOCS + 8);
	assert_int_equal(vmi_linux_boot_loc(&b, TEXT + 0x144), LOCS + 24);
	assert_int_equal(vmi_linux_boot_loc(&b, INIT + 0x10), LOCS + 40);
	assert_int_equal(vmi_linux_boot_loc(&b, TEXT + 0x1c0), 0);
	assert_int_equal(vmi_linux_boot_loc(&b, TEXT + 0x180), 0);
	assert_int_equal(vmi_linux_boot_loc(&b, 0), 0);
	vmi_sites_free(&sites);
	vmi_linux_boot_free(&b);
	vmi_linux_close(&k.l);
}

static void expect_refused(const char *map, int want_ret, const char *want_err)
{
	static struct fake_kernel k;
	struct vmi_sites sites;
	struct vmi_boot b;
	char err[256] = "";

	fake_kernel_init(&k);
	vmi_linux_close(&k.l);
	memset(&k.l, 0, sizeof(k.l));
	open_map(&k.l, map);
	assert_int_equal(vmi_linux_boot_sites(&k.l, fake_mem_read, &k.mem, &b, &sites, err,
					      sizeof(err)),
			 want_ret);
	assert_string_equal(err, want_err);
	assert_null(strchr(err, '\n'));
	assert_null(b.locs);
	assert_null(sites.v);
	vmi_linux_close(&k.l);
}

/* A map with @from replaced by @to (same length or not). */
static char *map_with(const char *from, const char *to)
{
	const char *at = strstr(sysmap, from);
	char *m = malloc(sizeof(sysmap) + strlen(to));

	assert_non_null(at);
	sprintf(m, "%.*s%s%s", (int)(at - sysmap), sysmap, to, at + strlen(from));
	return m;
}

static void test_boot_sites_refused(void **state)
{
	char *m;

	(void)state;
	m = map_with("ffffffff82000248 D __stop_mcount_loc\n", "");
	expect_refused(m, -ENOENT,
		       "boot tracing: the kernel's symbols lack __start_mcount_loc / "
		       "__stop_mcount_loc");
	free(m);
	m = map_with("ffffffff810003c0 T __fentry__\n", "");
	expect_refused(m, -ENOENT, "boot tracing: the kernel's symbols lack __fentry__");
	free(m);
	m = map_with("ffffffff83000100 T _einittext\n", "");
	expect_refused(m, -ENOENT, "boot tracing: the kernel's symbols lack _sinittext / _einittext");
	free(m);
	/* a table that ends before it starts, is not whole entries, is outside the image, or would
	 * be larger than any kernel's */
	m = map_with("ffffffff82000248 D __stop_mcount_loc", "ffffffff82000100 D __stop_mcount_loc");
	expect_refused(m, -EINVAL,
		       "boot tracing: __mcount_loc 0xffffffff82000200..0xffffffff82000100 or .init.text "
		       "0xffffffff83000000..0xffffffff83000100 is not a table in the kernel image");
	free(m);
	m = map_with("ffffffff82000248 D __stop_mcount_loc", "ffffffff82000244 D __stop_mcount_loc");
	expect_refused(m, -EINVAL,
		       "boot tracing: __mcount_loc 0xffffffff82000200..0xffffffff82000244 or .init.text "
		       "0xffffffff83000000..0xffffffff83000100 is not a table in the kernel image");
	free(m);
	m = map_with("ffffffff82000200 D __start_mcount_loc", "0000000000001000 D __start_mcount_loc");
	expect_refused(m, -EINVAL,
		       "boot tracing: __mcount_loc 0x1000..0xffffffff82000248 or .init.text "
		       "0xffffffff83000000..0xffffffff83000100 is not a table in the kernel image");
	free(m);
	m = map_with("ffffffff82000248 D __stop_mcount_loc", "ffffffff83000208 D __stop_mcount_loc");
	expect_refused(m, -EINVAL,
		       "boot tracing: __mcount_loc 0xffffffff82000200..0xffffffff83000208 or .init.text "
		       "0xffffffff83000000..0xffffffff83000100 is not a table in the kernel image");
	free(m);
	/* a table the guest memory does not hold */
	m = map_with("ffffffff82000248 D __stop_mcount_loc", "ffffffff82000808 D __stop_mcount_loc");
	expect_refused(m, -EFAULT, "boot tracing: cannot read __mcount_loc at 0xffffffff82000200");
	free(m);
}

static void test_calls_fentry(void **state)
{
	uint8_t b[5];

	(void)state;
	put_call(b, TEXT, TEXT + 0x3c0);
	assert_true(vmi_linux_calls_fentry(arch_default(), b, TEXT, TEXT + 0x3c0));
	assert_false(vmi_linux_calls_fentry(arch_default(), b, TEXT + 1, TEXT + 0x3c0));
	assert_false(vmi_linux_calls_fentry(arch_default(), b, TEXT, TEXT + 0x3c1));
	b[0] = 0xe9; /* a jmp is not the call */
	assert_false(vmi_linux_calls_fentry(arch_default(), b, TEXT, TEXT + 0x3c0));
	put_call(b, INIT, TEXT); /* backwards, 32 MiB */
	assert_true(vmi_linux_calls_fentry(arch_default(), b, INIT, TEXT));
}

/* system_state: BOOTING 0 and SCHEDULING 1 keep .init.text; FREEING_INITMEM 2 and anything later,
 * or a value no kernel writes, may not; unreadable says -1. */
static void test_init_freed(void **state)
{
	static struct fake_kernel k;
	const int32_t v[] = {0, 1, 2, 3, 7, -1, 0x7fffffff};
	const int want[] = {0, 0, 1, 1, 1, 1, 1};

	(void)state;
	fake_kernel_init(&k);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		memcpy(k.data + 0x300, &v[i], 4);
		assert_int_equal(vmi_linux_init_freed(&k.l, fake_mem_read, &k.mem), want[i]);
	}
	k.mem.fail_read = k.mem.reads + 1;
	assert_int_equal(vmi_linux_init_freed(&k.l, fake_mem_read, &k.mem), -1);
	vmi_linux_close(&k.l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_boot_sites),
	    cmocka_unit_test(test_boot_sites_refused),
	    cmocka_unit_test(test_calls_fentry),
	    cmocka_unit_test(test_init_freed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

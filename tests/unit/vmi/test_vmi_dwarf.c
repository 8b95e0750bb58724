/* vmi/vmi_dwarf.h: a guest image's C functions from its DWARF, here this test's own executable
 * (built with -g from C): its functions are found by name and entry address; bytes that are no ELF,
 * or an ELF without DWARF, give none. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "vmi/vmi_dwarf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole of @path, malloc'd; *@n its size. */
static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	long size;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	assert_true(size > 0);
	rewind(f);
	b = malloc((size_t)size);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	*n = (size_t)size;
	return b;
}

int main(void);

static __attribute__((noinline)) int a_c_function(int x)
{
	return x + 1;
}

static void test_own_functions(void **state)
{
	struct vmi_symtab c = {0};
	size_t n;
	uint8_t *self = slurp("/proc/self/exe", &n);
	char err[256] = "";
	const struct vmi_sym *f, *m;

	(void)state;
	assert_true(vmi_dwarf_c_functions(self, n, &c, err, sizeof(err)) >= 3);
	f = vmi_symtab_find(&c, "a_c_function");
	m = vmi_symtab_find(&c, "main");
	assert_non_null(f);
	assert_non_null(m);
	assert_true(vmi_dwarf_is_c_function(&c, f->addr));
	assert_false(vmi_dwarf_is_c_function(&c, f->addr + 1));
	/* link-time addresses (a PIE's start at 0): the distance between two functions holds */
	assert_int_equal((int64_t)(m->addr - f->addr),
			 (int64_t)((uintptr_t)main - (uintptr_t)a_c_function));
	assert_false(vmi_dwarf_is_c_function(NULL, f->addr));
	vmi_symtab_free(&c);
	free(self);
	assert_int_equal(a_c_function(1), 2);
}

static void test_no_dwarf(void **state)
{
	static const uint8_t junk[64] = "not an ELF file at all";
	struct vmi_symtab c = {0};
	char err[256] = "";
	size_t n;
	uint8_t *sh;

	(void)state;
	assert_int_equal(vmi_dwarf_c_functions(junk, sizeof(junk), &c, err, sizeof(err)), 0);
	assert_int_equal(c.nr, 0);
	/* a stripped Debian binary */
	sh = slurp("/bin/true", &n);
	assert_int_equal(vmi_dwarf_c_functions(sh, n, &c, err, sizeof(err)), 0);
	free(sh);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_own_functions),
	    cmocka_unit_test(test_no_dwarf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

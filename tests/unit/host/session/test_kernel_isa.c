/* A guest image of an ISA hvtrace has no arch/ table for, refused in one line before anything
 * starts (host/session/kernel_isa.c): crafted arm64 and x86 headers, a gzip'd arm64 Image, an
 * aarch64 ELF, files of unknown kinds and missing files. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/session/kernel_isa.h"
#include "tests/common/files.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char dir[] = "/tmp/hvt-kernel-isa-XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* @name in the test folder holding @n bytes of @p, its path in @path. */
static void file(char *path, size_t len, const char *name, const void *p, size_t n)
{
	snprintf(path, len, "%s/%s", dir, name);
	hv_write_file(path, p, n);
}

static void test_arm64_refused(void **state)
{
	uint8_t h[0x1000] = {0};
	char path[128], err[512], want[512];
	gzFile gz;

	(void)state;
	memcpy(h, "MZ", 2);
	memcpy(h + 0x38, "ARM\x64", 4);
	file(path, sizeof(path), "Image", h, sizeof(h));
	assert_int_equal(kernel_isa_check(path, "--kernel", err, sizeof(err)), -ENOEXEC);
	snprintf(
	    want, sizeof(want),
	    "--kernel %s: an arm64 Linux Image: hvtrace's own VMM runs x86_64 guests; trace "
	    "arm64 guests under QEMU (run --qemu)",
	    path);
	assert_string_equal(err, want);

	snprintf(path, sizeof(path), "%s/vmlinuz", dir);
	gz = gzopen(path, "wb");
	assert_non_null(gz);
	assert_int_equal(gzwrite(gz, h, sizeof(h)), (int)sizeof(h));
	assert_int_equal(gzclose(gz), Z_OK);
	assert_int_equal(kernel_isa_check(path, "--kernel", err, sizeof(err)), -ENOEXEC);
	snprintf(want, sizeof(want),
		 "--kernel %s: a gzip-compressed arm64 Linux Image: hvtrace's own VMM runs x86_64 "
		 "guests; trace arm64 guests under QEMU (run --qemu)",
		 path);
	assert_string_equal(err, want);

	/* an aarch64 vmlinux given as a GUEST.elf: no option named */
	memset(h, 0, sizeof(h));
	memcpy(h, ELFMAG, SELFMAG);
	h[EI_CLASS] = ELFCLASS64;
	h[EI_DATA] = ELFDATA2LSB;
	h[18] = EM_AARCH64;
	file(path, sizeof(path), "vmlinux", h, sizeof(h));
	assert_int_equal(kernel_isa_check(path, NULL, err, sizeof(err)), -ENOEXEC);
	snprintf(
	    want, sizeof(want),
	    "%s: an ELF file for arm64: hvtrace's own VMM runs x86_64 guests; trace arm64 "
	    "guests under QEMU (run --qemu)",
	    path);
	assert_string_equal(err, want);

	/* a machine without a name */
	h[18] = 0x42;
	h[19] = 0x10;
	file(path, sizeof(path), "odd.elf", h, sizeof(h));
	assert_int_equal(kernel_isa_check(path, NULL, err, sizeof(err)), -ENOEXEC);
	snprintf(want, sizeof(want),
		 "%s: an ELF file for e_machine 4162: its machine's guests are not supported; "
		 "hvtrace traces x86_64 and arm64 guests",
		 path);
	assert_string_equal(err, want);
}

static void test_others_pass(void **state)
{
	uint8_t h[0x1000] = {0};
	char path[128], err[512] = "";

	(void)state;
	/* a bzImage and an x86_64 ELF: the backend's own loader takes them */
	memcpy(h + 0x202, "HdrS", 4);
	file(path, sizeof(path), "bzImage", h, sizeof(h));
	assert_int_equal(kernel_isa_check(path, "--kernel", err, sizeof(err)), 0);
	memset(h, 0, sizeof(h));
	memcpy(h, ELFMAG, SELFMAG);
	h[EI_DATA] = ELFDATA2LSB;
	h[18] = EM_X86_64;
	file(path, sizeof(path), "guest.elf", h, sizeof(h));
	assert_int_equal(kernel_isa_check(path, NULL, err, sizeof(err)), 0);
	/* a file of no known kind (an initramfs): the loader names what it lacks */
	file(path, sizeof(path), "initrd", "070701000000", 12);
	assert_int_equal(kernel_isa_check(path, "--kernel", err, sizeof(err)), 0);
	assert_string_equal(err, "");
}

static void test_unreadable(void **state)
{
	char path[128], err[512], want[512];

	(void)state;
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(kernel_isa_check(path, "--kernel", err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "--kernel %s: No such file or directory", path);
	assert_string_equal(err, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_arm64_refused),
	    cmocka_unit_test(test_others_pass),
	    cmocka_unit_test(test_unreadable),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

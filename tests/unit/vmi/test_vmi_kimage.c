/* What a kernel image file is (vmi/vmi_kimage.c): crafted headers of each kind, gzip'd ones read
 * from files, truncated and hostile headers, and the phrases the refusal line uses. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/files.h"
#include "vmi/vmi_kimage.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define HEAD 0x1000

/* An arm64 Image header as Documentation/arch/arm64/booting.rst lays it out (code0 an "MZ" for the
 * EFI stub, the magic at 0x38, the PE header offset at 0x3c), as Debian's 6.12 ships it. */
static void arm64_image(uint8_t *h)
{
	memset(h, 0, HEAD);
	memcpy(h, "MZ\x40\xfa", 4);
	memcpy(h + 0x38, "ARM\x64", 4);
	h[0x3c] = 0x40;
	memcpy(h + 0x40, "PE\0\0\x64\xaa", 6);
}

/* An x86 bzImage's start: the boot sector's "MZ" (EFI stub) and "HdrS" at 0x202. */
static void bzimage(uint8_t *h)
{
	memset(h, 0, HEAD);
	memcpy(h, "MZ", 2);
	memcpy(h + 0x202, "HdrS", 4);
}

/* An ELF header of class @cls and byte order @data for @machine. */
static void elf(uint8_t *h, int cls, int data, unsigned machine)
{
	memset(h, 0, HEAD);
	memcpy(h, ELFMAG, SELFMAG);
	h[EI_CLASS] = (uint8_t)cls;
	h[EI_DATA] = (uint8_t)data;
	h[EI_VERSION] = EV_CURRENT;
	if (data == ELFDATA2LSB) {
		h[18] = machine & 0xff;
		h[19] = machine >> 8;
	} else {
		h[18] = machine >> 8;
		h[19] = machine & 0xff;
	}
}

/* The page size an arm64 Image's header gives (flags at 0x18, bits 2:1), as Debian's 4 KiB (0x0a)
 * and 16 KiB (0x0c) kernels carry it; unspecified is 0, and another kind has none. */
static void test_arm64_page_shift(void **state)
{
	static const struct {
		uint8_t flags;
		unsigned shift;
	} c[] = {{0x0a, 12}, {0x0c, 14}, {0x0e, 16}, {0x08, 0}, {0x00, 0}, {0x03, 12}, {0xfc, 14}};
	uint8_t h[HEAD];
	struct vmi_kimage k;

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		arm64_image(h);
		h[0x18] = c[i].flags;
		vmi_kimage_classify(h, sizeof(h), &k);
		assert_int_equal(k.kind, VMI_KIMAGE_ARM64_IMAGE);
		assert_int_equal(k.page_shift, c[i].shift);
	}
	bzimage(h);
	h[0x18] = 0x0c;
	vmi_kimage_classify(h, sizeof(h), &k);
	assert_int_equal(k.page_shift, 0);
}

static void test_classify_kinds(void **state)
{
	uint8_t h[HEAD];
	struct vmi_kimage k;

	(void)state;
	arm64_image(h);
	vmi_kimage_classify(h, sizeof(h), &k);
	assert_int_equal(k.kind, VMI_KIMAGE_ARM64_IMAGE);
	assert_int_equal(k.machine, EM_AARCH64);
	assert_false(k.gzip);

	bzimage(h);
	vmi_kimage_classify(h, sizeof(h), &k);
	assert_int_equal(k.kind, VMI_KIMAGE_BZIMAGE);
	assert_int_equal(k.machine, EM_X86_64);

	memset(h, 0, sizeof(h));
	memcpy(h + 0x30, "RISCV\0\0\0RSC\x05", 12);
	vmi_kimage_classify(h, sizeof(h), &k);
	assert_int_equal(k.kind, VMI_KIMAGE_RISCV_IMAGE);
	assert_int_equal(k.machine, 243);

	/* EFI zboot: "zimg" at 4, the machine from the PE header */
	arm64_image(h);
	memset(h + 0x38, 0, 4);
	memcpy(h + 4, "zimg", 4);
	vmi_kimage_classify(h, sizeof(h), &k);
	assert_int_equal(k.kind, VMI_KIMAGE_EFI_ZBOOT);
	assert_int_equal(k.machine, EM_AARCH64);
	/* ... whose PE offset points past the head: kind known, machine not */
	h[0x3c] = 0xff;
	h[0x3d] = 0xff;
	vmi_kimage_classify(h, sizeof(h), &k);
	assert_int_equal(k.kind, VMI_KIMAGE_EFI_ZBOOT);
	assert_int_equal(k.machine, 0);
	/* ... or 4 bytes short of its Machine field */
	h[0x3c] = (HEAD - 4) & 0xff;
	h[0x3d] = (HEAD - 4) >> 8;
	memcpy(h + HEAD - 4, "PE\0\0", 4);
	vmi_kimage_classify(h, sizeof(h), &k);
	assert_int_equal(k.machine, 0);

	elf(h, ELFCLASS64, ELFDATA2LSB, EM_AARCH64);
	vmi_kimage_classify(h, sizeof(h), &k);
	assert_int_equal(k.kind, VMI_KIMAGE_ELF);
	assert_int_equal(k.machine, EM_AARCH64);
	elf(h, ELFCLASS64, ELFDATA2MSB, EM_S390);
	vmi_kimage_classify(h, sizeof(h), &k);
	assert_int_equal(k.machine, EM_S390);
	elf(h, ELFCLASS64, ELFDATA2LSB, EM_X86_64);
	vmi_kimage_classify(h, sizeof(h), &k);
	assert_int_equal(k.machine, EM_X86_64);
	/* an ELF whose byte order is neither: not an ELF file */
	elf(h, ELFCLASS64, 7, EM_AARCH64);
	vmi_kimage_classify(h, sizeof(h), &k);
	assert_int_equal(k.kind, VMI_KIMAGE_UNKNOWN);
	assert_int_equal(k.machine, 0);

	/* gzip: said so, nothing more from the compressed bytes */
	memset(h, 0, sizeof(h));
	h[0] = 0x1f;
	h[1] = 0x8b;
	vmi_kimage_classify(h, sizeof(h), &k);
	assert_int_equal(k.kind, VMI_KIMAGE_UNKNOWN);
	assert_true(k.gzip);

	/* anything else (a cpio archive) */
	memset(h, 0, sizeof(h));
	memcpy(h, "070701", 6);
	vmi_kimage_classify(h, sizeof(h), &k);
	assert_int_equal(k.kind, VMI_KIMAGE_UNKNOWN);
	assert_int_equal(k.machine, 0);
	assert_false(k.gzip);
}

/* Each magic read only when the bytes reach past it. */
static void test_classify_truncated(void **state)
{
	uint8_t h[HEAD];
	struct vmi_kimage k;

	(void)state;
	arm64_image(h);
	vmi_kimage_classify(h, 0x3b, &k);
	assert_int_equal(k.kind, VMI_KIMAGE_UNKNOWN);
	vmi_kimage_classify(h, 0x3c, &k);
	assert_int_equal(k.kind, VMI_KIMAGE_ARM64_IMAGE);
	bzimage(h);
	vmi_kimage_classify(h, 0x205, &k);
	assert_int_equal(k.kind, VMI_KIMAGE_UNKNOWN);
	elf(h, ELFCLASS64, ELFDATA2LSB, EM_AARCH64);
	vmi_kimage_classify(h, 19, &k);
	assert_int_equal(k.kind, VMI_KIMAGE_UNKNOWN);
	vmi_kimage_classify(h, 0, &k);
	assert_int_equal(k.kind, VMI_KIMAGE_UNKNOWN);
	assert_false(k.gzip);
}

/* @n bytes at @p gzip'd into the file @path. */
static void write_gz(const char *path, const uint8_t *p, size_t n)
{
	gzFile f = gzopen(path, "wb9");

	assert_non_null(f);
	assert_int_equal(gzwrite(f, p, (unsigned)n), (int)n);
	assert_int_equal(gzclose(f), Z_OK);
}

static void test_read_files(void **state)
{
	char dir[] = "/tmp/hvt-kimage-XXXXXX", path[64], why[128], what[128];
	uint8_t *big = calloc(1, 1 << 20), h[HEAD];
	struct vmi_kimage k;

	(void)state;
	assert_non_null(big);
	assert_non_null(mkdtemp(dir));
	/* a raw Image, 1 MiB of it */
	arm64_image(big);
	snprintf(path, sizeof(path), "%s/Image", dir);
	hv_write_file(path, big, 1 << 20);
	assert_int_equal(vmi_kimage_read(path, &k, why, sizeof(why)), 0);
	assert_int_equal(k.kind, VMI_KIMAGE_ARM64_IMAGE);
	assert_false(k.gzip);
	assert_string_equal(vmi_kimage_describe(&k, what, sizeof(what)), "an arm64 Linux Image");
	/* gzip'd (Debian's vmlinuz of older arm64 kernels): the head decompressed */
	for (size_t i = HEAD; i < (1 << 20);
	     i++) /* not all zeros: a stream longer than one block */
		big[i] = (uint8_t)(i * 2654435761u >> 13);
	snprintf(path, sizeof(path), "%s/vmlinuz", dir);
	write_gz(path, big, 1 << 20);
	assert_int_equal(vmi_kimage_read(path, &k, why, sizeof(why)), 0);
	assert_int_equal(k.kind, VMI_KIMAGE_ARM64_IMAGE);
	assert_int_equal(k.machine, EM_AARCH64);
	assert_true(k.gzip);
	assert_string_equal(vmi_kimage_describe(&k, what, sizeof(what)),
			    "a gzip-compressed arm64 Linux Image");
	/* a gzip'd file of 100 bytes (shorter than the head) */
	write_gz(path, big, 100);
	assert_int_equal(vmi_kimage_read(path, &k, why, sizeof(why)), 0);
	assert_int_equal(k.kind, VMI_KIMAGE_ARM64_IMAGE);
	/* gzip'd ELF for aarch64 */
	elf(h, ELFCLASS64, ELFDATA2LSB, EM_AARCH64);
	write_gz(path, h, sizeof(h));
	assert_int_equal(vmi_kimage_read(path, &k, why, sizeof(why)), 0);
	assert_int_equal(k.kind, VMI_KIMAGE_ELF);
	assert_string_equal(vmi_kimage_describe(&k, what, sizeof(what)),
			    "a gzip-compressed ELF file for arm64");
	/* gzip'd twice: gzip, nothing more */
	snprintf(path, sizeof(path), "%s/twice", dir);
	{
		uint8_t gz[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};

		write_gz(path, gz, sizeof(gz));
	}
	assert_int_equal(vmi_kimage_read(path, &k, why, sizeof(why)), 0);
	assert_int_equal(k.kind, VMI_KIMAGE_UNKNOWN);
	assert_int_equal(k.machine, 0);
	assert_true(k.gzip);
	/* a gzip header followed by garbage: refused as corrupt */
	memset(h, 0xff, sizeof(h));
	h[0] = 0x1f;
	h[1] = 0x8b;
	h[2] = 8;
	h[3] = 0;
	h[9] = 3;
	snprintf(path, sizeof(path), "%s/corrupt", dir);
	hv_write_file(path, h, sizeof(h));
	assert_int_equal(vmi_kimage_read(path, &k, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "a corrupt gzip stream");
	/* an empty file: nothing known */
	snprintf(path, sizeof(path), "%s/empty", dir);
	hv_write_file(path, "", 0);
	assert_int_equal(vmi_kimage_read(path, &k, why, sizeof(why)), 0);
	assert_int_equal(k.kind, VMI_KIMAGE_UNKNOWN);
	assert_string_equal(vmi_kimage_describe(&k, what, sizeof(what)),
			    "no kernel image hvtrace knows");
	/* no file */
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(vmi_kimage_read(path, &k, why, sizeof(why)), -ENOENT);
	assert_string_equal(why, "No such file or directory");
	for (const char *f = "Image\0vmlinuz\0twice\0corrupt\0empty\0"; *f; f += strlen(f) + 1) {
		snprintf(path, sizeof(path), "%s/%s", dir, f);
		unlink(path);
	}
	rmdir(dir);
	free(big);
}

static void test_describe(void **state)
{
	struct vmi_kimage k = {.kind = VMI_KIMAGE_BZIMAGE, .machine = EM_X86_64};
	char b[128];

	(void)state;
	assert_string_equal(vmi_kimage_describe(&k, b, sizeof(b)), "an x86 bzImage");
	k = (struct vmi_kimage){.kind = VMI_KIMAGE_EFI_ZBOOT, .machine = EM_AARCH64};
	assert_string_equal(vmi_kimage_describe(&k, b, sizeof(b)),
			    "an EFI zboot image (a compressed arm64 kernel)");
	k = (struct vmi_kimage){.kind = VMI_KIMAGE_ELF, .machine = 4242};
	assert_string_equal(vmi_kimage_describe(&k, b, sizeof(b)),
			    "an ELF file for e_machine 4242");
	k = (struct vmi_kimage){.kind = VMI_KIMAGE_RISCV_IMAGE, .machine = 243};
	assert_string_equal(vmi_kimage_describe(&k, b, sizeof(b)), "a RISC-V Linux Image");
	assert_string_equal(vmi_kimage_isa(EM_AARCH64), "arm64");
	assert_string_equal(vmi_kimage_isa(EM_X86_64), "x86_64");
	assert_null(vmi_kimage_isa(4242));
	/* cut to the buffer, NUL-terminated */
	k = (struct vmi_kimage){.kind = VMI_KIMAGE_ARM64_IMAGE, .machine = EM_AARCH64};
	assert_string_equal(vmi_kimage_describe(&k, b, 6), "an ar");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_classify_kinds),
	    cmocka_unit_test(test_arm64_page_shift),
	    cmocka_unit_test(test_classify_truncated),
	    cmocka_unit_test(test_read_files),
	    cmocka_unit_test(test_describe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

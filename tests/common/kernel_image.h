/* A Debian kernel's decompressed image for tests: the vmlinux inside a bzImage (found by the
 * zstd, gzip, xz or lz4 magic, decompressed by the system's zstd, gzip, xz or lz4 as
 * extract-vmlinux does)
 * with its PT_LOAD segments laid out at their addresses, as the kernel-image mapping holds it. */
#ifndef HVT_TESTS_KERNEL_IMAGE_H
#define HVT_TESTS_KERNEL_IMAGE_H

#include <stddef.h>
#include <stdint.h>

struct kernel_image {
	uint8_t *img; /* malloc'd, @len bytes; what lies between segments is zero */
	size_t len;
	uint64_t base; /* the address of img[0]: the lowest segment's, 2 MiB-aligned down */
};

/* Loads the vmlinux inside the bzImage at @path into @ki. Returns 0, -ENOENT (no such file, or
 * no decompressor), or -EINVAL (no payload found, or not a 64-bit ELF). Caller frees ki->img. */
int kernel_image_load(const char *path, struct kernel_image *ki);

/* Where function @func of @ki (found in the image's own kallsyms) has its first instruction after its
 * ENDBR64 (if any) and its 5-byte fentry site (CALL __fentry__, or the NOP5 objtool wrote), as an
 * offset into it; *@first_end gets where its first instruction ends. Returns the offset, -ENOENT
 * (no such symbol in the image) or -EILSEQ (no fentry site there). */
long kernel_image_past_fentry(const struct kernel_image *ki, const char *func, unsigned *first_end);

#endif

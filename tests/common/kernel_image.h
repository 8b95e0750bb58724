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

#endif

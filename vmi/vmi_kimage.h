/* What a kernel image file is, from its first bytes: an x86 bzImage, an arm64 or RISC-V Linux Image
 * (raw or gzip'd), an EFI zboot image, an ELF file, and for which machine (an ELF e_machine), so
 * that hvtrace refuses a guest of an ISA it has no arch/ table for before anything runs (issue 38).
 */
#ifndef HVT_VMI_KIMAGE_H
#define HVT_VMI_KIMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vmi_kimage_kind {
	VMI_KIMAGE_UNKNOWN,
	VMI_KIMAGE_BZIMAGE,	/* x86: "HdrS" at 0x202 */
	VMI_KIMAGE_ARM64_IMAGE, /* "ARM\x64" at 0x38 (Documentation/arch/arm64/booting.rst) */
	VMI_KIMAGE_RISCV_IMAGE, /* "RSC\x05" at 0x38
				   (Documentation/arch/riscv/boot-image-header.rst) */
	VMI_KIMAGE_EFI_ZBOOT, /* "MZ", "zimg" at 4: a compressed kernel in an EFI app; PE machine */
	VMI_KIMAGE_ELF,	      /* an ELF file: e_machine */
};

struct vmi_kimage {
	enum vmi_kimage_kind kind;
	unsigned machine; /* the ELF e_machine of the kernel's ISA (EM_X86_64, EM_AARCH64, ...); 0
			     unknown */
	bool gzip; /* the file is gzip'd: kind and machine are those of its decompressed start */
	/* an arm64 Image: log2 of the kernel's page size from its header's flags (bits 2:1 of the
	 * u64 at 0x18: 12, 14 or 16), 0 where the header leaves it unspecified; 0 for other kinds */
	unsigned page_shift;
};

/* The head of a kernel image to classify: at least this much (or the whole file) is looked at. */
#define VMI_KIMAGE_HEAD 4096

/* Classifies the first @n bytes @h of a file (bytes from a file, untrusted: every offset is checked
 * against @n) into *@k. A gzip'd file is classified as VMI_KIMAGE_UNKNOWN with k->gzip set: the
 * caller decompresses its start (vmi_kimage_read does). Pure. */
void vmi_kimage_classify(const uint8_t *h, size_t n, struct vmi_kimage *k);

/* Classifies the start of a file, @n bytes at @buf, a gzip'd one by its decompressed head (at most
 * VMI_KIMAGE_HEAD bytes out of at most 64 KiB of @buf). 0, -EINVAL for a gzip stream corrupt before
 * VMI_KIMAGE_HEAD bytes, -ENOMEM. Pure but for zlib's allocation. */
int vmi_kimage_identify(const uint8_t *buf, size_t n, struct vmi_kimage *k);

/* Reads the start of the file @path (a gzip'd one decompressed, at most VMI_KIMAGE_HEAD bytes out
 * of at most 64 KiB in) and classifies it into *@k. 0, or -errno with the reason in @why
 * (unreadable, or a gzip stream that is corrupt before VMI_KIMAGE_HEAD bytes). Any thread. */
int vmi_kimage_read(const char *path, struct vmi_kimage *k, char *why, size_t whylen);

/* The ISA of an ELF machine as a user names it ("x86_64", "arm64", "riscv64", "i386"), or NULL.
 * Pure. */
const char *vmi_kimage_isa(unsigned machine);

/* One phrase for what @k is ("an arm64 Linux Image", "a gzip-compressed arm64 Linux Image", "an ELF
 * file for arm64"), into @buf; returns @buf. Pure. */
char *vmi_kimage_describe(const struct vmi_kimage *k, char *buf, size_t len);

#endif

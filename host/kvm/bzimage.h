/* A Linux x86 bzImage: its setup header (boot protocol 2.12 or later, 64-bit entry) and its
 * compressed payload, decompressed here to the kernel's ELF image (vmlinux). Pure: no KVM, no
 * files. */
#ifndef HVT_BZIMAGE_H
#define HVT_BZIMAGE_H

#include <stddef.h>
#include <stdint.h>

#define BZ_HDR_OFFSET 0x1f1	      /* the setup header's place in the file and in boot_params */
#define BZ_HDR_MAX    (0x280 - 0x1f1) /* the setup header's bytes that boot_params holds */

enum bz_codec { BZ_GZIP, BZ_XZ, BZ_LZ4, BZ_ZSTD, BZ_LZMA, BZ_BZIP2, BZ_LZO, BZ_UNKNOWN };

struct bzimage {
	const uint8_t *hdr;	/* the setup header in the file, from offset 0x1f1 */
	size_t hdr_len;		/* its length (from the jump at 0x200), <= BZ_HDR_MAX */
	uint16_t version;	/* boot protocol */
	const uint8_t *payload; /* the compressed kernel, borrowed from the file */
	size_t payload_len;
	enum bz_codec codec;
	uint32_t cmdline_size; /* the longest command line the kernel takes, without the NUL */
	uint64_t pref_address; /* where the kernel wants to run (its link address, physical) */
	uint32_t init_size;    /* memory the kernel needs from pref_address during boot */
	uint32_t vmlinux_size; /* the payload's decompressed size (its last four bytes) */
};

/* Checks @img (@len bytes, borrowed: @bz points into it) as a bzImage a 64-bit loader can boot: the
 * "HdrS" magic, protocol >= 2.12, a 64-bit entry (XLF_KERNEL_64), setup and payload inside the
 * file. Returns 0, or -EINVAL with one line in @err naming what is wrong and its offset. */
int bzimage_parse(const uint8_t *img, size_t len, struct bzimage *bz, char *err, size_t errlen);

/* The codec's name ("lz4", ...). Static string. */
const char *bzimage_codec_name(enum bz_codec c);

/* Decompresses @bz's payload into a new buffer of bz->vmlinux_size bytes (*@out, the caller frees).
 * Every codec the kernel's build offers: gzip, xz, lz4 (legacy framing), zstd, lzma (alone format),
 * bzip2, lzo (lzop framing); the output never exceeds vmlinux_size. Returns 0, -ENOTSUP (an unknown
 * magic), -EINVAL (corrupt or not the announced size), -ENOMEM; one line in @err. */
int bzimage_decompress(const struct bzimage *bz, uint8_t **out, size_t *outlen, char *err,
		       size_t errlen);

#endif

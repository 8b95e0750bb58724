/* A kernel image's kind and machine from its first bytes (vmi_kimage.h). */
#include "vmi/vmi_kimage.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#ifndef EM_RISCV
#define EM_RISCV 243
#endif

#define GZIP_IN_MAX	   (64u << 10) /* compressed bytes read for the decompressed head */
#define PE_MACHINE_AMD64   0x8664
#define PE_MACHINE_ARM64   0xaa64
#define PE_MACHINE_RISCV64 0x5064

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The ELF machine of a PE header's Machine field at the offset e_lfanew (0x3c) names, or 0. */
static unsigned pe_machine(const uint8_t *h, size_t n)
{
	uint32_t pe;

	if (n < 0x40)
		return 0;
	pe = le32(h + 0x3c);
	if (pe > n || n - pe < 6 || memcmp(h + pe, "PE\0\0", 4))
		return 0;
	switch (h[pe + 4] | h[pe + 5] << 8) {
	case PE_MACHINE_AMD64:
		return EM_X86_64;
	case PE_MACHINE_ARM64:
		return EM_AARCH64;
	case PE_MACHINE_RISCV64:
		return EM_RISCV;
	default:
		return 0;
	}
}

void vmi_kimage_classify(const uint8_t *h, size_t n, struct vmi_kimage *k)
{
	memset(k, 0, sizeof(*k));
	if (n >= 0x206 && !memcmp(h + 0x202, "HdrS", 4)) {
		k->kind = VMI_KIMAGE_BZIMAGE;
		k->machine = EM_X86_64;
	} else if (n >= 0x3c && !memcmp(h + 0x38, "ARM\x64", 4)) {
		static const unsigned shift[4] = {0, 12, 14, 16};

		k->kind = VMI_KIMAGE_ARM64_IMAGE;
		k->machine = EM_AARCH64;
		k->page_shift = shift[(h[0x18] >> 1) & 3]; /* flags: bits 2:1 the page size */
	} else if (n >= 0x3c && !memcmp(h + 0x38, "RSC\x05", 4)) {
		k->kind = VMI_KIMAGE_RISCV_IMAGE;
		k->machine = EM_RISCV;
	} else if (n >= 8 && !memcmp(h, "MZ", 2) && !memcmp(h + 4, "zimg", 4)) {
		k->kind = VMI_KIMAGE_EFI_ZBOOT;
		k->machine = pe_machine(h, n);
	} else if (n >= 20 && !memcmp(h, ELFMAG, SELFMAG) &&
		   (h[EI_DATA] == ELFDATA2LSB || h[EI_DATA] == ELFDATA2MSB)) {
		/* e_machine sits at 18 in both classes, in the file's byte order */
		k->kind = VMI_KIMAGE_ELF;
		k->machine = h[EI_DATA] == ELFDATA2LSB ? (unsigned)(h[18] | h[19] << 8)
						       : (unsigned)(h[18] << 8 | h[19]);
	} else if (n >= 2 && h[0] == 0x1f && h[1] == 0x8b) {
		k->gzip = true;
	}
}

/* Decompresses the gzip stream @in (@n bytes, maybe cut short) into @out (up to @cap bytes): the
 * bytes produced, or -EINVAL for a stream corrupt before them. */
static ssize_t gunzip_head(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	z_stream z = {
	    .next_in = (Bytef *)in, .avail_in = (uInt)n, .next_out = out, .avail_out = (uInt)cap};
	int ret;

	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return -ENOMEM;
	ret = inflate(&z, Z_SYNC_FLUSH);
	inflateEnd(&z);
	if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR)
		return -EINVAL;
	return (ssize_t)(cap - z.avail_out);
}

int vmi_kimage_identify(const uint8_t *buf, size_t n, struct vmi_kimage *k)
{
	uint8_t head[VMI_KIMAGE_HEAD];
	ssize_t out;

	vmi_kimage_classify(buf, n, k);
	if (!k->gzip)
		return 0;
	out = gunzip_head(buf, n < GZIP_IN_MAX ? n : GZIP_IN_MAX, head, sizeof(head));
	if (out < 0)
		return (int)out;
	vmi_kimage_classify(head, (size_t)out, k);
	if (k->gzip) /* gzip'd twice: named as gzip'd, nothing more */
		k->kind = VMI_KIMAGE_UNKNOWN;
	k->gzip = true;
	return 0;
}

int vmi_kimage_read(const char *path, struct vmi_kimage *k, char *why, size_t whylen)
{
	uint8_t *in;
	ssize_t got = 0, r;
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;

	if (fd < 0) {
		e = errno;
		snprintf(why, whylen, "%s", strerror(e));
		return -e;
	}
	in = malloc(GZIP_IN_MAX);
	if (!in) {
		close(fd);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	while ((size_t)got < GZIP_IN_MAX &&
	       (r = pread(fd, in + got, GZIP_IN_MAX - got, got)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = errno;
			close(fd);
			free(in);
			snprintf(why, whylen, "%s", strerror(e));
			return -e;
		}
		got += r;
	}
	close(fd);
	e = vmi_kimage_identify(in, (size_t)got, k);
	free(in);
	if (e < 0)
		snprintf(why, whylen, "%s",
			 e == -ENOMEM ? "out of memory" : "a corrupt gzip stream");
	return e;
}

const char *vmi_kimage_isa(unsigned machine)
{
	switch (machine) {
	case EM_X86_64:
		return "x86_64";
	case EM_AARCH64:
		return "arm64";
	case EM_RISCV:
		return "riscv64";
	case EM_386:
		return "i386";
	case EM_ARM:
		return "arm";
	case EM_PPC64:
		return "ppc64";
	case EM_S390:
		return "s390x";
	default:
		return NULL;
	}
}

char *vmi_kimage_describe(const struct vmi_kimage *k, char *buf, size_t len)
{
	const char *isa = vmi_kimage_isa(k->machine), *gz = k->gzip ? "gzip-compressed " : "";
	char m[32];

	if (!isa) {
		snprintf(m, sizeof(m), "e_machine %u", k->machine);
		isa = m;
	}
	switch (k->kind) {
	case VMI_KIMAGE_BZIMAGE:
		snprintf(buf, len, "%s %sx86 bzImage", *gz ? "a" : "an", gz);
		break;
	case VMI_KIMAGE_ARM64_IMAGE:
		snprintf(buf, len, "%s %sarm64 Linux Image", *gz ? "a" : "an", gz);
		break;
	case VMI_KIMAGE_RISCV_IMAGE:
		snprintf(buf, len, "a %sRISC-V Linux Image", gz);
		break;
	case VMI_KIMAGE_EFI_ZBOOT:
		snprintf(buf, len, "%s %sEFI zboot image (a compressed %s kernel)",
			 *gz ? "a" : "an", gz, k->machine ? isa : "unknown");
		break;
	case VMI_KIMAGE_ELF:
		snprintf(buf, len, "%s %sELF file for %s", *gz ? "a" : "an", gz, isa);
		break;
	default:
		snprintf(buf, len, "%s",
			 k->gzip ? "a gzip-compressed file of unknown kind"
				 : "no kernel image hvtrace knows");
		break;
	}
	return buf;
}

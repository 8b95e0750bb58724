/* Booting Linux in the embedded VMM, the pure parts: the bzImage setup header and payload
 * (host/kvm/bzimage.c) with hostile images, decompression of payloads made here in every codec the
 * kernel's build offers (lz4 legacy framing, gzip, xz, zstd, lzma alone, bzip2, lzop) and of the
 * real Debian 6.12 and 7.3 bzImages (zstd) when the kernel cache has them, the kernel ELF's
 * loading, e820 map, boot_params and boot GDT (host/kvm/linux_boot.c), the ACPI tables
 * (host/kvm/acpi.c) and the 16550A UART (host/kvm/uart8250.c), byte for byte, and the coalesced
 * ring its transmit writes come through (host/kvm/pio_ring.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/kvm/acpi.h"
#include "host/kvm/bzimage.h"
#include "host/kvm/linux_boot.h"
#include "host/kvm/pio_ring.h"
#include "host/kvm/uart8250.h"

#include <bzlib.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <lz4.h>
#include <lzma.h>
#include <limits.h>
#include <lzo/lzo1x.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <unistd.h>
#include <zstd.h>

#define SETUP_SECTS 3
#define SETUP_LEN   ((SETUP_SECTS + 1) * 512)

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* A small kernel ELF: two PT_LOAD segments at 1 MiB + 0x1000 and + 0x3000, the second with bss. */
static size_t make_elf(uint8_t *buf)
{
	Elf64_Ehdr eh = {.e_type = ET_EXEC,
			 .e_machine = EM_X86_64,
			 .e_version = EV_CURRENT,
			 .e_entry = 0x101000,
			 .e_phoff = sizeof(Elf64_Ehdr),
			 .e_ehsize = sizeof(Elf64_Ehdr),
			 .e_phentsize = sizeof(Elf64_Phdr),
			 .e_phnum = 2};
	Elf64_Phdr ph[2] = {
	    {.p_type = PT_LOAD,
	     .p_offset = 0x200,
	     .p_paddr = 0x101000,
	     .p_filesz = 0x10,
	     .p_memsz = 0x10},
	    {.p_type = PT_LOAD,
	     .p_offset = 0x210,
	     .p_paddr = 0x103000,
	     .p_filesz = 0x8,
	     .p_memsz = 0x20},
	};

	memset(buf, 0, 0x218);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	memcpy(buf, &eh, sizeof(eh));
	memcpy(buf + sizeof(eh), ph, sizeof(ph));
	for (int i = 0; i < 0x18; i++)
		buf[0x200 + i] = (uint8_t)(0xa0 + i);
	return 0x218;
}

/* A bzImage around @payload (@plen bytes, the decompressed size already appended). */
static uint8_t *make_bz(const uint8_t *payload, size_t plen, size_t *len)
{
	uint8_t *img = calloc(1, SETUP_LEN + plen);

	img[0x1f1] = SETUP_SECTS;
	img[0x201] = 0x6a; /* header ends at 0x26c */
	put32(img + 0x202, 0x53726448);
	img[0x206] = 0x0f; /* protocol 2.15 */
	img[0x207] = 0x02;
	img[0x211] = 0x01;
	put32(img + 0x22c, 0x7fffffff);
	img[0x236] = 0x7f; /* xloadflags */
	put32(img + 0x238, 2047);
	put32(img + 0x248, 0);
	put32(img + 0x24c, (uint32_t)plen);
	put32(img + 0x258, 0x1000000);
	put32(img + 0x260, 0x3378000);
	memcpy(img + SETUP_LEN, payload, plen);
	*len = SETUP_LEN + plen;
	return img;
}

/* The kernel's legacy lz4: magic, (size, block)..., then the decompressed size. */
static size_t lz4_payload(const uint8_t *in, size_t n, uint8_t *out)
{
	int c;

	put32(out, 0x184c2102);
	c = LZ4_compress_default((const char *)in, (char *)out + 8, (int)n, 4096);
	assert_true(c > 0);
	put32(out + 4, (uint32_t)c);
	put32(out + 8 + c, (uint32_t)n);
	return 12 + (size_t)c;
}

static size_t gzip_payload(const uint8_t *in, size_t n, uint8_t *out)
{
	z_stream z = {
	    .next_in = (Bytef *)in, .avail_in = (uInt)n, .next_out = out, .avail_out = 4096};

	assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
			 Z_OK);
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	deflateEnd(&z);
	put32(out + z.total_out, (uint32_t)n);
	return z.total_out + 4;
}

static size_t xz_payload(const uint8_t *in, size_t n, uint8_t *out)
{
	size_t pos = 0;

	assert_int_equal(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC32, NULL, in, n, out, &pos, 4096),
			 LZMA_OK);
	put32(out + pos, (uint32_t)n);
	return pos + 4;
}

static size_t zstd_payload(const uint8_t *in, size_t n, uint8_t *out)
{
	size_t c = ZSTD_compress(out, 4096, in, n, 19);

	assert_false(ZSTD_isError(c));
	put32(out + c, (uint32_t)n);
	return c + 4;
}

static size_t bzip2_payload(const uint8_t *in, size_t n, uint8_t *out)
{
	unsigned int c = 4096;

	assert_int_equal(
	    BZ2_bzBuffToBuffCompress((char *)out, &c, (char *)in, (unsigned int)n, 9, 0, 0), BZ_OK);
	put32(out + c, (uint32_t)n);
	return c + 4;
}

/* lzma alone as `lzma -9` in a pipe writes it: size unknown (-1), an end marker. */
static size_t lzma_payload(const uint8_t *in, size_t n, uint8_t *out)
{
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_options_lzma opt;

	assert_false(lzma_lzma_preset(&opt, 6));
	assert_int_equal(lzma_alone_encoder(&s, &opt), LZMA_OK);
	s.next_in = in;
	s.avail_in = n;
	s.next_out = out;
	s.avail_out = 4096;
	assert_int_equal(lzma_code(&s, LZMA_FINISH), LZMA_STREAM_END);
	lzma_end(&s);
	assert_int_equal(out[0], 0x5d);
	put32(out + s.total_out, (uint32_t)n);
	return s.total_out + 4;
}

static void put32be(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* lzop's framing as `lzop -9` writes it (version 1.04, LZO1X-999, adler32 of both sides), one block
 * of
 * @n bytes, then the end mark. */
static size_t lzo_payload(const uint8_t *in, size_t n, uint8_t *out)
{
	static const uint8_t head[] = {
	    0x89, 'L',	'Z',  'O',  0,	  0x0d, 0x0a, 0x1a, 0x0a, /* magic */
	    0x10, 0x40, 0x20, 0xa0, 0x09, 0x40,			  /* version, library, needed */
	    3,	  9,						  /* LZO1X-999, level 9 */
	    0,	  0,	0,    0x03,				  /* flags: adler32 d and c */
	    0,	  0,	0x81, 0xa4,				  /* mode */
	    0,	  0,	0,    0,    0,	  0,	0,    0,	  /* mtime */
	    0,							  /* no name */
	};
	static uint8_t wrk[LZO1X_999_MEM_COMPRESS];
	size_t pos = sizeof(head);
	lzo_uint c = 4096;
	uint8_t tmp[4096];

	assert_int_equal(lzo_init(), LZO_E_OK);
	memcpy(out, head, sizeof(head));
	put32be(out + pos, lzo_adler32(1, out + 9, pos - 9));
	pos += 4;
	assert_int_equal(lzo1x_999_compress(in, n, tmp, &c, wrk), LZO_E_OK);
	assert_true(c < n);
	put32be(out + pos, (uint32_t)n);
	put32be(out + pos + 4, (uint32_t)c);
	put32be(out + pos + 8, lzo_adler32(1, in, n));
	put32be(out + pos + 12, lzo_adler32(1, tmp, c));
	pos += 16;
	memcpy(out + pos, tmp, c);
	pos += c;
	put32be(out + pos, 0);
	put32(out + pos + 4, (uint32_t)n);
	return pos + 8;
}

static void check_roundtrip(size_t (*pack)(const uint8_t *, size_t, uint8_t *), enum bz_codec c)
{
	uint8_t elf[0x218], payload[4096], *img, *out;
	size_t elen = make_elf(elf), plen = pack(elf, elen, payload), len, olen;
	struct bzimage bz;
	char err[256];

	img = make_bz(payload, plen, &len);
	assert_int_equal(bzimage_parse(img, len, &bz, err, sizeof(err)), 0);
	assert_int_equal(bz.codec, c);
	assert_int_equal(bz.version, 0x20f);
	assert_int_equal(bz.vmlinux_size, elen);
	assert_int_equal(bz.cmdline_size, 2047);
	assert_int_equal(bz.pref_address, 0x1000000);
	assert_int_equal(bz.init_size, 0x3378000);
	assert_int_equal(bz.hdr_len, 0x26c - 0x1f1);
	assert_ptr_equal(bz.payload, img + SETUP_LEN);
	assert_int_equal(bzimage_decompress(&bz, &out, &olen, err, sizeof(err)), 0);
	assert_int_equal(olen, elen);
	assert_memory_equal(out, elf, elen);
	free(out);
	free(img);
}

static void test_decompress_lz4(void **state)
{
	(void)state;
	check_roundtrip(lz4_payload, BZ_LZ4);
}

static void test_decompress_gzip(void **state)
{
	(void)state;
	check_roundtrip(gzip_payload, BZ_GZIP);
}

static void test_decompress_xz(void **state)
{
	(void)state;
	check_roundtrip(xz_payload, BZ_XZ);
}

static void test_decompress_zstd(void **state)
{
	(void)state;
	check_roundtrip(zstd_payload, BZ_ZSTD);
}

static void test_decompress_bzip2(void **state)
{
	(void)state;
	check_roundtrip(bzip2_payload, BZ_BZIP2);
}

static void test_decompress_lzma(void **state)
{
	(void)state;
	check_roundtrip(lzma_payload, BZ_LZMA);
}

static void test_decompress_lzo(void **state)
{
	(void)state;
	check_roundtrip(lzo_payload, BZ_LZO);
}

/* @pack's payload, changed by @edit at byte @at (or the appended size by @dsize), then
 * decompressed: -EINVAL, nothing out, and an error line starting with @msg. */
static void decompress_fails(size_t (*pack)(const uint8_t *, size_t, uint8_t *), size_t at,
			     uint8_t flip, int dsize, const char *msg)
{
	uint8_t elf[0x218], payload[4096], *img, *out = (uint8_t *)1;
	size_t plen = pack(elf, make_elf(elf), payload), len, olen = 1;
	struct bzimage bz;
	char err[256];

	if (at < plen)
		payload[at] ^= flip;
	put32(payload + plen - 4, (uint32_t)((int)get32(payload + plen - 4) + dsize));
	img = make_bz(payload, plen, &len);
	assert_int_equal(bzimage_parse(img, len, &bz, err, sizeof(err)), 0);
	assert_int_equal(bzimage_decompress(&bz, &out, &olen, err, sizeof(err)), -EINVAL);
	assert_null(out);
	assert_int_equal(olen, 0);
	if (strncmp(err, msg, strlen(msg)))
		fail_msg("expected \"%s...\", got \"%s\"", msg, err);
	assert_null(strchr(err, '\n'));
	free(img);
}

/* The new codecs with corrupt data, an appended size one short of the stream (output bounded: the
 * decompressor must stop at it) and one past it, and headers that lie. */
static void test_decompress_hostile_codecs(void **state)
{
	static const struct {
		size_t (*pack)(const uint8_t *, size_t, uint8_t *);
		const char *name;
		size_t flip_at; /* a byte of compressed data */
	} c[] = {
	    {zstd_payload, "zstd", 12},
	    {bzip2_payload, "bzip2", 20},
	    {lzma_payload, "lzma", 30},
	    {lzo_payload, "lzo", 75},
	};
	char msg[80];

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		snprintf(msg, sizeof(msg), "%s payload is corrupt or not the 536 bytes", c[i].name);
		decompress_fails(c[i].pack, c[i].flip_at, 0x55, 0, msg);
		snprintf(msg, sizeof(msg), "%s payload is corrupt or not the 535 bytes", c[i].name);
		decompress_fails(c[i].pack, SIZE_MAX, 0, -1, msg);
		snprintf(msg, sizeof(msg), "%s payload is corrupt or not the 537 bytes", c[i].name);
		decompress_fails(c[i].pack, SIZE_MAX, 0, 1, msg);
	}
	/* lzma alone: a header claiming 2^40 bytes (output still stops at the appended size) */
	decompress_fails(lzma_payload, 5 + 5, 0x01, 0, "lzma payload is corrupt");
	/* lzop: a block claiming 16 MiB (byte 38: the first block's size), a compressed size past
	 * the decompressed one, an unknown header version's shorter header, a bad data checksum */
	decompress_fails(lzo_payload, 38 + 1, 0xff, 0, "lzo payload is corrupt");
	decompress_fails(lzo_payload, 38 + 4 + 2, 0x10, 0, "lzo payload is corrupt");
	decompress_fails(lzo_payload, 9, 0x10, 0, "lzo payload is corrupt");
	decompress_fails(lzo_payload, 38 + 8 + 3, 0x01, 0, "lzo payload is corrupt");
}

/* Reads the whole file @path into a new buffer; NULL if it cannot. */
static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET)) {
		buf = malloc((size_t)n);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

/* The bzImage of the cached Debian package whose name starts with @prefix: its vmlinuz in boot/
 * (6.x) or usr/lib/modules/<ver>/vmlinuz.unsigned (7.x's linux-binary-unsigned). */
static bool debian_bzimage(const char *cache, const char *prefix, char *path, size_t n)
{
	char dir[PATH_MAX];
	struct dirent *e;
	bool found = false;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/kernels", cache);
	if (!(d = opendir(dir)))
		return false;
	while (!found && (e = readdir(d))) {
		const char *ver;

		size_t len = strlen(e->d_name);

		/* x86-64 kernels only (the cache holds other architectures' too) */
		if (strncmp(e->d_name, prefix, strlen(prefix)) || len < 6 ||
		    strcmp(e->d_name + len - 6, "-amd64"))
			continue;
		if (!strncmp(e->d_name, "linux-image-", 12)) {
			ver = e->d_name + 12;
			snprintf(path, n, "%s/%s/boot/vmlinuz-%s", dir, e->d_name, ver);
		} else {
			/* linux-binary-unsigned-7.3.4+deb13-cloud-amd64:
			 * version 7.3.4+deb13-cloud-amd64 */
			ver = e->d_name + strlen("linux-binary-unsigned-");
			snprintf(path, n, "%s/%s/usr/lib/modules/%s/vmlinuz.unsigned", dir,
				 e->d_name, ver);
		}
		found = access(path, R_OK) == 0;
	}
	closedir(d);
	return found;
}

/* Debian's own zstd bzImages (6.12 of trixie, 7.3 of trixie-backports), when the kernel cache
 * ($HVTRACE_CACHE, default /var/cache/hvtrace) has them: decompressed to exactly the announced
 * size, a 64-bit x86 ELF whose segments load (lboot_load_elf) at the preferred address within
 * init_size. */
static void test_decompress_debian(void **state)
{
	static const char *const kernels[] = {"linux-image-6.12.", "linux-binary-unsigned-7.3."};
	const char *cache =
	    getenv("HVTRACE_CACHE") ? getenv("HVTRACE_CACHE") : "/var/cache/hvtrace";
	int checked = 0;

	(void)state;
	for (size_t k = 0; k < sizeof(kernels) / sizeof(kernels[0]); k++) {
		char path[PATH_MAX * 2], err[256];
		uint8_t *img, *out, *ram;
		uint64_t entry, end;
		struct bzimage bz;
		size_t len = 0, olen;
		Elf64_Ehdr eh;

		if (!debian_bzimage(cache, kernels[k], path, sizeof(path)))
			continue;
		img = slurp(path, &len);
		assert_non_null(img);
		if (bzimage_parse(img, len, &bz, err, sizeof(err)))
			fail_msg("%s: %s", path, err);
		assert_int_equal(bz.codec, BZ_ZSTD);
		if (bzimage_decompress(&bz, &out, &olen, err, sizeof(err)))
			fail_msg("%s: %s", path, err);
		assert_int_equal(olen, bz.vmlinux_size);
		assert_true(olen > sizeof(eh));
		memcpy(&eh, out, sizeof(eh));
		assert_memory_equal(eh.e_ident, ELFMAG, SELFMAG);
		assert_int_equal(eh.e_ident[EI_CLASS], ELFCLASS64);
		assert_int_equal(eh.e_machine, EM_X86_64);
		assert_int_equal(eh.e_type, ET_EXEC);
		ram = calloc(1, bz.pref_address + bz.init_size);
		assert_non_null(ram);
		if (lboot_load_elf(ram, bz.pref_address + bz.init_size, out, olen, &entry, &end,
				   err, sizeof(err)))
			fail_msg("%s: %s", path, err);
		/* startup_64: in the first segment, not always its first byte (6.12: +0xc43) */
		assert_true(entry >= bz.pref_address && entry < end);
		assert_true(end <= bz.pref_address + bz.init_size);
		printf("%s: zstd, %zu -> %zu bytes, entry 0x%llx, loaded to 0x%llx\n", path,
		       bz.payload_len, olen, (unsigned long long)entry, (unsigned long long)end);
		free(ram);
		free(out);
		free(img);
		checked++;
	}
	if (!checked) {
		printf("no Debian 6.12 or 7.3 kernel under %s/kernels: skipped\n", cache);
		skip();
	}
}

/* One hostile image: parse fails with -EINVAL and exactly @msg. */
static void parse_fails(const uint8_t *img, size_t len, const char *msg)
{
	struct bzimage bz;
	char err[256];

	assert_int_equal(bzimage_parse(img, len, &bz, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, msg);
}

static void test_parse_hostile(void **state)
{
	uint8_t elf[0x218], payload[4096], *img;
	size_t plen = lz4_payload(elf, make_elf(elf), payload), len;
	char msg[160];

	(void)state;
	img = make_bz(payload, plen, &len);
	parse_fails(img, 0x100, "truncated: 256 bytes, a setup header needs 0x270");
	snprintf(msg, sizeof(msg),
		 "payload (offsets 0x248/0x24c) at 0x800+0x%zx is not inside the file", plen);
	parse_fails(img, len - 1, msg);
	img[0x1f1] = 200; /* setup past the end */
	snprintf(msg, sizeof(msg),
		 "truncated: setup_sects (offset 0x1f1) ends at 0x19200, file is 0x%zx", len);
	parse_fails(img, len, msg);
	img[0x1f1] = SETUP_SECTS;
	put32(img + 0x24c, 0xffffffff); /* oversized payload length */
	parse_fails(img, len,
		    "payload (offsets 0x248/0x24c) at 0x800+0xffffffff is not inside the file");
	put32(img + 0x24c, (uint32_t)plen);
	put32(img + 0x248, 0xfffffff0); /* payload offset wraps */
	snprintf(msg, sizeof(msg),
		 "payload (offsets 0x248/0x24c) at 0x1000007f0+0x%zx is not inside the file", plen);
	parse_fails(img, len, msg);
	put32(img + 0x248, 0);
	put32(img + SETUP_LEN + plen - 4, 0x7fffffff); /* claims 2 GiB decompressed */
	parse_fails(img, len, "payload at 0x800: decompressed size 2147483647 is out of range");
	put32(img + SETUP_LEN + plen - 4, 0x218);
	img[0x236] = 0x7e;
	parse_fails(img, len, "setup header at 0x236: xloadflags 0x7e lacks XLF_KERNEL_64");
	img[0x236] = 0x7f;
	img[0x206] = 0x0b;
	parse_fails(
	    img, len,
	    "setup header at 0x206: boot protocol 0x20b, a 64-bit entry needs 2.12 (0x20c)");
	img[0x206] = 0x0f;
	img[0x202] = 'X';
	parse_fails(img, len, "no setup header magic \"HdrS\" at offset 0x202 (0x53726458)");
	free(img);
}

static void test_decompress_hostile(void **state)
{
	uint8_t elf[0x218], payload[4096], *img, *out;
	size_t plen = lz4_payload(elf, make_elf(elf), payload), len, olen;
	struct bzimage bz;
	char err[256];

	(void)state;
	/* a block size beyond the payload */
	put32(payload + 4, 0x7fff);
	img = make_bz(payload, plen, &len);
	assert_int_equal(bzimage_parse(img, len, &bz, err, sizeof(err)), 0);
	assert_int_equal(bzimage_decompress(&bz, &out, &olen, err, sizeof(err)), -EINVAL);
	assert_null(out);
	assert_string_equal(err, "lz4 payload is corrupt or not the 536 bytes it announces (0 "
				 "decompressed)");
	free(img);
	/* the right stream, a size that is one byte more */
	plen = lz4_payload(elf, make_elf(elf), payload);
	put32(payload + plen - 4, 0x219);
	img = make_bz(payload, plen, &len);
	assert_int_equal(bzimage_parse(img, len, &bz, err, sizeof(err)), 0);
	assert_int_equal(bzimage_decompress(&bz, &out, &olen, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "lz4 payload is corrupt or not the 537 bytes it announces (536 "
				 "decompressed)");
	free(img);
	/* gzip with a flipped byte in the deflate data */
	plen = gzip_payload(elf, make_elf(elf), payload);
	payload[20] ^= 0xff;
	img = make_bz(payload, plen, &len);
	assert_int_equal(bzimage_parse(img, len, &bz, err, sizeof(err)), 0);
	assert_int_equal(bzimage_decompress(&bz, &out, &olen, err, sizeof(err)), -EINVAL);
	assert_true(strncmp(err, "gzip payload is corrupt", 23) == 0);
	free(img);
	/* an unknown magic: named, not supported */
	memcpy(payload, "\x12\x34\x56\x78", 4);
	img = make_bz(payload, plen, &len);
	assert_int_equal(bzimage_parse(img, len, &bz, err, sizeof(err)), 0);
	assert_int_equal(bz.codec, BZ_UNKNOWN);
	assert_int_equal(bzimage_decompress(&bz, &out, &olen, err, sizeof(err)), -ENOTSUP);
	assert_string_equal(err,
			    "payload compressed with an unknown method (magic 12 34 56 78): gzip, "
			    "xz, lz4, zstd, lzma, bzip2 and lzo are supported");
	free(img);
}

static void test_load_elf(void **state)
{
	static uint8_t ram[0x200000];
	uint8_t elf[0x218];
	size_t n = make_elf(elf);
	uint64_t entry, end;
	char err[256];
	Elf64_Phdr ph;

	(void)state;
	memset(ram, 0x55, sizeof(ram));
	assert_int_equal(lboot_load_elf(ram, sizeof(ram), elf, n, &entry, &end, err, sizeof(err)),
			 0);
	assert_int_equal(entry, 0x101000);
	assert_int_equal(end, 0x103020);
	assert_memory_equal(ram + 0x101000, elf + 0x200, 0x10);
	assert_memory_equal(ram + 0x103000, elf + 0x210, 0x8);
	for (int i = 8; i < 0x20; i++) /* bss zeroed */
		assert_int_equal(ram[0x103000 + i], 0);
	assert_int_equal(ram[0x103020], 0x55);
	assert_int_equal(ram[0x100fff], 0x55);

	/* RAM too small: nothing is written */
	memset(ram, 0x55, sizeof(ram));
	assert_int_equal(lboot_load_elf(ram, 0x103010, elf, n, &entry, &end, err, sizeof(err)),
			 -ERANGE);
	assert_string_equal(err, "kernel segment 1 at 0x103000+0x20 does not fit in guest RAM "
				 "between 1 MiB and 0x103010 (raise --mem)");
	assert_int_equal(ram[0x101000], 0x55);
	/* a segment's file bytes outside the image */
	memcpy(&ph, elf + sizeof(Elf64_Ehdr), sizeof(ph));
	ph.p_filesz = 0x1000;
	ph.p_memsz = 0x1000;
	memcpy(elf + sizeof(Elf64_Ehdr), &ph, sizeof(ph));
	assert_int_equal(lboot_load_elf(ram, sizeof(ram), elf, n, &entry, &end, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "decompressed kernel: segment 0 (offset 0x200+0x1000) outside the "
				 "image");
	/* a segment below 1 MiB (over the boot structures) */
	make_elf(elf);
	ph.p_type = PT_LOAD;
	ph.p_offset = 0x200;
	ph.p_paddr = 0x7000;
	ph.p_filesz = ph.p_memsz = 0x10;
	memcpy(elf + sizeof(Elf64_Ehdr), &ph, sizeof(ph));
	assert_int_equal(lboot_load_elf(ram, sizeof(ram), elf, n, &entry, &end, err, sizeof(err)),
			 -ERANGE);
	/* program headers past the end; not an ELF */
	make_elf(elf);
	assert_int_equal(
	    lboot_load_elf(ram, sizeof(ram), elf, 0x60, &entry, &end, err, sizeof(err)), -EINVAL);
	assert_string_equal(err,
			    "decompressed kernel: program headers at 0x40 (2) outside the image");
	elf[0] = 0;
	assert_int_equal(lboot_load_elf(ram, sizeof(ram), elf, n, &entry, &end, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "decompressed kernel: not an x86-64 ELF64 image");
}

static void test_e820_zero_page_gdt(void **state)
{
	uint8_t elf[0x218], payload[4096], *img, zp[4096];
	size_t plen = lz4_payload(elf, make_elf(elf), payload), len;
	struct e820_entry e[8];
	struct bzimage bz;
	uint64_t gdt[LB_GDT_ENTRIES];
	char err[256];
	unsigned n;

	(void)state;
	n = lboot_e820(256 << 20, 0xffd0000, e, 8);
	assert_int_equal(n, 4);
	assert_int_equal(e[0].addr, 0);
	assert_int_equal(e[0].size, 0x9f000);
	assert_int_equal(e[0].type, E820_RAM);
	assert_int_equal(e[1].addr, 0x9f000);
	assert_int_equal(e[1].size, 0x61000);
	assert_int_equal(e[1].type, E820_RESERVED);
	assert_int_equal(e[2].addr, 0x100000);
	assert_int_equal(e[2].size, 0xffd0000 - 0x100000);
	assert_int_equal(e[2].type, E820_RAM);
	assert_int_equal(e[3].addr, 0xffd0000);
	assert_int_equal(e[3].size, 0x30000);
	assert_int_equal(e[3].type, E820_RESERVED);
	assert_int_equal(lboot_e820(256 << 20, 0xffd0000, e, 2), 2);

	img = make_bz(payload, plen, &len);
	assert_int_equal(bzimage_parse(img, len, &bz, err, sizeof(err)), 0);
	n = lboot_e820(256 << 20, 0xffd0000, e, 8);
	struct lboot_params p = {.bz = &bz,
				 .cmdline_gpa = 0x20000,
				 .initrd_gpa = 0xff00000,
				 .initrd_size = 0x12345,
				 .rsdp_gpa = 0xe0000,
				 .e820 = e,
				 .nr_e820 = n};
	img[0x26c] = 0xee; /* past the header's end (its jump at 0x200): not boot_params' */
	memset(zp, 0xcc, sizeof(zp));
	lboot_zero_page(zp, &p);
	assert_memory_equal(zp + 0x1f1, img + 0x1f1, 0x1f);	     /* header copied up to 0x210 */
	assert_memory_equal(zp + 0x22c, img + 0x22c, 0x26c - 0x22c); /* and after the fields set */
	assert_int_equal(get32(zp + 0x202), 0x53726448);
	assert_int_equal(zp[0x210], 0xff);
	assert_int_equal(zp[0x211], 0x01);
	assert_int_equal(get32(zp + 0x228), 0x20000);
	assert_int_equal(get32(zp + 0x0c8), 0);
	assert_int_equal(get32(zp + 0x218), 0xff00000);
	assert_int_equal(get32(zp + 0x21c), 0x12345);
	assert_int_equal(get64(zp + 0x070), 0xe0000);
	assert_int_equal(zp[0x1e8], 4);
	assert_int_equal(get64(zp + 0x2d0 + 2 * 20), 0x100000);
	assert_int_equal(get64(zp + 0x2d0 + 2 * 20 + 8), 0xffd0000 - 0x100000);
	assert_int_equal(get32(zp + 0x2d0 + 2 * 20 + 16), 1);
	assert_int_equal(get32(zp + 0x2d0 + 3 * 20 + 16), 2);
	assert_int_equal(zp[0x2d0 + 4 * 20], 0); /* the rest is zero */
	assert_int_equal(zp[0], 0);
	assert_int_equal(zp[4095], 0);
	/* the header's bytes past its end (0x26c here) are not copied */
	assert_int_equal(get32(zp + 0x26c), 0);
	free(img);

	lboot_gdt(gdt);
	assert_int_equal(gdt[0], 0);
	assert_int_equal(gdt[1], 0);
	assert_int_equal(gdt[LB_BOOT_CS / 8], 0x00af9b000000ffffull);
	assert_int_equal(gdt[LB_BOOT_DS / 8], 0x00cf93000000ffffull);
}

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s = (uint8_t)(s + *p++);
	return s;
}

static void test_acpi(void **state)
{
	static uint8_t buf[ACPI_AREA_SIZE];
	const uint64_t gpa = 0xe0000;
	/* the DSDT's AML after its header, as `iasl -d` reads it back: Name (_S5, Package (4) {5,
	 * 0, 0, 0}), then Device (\_SB.COM1) { Name (_HID, EisaId ("PNP0501")) Name (_UID, One)
	 * Name (_CRS, ResourceTemplate () { IO (Decode16, 0x3F8, 0x3F8, 1, 8) IRQNoFlags () {4} })
	 * } */
	static const uint8_t aml[] = {
	    0x08, '_',	'S',  '5',  '_',  0x12, 0x07, 0x04, 0x0a, 0x05, 0x00, 0x00, 0x00,
	    0x5b, 0x82, 0x31, 0x5c, 0x2e, '_',	'S',  'B',  '_',  'C',	'O',  'M',  '1',
	    0x08, '_',	'H',  'I',  'D',  0x0c, 0x41, 0xd0, 0x05, 0x01, 0x08, '_',  'U',
	    'I',  'D',	0x01, 0x08, '_',  'C',	'R',  'S',  0x11, 0x10, 0x0a, 0x0d, 0x47,
	    0x01, 0xf8, 0x03, 0xf8, 0x03, 0x01, 0x08, 0x22, 0x10, 0x00, 0x79, 0x00};
	const uint8_t *rsdp = buf, *xsdt, *fadt, *dsdt, *madt;
	size_t used;

	(void)state;
	used = acpi_build(buf, gpa, 2);
	assert_int_equal(used, 0x280 + 36 + 8 + 16 + 12);
	assert_memory_equal(rsdp, "RSD PTR ", 8);
	assert_int_equal(sum(rsdp, 20), 0);
	assert_int_equal(sum(rsdp, 36), 0);
	assert_int_equal(rsdp[15], 2);
	assert_int_equal(get32(rsdp + 20), 36);
	xsdt = buf + (get64(rsdp + 24) - gpa);
	assert_memory_equal(xsdt, "XSDT", 4);
	assert_int_equal(get32(xsdt + 4), 52);
	assert_int_equal(sum(xsdt, 52), 0);
	fadt = buf + (get64(xsdt + 36) - gpa);
	madt = buf + (get64(xsdt + 44) - gpa);
	assert_memory_equal(fadt, "FACP", 4);
	assert_int_equal(get32(fadt + 4), 276);
	assert_int_equal(fadt[8], 6);
	assert_int_equal(sum(fadt, 276), 0);
	assert_int_equal(get32(fadt + 112), 1u << 20 | 1u << 10 | 1u << 4 | 1u << 5);
	assert_int_equal(fadt[109], 0x24); /* no VGA, no CMOS RTC, no 8042 */
	/* sleep control: SystemIO, 8 bits, byte access, port 0x600; status at 0x601 */
	assert_memory_equal(fadt + 244, "\x01\x08\x00\x01\x00\x06\0\0\0\0\0\0", 12);
	assert_memory_equal(fadt + 256, "\x01\x08\x00\x01\x01\x06\0\0\0\0\0\0", 12);
	assert_memory_equal(fadt + 116, "\x01\x08\x00\x01\xf9\x0c\0\0\0\0\0\0", 12);
	assert_int_equal(fadt[128], 6);
	dsdt = buf + (get64(fadt + 140) - gpa);
	assert_int_equal(get32(fadt + 40), gpa + (uint64_t)(dsdt - buf));
	assert_memory_equal(dsdt, "DSDT", 4);
	assert_int_equal(get32(dsdt + 4), 36 + sizeof(aml));
	assert_int_equal(sum(dsdt, 36 + sizeof(aml)), 0);
	assert_memory_equal(dsdt + 36, aml, sizeof(aml));
	assert_true(dsdt + 36 + sizeof(aml) <= madt); /* the tables do not overlap */
	assert_memory_equal(madt, "APIC", 4);
	assert_int_equal(get32(madt + 4), 36 + 8 + 16 + 12);
	assert_int_equal(sum(madt, 36 + 8 + 16 + 12), 0);
	assert_int_equal(get32(madt + 36), 0xfee00000);
	assert_memory_equal(madt + 44, "\x00\x08\x00\x00\x01\x00\x00\x00", 8);
	assert_memory_equal(madt + 52, "\x00\x08\x01\x01\x01\x00\x00\x00", 8);
	assert_memory_equal(madt + 60, "\x01\x0c\x02\x00\x00\x00\xc0\xfe\x00\x00\x00\x00", 12);
	/* what Linux writes for S5 (SLP_TYP 5 << 2 | SLP_EN), and what it is not */
	assert_int_equal(ACPI_SLEEP_S5_VALUE, 0x34);
	assert_true(acpi_is_s5(0x34));
	assert_false(acpi_is_s5(0x14)); /* no SLP_EN */
	assert_false(acpi_is_s5(0x2c)); /* S3 */
	/* vCPU counts outside 1..64 are clamped: the tables stay inside the area */
	assert_true(acpi_build(buf, gpa, 1000) <= ACPI_AREA_SIZE);
	assert_int_equal(acpi_build(buf, gpa, 0), 0x280 + 36 + 8 + 8 + 12);
}

static void test_uart(void **state)
{
	struct uart8250 u;

	(void)state;
	uart_init(&u);
	assert_int_equal(uart_read(&u, 5), 0x60); /* LSR: THR and transmitter empty */
	assert_int_equal(uart_read(&u, 2), 0x01); /* IIR: nothing pending */
	assert_false(uart_irq(&u));
	assert_int_equal(uart_write(&u, 0, 'A'), 'A');
	assert_false(uart_irq(&u)); /* THRI not enabled */
	/* Linux's probe: IER reads back, scratch register, loopback MSR 0x90 for MCR 0x1a */
	uart_write(&u, 1, 0x0f);
	assert_int_equal(uart_read(&u, 1), 0x0f);
	uart_write(&u, 1, 0xff);
	assert_int_equal(uart_read(&u, 1), 0x0f);
	uart_write(&u, 1, 0);
	uart_write(&u, 7, 0xa5);
	assert_int_equal(uart_read(&u, 7), 0xa5);
	uart_write(&u, 4, 0x1a);
	assert_int_equal(uart_read(&u, 6) & 0xf0, 0x90);
	assert_int_equal(uart_write(&u, 0, 'x'), -1); /* loopback: nothing goes out */
	uart_write(&u, 4, 0x1f);
	assert_int_equal(uart_read(&u, 6), 0xf0);
	uart_write(&u, 4, 0x0b);
	assert_int_equal(uart_read(&u, 6), 0xb0);
	/* the divisor latch hides THR/IER */
	uart_write(&u, 3, 0x83);
	assert_int_equal(uart_write(&u, 0, 0x01), -1);
	uart_write(&u, 1, 0x00);
	assert_int_equal(uart_read(&u, 0), 0x01);
	assert_int_equal(uart_read(&u, 1), 0x00);
	uart_write(&u, 3, 0x03);
	assert_int_equal(uart_read(&u, 3), 0x03);
	assert_int_equal(uart_read(&u, 1), 0x00); /* IER untouched by the latch */
	/* FIFO enabled: IIR's top bits */
	uart_write(&u, 2, 0x07);
	assert_int_equal(uart_read(&u, 2), 0xc1);
	/* THR empty interrupt: raised by enabling it, cleared by reading IIR, raised by a write */
	uart_write(&u, 1, 0x02);
	assert_true(uart_irq(&u));
	assert_int_equal(uart_read(&u, 2), 0xc2);
	assert_false(uart_irq(&u));
	assert_int_equal(uart_read(&u, 2), 0xc1);
	assert_int_equal(uart_write(&u, 0, '\n'), '\n');
	assert_true(uart_irq(&u));
	uart_write(&u, 1, 0x00); /* masked: the line drops */
	assert_false(uart_irq(&u));
	assert_int_equal(uart_read(&u, 5), 0x60);
	assert_int_equal(uart_read(&u, 8 + 5), 0x60); /* offsets wrap at 8 */
}

static union {
	struct kvm_coalesced_mmio_ring r;
	uint8_t page[PIO_RING_PAGE];
} ring;
static char got[PIO_RING_MAX * 2];
static unsigned nr_got;

static void got_out(void *ctx, unsigned off, uint8_t v)
{
	(void)ctx;
	got[nr_got++] = (char)('0' + off);
	got[nr_got++] = (char)v;
}

static void put_entry(uint32_t i, uint64_t port, uint32_t len, uint32_t pio, uint8_t v)
{
	struct kvm_coalesced_mmio *e = &ring.r.coalesced_mmio[i];

	memset(e, 0, sizeof(*e));
	e->phys_addr = port;
	e->len = len;
	e->pio = pio;
	e->data[0] = v;
}

/* Entries replayed in order across the ring's wrap, only byte writes to the zone's ports; a ring
 * with indices past its end is left alone; at most one ring's worth per drain. */
static void test_pio_ring(void **state)
{
	uint32_t last = PIO_RING_MAX - 2;

	(void)state;
	assert_true(PIO_RING_MAX > 100); /* one page of 24-byte entries */
	memset(&ring, 0, sizeof(ring));
	ring.r.first = last;
	put_entry(last, 0x3f8, 1, 1, 'h');
	put_entry(last + 1, 0x3fb, 1, 1, 0x83); /* LCR */
	put_entry(0, 0x3f8, 1, 0, 'x');		/* MMIO, not PIO: skipped */
	put_entry(1, 0x400, 1, 1, 'y');		/* another port: skipped */
	put_entry(2, 0x3f7, 1, 1, 'z');		/* just below */
	put_entry(3, 0x3f8, 4, 1, 'i');		/* an outl: its low byte */
	ring.r.last = 4;
	nr_got = 0;
	assert_int_equal(pio_ring_drain(&ring.r, 0x3f8, 8, got_out, NULL), 6);
	assert_int_equal(nr_got, 6);
	assert_memory_equal(got,
			    "0h3\x83"
			    "0i",
			    6);
	assert_int_equal(ring.r.first, 4);
	assert_int_equal(pio_ring_drain(&ring.r, 0x3f8, 8, got_out, NULL), 0); /* nothing new */
	/* indices KVM never writes: nothing read, nothing moved */
	ring.r.last = PIO_RING_MAX;
	assert_int_equal(pio_ring_drain(&ring.r, 0x3f8, 8, got_out, NULL), 0);
	assert_int_equal(ring.r.first, 4);
	ring.r.first = 0xffffffff;
	ring.r.last = 3;
	assert_int_equal(pio_ring_drain(&ring.r, 0x3f8, 8, got_out, NULL), 0);
	assert_int_equal(ring.r.first, 0xffffffff);
	/* a full ring (last just behind first): PIO_RING_MAX - 1 entries, once */
	for (uint32_t i = 0; i < PIO_RING_MAX; i++)
		put_entry(i, 0x3f8, 1, 1, 'a');
	ring.r.first = 5;
	ring.r.last = 4;
	nr_got = 0;
	assert_int_equal(pio_ring_drain(&ring.r, 0x3f8, 8, got_out, NULL), PIO_RING_MAX - 1);
	assert_int_equal(nr_got, 2 * (PIO_RING_MAX - 1));
	assert_int_equal(ring.r.first, 4);
}

/* reboot=: the last parameter's last way wins; a triple fault is the kernel's reset only after 't'
 */
static void test_reboot_by_triple_fault(void **state)
{
	(void)state;
	assert_false(lboot_reboots_by_triple_fault("console=ttyS0 panic=-1"));
	assert_true(lboot_reboots_by_triple_fault("console=ttyS0 reboot=t"));
	assert_true(lboot_reboots_by_triple_fault("reboot=triple quiet"));
	assert_true(lboot_reboots_by_triple_fault("reboot=w,t"));
	assert_true(lboot_reboots_by_triple_fault("reboot=k,cold,triple"));
	assert_false(lboot_reboots_by_triple_fault("reboot=t,kbd"));
	assert_false(lboot_reboots_by_triple_fault("reboot=t reboot=acpi"));
	assert_true(lboot_reboots_by_triple_fault("reboot=a reboot=t"));
	assert_false(lboot_reboots_by_triple_fault("reboot=warm,cold"));
	assert_true(lboot_reboots_by_triple_fault("reboot=t,force")); /* f: force, not a way */
	assert_false(lboot_reboots_by_triple_fault("xreboot=t"));
	assert_false(lboot_reboots_by_triple_fault("init=/bin/sh,reboot=t"));
	assert_false(lboot_reboots_by_triple_fault("reboot="));
	assert_false(lboot_reboots_by_triple_fault(""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decompress_lz4),
	    cmocka_unit_test(test_decompress_gzip),
	    cmocka_unit_test(test_decompress_xz),
	    cmocka_unit_test(test_parse_hostile),
	    cmocka_unit_test(test_decompress_zstd),
	    cmocka_unit_test(test_decompress_bzip2),
	    cmocka_unit_test(test_decompress_lzma),
	    cmocka_unit_test(test_decompress_lzo),
	    cmocka_unit_test(test_decompress_hostile_codecs),
	    cmocka_unit_test(test_decompress_debian),
	    cmocka_unit_test(test_decompress_hostile),
	    cmocka_unit_test(test_load_elf),
	    cmocka_unit_test(test_e820_zero_page_gdt),
	    cmocka_unit_test(test_acpi),
	    cmocka_unit_test(test_uart),
	    cmocka_unit_test(test_pio_ring),
	    cmocka_unit_test(test_reboot_by_triple_fault),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

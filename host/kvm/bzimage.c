#include "host/kvm/bzimage.h"
#include "host/util/msg_fmt.h"

#include <bzlib.h>
#include <errno.h>
#include <limits.h>
#include <lz4.h>
#include <lzma.h>
#include <lzo/lzo1x.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define XLF_KERNEL_64	 (1 << 0)
#define LZ4_LEGACY_MAGIC 0x184c2102u
#define LZ4_LEGACY_BLOCK (8u << 20)   /* the largest block the legacy framing decompresses to */
#define LZO_BLOCK_MAX	 (256u << 10) /* lzop's largest block, as the kernel's unlzo checks */
#define LZMA_MEMLIMIT	 (256u << 20) /* more than lzma -9's or xz -9's 64 MiB dictionary needs */
#define VMLINUX_MAX	 (1u << 30)   /* more than any kernel ELF; bounds the allocation */

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int bad(char *err, size_t errlen, const char *fmt, unsigned long off, unsigned long v)
{
	msg_fmt(err, errlen, fmt, off, v);
	return -EINVAL;
}

static enum bz_codec codec_of(const uint8_t *p, size_t len)
{
	static const struct {
		enum bz_codec c;
		uint8_t n, magic[6];
	} m[] = {
	    {BZ_GZIP, 2, {0x1f, 0x8b}},
	    {BZ_XZ, 6, {0xfd, '7', 'z', 'X', 'Z', 0}},
	    {BZ_LZ4, 4, {0x02, 0x21, 0x4c, 0x18}},
	    {BZ_ZSTD, 4, {0x28, 0xb5, 0x2f, 0xfd}},
	    {BZ_LZMA, 3, {0x5d, 0, 0}},
	    {BZ_BZIP2, 3, {'B', 'Z', 'h'}},
	    {BZ_LZO, 4, {0x89, 'L', 'Z', 'O'}},
	};

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (len >= m[i].n && !memcmp(p, m[i].magic, m[i].n))
			return m[i].c;
	return BZ_UNKNOWN;
}

const char *bzimage_codec_name(enum bz_codec c)
{
	static const char *const names[] = {"gzip", "xz", "lz4", "zstd", "lzma", "bzip2", "lzo"};

	return c < BZ_UNKNOWN ? names[c] : "unknown";
}

int bzimage_parse(const uint8_t *img, size_t len, struct bzimage *bz, char *err, size_t errlen)
{
	size_t setup, hdr_len;
	uint32_t poff, plen;

	memset(bz, 0, sizeof(*bz));
	if (len < 0x270)
		return bad(err, errlen, "truncated: %lu bytes, a setup header needs 0x%lx", len,
			   0x270);
	if (le32(img + 0x202) != 0x53726448) /* "HdrS" */
		return bad(err, errlen, "no setup header magic \"HdrS\" at offset 0x%lx (0x%lx)",
			   0x202, le32(img + 0x202));
	bz->version = le16(img + 0x206);
	if (bz->version < 0x20c)
		return bad(err, errlen,
			   "setup header at 0x%lx: boot protocol %#lx, a 64-bit entry needs 2.12 "
			   "(0x20c)",
			   0x206, bz->version);
	if (!(le16(img + 0x236) & XLF_KERNEL_64))
		return bad(err, errlen,
			   "setup header at 0x%lx: xloadflags 0x%lx lacks XLF_KERNEL_64", 0x236,
			   le16(img + 0x236));
	hdr_len = 0x202 + img[0x201] - BZ_HDR_OFFSET; /* the jump at 0x200 skips the header */
	if (hdr_len > BZ_HDR_MAX)
		hdr_len = BZ_HDR_MAX;
	setup = (size_t)(img[0x1f1] ? img[0x1f1] : 4) * 512 + 512;
	if (setup >= len)
		return bad(err, errlen,
			   "truncated: setup_sects (offset 0x1f1) ends at 0x%lx, file is 0x%lx",
			   setup, len);
	poff = le32(img + 0x248);
	plen = le32(img + 0x24c);
	if (plen < 8 || poff > len - setup || plen > len - setup - poff)
		return bad(err, errlen,
			   "payload (offsets 0x248/0x24c) at 0x%lx+0x%lx is not inside the file",
			   setup + poff, plen);
	bz->hdr = img + BZ_HDR_OFFSET;
	bz->hdr_len = hdr_len;
	bz->payload = img + setup + poff;
	bz->payload_len = plen;
	bz->codec = codec_of(bz->payload, plen);
	bz->cmdline_size = le32(img + 0x238);
	bz->pref_address = le64(img + 0x258);
	bz->init_size = le32(img + 0x260);
	bz->vmlinux_size = le32(bz->payload + plen - 4); /* the build appends it to every codec */
	if (!bz->vmlinux_size || bz->vmlinux_size > VMLINUX_MAX)
		return bad(err, errlen, "payload at 0x%lx: decompressed size %lu is out of range",
			   setup + poff, bz->vmlinux_size);
	return 0;
}

/* The kernel's legacy lz4 framing: magic, then blocks of (le32 compressed size, data), another
 * magic between concatenated streams; the decompressed size last. */
static int unlz4(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *done)
{
	size_t pos = 4, o = 0;

	while (pos + 4 <= len) {
		uint32_t n = le32(in + pos);
		int r;

		pos += 4;
		if (n == LZ4_LEGACY_MAGIC)
			continue;
		if (n > len - pos || n > (uint32_t)LZ4_compressBound(LZ4_LEGACY_BLOCK))
			return -1;
		r = LZ4_decompress_safe(
		    (const char *)in + pos, (char *)out + o, (int)n,
		    (int)(cap - o < LZ4_LEGACY_BLOCK ? cap - o : LZ4_LEGACY_BLOCK));
		if (r < 0)
			return -1;
		o += (size_t)r;
		pos += n;
	}
	*done = o;
	return pos == len ? 0 : -1;
}

static int ungzip(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *done)
{
	z_stream z = {
	    .next_in = (Bytef *)in, .avail_in = (uInt)len, .next_out = out, .avail_out = (uInt)cap};
	int r;

	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return -1;
	r = inflate(&z, Z_FINISH);
	*done = z.total_out;
	inflateEnd(&z);
	return r == Z_STREAM_END ? 0 : -1;
}

static int unxz(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *done)
{
	uint64_t memlimit = 256u << 20;
	size_t ipos = 0, opos = 0;

	if (lzma_stream_buffer_decode(&memlimit, 0, NULL, in, &ipos, len, out, &opos, cap) !=
	    LZMA_OK)
		return -1;
	*done = opos;
	return 0;
}

/* zstd frames (the kernel's `zstd -22 --ultra`); one-shot into @cap bytes at most. */
static int unzstd(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *done)
{
	size_t r = ZSTD_decompress(out, cap, in, len);

	if (ZSTD_isError(r))
		return -1;
	*done = r;
	return 0;
}

static int unbzip2(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *done)
{
	unsigned int n = (unsigned int)cap;

	if (len > UINT_MAX || BZ2_bzBuffToBuffDecompress((char *)out, &n, (char *)in,
							 (unsigned int)len, 0, 0) != BZ_OK)
		return -1;
	*done = n;
	return 0;
}

/* The "lzma alone" format (13-byte header: properties, dictionary size, le64 size or -1 with an end
 * marker). The header's size is not trusted: output stops at @cap and more is an error. */
static int unlzma(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *done)
{
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_ret r;

	if (lzma_alone_decoder(&s, LZMA_MEMLIMIT) != LZMA_OK)
		return -1;
	s.next_in = in;
	s.avail_in = len;
	s.next_out = out;
	s.avail_out = cap;
	r = lzma_code(&s, LZMA_FINISH);
	*done = cap - s.avail_out;
	lzma_end(&s);
	return r == LZMA_STREAM_END ? 0 : -1;
}

/* lzop's framing (the kernel's `lzop -9`): a header (magic, versions, method, flags, mode, times,
 * name, checksum), then blocks of be32 decompressed and compressed sizes, checksums as the flags
 * say, and LZO1X data (or the bytes stored when they did not shrink), a zero size last. */
static int unlzo(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *done)
{
	enum {
		F_ADLER32_D = 1,
		F_ADLER32_C = 2,
		F_H_FILTER = 0x800,
		F_CRC32_D = 0x100,
		F_CRC32_C = 0x200
	};
	static const uint8_t magic[9] = {0x89, 'L', 'Z', 'O', 0, 0x0d, 0x0a, 0x1a, 0x0a};
	size_t pos = sizeof(magic), o = 0;
	uint32_t version, flags;

	if (lzo_init() != LZO_E_OK || len < pos + 7 || memcmp(in, magic, sizeof(magic)))
		return -1;
	version = (uint32_t)in[pos] << 8 | in[pos + 1];
	pos += version >= 0x0940 ? 8 : 5; /* versions (library, needed from 0.94), method, level */
	if (pos + 4 > len)
		return -1;
	flags = be32(in + pos);
	pos += flags & F_H_FILTER ? 8 : 4;
	pos += version >= 0x0940 ? 12 : 8; /* mode, mtime (low and high) */
	if (pos + 1 > len)
		return -1;
	pos += 1 + (size_t)in[pos] + 4; /* name, header checksum */
	for (;;) {
		uint32_t dlen, clen, dsum = 0;
		lzo_uint n;

		if (pos + 4 > len)
			return -1;
		dlen = be32(in + pos);
		pos += 4;
		if (!dlen)
			break;
		if (pos + 4 > len || dlen > LZO_BLOCK_MAX || dlen > cap - o)
			return -1;
		clen = be32(in + pos);
		pos += 4;
		if (!clen || clen > dlen)
			return -1;
		if (flags & (F_ADLER32_D | F_CRC32_D)) {
			if (pos + 4 > len)
				return -1;
			dsum = be32(in + pos);
			pos += 4;
		}
		if (clen < dlen && flags & (F_ADLER32_C | F_CRC32_C))
			pos += 4;
		if (pos > len || clen > len - pos)
			return -1;
		if (clen == dlen) {
			memcpy(out + o, in + pos, dlen);
		} else {
			n = dlen;
			if (lzo1x_decompress_safe(in + pos, clen, out + o, &n, NULL) != LZO_E_OK ||
			    n != dlen)
				return -1;
		}
		if (flags & F_ADLER32_D && lzo_adler32(1, out + o, dlen) != dsum)
			return -1;
		o += dlen;
		pos += clen;
	}
	*done = o;
	return pos == len ? 0 : -1;
}

int bzimage_decompress(const struct bzimage *bz, uint8_t **out, size_t *outlen, char *err,
		       size_t errlen)
{
	size_t cap = bz->vmlinux_size, done = 0;
	size_t in_len = bz->payload_len - 4; /* without the size the build appended */
	uint8_t *buf;
	int r;

	*out = NULL;
	*outlen = 0;
	if (bz->codec >= BZ_UNKNOWN) {
		msg_fmt(err, errlen,
			"payload compressed with an unknown method (magic %02x %02x %02x %02x): "
			"gzip, xz, lz4, zstd, lzma, bzip2 and lzo are supported",
			bz->payload[0], bz->payload[1], bz->payload[2], bz->payload[3]);
		return -ENOTSUP;
	}
	static int (*const un[])(const uint8_t *, size_t, uint8_t *, size_t, size_t *) = {
	    [BZ_GZIP] = ungzip, [BZ_XZ] = unxz,	      [BZ_LZ4] = unlz4, [BZ_ZSTD] = unzstd,
	    [BZ_LZMA] = unlzma, [BZ_BZIP2] = unbzip2, [BZ_LZO] = unlzo,
	};
	buf = malloc(cap);
	if (!buf) {
		msg_fmt(err, errlen, "decompressing the payload: %u bytes: out of memory",
			bz->vmlinux_size);
		return -ENOMEM;
	}
	r = un[bz->codec](bz->payload, in_len, buf, cap, &done);
	if (r < 0 || done != cap) {
		snprintf(
		    err, errlen,
		    "%s payload is corrupt or not the %u bytes it announces (%zu decompressed)",
		    bzimage_codec_name(bz->codec), bz->vmlinux_size, done);
		free(buf);
		return -EINVAL;
	}
	*out = buf;
	*outlen = done;
	return 0;
}

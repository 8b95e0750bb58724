/* An arm64 kernel image found by its boot header (vmi_linux_arm64.h). */
#include "vmi/vmi_linux_arm64.h"
#include "vmi/vmi_symtab.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int mapped_run(vmi_read_fn read, void *ctx, uint64_t hint, uint64_t *base, uint64_t *size,
		      char *err, size_t errlen);

#define MAGIC_OFF 0x38
#define SIZE_OFF  0x10

int vmi_linux_arm64_image(vmi_read_fn read, void *ctx, uint64_t hint, uint64_t *base,
			  uint64_t *size, char *err, size_t errlen)
{
	uint64_t at = hint & ~(VMI_ARM64_IMAGE_ALIGN - 1);

	for (uint64_t k = 0; k < VMI_ARM64_IMAGE_MAX / VMI_ARM64_IMAGE_ALIGN && at >= k; k++) {
		uint64_t a = at - k * VMI_ARM64_IMAGE_ALIGN, sz;
		uint8_t h[0x40];
		int ret = read(ctx, a, h, sizeof(h));

		if (ret == -EINTR)
			return ret;
		if (ret < 0 || memcmp(h + MAGIC_OFF, "ARM\x64", 4))
			continue;
		memcpy(&sz, h + SIZE_OFF, 8);
		sz = (sz + 0xfff) & ~0xfffull;
		if (!sz || sz > VMI_ARM64_IMAGE_MAX || hint - a >= sz) {
			msg_fmt(err, errlen,
				"the arm64 kernel header at 0x%" PRIx64 " says the image is 0x%" PRIx64
				" bytes, which does not hold 0x%" PRIx64 " (at most %llu MiB)",
				a, sz, hint, VMI_ARM64_IMAGE_MAX >> 20);
			return -EINVAL;
		}
		*base = a;
		*size = sz;
		return 0;
	}
	return mapped_run(read, ctx, hint, base, size, err, errlen);
}

#define STEP (64ull << 10)

/* Whether the byte at @a reads: 1, 0, or -EINTR. */
static int readable(vmi_read_fn read, void *ctx, uint64_t a)
{
	uint8_t b;
	int ret = read(ctx, a, &b, 1);

	return ret == -EINTR ? ret : ret == 0;
}

/* The run of mapped 64 KiB steps around @hint (vmi_linux_arm64_image's fallback). */
static int mapped_run(vmi_read_fn read, void *ctx, uint64_t hint, uint64_t *base, uint64_t *size,
		      char *err, size_t errlen)
{
	uint64_t lo = hint & ~(STEP - 1), hi = lo;
	int r;

	for (uint64_t k = 0; k < VMI_ARM64_IMAGE_MAX / STEP && lo >= STEP; k++) {
		r = readable(read, ctx, lo - STEP);
		if (r < 0)
			return r;
		if (!r)
			break;
		lo -= STEP;
	}
	for (uint64_t k = 0; k < VMI_ARM64_IMAGE_MAX / STEP; k++) {
		r = readable(read, ctx, hi);
		if (r < 0)
			return r;
		if (!r)
			break;
		hi += STEP;
	}
	if (hi == lo || hi - lo > VMI_ARM64_IMAGE_MAX) {
		msg_fmt(err, errlen,
			"no arm64 kernel header (\"ARM\\x64\" at 0x38) within %llu MiB below 0x%" PRIx64
			", and %s (the kernel is not up, or that is no kernel text)",
			VMI_ARM64_IMAGE_MAX >> 20, hint,
			hi == lo ? "nothing mapped there" : "the mapping around it too large");
		return -ESRCH;
	}
	*base = lo;
	*size = hi - lo;
	return 0;
}

#define CHUNK	 (1u << 20)
#define OVERLAP	 64u
#define BANNER	 "Linux version "
#define BTF_HDR	 24u

/* A vmlinux BTF header at @p (@n bytes readable from it): its whole size, else 0. */
static uint64_t btf_blob(const uint8_t *p, size_t n)
{
	uint32_t hdr, toff, tlen, soff, slen;

	if (n < BTF_HDR || p[0] != 0x9f || p[1] != 0xeb || p[2] != 1 || p[3] != 0)
		return 0;
	memcpy(&hdr, p + 4, 4);
	memcpy(&toff, p + 8, 4);
	memcpy(&tlen, p + 12, 4);
	memcpy(&soff, p + 16, 4);
	memcpy(&slen, p + 20, 4);
	if (hdr != BTF_HDR || toff != 0 || soff != tlen || !tlen || !slen ||
	    (uint64_t)tlen + slen > (64u << 20))
		return 0;
	return (uint64_t)hdr + soff + slen;
}

#define CMDLINE_FN_WORDS 32 /* the words of cmdline_proc_show looked at */
/* where the pointer may be past the image's start: the image's data follows its text and BSS, and
 * the range kallsyms gives (a 6.1 image found without its header: its text) can end before */
#define CMDLINE_SPAN_MIN (1ull << 30)

static uint32_t word_at(const uint8_t *code, unsigned i)
{
	return (uint32_t)code[4 * i] | (uint32_t)code[4 * i + 1] << 8 | (uint32_t)code[4 * i + 2] << 16 |
	       (uint32_t)code[4 * i + 3] << 24;
}

/* The address an ADRP Xn (of register @rd, any when @rd is 32) and a following LDR Xt, [Xn, #off]
 * (@want_ldr) or ADD Xn, Xn, #off (else) within four instructions form in the first
 * CMDLINE_FN_WORDS words of function @fn, if the first such ADRP has that partner and the address
 * lies within max(@size, 1 GiB) past @base; else 0. Calls only @read. */
static uint64_t adrp_pair(vmi_read_fn read, void *ctx, uint64_t fn, unsigned rd, bool want_ldr,
			  uint64_t base, uint64_t size)
{
	uint8_t code[CMDLINE_FN_WORDS * 4];

	if ((fn & 3) || read(ctx, fn, code, sizeof(code)) < 0)
		return 0;
	for (unsigned i = 0; i < CMDLINE_FN_WORDS; i++) {
		uint32_t w = word_at(code, i);
		uint64_t pc = fn + 4 * i, page;
		int64_t imm;

		if ((w & 0x9f000000u) != 0x90000000u || (rd < 32 && (w & 31) != rd)) /* ADRP */
			continue;
		imm = (int64_t)((((w >> 5) & 0x7ffff) << 2) | ((w >> 29) & 3));
		if (imm & (1 << 20)) /* 21 bits, signed */
			imm -= 1 << 21;
		page = (pc & ~0xfffull) + (uint64_t)(imm * 4096);
		for (unsigned j = i + 1; j < CMDLINE_FN_WORDS && j <= i + 4; j++) {
			uint32_t l = word_at(code, j);
			uint64_t at;

			if (want_ldr) { /* LDR Xt, [Xn, #imm12 * 8] from the ADRP's register */
				if ((l & 0xffc00000u) != 0xf9400000u || ((l >> 5) & 31) != (w & 31))
					continue;
				at = page + ((l >> 10) & 0xfff) * 8;
			} else { /* ADD Xn, Xn, #imm12 (unshifted), into the same register */
				if ((l & 0xffc00000u) != 0x91000000u || ((l >> 5) & 31) != (w & 31) ||
				    (l & 31) != (w & 31))
					continue;
				at = page + ((l >> 10) & 0xfff);
			}
			return at >= base &&
					       at - base < (size > CMDLINE_SPAN_MIN ? size : CMDLINE_SPAN_MIN)
				   ? at
				   : 0;
		}
		return 0; /* the first such ADRP is the address's */
	}
	return 0;
}

void vmi_linux_arm64_cmdline(struct vmi_symtab *objects, const struct vmi_symtab *funcs,
			     vmi_read_fn read, void *ctx, uint64_t base, uint64_t size)
{
	const struct vmi_sym *f = vmi_symtab_find(funcs, "cmdline_proc_show");
	uint64_t at;

	if (vmi_symtab_find(objects, "saved_command_line") || !f)
		return;
	at = adrp_pair(read, ctx, f->addr, 32, true, base, size);
	if (at)
		vmi_symtab_add(objects, at, 8, "saved_command_line");
}

/* A kernel virtual address (TTBR1's half: bit 55, whatever a tag in the top byte says) of an
 * 8-byte aligned object. */
static bool kernel_ptr(uint64_t v)
{
	return (v >> 55 & 1) && !(v & 7);
}

void vmi_linux_arm64_modules(struct vmi_symtab *objects, const struct vmi_symtab *funcs,
			     vmi_read_fn read, void *ctx, uint64_t base, uint64_t size)
{
	const struct vmi_sym *f = vmi_symtab_find(funcs, "m_next");
	uint64_t at, head[2];

	if (vmi_symtab_find(objects, "modules") || !f)
		return;
	/* seq_list_next(p, &modules, pos): the list's address in x1 */
	at = adrp_pair(read, ctx, f->addr, 1, false, base, size);
	if (!at || (at & 7) || read(ctx, at, head, sizeof(head)) < 0 || !kernel_ptr(head[0]) ||
	    !kernel_ptr(head[1]) || ((head[0] == at) != (head[1] == at)))
		return;
	vmi_symtab_add(objects, at, 16, "modules");
}

void vmi_linux_arm64_missing(struct vmi_symtab *objects, vmi_read_fn read, void *ctx,
			     uint64_t base, uint64_t size)
{
	bool want_banner = !vmi_symtab_find(objects, "linux_banner");
	bool want_btf = !vmi_symtab_find(objects, "__start_BTF");
	uint8_t *buf = want_banner || want_btf ? malloc(CHUNK + OVERLAP) : NULL;

	for (uint64_t o = 0; buf && o < size && (want_banner || want_btf); o += CHUNK) {
		size_t n = size - o < CHUNK + OVERLAP ? (size_t)(size - o) : CHUNK + OVERLAP;

		if (read(ctx, base + o, buf, n) < 0)
			continue; /* a hole (the freed init segment) */
		for (size_t i = 0; i < n && i < CHUNK; i++) {
			uint64_t blob;

			if (want_banner && buf[i] == 'L' && i + sizeof(BANNER) - 1 + 2 <= n &&
			    !memcmp(buf + i, BANNER, sizeof(BANNER) - 1) &&
			    buf[i + sizeof(BANNER) - 1] >= '1' && buf[i + sizeof(BANNER) - 1] <= '9') {
				want_banner = vmi_symtab_add(objects, base + o + i, 0, "linux_banner") < 0;
				want_banner = false;
			}
			if (want_btf && buf[i] == 0x9f && !((base + o + i) & 3) &&
			    (blob = btf_blob(buf + i, n - i)) != 0 && o + i + blob <= size) {
				if (vmi_symtab_add(objects, base + o + i, 0, "__start_BTF") == 0)
					vmi_symtab_add(objects, base + o + i + blob, 0, "__stop_BTF");
				want_btf = false;
			}
		}
	}
	free(buf);
}

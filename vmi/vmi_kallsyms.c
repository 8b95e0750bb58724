#include "vmi/vmi_kallsyms.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKENS	    256
#define TOKEN_MAX   128 /* longest token accepted (the kernel's are a few bytes) */
#define ENTRY_MAX   (2 + VMI_KALLSYMS_NAME_MAX + 1) /* length bytes + one byte per token at most */
#define MARKERS_MAX (VMI_KALLSYMS_MAX_SYMS / 256 + 1)
/* how far before the token table the markers can start: markers and kallsyms_seqs_of_names */
#define MARKERS_WINDOW (4ull * MARKERS_MAX + 3ull * VMI_KALLSYMS_MAX_SYMS + 32)
#define IMAGE_BASE     0xffffffff80000000ull
#define IMAGE_SIZE     0x40000000ull
#define BLOCK	       0x200000ull
#define PAGE	       0x1000ull
#define WINDOW	       (64ull << 20) /* a linear map's search window (read_windows) */
#define LITERALS       "0123456789abcdefghijklmnopqrstuvwxyz_"
#define LITERALS_MIN   30 /* of the 37 above, kept as themselves in a real token table */
/* steps of the searches (candidate checks, tokens, names walked): a real kernel needs a few
 * million; a table forged to look valid almost everywhere must not keep hvtrace busy for long */
#define WORK_MAX    (1ul << 28)
#define LABEL_ALIGN 4 /* the finest alignment the kernel gives a kallsyms label (7.0+; 8 before)   \
		       */
#define PAD_MAX 8     /* most padding bytes after a table (to the 8 of the older layouts) */

static size_t align8(size_t v)
{
	return (v + 7) & ~(size_t)7;
}

static size_t align4(size_t v)
{
	return (v + 3) & ~(size_t)3;
}

static uint16_t u16_at(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t u32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Where the tables are, as offsets into the image. */
struct tables {
	const uint8_t *img;
	size_t len;
	uint64_t base;
	size_t tt, ti; /* kallsyms_token_table, kallsyms_token_index */
	uint16_t idx[TOKENS];
	size_t markers, nm; /* kallsyms_markers and how many */
	size_t num, names;  /* kallsyms_num_syms, kallsyms_names */
	uint32_t n;
	size_t offsets;	    /* kallsyms_offsets */
	uint64_t rbase;	    /* kallsyms_relative_base */
	bool place_rel;	    /* offsets relative to their own place, no relative base (7.0+) */
	unsigned long work; /* steps so far, up to WORK_MAX */
};

/* Counts @n steps; false once past the budget. */
static bool step(struct tables *t, unsigned long n)
{
	t->work += n;
	return t->work <= WORK_MAX;
}

/* The token table ending (with its padding) right at @p, each token where idx says: 0 or 1. */
static bool tokens_at(struct tables *t, size_t q, size_t p)
{
	const uint8_t *img = t->img;
	unsigned literal = 0;
	size_t end;

	if (!step(t, TOKENS + (p - q)))
		return false;
	for (int i = 0; i < TOKENS - 1; i++) {
		size_t s = q + t->idx[i], e = q + t->idx[i + 1] - 1; /* e: its NUL */

		if (img[e] || memchr(img + s, 0, e - s))
			return false;
	}
	end = q + t->idx[TOKENS - 1];
	{
		const uint8_t *nul = memchr(img + end, 0, p - end);

		if (!nul || nul == img + end || (size_t)(nul - (img + end)) > TOKEN_MAX)
			return false;
		for (const uint8_t *z = nul; z < img + p; z++)
			if (*z)
				return false;
	}
	for (const char *c = LITERALS; *c; c++) {
		const uint8_t *tok = img + q + t->idx[(uint8_t)*c];

		literal += tok[0] == (uint8_t)*c && tok[1] == 0;
	}
	return literal >= LITERALS_MIN;
}

/* kallsyms_token_index: 256 u16, [0] == 0, increasing by 2..TOKEN_MAX+1 (a token and its NUL),
 * right after kallsyms_token_table and its zero padding, both aligned to 8 (before 7.0) or 4. */
static bool find_tokens(struct tables *t)
{
	for (size_t p = LABEL_ALIGN; p + 2 * TOKENS <= t->len; p += LABEL_ALIGN) {
		const uint8_t *ix = t->img + p;
		size_t last, lo, hi;
		bool ok = true;

		if (u16_at(ix) != 0)
			continue;
		if (!step(t, 1))
			return false;
		for (int i = 1; i < TOKENS && ok; i++) {
			unsigned d = (unsigned)u16_at(ix + 2 * i) - u16_at(ix + 2 * (i - 1));

			ok = u16_at(ix + 2 * i) > u16_at(ix + 2 * (i - 1)) && d >= 2 &&
			     d <= TOKEN_MAX + 1;
		}
		if (!ok)
			continue;
		for (int i = 0; i < TOKENS; i++)
			t->idx[i] = u16_at(ix + 2 * i);
		last = t->idx[TOKENS - 1];
		/* the table's size is last + the last token + its NUL, padded to 4 or 8 */
		lo = align4(last + 2);
		hi = align8(last + TOKEN_MAX + 1);
		if (!step(t, TOKENS))
			return false;
		for (size_t sz = lo; sz <= hi && sz <= p; sz += LABEL_ALIGN) {
			if (tokens_at(t, p - sz, p)) {
				t->tt = p - sz;
				t->ti = p;
				return true;
			}
		}
	}
	return false;
}

/* The @n names from @names: each a length (1 byte, or 2 with 0x80 set in the first) and that many
 * token bytes, every 256th at its marker; they end (zero-padded to 4 or 8) where the markers
 * begin. */
static bool names_fit(struct tables *t, size_t names, uint32_t n, size_t am)
{
	size_t off = names;

	for (uint32_t i = 0; i < n; i++) {
		unsigned l;

		if (!step(t, 1))
			return false;
		if (i % 256 == 0 && off - names != u32_at(t->img + am + 4 * (i / 256)))
			return false;
		if (off >= am)
			return false;
		l = t->img[off++];
		if (l & 0x80) {
			if (off >= am)
				return false;
			l = (l & 0x7f) | (unsigned)t->img[off++] << 7;
		}
		if (!l || l > VMI_KALLSYMS_NAME_MAX + 1 || l > am - off)
			return false;
		off += l;
	}
	if (off > am || am - off >= PAD_MAX)
		return false;
	for (; off < am; off++)
		if (t->img[off])
			return false;
	return true;
}

/* kallsyms_markers (u32, [0] == 0, one per 256 names) before the token table, with
 * kallsyms_seqs_of_names between them or not; kallsyms_num_syms and kallsyms_names before it:
 * the names 8 bytes after num_syms (a u32 padded to 8, before 7.0) or right after it (7.0+). */
static bool find_names(struct tables *t)
{
	size_t lo = t->tt > MARKERS_WINDOW ? t->tt - MARKERS_WINDOW : 0;

	if (t->tt < 24)
		return false;
	for (size_t am = t->tt - LABEL_ALIGN; am >= lo + 16 && am >= 16; am -= LABEL_ALIGN) {
		size_t nm = 1, from, to;
		uint32_t prev = 0;

		if (u32_at(t->img + am))
			continue;
		if (!step(t, 1))
			return false;
		while (nm < MARKERS_MAX && am + 4 * (nm + 1) <= t->tt) {
			uint32_t v = u32_at(t->img + am + 4 * nm);

			if (v <= prev || v - prev < 2 * 256 || v - prev > 256ull * ENTRY_MAX)
				break;
			prev = v;
			nm++;
		}
		if (nm < 2)
			continue; /* more than 256 symbols: a kernel has tens of thousands */
		/* kallsyms_num_syms 4 or 8 bytes before the names, which span more than the last
		 * marker and at most 256 entries more */
		to = am - 16;
		from =
		    am > 16 + prev + 256ull * ENTRY_MAX ? am - 16 - prev - 256ull * ENTRY_MAX : 0;
		for (size_t k = 0; k <= (to - from) / LABEL_ALIGN; k++) {
			size_t a = to - LABEL_ALIGN * k;
			uint32_t n = u32_at(t->img + a);
			size_t need = ((size_t)n + 255) / 256, names;

			if (n <= 256 || n > VMI_KALLSYMS_MAX_SYMS || need > nm)
				continue;
			/* a zero after num_syms is padding (a name's length is never 0) */
			names = u32_at(t->img + a + 4) ? a + 4 : a + 8;
			if (names + u32_at(t->img + am + 4 * (need - 1)) >= am)
				continue;
			if (!step(t, 1))
				return false;
			if (names_fit(t, names, n, am)) {
				t->num = a;
				t->names = names;
				t->n = n;
				t->markers = am;
				t->nm = need;
				return true;
			}
		}
	}
	return false;
}

/* Whether @v lies in the kernel image's mapping: x86_64's 1 GiB when the tables lie there, else
 * (arm64, anywhere KASLR put it) the image read, to its end, from 2 MiB below its start. */
static bool in_image(const struct tables *t, uint64_t v)
{
	if (t->base >= IMAGE_BASE && t->base - IMAGE_BASE < IMAGE_SIZE)
		return v >= IMAGE_BASE && v < IMAGE_BASE + IMAGE_SIZE;
	/* (6.1's _text, the relative base, lies 64 KiB below the first page it maps) */
	return v >= t->base - (2ull << 20) && v - t->base <= t->len;
}

/* Symbol @i's address: place-relative (7.0+), the offset's own address plus it; else with
 * KALLSYMS_ABSOLUTE_PERCPU (@percpu), non-negative offsets are absolute (per-CPU) values and
 * negative ones relative to relative_base - 1; without it, all relative to relative_base. */
static uint64_t sym_addr(const struct tables *t, uint32_t i, bool percpu)
{
	int32_t o = (int32_t)u32_at(t->img + t->offsets + 4ull * i);

	if (t->place_rel)
		return t->base + t->offsets + 4ull * i + (uint64_t)(int64_t)o;
	if (!percpu)
		return t->rbase + (uint32_t)o;
	return o >= 0 ? (uint64_t)o : t->rbase - 1 - (int64_t)o;
}

/* Addresses sorted as kallsyms sorts them (the per-CPU ones, small, first), the place-relative
 * ones all in the kernel image mapping. */
static bool sorted(struct tables *t, bool percpu)
{
	uint64_t prev = 0;

	if (!step(t, t->n))
		return false;
	for (uint32_t i = 0; i < t->n; i++) {
		uint64_t a = sym_addr(t, i, percpu);

		if (a < prev || (t->place_rel && !in_image(t, a)))
			return false;
		prev = a;
	}
	return true;
}

/* Offsets at @off and relative base at @rb that make addresses sorted: sets them and *@percpu
 * (any negative offset). */
static bool offsets_at(struct tables *t, size_t off, size_t rb, bool *percpu)
{
	if (!in_image(t, u64_at(t->img + rb)))
		return false;
	t->offsets = off;
	t->rbase = u64_at(t->img + rb);
	t->place_rel = false;
	*percpu = false;
	for (uint32_t i = 0; i < t->n && !*percpu; i++)
		*percpu = (int32_t)u32_at(t->img + off + 4ull * i) < 0;
	return sorted(t, *percpu);
}

/* Place-relative offsets at @off (7.0+) that make addresses sorted, all in the image mapping. */
static bool place_offsets_at(struct tables *t, size_t off, bool *percpu)
{
	t->offsets = off;
	t->rbase = 0;
	t->place_rel = true;
	*percpu = false;
	if (sorted(t, false))
		return true;
	t->place_rel = false;
	return false;
}

/* kallsyms_offsets (s32 each): with kallsyms_relative_base (u64, in the kernel image) before
 * kallsyms_num_syms (6.1) or after kallsyms_token_index (6.4+), or place-relative right after
 * kallsyms_token_index (7.0+); the one whose addresses are sorted. */
static bool find_offsets(struct tables *t, bool *percpu)
{
	size_t size = align8(4ull * t->n), after = t->ti + 2 * TOKENS;

	if (t->num >= 8 + size && offsets_at(t, t->num - 8 - size, t->num - 8, percpu))
		return true;
	if (after + size + 8 <= t->len && offsets_at(t, after, after + size, percpu))
		return true;
	return after + 4ull * t->n <= t->len && place_offsets_at(t, after, percpu);
}

/* Symbol @i's name and type into @buf (at most VMI_KALLSYMS_NAME_MAX + 2 bytes with the NUL); @*off
 * walks the names. 0, or -EINVAL when the expanded name is too long or empty. */
static int expand(const struct tables *t, size_t *off, char *buf)
{
	unsigned l = t->img[(*off)++];
	size_t pos = 0;

	if (l & 0x80)
		l = (l & 0x7f) | (unsigned)t->img[(*off)++] << 7;
	for (unsigned k = 0; k < l; k++) {
		const char *tok = (const char *)t->img + t->tt + t->idx[t->img[*off + k]];
		size_t tl = strlen(tok); /* NUL-terminated within TOKEN_MAX: tokens_at checked */

		if (pos + tl > VMI_KALLSYMS_NAME_MAX + 1)
			return -EINVAL;
		memcpy(buf + pos, tok, tl);
		pos += tl;
	}
	*off += l;
	buf[pos] = 0;
	return pos >= 2 ? 0 : -EINVAL;
}

long vmi_kallsyms_decode(const uint8_t *img, size_t len, uint64_t base, vmi_kallsyms_fn add,
			 void *actx, char *err, size_t errlen)
{
	struct tables t = {.img = img, .len = len, .base = base};
	char name[VMI_KALLSYMS_NAME_MAX + 2];
	bool percpu = false;
	size_t off;

	if (base % 8 || !find_tokens(&t)) {
		if (t.work > WORK_MAX)
			goto too_long;
		msg_fmt(err, errlen,
			"no kallsyms tables (kallsyms_token_table/_index) in the kernel image at "
			"0x%" PRIx64 " (%zu bytes)",
			base, len);
		return -ENOENT;
	}
	if (!find_names(&t)) {
		if (t.work > WORK_MAX)
			goto too_long;
		msg_fmt(err, errlen,
			"kallsyms: token table at 0x%" PRIx64
			" but no consistent kallsyms_markers, "
			"_num_syms and _names before it",
			base + t.tt);
		return -EINVAL;
	}
	if (!find_offsets(&t, &percpu)) {
		if (t.work > WORK_MAX)
			goto too_long;
		msg_fmt(err, errlen,
			"kallsyms: %" PRIu32 " names at 0x%" PRIx64 " but no kallsyms_offsets "
			"(with _relative_base, or place-relative) next to them that give sorted "
			"addresses in the kernel image",
			t.n, base + t.names);
		return -EINVAL;
	}
	off = t.names;
	for (uint32_t i = 0; i < t.n; i++) {
		uint64_t addr = sym_addr(&t, i, percpu);
		int ret;

		if (expand(&t, &off, name) < 0) {
			msg_fmt(err, errlen,
				"kallsyms: symbol %" PRIu32 " of %" PRIu32 " at 0x%" PRIx64
				": name empty or longer than %u bytes",
				i, t.n, base + off, VMI_KALLSYMS_NAME_MAX);
			return -EINVAL;
		}
		ret = add(actx, addr, name[0], name + 1);
		if (ret < 0)
			return ret;
	}
	return t.n;
too_long:
	msg_fmt(err, errlen,
		"kallsyms: the search in the kernel image at 0x%" PRIx64 " gave up after "
		"%lu steps (tables forged to look valid everywhere?)",
		base, WORK_MAX);
	return -E2BIG;
}

/* What a first decoding says of the image's extent: its lowest and highest addresses in the image
 * mapping, and _text and _end where kallsyms has them. */
struct extent {
	uint64_t lo, hi, text, end;
};

static int extent_add(void *ctx, uint64_t addr, char type, const char *name)
{
	struct extent *e = ctx;

	(void)type;
	if (addr < IMAGE_BASE || addr - IMAGE_BASE >= IMAGE_SIZE)
		return 0; /* per-CPU offsets, or a 7.0+ per-CPU symbol below the image */
	if (!e->lo || addr < e->lo)
		e->lo = addr;
	if (addr > e->hi)
		e->hi = addr;
	if (!strcmp(name, "_text"))
		e->text = addr;
	else if (!strcmp(name, "_end"))
		e->end = addr;
	return 0;
}

/* A mapping of more than VMI_KALLSYMS_MAX_IMAGE around the image (a VMM's or the boot's linear map
 * of RAM, not the kernel's own trimmed one): each run of mapped blocks in [@first, @last] (of @map)
 * is searched in WINDOW bytes at a time, each window half over the one before (tables of up to
 * half of it lie whole in one), until the tables decode; the image is then the extent they
 * give, _text (else the lowest symbol) to _end (else the highest), in whole blocks, read and
 * decoded again for @add. Returns as vmi_kallsyms_read. */
static long read_windows(vmi_read_fn read, void *ctx, const uint8_t *map, long first, long last,
			 unsigned reads, vmi_kallsyms_fn add, void *actx, char *err, size_t errlen)
{
	const long win = (long)(WINDOW / BLOCK);
	long ret = -ENOENT, runs = 0;
	char why[320] = "";

	for (long k = first; k <= last;) {
		long end = k;

		if (!map[k]) {
			k++;
			continue;
		}
		while (end + 1 <= last && map[end + 1])
			end++;
		runs++;
		for (long w = k; w <= end; w += win / 2) {
			long n = end - w + 1 < win ? end - w + 1 : win;
			struct extent e = {0};
			uint64_t lo, hi;

			ret = vmi_kallsyms_read_range(read, ctx, IMAGE_BASE + (uint64_t)w * BLOCK,
						      (size_t)n * BLOCK, reads, extent_add, &e, why,
						      sizeof(why));
			reads += (unsigned)n;
			if (ret == -EINTR || ret == -ENOMEM) {
				msg_fmt(err, errlen, "%s", why);
				return ret;
			}
			if (ret <= 0 || !e.hi) {
				if (w + win > end)
					break; /* this window reached the run's end */
				continue;
			}
			lo = (e.text ? e.text : e.lo) & ~(BLOCK - 1);
			hi = ((e.end > e.hi ? e.end : e.hi) + BLOCK) & ~(BLOCK - 1);
			if (lo < IMAGE_BASE + (uint64_t)k * BLOCK ||
			    hi > IMAGE_BASE + (uint64_t)(end + 1) * BLOCK ||
			    hi - lo > VMI_KALLSYMS_MAX_IMAGE) {
				msg_fmt(err, errlen,
					"kallsyms: the kernel image, 0x%" PRIx64 "-0x%" PRIx64
					" by its own symbols (_text to _end), spans %" PRIu64
					" MiB (more than %u) or lies outside the mapped 0x%" PRIx64
					"-0x%" PRIx64,
					lo, hi, (hi - lo) >> 20, VMI_KALLSYMS_MAX_IMAGE >> 20,
					(uint64_t)(IMAGE_BASE + (uint64_t)k * BLOCK),
					(uint64_t)(IMAGE_BASE + (uint64_t)(end + 1) * BLOCK));
				return -E2BIG;
			}
			return vmi_kallsyms_read_range(read, ctx, lo, hi - lo, reads, add, actx,
						       err, errlen);
		}
		k = end + 1;
	}
	msg_fmt(err, errlen,
		"kallsyms: no kernel image found in the %ld mapped run(s) of the kernel image "
		"mapping 0x%llx-0x%llx (%ld MiB mapped from the first to the last: %s)",
		runs, IMAGE_BASE + (unsigned long long)first * BLOCK,
		IMAGE_BASE + (unsigned long long)(last + 1) * BLOCK,
		(last - first + 1) * (long)(BLOCK >> 20), why);
	return ret == -E2BIG ? -E2BIG : ret < 0 ? ret : -ENOENT;
}

long vmi_kallsyms_read(vmi_read_fn read, void *ctx, vmi_kallsyms_fn add, void *actx, char *err,
		       size_t errlen)
{
	uint8_t map[IMAGE_SIZE / BLOCK] = {0};
	long first = -1, last = -1, ret;
	unsigned reads = 0;
	uint8_t b;
	size_t size;

	/* the image is 2 MiB-aligned and mapped whole; in the kernel's own page tables nothing
	 * else in its 1 GiB is (a linear map of RAM there is searched: read_windows) */
	for (long k = 0; k < (long)(IMAGE_SIZE / BLOCK); k++, reads++) {
		ret = read(ctx, IMAGE_BASE + (uint64_t)k * BLOCK, &b, 1);
		if (ret == -EINTR) {
			msg_fmt(err, errlen, "kallsyms: the search was stopped");
			return ret;
		}
		if (ret == 0) {
			map[k] = 1;
			if (first < 0)
				first = k;
			last = k;
		}
	}
	if (first < 0) {
		msg_fmt(err, errlen,
			"no kernel image mapped at 0x%llx-0x%llx (the kernel is not up)",
			IMAGE_BASE, IMAGE_BASE + IMAGE_SIZE);
		return -ESRCH;
	}
	size = (size_t)(last - first + 1) * BLOCK;
	if (size > VMI_KALLSYMS_MAX_IMAGE)
		return read_windows(read, ctx, map, first, last, reads, add, actx, err, errlen);
	return vmi_kallsyms_read_range(read, ctx, IMAGE_BASE + (uint64_t)first * BLOCK, size, reads,
				       add, actx, err, errlen);
}

long vmi_kallsyms_read_range(vmi_read_fn read, void *ctx, uint64_t base, size_t size,
			     unsigned reads, vmi_kallsyms_fn add, void *actx, char *err,
			     size_t errlen)
{
	uint8_t *img;
	long ret;

	if (size > VMI_KALLSYMS_MAX_IMAGE || !size || (base & (PAGE - 1)) || (size & (PAGE - 1))) {
		msg_fmt(err, errlen,
			"kallsyms: a kernel image of %zu KiB at 0x%" PRIx64 " (at most %u MiB, whole "
			"pages)",
			size >> 10, base, VMI_KALLSYMS_MAX_IMAGE >> 20);
		return -E2BIG;
	}
	img = calloc(1, size);
	if (!img) {
		msg_fmt(err, errlen, "kallsyms: out of memory");
		return -ENOMEM;
	}
	for (size_t o = 0; o < size; o += BLOCK) {
		uint64_t gva = base + o;
		size_t chunk = size - o < BLOCK ? size - o : BLOCK;

		ret = read(ctx, gva, img + o, chunk);
		reads++;
		for (size_t p = 0; ret < 0 && ret != -EINTR && p < chunk; p += PAGE, reads++) {
			int r;

			if (reads >= VMI_KALLSYMS_MAX_READS)
				break;
			r = read(ctx, gva + p, img + o + p, PAGE);
			if (r == -EINTR)
				ret = r;
			else if (r < 0)
				memset(img + o + p, 0, PAGE); /* unmapped: zeros */
		}
		if (ret == -EINTR || reads >= VMI_KALLSYMS_MAX_READS) {
			if (ret == -EINTR)
				msg_fmt(err, errlen, "kallsyms: the search was stopped");
			else
				msg_fmt(err, errlen,
					"kallsyms: more than %u reads of the kernel image",
					VMI_KALLSYMS_MAX_READS);
			free(img);
			return ret == -EINTR ? -EINTR : -E2BIG;
		}
	}
	ret = vmi_kallsyms_decode(img, size, base, add, actx, err, errlen);
	free(img);
	return ret;
}

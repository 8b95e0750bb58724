#include "tests/common/kallsyms_image.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Printable bytes are themselves; the others stand for these multi-byte tokens, then for
 * generated two-byte ones. */
static const char *const multi[] = {"vfs_", "read", "write",  "do_sys_", "open",    "func_",
				    "_t",   "bm_",  "status", "__",	 "kallsyms"};
static char gen[256][4];

const char *ks_token(unsigned b)
{
	static char single[256][2];
	unsigned k;

	if (b > 0x20 && b < 0x7f) {
		single[b][0] = (char)b;
		return single[b];
	}
	k = b <= 0x20 ? b : b - 0x5e; /* 0..0x20, then 0x7f.. -> 0x21.. */
	if (k < sizeof(multi) / sizeof(multi[0]))
		return multi[k];
	snprintf(gen[b], sizeof(gen[b]), "Q%c", 'a' + (int)(k % 26));
	if (k >= 26 + sizeof(multi) / sizeof(multi[0]))
		snprintf(gen[b], sizeof(gen[b]), "Z%c%c", 'a' + (int)(k % 26), 'a' + (int)(k / 26));
	return gen[b];
}

static size_t align8(size_t v)
{
	return (v + 7) & ~(size_t)7;
}

/* A label's alignment in @lay: 4 from 7.0, 8 before. */
static size_t align_to(enum ks_layout lay, size_t v)
{
	return lay == KS_7_0 ? (v + 3) & ~(size_t)3 : align8(v);
}

/* @name in token bytes, longest token first; returns how many. */
static size_t encode(const char *name, uint8_t *out, size_t cap)
{
	size_t n = 0;

	while (*name && n < cap) {
		unsigned best = (unsigned char)*name;
		size_t best_len = 1;

		for (unsigned b = 0; b < 256; b++) {
			const char *t = ks_token(b);
			size_t l = strlen(t);

			if (l > best_len && !strncmp(name, t, l)) {
				best = b;
				best_len = l;
			}
		}
		out[n++] = (uint8_t)best;
		name += best_len;
	}
	return n;
}

static bool room(size_t at, size_t len, size_t cap)
{
	return at <= cap && len <= cap - at;
}

static size_t put_offsets(uint8_t *buf, size_t cap, size_t at, const struct ks_sym *syms, size_t n,
			  enum ks_layout lay, uint64_t rbase, struct ks_where *w)
{
	w->offsets = at;
	if (!room(at, 4 * n + 16, cap))
		return 0;
	for (size_t i = 0; i < n; i++) {
		int32_t o = syms[i].name[0] == 'A'
				? (int32_t)syms[i].addr
				: (int32_t)(-(int64_t)(syms[i].addr - rbase) - 1);

		if (lay == KS_7_0) /* place-relative: rbase is where buf is mapped */
			o = (int32_t)(int64_t)(syms[i].addr - (rbase + at + 4 * i));
		memcpy(buf + at + 4 * i, &o, 4);
	}
	if (lay == KS_7_0)
		return at + 4 * n;
	at = align8(at + 4 * n);
	w->rbase = at;
	memcpy(buf + at, &rbase, 8);
	return at + 8;
}

size_t ks_build(uint8_t *buf, size_t cap, const struct ks_sym *syms, size_t n, enum ks_layout lay,
		uint64_t rbase, size_t lead, struct ks_where *w)
{
	size_t at = lead, nm = (n + 255) / 256, off = 0;
	uint32_t seed = 12345, n32 = (uint32_t)n;

	memset(buf, 0, cap);
	memset(w, 0, sizeof(*w));
	if (lead > cap)
		return 0;
	for (size_t i = 0; i < lead; i++) {
		seed = seed * 1103515245 + 12345;
		buf[i] = (uint8_t)(seed >> 16);
	}
	if (lay != KS_6_4 && lay != KS_7_0 &&
	    !(at = put_offsets(buf, cap, at, syms, n, lay, rbase, w)))
		return 0;
	w->num = at;
	if (!room(at, 8, cap))
		return 0;
	memcpy(buf + at, &n32, 4);
	at += lay == KS_7_0 ? 4 : 8;
	w->names = at;
	{
		uint32_t markers[4096];

		for (size_t i = 0; i < n; i++) {
			uint8_t tok[1024];
			size_t l = encode(syms[i].name, tok, sizeof(tok));

			if (i % 256 == 0 && i / 256 < 4096)
				markers[i / 256] = (uint32_t)off;
			if (!room(at + off, l + 2, cap))
				return 0;
			if (l > 127) {
				buf[at + off++] = (uint8_t)(0x80 | (l & 0x7f));
				buf[at + off++] = (uint8_t)(l >> 7);
			} else {
				buf[at + off++] = (uint8_t)l;
			}
			memcpy(buf + at + off, tok, l);
			off += l;
		}
		at = align_to(lay, at + off);
		w->markers = at;
		if (!room(at, 4 * nm + 8, cap) || nm > 4096)
			return 0;
		memcpy(buf + at, markers, 4 * nm);
		at = align_to(lay, at + 4 * nm);
	}
	if (lay != KS_6_1_NOSEQS && lay != KS_7_0) {
		w->seqs = at;
		if (!room(at, 3 * n + 8, cap))
			return 0;
		for (size_t i = 0; i < n; i++) { /* the sorted order; any values do here */
			buf[at + 3 * i] = (uint8_t)(i >> 16);
			buf[at + 3 * i + 1] = (uint8_t)(i >> 8);
			buf[at + 3 * i + 2] = (uint8_t)i;
		}
		at = align8(at + 3 * n);
	}
	w->tt = at;
	{
		uint16_t idx[256];
		size_t t = 0;

		for (unsigned b = 0; b < 256; b++) {
			const char *tok = ks_token(b);

			idx[b] = (uint16_t)t;
			if (!room(at + t, strlen(tok) + 1, cap))
				return 0;
			memcpy(buf + at + t, tok, strlen(tok) + 1);
			t += strlen(tok) + 1;
		}
		at = align_to(lay, at + t);
		w->ti = at;
		if (!room(at, 512, cap))
			return 0;
		memcpy(buf + at, idx, 512);
		at += 512;
	}
	if ((lay == KS_6_4 || lay == KS_7_0) &&
	    !(at = put_offsets(buf, cap, at, syms, n, lay, rbase, w)))
		return 0;
	if (lay == KS_7_0) { /* seqs_of_names after the offsets */
		w->seqs = at;
		if (!room(at, 3 * n + 4, cap))
			return 0;
		for (size_t i = 0; i < n; i++) {
			buf[at + 3 * i] = (uint8_t)(i >> 16);
			buf[at + 3 * i + 1] = (uint8_t)(i >> 8);
			buf[at + 3 * i + 2] = (uint8_t)i;
		}
		at = align_to(lay, at + 3 * n);
	}
	w->end = at;
	return at;
}

#include "vmi/vmi_linux_boot.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMAGE_SIZE	  (1ull << 30) /* the kernel image's space from VMI_LINUX_TEXT_BASE */
#define SYSTEM_SCHEDULING 1 /* enum system_states: the last value before init memory is freed */

static uint64_t sym_addr(const struct vmi_linux *l, const char *name)
{
	const struct vmi_sym *s = vmi_symtab_find(&l->objects, name);

	if (!s)
		s = vmi_symtab_find(&l->funcs, name);
	return s ? s->addr : 0;
}

static bool in_image(uint64_t lo, uint64_t hi)
{
	return lo >= VMI_LINUX_TEXT_BASE && hi >= lo && hi <= VMI_LINUX_TEXT_BASE + IMAGE_SIZE;
}

bool vmi_linux_calls_fentry(const struct arch *a, const uint8_t *bytes, uint64_t site,
			    uint64_t fentry)
{
	uint64_t to;

	return a->direct_branch(bytes, a->site_len, site, false, &to) == a->site_len &&
	       to == fentry;
}

static int by_site(const void *a, const void *b)
{
	const struct vmi_boot_loc *x = a, *y = b;

	return x->site < y->site ? -1 : x->site > y->site;
}

/* Reads __mcount_loc whole into @locs (b->nr_locs entries, each its site and entry address). */
static int read_locs(const struct vmi_linux *l, vmi_read_fn read, void *ctx, struct vmi_boot *b,
		     struct vmi_boot_loc *locs, char *err, size_t errlen)
{
	uint64_t buf[512];

	for (size_t i = 0; i < b->nr_locs; i += 512) {
		size_t n = b->nr_locs - i < 512 ? b->nr_locs - i : 512;
		int ret = read(ctx, b->loc_start + 8 * i, buf, 8 * n);

		if (ret < 0) {
			msg_fmt(err, errlen, "boot tracing: cannot read __mcount_loc at 0x%" PRIx64,
				b->loc_start + 8 * i);
			return ret;
		}
		for (size_t k = 0; k < n; k++)
			locs[i + k] = (struct vmi_boot_loc){buf[k], b->loc_start + 8 * (i + k)};
	}
	(void)l;
	return 0;
}

int vmi_linux_boot_sites(struct vmi_linux *l, vmi_read_fn read, void *ctx, struct vmi_boot *b,
			 struct vmi_sites *sites, char *err, size_t errlen)
{
	uint64_t start = sym_addr(l, "__start_mcount_loc"), stop = sym_addr(l, "__stop_mcount_loc");
	struct vmi_boot_loc *locs = NULL;
	uint64_t *addrs = NULL;
	size_t n = 0;
	int ret;

	memset(b, 0, sizeof(*b));
	memset(sites, 0, sizeof(*sites));
	b->init_lo = sym_addr(l, "_sinittext");
	b->init_hi = sym_addr(l, "_einittext");
	if (!start || !stop || !l->fentry || !b->init_lo || !b->init_hi) {
		msg_fmt(err, errlen, "boot tracing: the kernel's symbols lack %s",
			!start || !stop ? "__start_mcount_loc / __stop_mcount_loc"
			: !l->fentry	? "__fentry__"
					: "_sinittext / _einittext");
		return -ENOENT;
	}
	if (!in_image(start, stop) || (stop - start) % 8 ||
	    (stop - start) / 8 > VMI_BOOT_MAX_LOCS || !in_image(b->init_lo, b->init_hi) ||
	    !in_image(l->stext, l->etext)) {
		msg_fmt(err, errlen,
			"boot tracing: __mcount_loc 0x%" PRIx64 "..0x%" PRIx64
			" or .init.text 0x%" PRIx64 "..0x%" PRIx64
			" is not a table in the kernel image",
			start, stop, b->init_lo, b->init_hi);
		return -EINVAL;
	}
	b->loc_start = start;
	b->nr_locs = (stop - start) / 8;
	locs = calloc(b->nr_locs ? b->nr_locs : 1, sizeof(*locs));
	addrs = calloc(b->nr_locs ? b->nr_locs : 1, sizeof(*addrs));
	ret = -ENOMEM;
	if (!locs || !addrs) {
		msg_fmt(err, errlen, "boot tracing: out of memory");
		goto fail;
	}
	ret = read_locs(l, read, ctx, b, locs, err, errlen);
	if (ret < 0)
		goto fail;
	qsort(locs, b->nr_locs, sizeof(*locs), by_site);
	uint64_t prev = 0;

	for (size_t i = 0; i < b->nr_locs; i++) {
		uint64_t a = locs[i].site, before = prev;
		uint8_t bytes[5];

		prev = a; /* locs[i - 1] may be overwritten by now: locs[n] = locs[i] below */
		if ((i && a == before) || (i + 1 < b->nr_locs && locs[i + 1].site == a)) {
			b->skipped++; /* listed twice: ftrace would refuse it, so no site of ours */
			continue;
		}
		if (!((a >= l->stext && a + 5 <= l->etext) ||
		      (a >= b->init_lo && a + 5 <= b->init_hi)) ||
		    read(ctx, a, bytes, 5) < 0 ||
		    !vmi_linux_calls_fentry(vmi_linux_arch(l), bytes, a, l->fentry)) {
			b->skipped += a != 0; /* 0: an entry the linker padded */
			continue;
		}
		locs[n] = locs[i];
		addrs[n++] = a;
	}
	b->locs = locs;
	b->nr = n;
	ret = vmi_sites_build(sites, addrs, n, &l->funcs);
	free(addrs);
	if (ret < 0) {
		msg_fmt(err, errlen, "boot tracing: out of memory");
		vmi_linux_boot_free(b);
		return ret;
	}
	return 0;
fail:
	free(locs);
	free(addrs);
	memset(b, 0, sizeof(*b));
	return ret;
}

uint64_t vmi_linux_boot_loc(const struct vmi_boot *b, uint64_t site)
{
	size_t lo = vmi_lower_bound(b->locs, b->nr, sizeof(*b->locs),
				    offsetof(struct vmi_boot_loc, site), site);

	return lo < b->nr && b->locs[lo].site == site ? b->locs[lo].loc : 0;
}

int vmi_linux_init_freed(const struct vmi_linux *l, vmi_read_fn read, void *ctx)
{
	uint64_t at = sym_addr(l, "system_state");
	int32_t state;

	if (!at || read(ctx, at, &state, 4) < 0)
		return -1;
	return state < 0 || state > SYSTEM_SCHEDULING;
}

void vmi_linux_boot_free(struct vmi_boot *b)
{
	free(b->locs);
	memset(b, 0, sizeof(*b));
}

const uint8_t vmi_linux_boot_nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

bool vmi_linux_boot_can_take(uint64_t site, uint64_t loc, uint64_t entry, const uint8_t bytes[5],
			     uint64_t fentry)
{
	return loc && entry == site &&
	       vmi_linux_calls_fentry(arch_get(ARCH_X86_64), bytes, site, fentry);
}

#include "vmi/vmi_sites.h"
#include "arch/arch.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t vmi_entry_insn(const struct arch *a, const uint8_t *p, uint64_t func)
{
	return func + a->entry_pad_len(p);
}

bool vmi_site_entry(const struct arch *a, const uint8_t *p, uint64_t func, uint64_t *site)
{
	size_t skip = a->entry_pad_len(p);

	if (!a->is_site_nop(p + skip) || (a->site_entry_ok && !a->site_entry_ok(p, skip)))
		return false;
	*site = func + skip;
	return true;
}

int vmi_sites_build(struct vmi_sites *sites, const uint64_t *addrs, size_t n,
		    const struct vmi_symtab *funcs)
{
	bool ascending = true;

	sites->nr = 0;
	sites->v = calloc(n ? n : 1, sizeof(*sites->v));
	if (!sites->v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct vmi_sym *f = vmi_symtab_lookup(funcs, addrs[i]);

		ascending = ascending && (!i || addrs[i] >= addrs[i - 1]);
		if (!f)
			continue;
		/* one site per function (the first recorded): with ascending addresses only the
		 * last site can be the same function's */
		size_t j;

		if (sites->nr && sites->v[sites->nr - 1].func == f)
			continue;
		if (!ascending) {
			for (j = sites->nr; j-- > 0;)
				if (sites->v[j].func == f)
					break;
			if (j != (size_t)-1)
				continue;
		}
		sites->v[sites->nr++] = (struct vmi_site){.addr = addrs[i], .func = f};
	}
	return 0;
}

static int by_addr(const void *a, const void *b)
{
	uint64_t x = ((const struct vmi_site *)a)->addr, y = ((const struct vmi_site *)b)->addr;

	return x < y ? -1 : x > y;
}

int vmi_sites_add(struct vmi_sites *sites, const struct vmi_site *add, size_t n)
{
	struct vmi_site *v;

	if (!n)
		return 0;
	v = realloc(sites->v, (sites->nr + n) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v + sites->nr, add, n * sizeof(*v));
	sites->v = v;
	sites->nr += n;
	qsort(sites->v, sites->nr, sizeof(*sites->v), by_addr);
	return 0;
}

int vmi_site_check(const struct arch *a, const struct vmi_site *site, const uint8_t *bytes,
		   char *err, size_t errlen)
{
	char hex[3 * ARCH_PATCH_MAX];

	if (a->is_site_nop(bytes))
		return 0;
	msg_fmt(err, errlen, "%s: site 0x%" PRIx64 " holds %s, not a NOP5", site->func->name,
		site->addr, arch_format_bytes(bytes, a->site_len, hex));
	return -EILSEQ;
}

void vmi_sites_free(struct vmi_sites *sites)
{
	free(sites->v);
	memset(sites, 0, sizeof(*sites));
}

size_t vmi_lower_bound(const void *base, size_t nr, size_t size, size_t key_off, uint64_t key)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;

		memcpy(&k, (const char *)base + mid * size + key_off, sizeof(k));
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

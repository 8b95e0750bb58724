#include "vmi/vmi_linux.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The sites of the functions of l->funcs inside [@lo, @lo + @len) whose text is @text (16 bytes
 * more, zeroed), appended to @addrs (room for every function). */
static void scan_sites(const struct vmi_linux *l, const uint8_t *text, uint64_t lo, size_t len,
		       uint64_t *addrs, size_t *n)
{
	for (size_t i = 0; i < l->funcs.nr; i++) {
		uint64_t a = l->funcs.syms[i].addr;

		if (a >= lo && a - lo + 9 <= len &&
		    vmi_site_entry(vmi_linux_arch(l), text + (a - lo), a, &addrs[*n]))
			(*n)++;
	}
}

/* The sites of the module functions in l->funcs, each module's text read whole (unreadable
 * text: no sites there), appended to @addrs (room for every function). 0 or -ENOMEM. */
static int module_sites(struct vmi_linux *l, vmi_read_fn read, void *ctx, uint64_t *addrs,
			size_t *n)
{
	for (size_t k = 0; k < l->mods.nr; k++) {
		const struct vmi_module *m = &l->mods.v[k];
		uint8_t *text;

		if (!m->nr_funcs || !m->text_size)
			continue;
		text = malloc(m->text_size + 16);
		if (!text)
			return -ENOMEM;
		memset(text + m->text_size, 0, 16);
		if (read(ctx, m->text, text, m->text_size) == 0)
			scan_sites(l, text, m->text, m->text_size, addrs, n);
		free(text);
	}
	return 0;
}

int vmi_linux_sites(struct vmi_linux *l, vmi_read_fn read, void *ctx, struct vmi_sites *sites)
{
	char why[160];
	size_t len, n = 0;
	uint8_t *text = NULL;
	uint64_t *addrs = NULL;
	int ret = vmi_linux_check_text(l, why, sizeof(why));

	if (ret < 0)
		return ret;
	len = l->etext - l->stext;
	text = malloc(len + 16);
	addrs = calloc(l->funcs.nr ? l->funcs.nr : 1, sizeof(*addrs));
	ret = -ENOMEM;
	if (!text || !addrs)
		goto out;
	memset(text + len, 0, 16);
	for (size_t off = 0; off < len; off += 1 << 20) {
		size_t chunk = len - off < (1u << 20) ? len - off : 1u << 20;

		ret = read(ctx, l->stext + off, text + off, chunk);
		if (ret < 0)
			goto out;
	}
	scan_sites(l, text, l->stext, len, addrs, &n);
	ret = module_sites(l, read, ctx, addrs, &n);
	if (ret == 0)
		ret = vmi_sites_build(sites, addrs, n, &l->funcs);
out:
	free(text);
	free(addrs);
	return ret;
}

/* Index of the site of the function starting at @addr (or whose site is @addr), or -1. */
static long site_of(const struct vmi_sites *sites, uint64_t addr)
{
	size_t lo = vmi_lower_bound(sites->v, sites->nr, sizeof(*sites->v),
				    offsetof(struct vmi_site, addr), addr);

	if (lo < sites->nr && (sites->v[lo].addr == addr || sites->v[lo].func->addr == addr))
		return (long)lo;
	return -1;
}

#define MAX_BODY (64u << 10)

long vmi_linux_callees(struct vmi_linux *l, vmi_read_fn read, void *ctx,
		       const struct vmi_sites *sites, const size_t *roots, size_t nr_roots,
		       unsigned depth, bool *selected)
{
	size_t *frontier = calloc(sites->nr ? sites->nr : 1, sizeof(*frontier));
	size_t *next = calloc(sites->nr ? sites->nr : 1, sizeof(*next));
	uint8_t *body = malloc(MAX_BODY);
	size_t nf = 0, nn;
	long marked = 0;

	(void)l;
	if (!frontier || !next || !body) {
		marked = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nr_roots; i++)
		if (!selected[roots[i]]) {
			selected[roots[i]] = true;
			frontier[nf++] = roots[i];
			marked++;
		}
	for (unsigned d = 0; d < depth && nf; d++) {
		nn = 0;
		for (size_t k = 0; k < nf; k++) {
			const struct vmi_sym *f = sites->v[frontier[k]].func;
			size_t len = f->size && f->size < MAX_BODY ? f->size : MAX_BODY;

			if (read(ctx, f->addr, body, len) < 0)
				continue;
			/* rel32 calls and jumps whose target is a traceable function */
			for (size_t i = 0; i + 5 <= len; i++) {
				uint64_t to;
				long t;

				if (!vmi_linux_arch(l)->direct_branch(body + i, len - i,
								      f->addr + i, true, &to))
					continue;
				t = site_of(sites, to);
				if (t < 0 || selected[t])
					continue;
				selected[t] = true;
				next[nn++] = (size_t)t;
				marked++;
			}
		}
		memcpy(frontier, next, nn * sizeof(*next));
		nf = nn;
	}
out:
	free(frontier);
	free(next);
	free(body);
	return marked;
}

int vmi_linux_ftrace_converted(const struct vmi_linux *l, vmi_read_fn read, void *ctx)
{
	const struct vmi_sym *cnt = vmi_symtab_find(&l->objects, "ftrace_update_tot_cnt");
	uint64_t v;
	int ret;

	if (!cnt)
		return -ENOENT;
	ret = read(ctx, cnt->addr, &v, sizeof(v));
	return ret < 0 ? ret : v != 0;
}

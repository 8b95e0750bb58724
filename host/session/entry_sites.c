#include "host/session/entry_sites.h"
#include "host/trace/filter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

static bool named_in(char *const *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!is_glob(v[i]) && !strcmp(v[i], name))
			return true;
	return false;
}

static bool spec_names(const struct fe_spec *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].func, name))
			return true;
	return false;
}

bool entry_sites_named(const struct session *s, const char *name)
{
	return named_in(s->filter, s->nr_filter, name) || named_in(s->graph, s->nr_graph, name) ||
	       spec_names(s->events, s->nr_events, name) ||
	       spec_names(s->rprobes, s->nr_rprobes, name);
}

/* --entry: whether an -l or -g glob selects @name (every name when there is none). */
static bool glob_selects(const struct session *s, const char *name)
{
	if (!s->nr_filter && !s->nr_graph)
		return true;
	for (size_t i = 0; i < s->nr_filter; i++)
		if (filter_glob_match(s->filter[i], name))
			return true;
	for (size_t i = 0; i < s->nr_graph; i++)
		if (filter_glob_match(s->graph[i], name))
			return true;
	return false;
}

/* Call padding before a function (CONFIG_CALL_PADDING, kCFI): no function of its own. */
static bool padding(const char *name)
{
	return !strncmp(name, "__pfx_", 6) || !strncmp(name, "__cfi_", 6);
}

/* has[i]: function i of @funcs has a site in @sites, or shares its address with one that has. */
static bool *functions_with_sites(const struct vmi_sites *sites, const struct vmi_symtab *funcs)
{
	bool *has = calloc(funcs->nr ? funcs->nr : 1, sizeof(*has));

	if (!has)
		return NULL;
	for (size_t k = 0; k < sites->nr; k++) {
		const struct vmi_sym *f = sites->v[k].func;
		size_t i;

		if (f < funcs->syms || f >= funcs->syms + funcs->nr)
			continue;
		i = (size_t)(f - funcs->syms);
		has[i] = true;
		/* aliases: the table is sorted by address */
		for (size_t j = i; j-- > 0 && funcs->syms[j].addr == f->addr;)
			has[j] = true;
		for (size_t j = i + 1; j < funcs->nr && funcs->syms[j].addr == f->addr; j++)
			has[j] = true;
	}
	return has;
}

long entry_sites_add(const struct session *s, struct vmi_sites *sites,
		     const struct vmi_symtab *funcs, vmi_read_fn read, void *ctx,
		     const char *no_entry, uint64_t reserved, char *err, size_t errlen)
{
	bool *has = functions_with_sites(sites, funcs);
	struct vmi_site *add = NULL;
	size_t nr = 0, cap = 0;
	long ret = -ENOMEM;

	if (!has)
		return -ENOMEM;
	for (size_t i = 0; i < funcs->nr; i++) {
		const struct vmi_sym *f = &funcs->syms[i];
		bool exact;
		uint8_t b[4];

		if (has[i] || padding(f->name) || (reserved && f->addr == reserved))
			continue;
		exact = entry_sites_named(s, f->name);
		if (!exact && !(s->entry_all && glob_selects(s, f->name)))
			continue;
		if (no_entry) {
			snprintf(err, errlen, "%s has no fentry site: %s",
				 f->name, no_entry);
			ret = -ENOTSUP;
			goto out;
		}
		if (read(ctx, f->addr, b, sizeof(b)) < 0) {
			if (!exact)
				continue;
			snprintf(err, errlen, "%s: its first bytes at 0x%llx cannot be read",
				 f->name, (unsigned long long)f->addr);
			ret = -EFAULT;
			goto out;
		}
		if (nr == cap) {
			size_t c = cap ? 2 * cap : 64;
			struct vmi_site *v = realloc(add, c * sizeof(*v));

			if (!v)
				goto out;
			add = v;
			cap = c;
		}
		add[nr++] = (struct vmi_site){.addr = vmi_entry_insn(b, f->addr), .func = f, .entry = true};
		has[i] = true;
	}
	ret = vmi_sites_add(sites, add, nr);
	if (ret == 0)
		ret = (long)nr;
out:
	free(add);
	free(has);
	return ret;
}

#include "host/session/entry_sites.h"
#include "host/trace/filter.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stddef.h>
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

/* An -e or -r of function @name itself (an -e func+OFFSET probes an instruction inside it, not it). */
static bool spec_names(const struct fe_spec *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!v[i].offset && !strcmp(v[i].func, name))
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

long entry_sites_add(const struct arch *a, const struct session *s, struct vmi_sites *sites,
		     const struct vmi_symtab *funcs, vmi_read_fn read, void *ctx,
		     const char *no_entry, uint64_t reserved, bool every, char *err, size_t errlen)
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
		if (!exact && !((s->entry_all || every) && glob_selects(s, f->name)))
			continue;
		if (no_entry) {
			msg_fmt(err, errlen, "%s has no fentry site: %s", f->name, no_entry);
			ret = -ENOTSUP;
			goto out;
		}
		if (read(ctx, f->addr, b, sizeof(b)) < 0) {
			if (!exact)
				continue;
			msg_fmt(err, errlen, "%s: its first bytes at 0x%llx cannot be read",
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
		add[nr++] = (struct vmi_site){
		    .addr = vmi_entry_insn(a, b, f->addr), .func = f, .entry = true};
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

/* Checks -e @e's site, @f + e->offset: inside @f, at an instruction's start. 0 or -errno with @err. */
static int check_inside(const struct arch *a, const struct fe_spec *e,
			const struct vmi_symtab *funcs, const struct vmi_sym *f, vmi_read_fn read,
			void *ctx, char *err, size_t errlen)
{
	uint64_t end = vmi_symtab_end(funcs, f);
	size_t len = e->offset + 15, before, after;
	char label[160];
	uint8_t *b;
	int ret;

	fe_label(e, label, sizeof(label));
	if (!end)
		end = f->addr; /* no size, the last symbol: nothing is known to lie inside it */
	if (end <= f->addr + e->offset) {
		msg_fmt(err, errlen, "-e %s: past the end of %s (%llu bytes)", label, f->name,
			(unsigned long long)(end - f->addr));
		return -EINVAL;
	}
	if (len > end - f->addr)
		len = end - f->addr;
	b = malloc(len);
	if (!b)
		return -ENOMEM;
	if (read(ctx, f->addr, b, len) < 0) {
		msg_fmt(err, errlen, "-e %s: the bytes of %s at 0x%llx cannot be read", label,
			f->name, (unsigned long long)f->addr);
		free(b);
		return -EFAULT;
	}
	ret = a->scan_insn_start(b, len, e->offset, &before, &after);
	if (ret == 0 && a->insn_waits(b + e->offset, len - e->offset)) {
		msg_fmt(err, errlen,
			"-e %s: an instruction that waits for an interrupt (HLT, MWAIT): the step "
			"over it, interrupts held off, might never end",
			label);
		ret = -EOPNOTSUPP;
	}
	free(b);
	if (ret == -EINVAL)
		msg_fmt(err, errlen,
			"-e %s: not an instruction's start (the instruction at +0x%zx ends at "
			"+0x%zx)",
			label, before, after);
	else if (ret < 0 && ret != -EOPNOTSUPP)
		msg_fmt(err, errlen,
			"-e %s: the bytes of %s at +0x%zx do not decode as x86-64: no instruction "
			"can be found there",
			label, f->name, before);
	return ret < 0 ? ret : 0;
}

/* The site of @sites at @addr, or NULL. */
static const struct vmi_site *site_at(const struct vmi_sites *sites, uint64_t addr)
{
	size_t i = vmi_lower_bound(sites->v, sites->nr, sizeof(*sites->v),
				   offsetof(struct vmi_site, addr), addr);

	return i < sites->nr && sites->v[i].addr == addr ? &sites->v[i] : NULL;
}

long inside_sites_build(const struct arch *a, const struct session *s,
			const struct vmi_sites *sites, const struct vmi_symtab *funcs,
			vmi_read_fn read, void *ctx, const char *no_entry, struct inside_sites *out,
			char *err, size_t errlen)
{
	size_t n = 0;
	long ret;

	memset(out, 0, sizeof(*out));
	for (size_t e = 0; e < s->nr_events; e++)
		n += s->events[e].offset != 0;
	if (!n)
		return 0;
	out->names.syms = calloc(n, sizeof(*out->names.syms));
	out->sites.v = calloc(n, sizeof(*out->sites.v));
	if (!out->names.syms || !out->sites.v)
		goto nomem;
	out->names.cap = n;
	for (size_t e = 0; e < s->nr_events; e++) {
		const struct fe_spec *ev = &s->events[e];
		const struct vmi_site *own;
		const struct vmi_sym *f;
		char label[160];
		bool have = false;

		if (!ev->offset)
			continue;
		fe_label(ev, label, sizeof(label));
		for (size_t k = 0; k < out->names.nr && !have; k++)
			have = !strcmp(out->names.syms[k].name, label);
		if (have)
			continue;
		f = vmi_symtab_find(funcs, ev->func);
		if (!f) {
			msg_fmt(err, errlen, "-e %s: no function %s in the guest's symbols", label,
				ev->func);
			ret = -ENOENT;
			goto fail;
		}
		if (no_entry) {
			msg_fmt(err, errlen, "-e %s: %s", label, no_entry);
			ret = -ENOTSUP;
			goto fail;
		}
		ret = check_inside(a, ev, funcs, f, read, ctx, err, errlen);
		if (ret < 0)
			goto fail;
		own = site_at(sites, f->addr + ev->offset);
		if (own) {
			msg_fmt(err, errlen, "-e %s: the %s site of %s, which -e %s(...) probes",
				label, own->entry ? "entry" : "fentry", own->func->name,
				own->func->name);
			ret = -EEXIST;
			goto fail;
		}
		out->names.syms[out->names.nr] =
		    (struct vmi_sym){.addr = f->addr + ev->offset, .name = strdup(label)};
		if (!out->names.syms[out->names.nr].name)
			goto nomem;
		out->sites.v[out->sites.nr++] =
		    (struct vmi_site){.addr = f->addr + ev->offset,
				      .func = &out->names.syms[out->names.nr++],
				      .entry = true,
				      .inside = true};
	}
	return (long)out->sites.nr;
nomem:
	msg_fmt(err, errlen, "out of memory");
	ret = -ENOMEM;
fail:
	inside_sites_free(out);
	return ret;
}

void inside_sites_free(struct inside_sites *in)
{
	for (size_t k = 0; k < in->names.nr; k++)
		free(in->names.syms[k].name);
	free(in->names.syms);
	free(in->sites.v);
	memset(in, 0, sizeof(*in));
}

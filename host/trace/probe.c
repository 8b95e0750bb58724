#include "host/trace/probe.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int name_cmp(const void *a, const void *b)
{
	const struct probe_name *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* The by-name index: every probe's function name with its id, sorted (name, then id). */
static int build_names(struct probe_table *t)
{
	t->by_name = calloc(t->nr ? t->nr : 1, sizeof(*t->by_name));
	if (!t->by_name) {
		probe_table_free(t);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->nr; i++) {
		const struct vmi_sym *f = t->v[i].func;

		t->by_name[i] =
		    (struct probe_name){.name = f && f->name ? f->name : "", .id = (uint32_t)i};
	}
	qsort(t->by_name, t->nr, sizeof(*t->by_name), name_cmp);
	return 0;
}

size_t probe_find_all(const struct probe_table *t, const char *name,
		      const struct probe_name **first)
{
	size_t lo = 0, hi = t->nr, end;

	while (lo < hi) { /* the first entry whose name is not below @name */
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(t->by_name[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < t->nr && !strcmp(t->by_name[end].name, name); end++)
		;
	*first = t->by_name ? &t->by_name[lo] : NULL;
	return end - lo;
}

struct probe *probe_find(const struct probe_table *t, const char *name)
{
	const struct probe_name *first;

	return probe_find_all(t, name, &first) ? &t->v[first->id] : NULL;
}

int probe_table_init(struct probe_table *t, const struct vmi_site *const *sites, size_t n)
{
	uint64_t size = 16;

	memset(t, 0, sizeof(*t));
	while (size < n * 2)
		size <<= 1;
	t->v = calloc(n ? n : 1, sizeof(*t->v));
	t->slots = calloc(size, sizeof(*t->slots));
	if (!t->v || !t->slots) {
		probe_table_free(t);
		return -ENOMEM;
	}
	t->mask = size - 1;
	t->shift = 64 - (unsigned)__builtin_ctzll(size);
	for (size_t i = 0; i < n; i++) {
		struct probe *p = &t->v[t->nr];
		uint64_t h;

		if (probe_lookup(t, sites[i]->addr))
			continue;
		p->addr = sites[i]->addr;
		p->func = sites[i]->func;
		p->entry = sites[i]->entry;
		p->inside = p->no_return = sites[i]->inside;
		p->id = (uint32_t)t->nr;
		h = probe_hash(t, p->addr);
		while (t->slots[h & t->mask])
			h++;
		t->slots[h & t->mask] = (uint32_t)++t->nr;
	}
	return build_names(t);
}

void probe_table_free(struct probe_table *t)
{
	for (size_t i = 0; t->v && i < t->nr; i++)
		free(t->v[i].detour);
	free(t->v);
	free(t->slots);
	free(t->by_name);
	memset(t, 0, sizeof(*t));
}

/* An entry probe: its first byte mapped and RAM (what the instruction is does not matter: the
 * target runs it in place, or a stub detour moves it; the detour checks its own bytes). */
static int verify_entry(struct probe *p, struct target *tgt, char *err, size_t errlen)
{
	if (!tgt->bp_in_place && !(p->stub && p->detour)) {
		msg_fmt(err, errlen,
			"%s: no fentry site, and this target cannot run an instruction under a "
			"breakpoint in place",
			p->func->name);
		return -ENOTSUP;
	}
	if (tgt->ops->translate(tgt, 0, p->addr, &p->gpa) < 0 ||
	    tgt->ops->read_phys(tgt, p->gpa, &p->orig, 1) < 0) {
		msg_fmt(err, errlen, "%s: entry 0x%" PRIx64 " is not mapped guest RAM",
			p->func->name, p->addr);
		return -EFAULT;
	}
	p->resolved = true;
	return 0;
}

int probe_verify_all(struct probe_table *t, struct target *tgt, char *err, size_t errlen)
{
	for (size_t i = 0; i < t->nr; i++) {
		struct probe *p = &t->v[i];
		struct vmi_site site = {.addr = p->addr, .func = p->func};
		size_t n = target_arch(tgt)->site_len;
		uint8_t bytes[ARCH_PATCH_MAX];
		uint64_t gpa, last;
		int ret;

		if (p->entry) {
			ret = verify_entry(p, tgt, err, errlen);
			if (ret < 0)
				return ret;
			continue;
		}
		if (tgt->ops->translate(tgt, 0, p->addr, &gpa) < 0 ||
		    tgt->ops->translate(tgt, 0, p->addr + n - 1, &last) < 0) {
			msg_fmt(err, errlen, "%s: site 0x%" PRIx64 " is not mapped in the guest",
				p->func->name, p->addr);
			return -EFAULT;
		}
		/* the site's bytes are written at once by guest-physical address */
		if (last != gpa + n - 1) {
			msg_fmt(err, errlen,
				"%s: site 0x%" PRIx64 " spans two pages that are not adjacent in "
				"guest-physical memory",
				p->func->name, p->addr);
			return -EFAULT;
		}
		if (tgt->ops->read_phys(tgt, gpa, bytes, n) < 0) {
			msg_fmt(err, errlen,
				"%s: site 0x%" PRIx64 " maps guest-physical 0x%" PRIx64
				", which is not guest RAM",
				p->func->name, p->addr, gpa);
			return -EFAULT;
		}
		ret = vmi_site_check(target_arch(tgt), &site, bytes, err, errlen);
		if (ret < 0)
			return ret;
		p->gpa = gpa;
		memcpy(p->nop, bytes, n);
		p->orig = bytes[0];
		p->resolved = true;
	}
	return 0;
}

int probe_insert(struct probe *p, struct target *tgt)
{
	int ret;

	if (p->inserted)
		return 0;
	if (!p->resolved)
		return -EINVAL;
	ret = tgt->ops->insert_bp(tgt, p->addr, p->gpa, p->orig);
	if (ret == 0)
		p->inserted = true;
	else if (ret == -ESTALE)
		p->rewritten = true;
	return ret;
}

int probe_remove(struct probe *p, struct target *tgt)
{
	int ret;

	if (!p->inserted)
		return 0;
	ret = tgt->ops->remove_bp(tgt, p->addr, p->gpa, p->orig);
	if (ret == 0 || ret == -ESTALE)
		p->inserted = false;
	if (ret == -ESTALE)
		p->rewritten = true;
	return ret;
}

int probe_insert_all(struct probe_table *t, struct target *tgt, char *err, size_t errlen)
{
	int ret = probe_verify_all(t, tgt, err, errlen);

	if (ret < 0)
		return ret;
	for (size_t i = 0; i < t->nr; i++) {
		struct probe *p = &t->v[i];

		if (p->stub)
			continue;
		ret = probe_insert(p, tgt);
		if (ret < 0) {
			if (ret == -ESTALE)
				msg_fmt(err, errlen,
					"%s: site 0x%" PRIx64
					" was rewritten by the guest since it was verified",
					p->func->name, p->addr);
			else
				msg_fmt(err, errlen, "%s: writing INT3 at 0x%" PRIx64 " failed: %s",
					p->func->name, p->addr, strerror(-ret));
			probe_remove_all(t, tgt);
			return ret;
		}
	}
	return 0;
}

int probe_remove_all(struct probe_table *t, struct target *tgt)
{
	int ret = 0;

	for (size_t i = 0; i < t->nr; i++) {
		int r = probe_remove(&t->v[i], tgt);

		if (r < 0 && r != -ESTALE && !ret)
			ret = r;
	}
	return ret;
}

unsigned probe_report_rewritten(const struct probe_table *t, struct target *tgt)
{
	unsigned n = 0;

	for (size_t i = 0; i < t->nr; i++) {
		const struct probe *p = &t->v[i];
		size_t len = target_arch(tgt)->site_len;
		uint8_t now[ARCH_PATCH_MAX];
		char hex[3 * ARCH_PATCH_MAX] = "unreadable bytes";

		if (!p->rewritten)
			continue;
		if (tgt->ops->read_phys(tgt, p->gpa, now, len) == 0)
			arch_format_bytes(now, len, hex);
		fprintf(stderr,
			"hvtrace: %s: site 0x%" PRIx64
			" was rewritten by the guest (guest-physical 0x%" PRIx64
			" holds %s): left as it is\n",
			p->func->name, p->addr, p->gpa, hex);
		n++;
	}
	return n;
}

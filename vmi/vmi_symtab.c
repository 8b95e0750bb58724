#include "vmi/vmi_symtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int vmi_symtab_add(struct vmi_symtab *t, uint64_t addr, uint64_t size, const char *name)
{
	if (t->nr == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct vmi_sym *s = realloc(t->syms, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		t->syms = s;
		t->cap = cap;
	}
	t->syms[t->nr].name = strdup(name);
	if (!t->syms[t->nr].name)
		return -ENOMEM;
	t->syms[t->nr].addr = addr;
	t->syms[t->nr].size = size;
	t->nr++;
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct vmi_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

void vmi_symtab_sort(struct vmi_symtab *t)
{
	size_t o = 0;

	if (!t->nr)
		return; /* an empty table has no array (qsort must not see NULL) */
	qsort(t->syms, t->nr, sizeof(*t->syms), sym_cmp);
	for (size_t i = 0; i < t->nr; i++) {
		if (o && t->syms[o - 1].addr == t->syms[i].addr &&
		    !strcmp(t->syms[o - 1].name, t->syms[i].name)) {
			free(t->syms[i].name);
			continue;
		}
		t->syms[o++] = t->syms[i];
	}
	t->nr = o;
	for (size_t i = 0; i + 1 < t->nr; i++)
		if (!t->syms[i].size)
			t->syms[i].size = t->syms[i + 1].addr - t->syms[i].addr;
}

const struct vmi_sym *vmi_symtab_lookup(const struct vmi_symtab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->nr;

	/* last symbol with sym.addr <= addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct vmi_sym *s = &t->syms[lo - 1];

	if (s->size && addr - s->addr >= s->size) /* s->addr + s->size may wrap */
		return NULL;
	return s;
}

const struct vmi_sym *vmi_symtab_find(const struct vmi_symtab *t, const char *name)
{
	for (size_t i = 0; i < t->nr; i++)
		if (!strcmp(t->syms[i].name, name))
			return &t->syms[i];
	return NULL;
}

void vmi_symtab_free(struct vmi_symtab *t)
{
	for (size_t i = 0; i < t->nr; i++)
		free(t->syms[i].name);
	free(t->syms);
	memset(t, 0, sizeof(*t));
}

uint64_t vmi_symtab_end(const struct vmi_symtab *t, const struct vmi_sym *f)
{
	if (f->size)
		return f->addr + f->size;
	if (f < t->syms || f >= t->syms + t->nr)
		return 0;
	for (const struct vmi_sym *n = f + 1; n < t->syms + t->nr; n++)
		if (n->addr > f->addr)
			return n->addr;
	return 0;
}

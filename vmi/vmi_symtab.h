/* Function symbols of a guest kernel: sorted by address, looked up by address or name. */
#ifndef HVT_VMI_SYMTAB_H
#define HVT_VMI_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

struct vmi_sym {
	uint64_t addr;
	uint64_t size; /* 0 when unknown: then the symbol extends to the next one */
	char *name;    /* owned by the table */
};

struct vmi_symtab {
	struct vmi_sym *syms;
	size_t nr, cap;
};

/* Appends a copy of @name at @addr. Returns 0 or -ENOMEM. Not thread-safe; call before vmi_symtab_sort. */
int vmi_symtab_add(struct vmi_symtab *t, uint64_t addr, uint64_t size, const char *name);

/* Sorts by address, drops exact duplicates and fills unknown sizes. Call once after the last add. */
void vmi_symtab_sort(struct vmi_symtab *t);

/* Symbol containing @addr, or NULL. Read-only: any thread once sorted. */
const struct vmi_sym *vmi_symtab_lookup(const struct vmi_symtab *t, uint64_t addr);

/* First symbol named @name, or NULL. Linear; not for hot paths. */
const struct vmi_sym *vmi_symtab_find(const struct vmi_symtab *t, const char *name);

/* Where symbol @f of @t (sorted) ends: its size, else the next symbol above it; 0 when unknown (no
 * size, and @f is the last or not in @t). Pure. */
uint64_t vmi_symtab_end(const struct vmi_symtab *t, const struct vmi_sym *f);

/* Frees the names and the array. */
void vmi_symtab_free(struct vmi_symtab *t);

#endif

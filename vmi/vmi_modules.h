/* Loaded modules of a Linux guest: the kernel's `modules` list walked in guest memory, each
 * module's name, text range and function symbols (its mod_kallsyms Elf64_Sym table), with struct
 * layouts from the kernel's BTF (6.1's core_layout or 6.4's mem[MOD_TEXT]). Every value read is
 * bounded: list length, symbols, name lengths, text sizes. */
#ifndef HVT_VMI_MODULES_H
#define HVT_VMI_MODULES_H

#include "vmi/vmi_read.h"
#include "vmi/vmi_symtab.h"

#include <stddef.h>
#include <stdint.h>

#define VMI_MODULES_MAX	    1024	/* longest module list walked */
#define VMI_MODULE_NAME	    56		/* MODULE_NAME_LEN on 64-bit */
#define VMI_MODULE_SYMS_MAX 65536	/* symbols of one module */
#define VMI_MODULE_TEXT_MAX (64u << 20) /* text of one module */

struct vmi_module {
	uint64_t text, text_size;   /* core text: [text, text + text_size) */
	char name[VMI_MODULE_NAME]; /* NUL-terminated, printable ASCII ('?' for anything else) */
	size_t nr_funcs;
};

struct vmi_modules {
	struct vmi_module *v;
	size_t nr;
};

/* Byte offsets in struct module and struct mod_kallsyms; text_size is an unsigned int. */
struct vmi_module_layout {
	long list, name, kallsyms, text, text_size;
	long ks_symtab, ks_num, ks_strtab;
};

/* The layout from raw BTF @btf (@size bytes). Returns 0, or -ENOENT with what is missing in @err.
 */
int vmi_module_layout_btf(const void *btf, size_t size, struct vmi_module_layout *lo, char *err,
			  size_t errlen);

/* Walks the list at @head (the address of the kernel's `modules`), appending each module to @mods
 * and each of its functions (STT_FUNC inside its text) to @funcs, while @funcs has fewer than
 * @max_syms symbols (call vmi_symtab_sort after). Modules whose tables cannot be read are listed
 * without functions. Returns the number of functions added, or -ELOOP (a list longer than
 * VMI_MODULES_MAX: a cycle), -EIO (a list link unreadable), -ENOMEM, with @err. */
long vmi_modules_read(const struct vmi_module_layout *lo, uint64_t head, vmi_read_fn read,
		      void *ctx, struct vmi_modules *mods, struct vmi_symtab *funcs,
		      size_t max_syms, char *err, size_t errlen);

/* The module whose text holds @addr, or NULL. */
const struct vmi_module *vmi_modules_find(const struct vmi_modules *mods, uint64_t addr);

void vmi_modules_free(struct vmi_modules *mods);

#endif

#include "vmi/vmi_dwarf.h"
#include "host/util/msg_fmt.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdio.h>

/* At most this many DIEs are visited per compile unit's top level: a hostile image cannot make the
 * walk unbounded (libdw itself bounds each DIE by its unit). */
#define DWARF_MAX_DIES (1u << 22)

static bool c_language(Dwarf_Die *cu)
{
	Dwarf_Attribute a;
	Dwarf_Word lang;

	if (!dwarf_attr(cu, DW_AT_language, &a) || dwarf_formudata(&a, &lang) != 0)
		return false;
	switch (lang) {
	case DW_LANG_C89:
	case DW_LANG_C:
	case DW_LANG_C99:
	case DW_LANG_C11:
	case DW_LANG_C_plus_plus:
	case DW_LANG_C_plus_plus_03:
	case DW_LANG_C_plus_plus_11:
	case DW_LANG_C_plus_plus_14:
		return true;
	default:
		return lang == 0x2c /* DW_LANG_C17 (DWARF 5 addendum) */;
	}
}

/* The subprograms with code directly under @cu (nested functions are a GNU C rarity: skipped). */
static int add_unit(Dwarf_Die *cu, struct vmi_symtab *out, unsigned long *budget)
{
	Dwarf_Die d;
	int ret;

	if (dwarf_child(cu, &d) != 0)
		return 0;
	do {
		Dwarf_Addr lo;
		const char *name;

		if (!*budget)
			return 0;
		--*budget;
		if (dwarf_tag(&d) != DW_TAG_subprogram || dwarf_lowpc(&d, &lo) != 0)
			continue;
		name = dwarf_diename(&d);
		ret = vmi_symtab_add(out, lo, 0, name ? name : "?");
		if (ret < 0)
			return ret;
	} while (dwarf_siblingof(&d, &d) == 0);
	return 0;
}

long vmi_dwarf_c_functions(const uint8_t *file, size_t size, struct vmi_symtab *out, char *err,
			   size_t errlen)
{
	Elf *elf;
	Dwarf *dw;
	Dwarf_Off off = 0, next;
	size_t hdr;
	unsigned long budget = DWARF_MAX_DIES;
	long ret = 0;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)file, size);
	if (!elf)
		return 0;
	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!dw) {
		elf_end(elf);
		return 0; /* no .debug_info: no DWARF */
	}
	while (dwarf_nextcu(dw, off, &next, &hdr, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (!dwarf_offdie(dw, off + hdr, &cu)) {
			msg_fmt(err, errlen,
				"its DWARF: the compile unit at 0x%llx cannot be read: %s",
				(unsigned long long)off, dwarf_errmsg(-1));
			ret = -EINVAL;
			break;
		}
		if (c_language(&cu)) {
			ret = add_unit(&cu, out, &budget);
			if (ret < 0)
				break;
		}
		off = next;
	}
	dwarf_end(dw);
	elf_end(elf);
	if (ret < 0) {
		vmi_symtab_free(out);
		return ret;
	}
	vmi_symtab_sort(out);
	return (long)out->nr;
}

bool vmi_dwarf_is_c_function(const struct vmi_symtab *c, uint64_t addr)
{
	const struct vmi_sym *s = c ? vmi_symtab_lookup(c, addr) : NULL;

	return s && s->addr == addr;
}

/* What a guest image's DWARF says about its functions: which are C (or C++) functions, entered by a
 * CALL and left by a RET, as opposed to assembly code that may be entered by a jump or an
 * interrupt. The freestanding ELF guest's counterpart of a kernel's BTF FUNC records. */
#ifndef HVT_VMI_DWARF_H
#define HVT_VMI_DWARF_H

#include "vmi/vmi_symtab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fills @out (empty, the caller's; vmi_symtab_free) with the entry address of every subprogram
 * that has code (DW_AT_low_pc) in a compile unit whose DW_AT_language is C or C++, named as DWARF
 * names it, from the ELF image of @size bytes at @file (read only; the file is the user's, but its
 * DWARF is bounded by libdw like any input). Returns the number of functions found, 0 when the
 * image has no DWARF (or none of it is C), -ENOMEM, or -EINVAL with one line in @err when its
 * DWARF cannot be read. Any thread; no global state. */
long vmi_dwarf_c_functions(const uint8_t *file, size_t size, struct vmi_symtab *out, char *err,
			   size_t errlen);

/* Whether @addr is the entry of a function in @c (as vmi_dwarf_c_functions filled it). Pure. */
bool vmi_dwarf_is_c_function(const struct vmi_symtab *c, uint64_t addr);

#endif

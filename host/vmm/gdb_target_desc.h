/* The guest ISA and the numbers of the system registers hvtrace reads, learned from a gdbstub's
 * target description (qXfer:features:read): `<architecture>` of target.xml names the ISA (QEMU:
 * "i386:x86-64", "aarch64"), and for an ISA whose layout names system registers (QEMU's aarch64:
 * TTBR1_EL1, TCR_EL1, SP_EL0, ...) their `regnum` in the annex that describes them, never from a
 * table of QEMU versions. The peer's XML is bounded and searched, never trusted to be well formed.
 */
#ifndef HVT_GDB_TARGET_DESC_H
#define HVT_GDB_TARGET_DESC_H

#include "host/vmm/gdbstub.h"

#include <stddef.h>

#define GDB_DESC_MAX (512u << 10) /* largest annex read (QEMU's aarch64 system registers: ~15 KiB) */

/* Reads @g's target description and sets g->arch (and g->sys_regno[] for its named system
 * registers). A description without `<architecture>` leaves arch_default() (QEMU's x86_64 before
 * it said so). 0; -ENOEXEC for an ISA hvtrace has no table for ("the gdbstub describes a mips
 * guest: hvtrace traces x86_64 and arm64 guests"); -ENOENT when a system register it needs is not
 * described; -EPROTO / -errno from the peer; one line in @err each. VM stopped; @g's thread. */
int gdb_target_desc(struct gdb *g, char *err, size_t errlen);

/* The `regnum` the `<reg name="@name" ...>` element of @xml gives, or -1 (none, or not a number
 * below 4096). Pure. */
int gdb_desc_regnum(const char *xml, const char *name);

/* The text of @xml's `<architecture>` element into @out (at most @cap - 1 bytes), "" when there is
 * none. Pure. */
void gdb_desc_arch(const char *xml, char *out, size_t cap);

#endif

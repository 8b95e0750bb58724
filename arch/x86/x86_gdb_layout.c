/* QEMU's x86_64 `g` layout (x86_gdb.h) as struct arch_gdb_layout: where each register lands. */
#include "arch/arch.h"

/* clang-format off */
#define GP(r, n)  [X86_GDB_##r] = {n, X86_##r}
#define SYS(r, n) [X86_GDB_##r] = {n, ARCH_GDB_SYS + X86_GDB_SYS(X86_GDB_##r)}

static const struct arch_gdb_reg x86_gdb_regs[X86_GDB_NR_REGS] = {
	GP(RAX, 8), GP(RBX, 8), GP(RCX, 8), GP(RDX, 8), GP(RSI, 8), GP(RDI, 8), GP(RBP, 8),
	GP(RSP, 8), GP(R8, 8), GP(R9, 8), GP(R10, 8), GP(R11, 8), GP(R12, 8), GP(R13, 8),
	GP(R14, 8), GP(R15, 8), GP(RIP, 8),
	[X86_GDB_EFLAGS] = {4, X86_RFLAGS},
	SYS(CS, 4), SYS(SS, 4), SYS(DS, 4), SYS(ES, 4), SYS(FS, 4), SYS(GS, 4),
	SYS(FS_BASE, 8), SYS(GS_BASE, 8), SYS(K_GS_BASE, 8),
	SYS(CR0, 8), SYS(CR2, 8), SYS(CR3, 8), SYS(CR4, 8), SYS(CR8, 8), SYS(EFER, 8),
};
/* clang-format on */

_Static_assert(X86_GDB_SYS(X86_GDB_EFER) < ARCH_GDB_SYS_MAX, "sys[] holds x86's system registers");

const struct arch_gdb_layout x86_gdb_layout = {
    .reg = x86_gdb_regs,
    .nr = X86_GDB_NR_REGS,
    .decoded_bytes = X86_GDB_DECODED_BYTES,
    .pc = X86_GDB_RIP,
    .xml_arch = "i386:x86-64",
};

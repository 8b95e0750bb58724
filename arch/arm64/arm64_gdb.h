/* The arm64 register layout of QEMU's gdbstub: the `g` reply is org.gnu.gdb.aarch64.core (x0-x30,
 * sp, pc as 8 bytes, cpsr as 4), register numbers 0-33. The system registers (TTBR1_EL1, TCR_EL1,
 * SP_EL0, TPIDR_EL1) have numbers QEMU assigns at run time: learned from its target.xml, never
 * from a table. */
#ifndef HVT_ARM64_GDB_H
#define HVT_ARM64_GDB_H

#define ARM64_GDB_PC	       32
#define ARM64_GDB_CPSR	       33
#define ARM64_GDB_NR_REGS      34
#define ARM64_GDB_DECODED_BYTES (33 * 8 + 4)

/* The system registers read with `p` after each `g` (numbers from QEMU's target description),
 * as indices into struct gdb_regs' sys[]. */
enum arm64_gdb_sys {
	ARM64_SYS_TTBR0, /* TTBR0_EL1: user half's tables */
	ARM64_SYS_TTBR1, /* TTBR1_EL1: the kernel's */
	ARM64_SYS_TCR,	 /* TCR_EL1: both halves' sizes and granules */
	ARM64_SYS_SP_EL0, /* `current` while the vCPU is in the kernel */
	ARM64_SYS_TPIDR,  /* TPIDR_EL1: this CPU's per-CPU offset */
	ARM64_SYS_NR,
};

/* The system registers read once, when the stub is mapped (arch_gdb_layout.once_names), as
 * indices into struct gdb's once_regno[]: what the kernel enabled of the MMU and the CPU has. */
enum arm64_gdb_once {
	ARM64_ONCE_TCR2,  /* TCR2_EL1: PIE (permission indirection), D128 (128-bit descriptors) */
	ARM64_ONCE_PIR,	  /* PIR_EL1: EL1's permission of each descriptor index (with PIE) */
	ARM64_ONCE_PIRE0, /* PIRE0_EL1: EL0's (with PIE) */
	ARM64_ONCE_GCSCR, /* GCSCR_EL1: PCRSEL, EL1's guarded control stack */
	ARM64_ONCE_MMFR3, /* ID_AA64MMFR3_EL1: S1PIE, whether the CPU has permission indirection */
	ARM64_ONCE_NR,
};

struct arch_gdb_layout;

/* The layout above as arch.h describes it (arm64_gdb_layout.c). */
extern const struct arch_gdb_layout arm64_gdb_layout;

#endif

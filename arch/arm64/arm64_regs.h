/* General-purpose register file of an arm64 vCPU as indices into struct arch_regs (the order of
 * QEMU's org.gnu.gdb.aarch64.core: x0-x30, sp, pc, cpsr), and the AAPCS64 calling convention over
 * them (arm64_arch.c's register map). */
#ifndef HVT_ARM64_REGS_H
#define HVT_ARM64_REGS_H

enum arm64_reg {
	ARM64_X0,
	ARM64_X29 = 29, /* the frame pointer */
	ARM64_X30 = 30, /* the link register: the return address at a function's entry */
	ARM64_SP = 31,
	ARM64_PC = 32,
	ARM64_PSTATE = 33,
	ARM64_SP_EL0 = 34, /* a system register, read with the others: `current` in the kernel */
	ARM64_NR_REGS = 35,
};

#define ARM64_NR_REG_ARGS 8

#endif

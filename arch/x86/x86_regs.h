/* General-purpose register file of an x86_64 vCPU as indices into struct arch_regs, and the SysV
 * calling convention over them (x86_arch.c's register map). */
#ifndef HVT_X86_REGS_H
#define HVT_X86_REGS_H

/* Order matches struct kvm_regs so a backend may copy it as a block (checked there with a static
 * assert). */
enum x86_reg {
	X86_RAX,
	X86_RBX,
	X86_RCX,
	X86_RDX,
	X86_RSI,
	X86_RDI,
	X86_RSP,
	X86_RBP,
	X86_R8,
	X86_R9,
	X86_R10,
	X86_R11,
	X86_R12,
	X86_R13,
	X86_R14,
	X86_R15,
	X86_RIP,
	X86_RFLAGS,
	X86_NR_REGS,
};

#define X86_NR_REG_ARGS 6

/* Past the general registers: the vCPU's GS base, where a backend has it with the registers (the
 * embedded VMM, from KVM's sregs, for a Linux guest); 0 where it does not. */
#define X86_GS_BASE_SLOT X86_NR_REGS

#endif

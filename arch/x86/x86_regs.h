/* General-purpose register file of an x86_64 vCPU and the SysV calling convention over it. */
#ifndef HVT_X86_REGS_H
#define HVT_X86_REGS_H

#include <stdint.h>

/* Field order matches struct kvm_regs so a backend may alias it (checked there with a static assert). */
struct x86_regs {
	uint64_t rax, rbx, rcx, rdx;
	uint64_t rsi, rdi, rsp, rbp;
	uint64_t r8, r9, r10, r11;
	uint64_t r12, r13, r14, r15;
	uint64_t rip, rflags;
};

#define X86_NR_REG_ARGS 6

/* Integer argument @n (0-based) if it is passed in a register, else 0. Pure. */
static inline uint64_t x86_reg_arg(const struct x86_regs *r, unsigned n)
{
	switch (n) {
	case 0: return r->rdi;
	case 1: return r->rsi;
	case 2: return r->rdx;
	case 3: return r->rcx;
	case 4: return r->r8;
	case 5: return r->r9;
	default: return 0;
	}
}

#endif

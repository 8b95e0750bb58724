/* What code outside arch/ that drives an x86 machine itself may name (through arch/arch.h): the
 * register indices (the embedded VMM copies struct kvm_regs as a block), long-mode constants and
 * boot tables, the page-table walk and page-directory lookup (the stub mapped into Linux's page
 * tables), and QEMU's x86_64 gdbstub register numbers. Nothing the tracer core uses. */
#ifndef HVT_X86_MACHINE_H
#define HVT_X86_MACHINE_H

#include "arch/x86/x86_regs.h"
#include "arch/x86/x86_longmode.h"
#include "arch/x86/x86_pagewalk.h"
#include "arch/x86/x86_gdb.h"

/* The exception vector of #BP (INT3), and the instructions the VMM's own probes write. */
#define X86_BP_VECTOR 3
#define X86_HLT	      0xf4
#define X86_INT3      0xcc

/* The x86_64 table (arch/x86/x86_arch.c); others reach it with arch_get(ARCH_X86_64). */
extern const struct arch arch_x86_64;

#endif

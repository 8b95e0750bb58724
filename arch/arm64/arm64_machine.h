/* What code outside arch/ that drives an arm64 machine may name (through arch/arch.h): the
 * register indices, the instruction words at function entries, the page walk's TCR_EL1 decoding,
 * QEMU's aarch64 gdbstub register numbers. Nothing the tracer core uses. */
#ifndef HVT_ARM64_MACHINE_H
#define HVT_ARM64_MACHINE_H

#include "arch/arm64/arm64_regs.h"
#include "arch/arm64/arm64_insn.h"
#include "arch/arm64/arm64_pagewalk.h"
#include "arch/arm64/arm64_gdb.h"

/* The arm64 table (arch/arm64/arm64_arch.c); others reach it with arch_get(ARCH_ARM64). */
extern const struct arch arch_arm64;

#endif

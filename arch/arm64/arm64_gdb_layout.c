/* QEMU's aarch64 `g` layout (arm64_gdb.h) as struct arch_gdb_layout: x0-x30, sp and pc land in
 * their arch_regs slots, cpsr in pstate. */
#include "arch/arch.h"

#define GP(n) [n] = {8, n}

/* clang-format off */
static const struct arch_gdb_reg arm64_gdb_regs[ARM64_GDB_NR_REGS] = {
	GP(0), GP(1), GP(2), GP(3), GP(4), GP(5), GP(6), GP(7), GP(8), GP(9), GP(10), GP(11),
	GP(12), GP(13), GP(14), GP(15), GP(16), GP(17), GP(18), GP(19), GP(20), GP(21), GP(22),
	GP(23), GP(24), GP(25), GP(26), GP(27), GP(28), GP(29), GP(30),
	[ARM64_SP] = {8, ARM64_SP},
	[ARM64_GDB_PC] = {8, ARM64_PC},
	[ARM64_GDB_CPSR] = {4, ARM64_PSTATE},
};
/* clang-format on */

static const char *const arm64_gdb_sys_names[ARM64_SYS_NR] = {
    [ARM64_SYS_TTBR0] = "TTBR0_EL1", [ARM64_SYS_TTBR1] = "TTBR1_EL1", [ARM64_SYS_TCR] = "TCR_EL1",
    [ARM64_SYS_SP_EL0] = "SP_EL0",   [ARM64_SYS_TPIDR] = "TPIDR_EL1",
};

static const uint8_t arm64_gdb_sys_gp[ARM64_SYS_NR] = {
    ARCH_REG_NONE, ARCH_REG_NONE, ARCH_REG_NONE, ARM64_SP_EL0, ARCH_REG_NONE,
};

static const char *const arm64_gdb_once_names[ARM64_ONCE_NR] = {
    [ARM64_ONCE_TCR2] = "TCR2_EL1",	     [ARM64_ONCE_PIR] = "PIR_EL1",
    [ARM64_ONCE_PIRE0] = "PIRE0_EL1",	     [ARM64_ONCE_GCSCR] = "GCSCR_EL1",
    [ARM64_ONCE_MMFR3] = "ID_AA64MMFR3_EL1",
};

const struct arch_gdb_layout arm64_gdb_layout = {
    .sys_gp = arm64_gdb_sys_gp,
    .sys_names = arm64_gdb_sys_names,
    .nr_sys_names = ARM64_SYS_NR,
    .sys_first = 0,
    .xml_arch = "aarch64",
    .counter_freq_name = "CNTFRQ_EL0",
    .once_names = arm64_gdb_once_names,
    .nr_once_names = ARM64_ONCE_NR,
    .reg = arm64_gdb_regs,
    .nr = ARM64_GDB_NR_REGS,
    .decoded_bytes = ARM64_GDB_DECODED_BYTES,
    .pc = ARM64_GDB_PC,
};

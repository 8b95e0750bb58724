/* The arm64 table of arch/arch.h: the AAPCS64 register map (return address in x30), the patch
 * encodings (BRK #0, ftrace's `mov x9, x30; nop` entry, B/BL imm26, BTI C), the stage-1 page walk,
 * QEMU's aarch64 `g` layout, out-of-line relocation by bit pattern and the detour slot
 * (arm64_reloc.h, arm64_reloc_scan.h, arm64_detour.h). */
#include "arch/arch.h"
#include "arch/arm64/arm64_detour.h"
#include "arch/arm64/arm64_reloc.h"
#include "arch/arm64/arm64_reloc_scan.h"

#include <elf.h>
#include <errno.h>

#ifndef EM_AARCH64
#define EM_AARCH64 183
#endif

static const char *const arm64_reg_names[ARM64_NR_REGS] = {
    "x0",  "x1",  "x2",	 "x3",	"x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10", "x11",
    "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23",
    "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp",  "pc",  "pstate", "sp_el0",
};

/* Every instruction is one aligned word: @off is a start iff it is 4-aligned. */
static int arm64_scan_insn_start(const uint8_t *body, size_t body_len, size_t off, size_t *before,
				 size_t *after)
{
	(void)body;
	*before = off & ~(size_t)3;
	*after = *before + ARM64_INSN_LEN;
	if (off + ARM64_INSN_LEN > body_len)
		return -EFAULT;
	return off & 3 ? -EINVAL : 0;
}

static int arm64_arch_translate(arch_read_pte_fn read, void *ctx, uint64_t root, unsigned mode,
				uint64_t gva, uint64_t *gpa)
{
	return arm64_translate(read, ctx, root, mode, gva, gpa);
}

/* TTBR1_EL1 for the upper half (bit 55 set, whatever the top byte's tag), TTBR0_EL1 below. */
static void arm64_walk_root(const uint64_t *sys, uint64_t gva, uint64_t *root, unsigned *mode)
{
	bool upper = gva >> 55 & 1;

	*root = sys[upper ? ARM64_SYS_TTBR1 : ARM64_SYS_TTBR0];
	*mode = arm64_mode_of_tcr(sys[ARM64_SYS_TCR], upper);
}

/* In the kernel (PSTATE.EL 1) Linux keeps `current` in SP_EL0. */
static uint64_t arm64_current_task(const struct arch_regs *r)
{
	return (r->r[ARM64_PSTATE] >> 2 & 3) == 1 ? r->r[ARM64_SP_EL0] : 0;
}

/* pt_regs: pc, then pstate: AArch64 (M[4] clear), EL1t or EL1h, no bits above 32. */
static bool arm64_saved_kernel_mode(uint64_t pstate)
{
	return !(pstate >> 32) && ((pstate & 0x1f) == 4 || (pstate & 0x1f) == 5);
}

const struct arch arch_arm64 = {
    .name = "arm64",
    .elf_machine = EM_AARCH64,
    .regs =
	{
	    .nr = ARM64_NR_REGS,
	    .ip = ARM64_PC,
	    .sp = ARM64_SP,
	    .fp = ARM64_X29,
	    .ret = ARM64_X0,
	    .flags = ARM64_PSTATE,
	    .ra = ARM64_X30,
	    .nr_args = ARM64_NR_REG_ARGS,
	    .arg = {0, 1, 2, 3, 4, 5, 6, 7},
	    .stack_args_off = 0,
	    .ret_slot_back = 0,
	    .names = arm64_reg_names,
	},
    .page_size = 4096,
    .kernel_half = 0xfff0000000000000ull,
    .bp = {0x00, 0x00, 0x20, 0xd4},
    .bp_len = ARM64_INSN_LEN,
    .site_len = ARM64_INSN_LEN,
    .jmp_len = ARM64_INSN_LEN,
    .call_before_len = ARM64_INSN_LEN,
    .pad = {0x5f, 0x24, 0x03, 0xd5},
    .pad_len = ARM64_INSN_LEN,
    .is_site_nop = arm64_is_site_nop,
    .entry_pad_len = arm64_entry_pad_len,
    .site_entry_ok = arm64_site_entry_ok,
    .encode_branch = arm64_encode_branch,
    .direct_branch = arm64_direct_branch,
    .call_precedes = arm64_call_precedes,
    .reloc_plan = arm64_reloc_plan,
    .reloc_emit = arm64_reloc_emit,
    .reloc_kernel_safe = arm64_reloc_kernel_safe,
    .reloc_detour_check = arm64_reloc_detour_check,
    .reloc_scan_body = arm64_reloc_scan_body,
    .scan_branch_to = arm64_scan_branch_to,
    .scan_insn_start = arm64_scan_insn_start,
    .insn_waits = arm64_insn_waits,
    .detour_code = arm64_detour_code,
    .translate = arm64_arch_translate,
    .walk_root = arm64_walk_root,
    .current_task = arm64_current_task,
    .saved_kernel_mode = arm64_saved_kernel_mode,
    .gdb = &arm64_gdb_layout,
};

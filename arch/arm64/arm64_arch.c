/* The arm64 table of arch/arch.h: the AAPCS64 register map (return address in x30), the patch
 * encodings (BRK #0, ftrace's `mov x9, x30; nop` entry, B/BL imm26, BTI C), the stage-1 page walk,
 * QEMU's aarch64 `g` layout. Detours (out-of-line relocation) are not there yet: each of their
 * hooks refuses in one line. */
#include "arch/arch.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>

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

/* WFI, WFE, WFIT, WFET: the instructions that wait for an interrupt or event. */
static bool arm64_insn_waits(const uint8_t *p, size_t n)
{
	uint32_t w = n >= ARM64_INSN_LEN ? arm64_word(p) : 0;

	return w == 0xd503207fu || w == 0xd503205fu || (w & 0xffffffc0u) == 0xd5031000u;
}

/* Detours need out-of-line relocation of arm64 code, which hvtrace does not have yet. */
static int no_reloc_plan(const uint8_t *code, size_t code_len, uint64_t code_addr, size_t need,
			 struct arch_reloc_plan *plan, char *why, size_t whylen)
{
	(void)code, (void)code_len, (void)code_addr, (void)need, (void)plan;
	snprintf(why, whylen, "arm64 code cannot be run out of line yet (no detours or entry "
			      "breakpoints on arm64)");
	return -EOPNOTSUPP;
}

#define NO_RELOC(why, whylen)                                                                      \
	(snprintf(why, whylen, "arm64 code cannot be run out of line yet"), -EOPNOTSUPP)

static int no_reloc_emit(const struct arch_reloc_plan *plan, const uint8_t *code,
			 uint64_t code_addr, uint64_t dest_addr, uint8_t *out, size_t out_cap,
			 size_t *out_len, char *why, size_t whylen)
{
	(void)plan, (void)code, (void)code_addr, (void)dest_addr, (void)out, (void)out_cap;
	*out_len = 0;
	return NO_RELOC(why, whylen);
}

static int no_reloc_check(const struct arch_reloc_plan *plan, char *why, size_t whylen)
{
	(void)plan;
	return NO_RELOC(why, whylen);
}

static int no_detour_check(const struct arch_reloc_plan *plan, int *pushed, char *why,
			   size_t whylen)
{
	(void)plan;
	*pushed = 0;
	return NO_RELOC(why, whylen);
}

static int no_scan_body(const struct arch_reloc_plan *plan, const uint8_t *body, size_t body_len,
			uint64_t body_addr, char *why, size_t whylen)
{
	(void)plan, (void)body, (void)body_len, (void)body_addr;
	return NO_RELOC(why, whylen);
}

static int no_scan_branch_to(const uint8_t *body, size_t body_len, uint64_t body_addr,
			     uint64_t target, char *why, size_t whylen)
{
	(void)body, (void)body_len, (void)body_addr, (void)target;
	return NO_RELOC(why, whylen);
}

static int no_detour_code(const struct arch_reloc_plan *plan, const struct arch_detour_slot *slot,
			  uint64_t at, uint64_t entry, uint8_t *code, size_t *len, char *why,
			  size_t whylen)
{
	(void)plan, (void)slot, (void)at, (void)entry, (void)code;
	*len = 0;
	return NO_RELOC(why, whylen);
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
    .encode_branch = arm64_encode_branch,
    .direct_branch = arm64_direct_branch,
    .call_precedes = arm64_call_precedes,
    .reloc_plan = no_reloc_plan,
    .reloc_emit = no_reloc_emit,
    .reloc_kernel_safe = no_reloc_check,
    .reloc_detour_check = no_detour_check,
    .reloc_scan_body = no_scan_body,
    .scan_branch_to = no_scan_branch_to,
    .detour_code = no_detour_code,
    .scan_insn_start = arm64_scan_insn_start,
    .insn_waits = arm64_insn_waits,
    .translate = arm64_arch_translate,
    .walk_root = arm64_walk_root,
    .current_task = arm64_current_task,
    .gdb = &arm64_gdb_layout,
};

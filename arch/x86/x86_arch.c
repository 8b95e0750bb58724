/* The x86_64 table of arch/arch.h: the SysV register map, the patch encodings (INT3, NOP5,
 * CALL/JMP rel32, ENDBR64), Zydis decode and relocation, the 4/5-level page walk, QEMU's `g`
 * layout. */
#include "arch/arch.h"
#include "arch/x86/x86_detour.h"
#include "arch/x86/x86_insn.h"
#include "arch/x86/x86_reloc.h"
#include "arch/x86/x86_reloc_scan.h"

#include <elf.h>

static const char *const x86_reg_names[X86_NR_REGS] = {
    "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rsp", "rbp", "r8",
    "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip", "rflags",
};

/* x86_translate with arch.h's paging mode: 1 is 5-level (CR4.LA57). */
static int x86_arch_translate(arch_read_pte_fn read, void *ctx, uint64_t root, unsigned mode,
			      uint64_t gva, uint64_t *gpa)
{
	return x86_translate(read, ctx, root, mode & 1, gva, gpa);
}

static void x86_walk_root(const uint64_t *sys, uint64_t gva, uint64_t *root, unsigned *mode)
{
	(void)gva;
	*root = sys[X86_GDB_SYS(X86_GDB_CR3)];
	*mode = (sys[X86_GDB_SYS(X86_GDB_CR4)] & X86_CR4_LA57) ? 1 : 0;
}

/* A kernel's GS base (upper half) where the backend filled the slot. */
static uint64_t x86_percpu_base(const struct arch_regs *r)
{
	uint64_t gs = r->r[X86_GS_BASE_SLOT];

	return gs >= X86_UPPER_HALF ? gs : 0;
}

const struct arch arch_x86_64 = {
    .name = "x86_64",
    .elf_machine = EM_X86_64,
    .regs =
	{
	    .nr = X86_NR_REGS,
	    .ip = X86_RIP,
	    .sp = X86_RSP,
	    .fp = X86_RBP,
	    .ret = X86_RAX,
	    .flags = X86_RFLAGS,
	    .ra = ARCH_REG_NONE,
	    .nr_args = X86_NR_REG_ARGS,
	    .arg = {X86_RDI, X86_RSI, X86_RDX, X86_RCX, X86_R8, X86_R9},
	    .stack_args_off = 8,
	    .ret_slot_back = 8,
	    .names = x86_reg_names,
	},
    .page_size = X86_PAGE_SIZE,
    .kernel_half = X86_UPPER_HALF,
    .bp = {X86_INT3},
    .bp_len = 1,
    .site_len = X86_NOP5_LEN,
    .jmp_len = X86_JMP_REL32_LEN,
    .call_before_len = X86_CALL_BEFORE_LEN,
    .pad = {0xf3, 0x0f, 0x1e, 0xfa},
    .pad_len = X86_ENDBR64_LEN,
    .is_site_nop = x86_is_nop5,
    .percpu_base = x86_percpu_base,
    .entry_pad_len = x86_entry_pad_len,
    .encode_branch = x86_encode_rel32,
    .direct_branch = x86_direct_branch,
    .call_precedes = x86_call_precedes,
    .reloc_plan = x86_reloc_plan,
    .reloc_emit = x86_reloc_emit,
    .reloc_kernel_safe = x86_reloc_kernel_safe,
    .reloc_detour_check = x86_reloc_detour_check,
    .reloc_scan_body = x86_reloc_scan_body,
    .scan_branch_to = x86_scan_branch_to,
    .scan_insn_start = x86_scan_insn_start,
    .insn_waits = x86_insn_waits,
    .detour_code = x86_detour_code,
    .translate = x86_arch_translate,
    .walk_root = x86_walk_root,
    .gdb = &x86_gdb_layout,
};

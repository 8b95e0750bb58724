/* The one hook header (kvmtool's model): what hvtrace needs to know about a guest ISA, declared
 * once here and implemented by one folder per ISA (arch/x86/; an arm64 port adds arch/arm64/ and a
 * line in arch/arch.c). Code outside arch/ reaches an ISA only through this header: a register set
 * with cheap accessors over the indices the ISA declares, and one `struct arch` table per ISA
 * (patch encodings, decode and out-of-line relocation, page-table walks, the gdbstub `g` layout),
 * selected per guest (arch_of_elf, arch_get) so that two ISAs live in one binary. Everything here
 * is pure and thread-safe: no allocation, no I/O, no global state but the const tables. */
#ifndef HVT_ARCH_H
#define HVT_ARCH_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum arch_isa {
	ARCH_X86_64,
	ARCH_ARM64,
	ARCH_NR_ISAS,
};

/* ---- register set ---------------------------------------------------------------------------- */

/* Registers an ISA's set may have: arm64 has x0-x30, sp, pc, pstate and sp_el0. */
#define ARCH_REGS_MAX	  35
#define ARCH_REG_ARGS_MAX 8
#define ARCH_REG_NONE	  0xff

/* One vCPU's general-purpose registers, in the order its ISA declares (x86: struct kvm_regs's, so
 * the embedded VMM copies them as a block). Opaque outside arch/: read and written through the
 * accessors below with the guest's struct arch. */
struct arch_regs {
	uint64_t r[ARCH_REGS_MAX];
};

/* Where a call's values live, as indices into struct arch_regs. */
struct arch_reg_map {
	uint8_t nr; /* registers in the set: r[0, nr) */
	uint8_t ip, sp, fp, ret, flags;
	uint8_t ra;	 /* holds the return address at entry; ARCH_REG_NONE: [sp] */
	uint8_t nr_args; /* integer arguments passed in registers */
	uint8_t arg[ARCH_REG_ARGS_MAX];
	uint8_t stack_args_off;	  /* at entry, the first stack argument is at sp + this */
	uint8_t ret_slot_back;	  /* after a return, the slot it used is sp - this */
	const char *const *names; /* nr names as a user writes them ("rax", "rip") */
};

struct arch;

/* ---- out-of-line relocation ------------------------------------------------------------------ */

/* Largest patch a plan is made for, and so the most instructions it displaces. */
#define ARCH_RELOC_MAX_NEED  16
#define ARCH_RELOC_MAX_INSNS ARCH_RELOC_MAX_NEED
/* A landing pad (x86: ENDBR64), then up to need - 1 bytes plus one whole instruction (x86: 15). */
#define ARCH_RELOC_MAX_BYTES (4 + ARCH_RELOC_MAX_NEED - 1 + 15)
/* Room reloc_emit never exceeds: each instruction grows by 7 bytes at most, then the jump back. */
#define ARCH_RELOC_OUT_MAX (ARCH_RELOC_MAX_BYTES + 7 * ARCH_RELOC_MAX_INSNS + 5)

/* One displaced instruction and how it is written out of line (kind and op are the ISA's). */
struct arch_reloc_insn {
	uint8_t off;	   /* from code_addr (the landing pad, if any, included) */
	uint8_t len;	   /* whole instruction, prefixes included */
	uint8_t kind;	   /* the ISA's (x86: enum x86_reloc_kind) */
	uint8_t field_off; /* where a displacement to adjust starts in the instruction */
	uint8_t op;	   /* the ISA's: a branch's condition or opcode */
	uint64_t target;   /* a branch's target, or a PC-relative operand's address */
};

/* The whole instructions a patch at a function entry displaces (the ISA's reloc_plan fills it). */
struct arch_reloc_plan {
	uint64_t code_addr; /* guest address of bytes[0] */
	size_t pad_len;	    /* 0, or a landing pad's length (ENDBR64) left in place */
	size_t len;	    /* displaced bytes, from code_addr + pad_len: >= need, whole insns */
	size_t nr;	    /* instructions in insn[] */
	struct arch_reloc_insn insn[ARCH_RELOC_MAX_INSNS];
	uint8_t bytes[ARCH_RELOC_MAX_BYTES]; /* code[0, pad_len + len), as planned */
};

/* A detour slot's layout in the stub (guest-stub/stub_abi.h says where each part goes). */
struct arch_detour_slot {
	size_t size;		   /* bytes of the slot */
	size_t sti_off, nosti_off; /* the ways back: with interrupts turned on again, without */
	int scratch;		   /* the way back lies this far below the return slot */
	unsigned idx;		   /* the slot's number, for messages */
};

/* ---- page tables ----------------------------------------------------------------------------- */

/* Reads the 8-byte page-table entry at guest-physical @gpa; returns 0 or a negative errno. */
typedef int (*arch_read_pte_fn)(void *ctx, uint64_t gpa, uint64_t *pte);

/* ---- gdbstub `g` layout ---------------------------------------------------------------------- */

/* Where one register of a `g` reply lands: an arch_regs index, or ARCH_GDB_SYS + n for sys[n]. */
#define ARCH_GDB_SYS	 0x80
#define ARCH_GDB_SYS_MAX 24
#define ARCH_GDB_ONCE_MAX 8

struct arch_gdb_reg {
	uint8_t size; /* bytes on the wire */
	uint8_t slot; /* arch_regs index, or ARCH_GDB_SYS + index into sys[] */
};

/* The `g` reply of one VMM's gdbstub for this ISA (QEMU's for x86_64), in register-number order. */
struct arch_gdb_layout {
	const struct arch_gdb_reg *reg;
	unsigned nr;		/* registers decoded (the prefix of `g` the tracer needs) */
	unsigned decoded_bytes; /* their bytes on the wire: a shorter reply is refused */
	unsigned pc;		/* register number of the program counter (for `P`) */
	/* System registers outside `g` whose numbers the VMM assigns at run time (QEMU's aarch64:
	 * learned from its target description by name), read with `p` into sys[sys_first + i]. */
	const char *const *sys_names;
	unsigned nr_sys_names, sys_first;
	const uint8_t *sys_gp; /* per named one: also into the arch_regs index, ARCH_REG_NONE none */
	const char *xml_arch; /* the target description's <architecture> ("i386:x86-64") */
	/* Optional: the system register holding the rate of the counter the ISA's stub reads its time
	 * from (arm64: CNTFRQ_EL0 for CNTVCT_EL0), read once at attach; NULL: none. */
	const char *counter_freq_name;
	/* Optional: system registers read only when asked (not at each stop: e.g. what the kernel
	 * enabled of the MMU, read when the stub is mapped), learned by name as sys_names; a name the
	 * description lacks has no number (-1), which the reader takes as "not readable here". */
	const char *const *once_names;
	unsigned nr_once_names; /* at most ARCH_GDB_ONCE_MAX */
};

/* ---- the per-ISA table ----------------------------------------------------------------------- */

/* The largest breakpoint, patchable entry or call/jump an ISA writes. */
#define ARCH_PATCH_MAX 8

struct arch {
	const char *name;     /* "x86_64" */
	unsigned elf_machine; /* EM_X86_64 */
	struct arch_reg_map regs;
	uint64_t page_size;   /* the smallest page */
	uint64_t kernel_half; /* lowest address of the kernel's half of the address space */

	/* patch encodings */
	uint8_t bp[ARCH_PATCH_MAX]; /* the breakpoint (x86: INT3) */
	uint8_t bp_len;
	uint8_t site_len;	 /* a patchable entry (x86: NOP5) and the call that replaces it */
	uint8_t jmp_len;	 /* the jump a detour is entered by (x86: JMP rel32) */
	uint8_t call_before_len; /* bytes call_precedes looks at before a return address */
	uint8_t pad[ARCH_PATCH_MAX]; /* the landing pad a detour slot starts with (x86: ENDBR64) */
	uint8_t pad_len;
	/* Whether @p (site_len bytes) holds a patchable entry's NOP. */
	bool (*is_site_nop)(const uint8_t *p);
	/* Bytes of the landing pad (or sealed one) a function starting at @p opens with, else 0. */
	size_t (*entry_pad_len)(const uint8_t *p);
	/* Optional: whether the function starting at @p, whose first word after its pad (@skip
	 * bytes) is a NOP, has the patchable entry its compiler and the kernel's ftrace made (arm64:
	 * `mov x9, x30` right before the NOP, which holds the return address the patch's BL takes
	 * from x30); NULL: any NOP after the pad is one. */
	bool (*site_entry_ok)(const uint8_t *p, size_t skip);
	/* A call (@call) or jump from @at to @to into @out (site_len or jmp_len bytes): 0, or
	 * -ERANGE when @to is out of the encoding's reach. */
	int (*encode_branch)(uint64_t at, uint64_t to, bool call, uint8_t *out);
	/* The target of a direct call (or, if @jumps, a direct jump too) at @p (@n bytes, at guest
	 * address @at) into *@to, with its length: 0 if none starts there. */
	size_t (*direct_branch)(const uint8_t *p, size_t n, uint64_t at, bool jumps, uint64_t *to);
	/* Whether the call_before_len bytes before an address end with a call (by shape). */
	bool (*call_precedes)(const uint8_t *b);

	/* decode and out-of-line relocation (the ISA's header documents each in full) */
	int (*reloc_plan)(const uint8_t *code, size_t code_len, uint64_t code_addr, size_t need,
			  struct arch_reloc_plan *plan, char *why, size_t whylen);
	int (*reloc_emit)(const struct arch_reloc_plan *plan, const uint8_t *code,
			  uint64_t code_addr, uint64_t dest_addr, uint8_t *out, size_t out_cap,
			  size_t *out_len, char *why, size_t whylen);
	int (*reloc_kernel_safe)(const struct arch_reloc_plan *plan, char *why, size_t whylen);
	int (*reloc_detour_check)(const struct arch_reloc_plan *plan, int *pushed, char *why,
				  size_t whylen);
	int (*reloc_scan_body)(const struct arch_reloc_plan *plan, const uint8_t *body,
			       size_t body_len, uint64_t body_addr, char *why, size_t whylen);
	int (*scan_branch_to)(const uint8_t *body, size_t body_len, uint64_t body_addr,
			      uint64_t target, char *why, size_t whylen);
	int (*scan_insn_start)(const uint8_t *body, size_t body_len, size_t off, size_t *before,
			       size_t *after);
	bool (*insn_waits)(const uint8_t *p, size_t n);
	/* The code of detour slot @slot at guest address @at, whose call goes to the stub's detour
	 * routine @entry, for @plan (checked by reloc_detour_check): into @code (slot->size bytes,
	 * the unused ones breakpoints), *@len the bytes that matter. 0, or a negative errno with
	 * one line in @why (-ERANGE: @entry or the way back out of reach). */
	int (*detour_code)(const struct arch_reloc_plan *plan, const struct arch_detour_slot *slot,
			   uint64_t at, uint64_t entry, uint8_t *code, size_t *len, char *why,
			   size_t whylen);

	/* page tables: @root is the table base register (x86: CR3), @mode the ISA's paging mode
	 * (x86: 1 for 5-level). 0 or -EFAULT. */
	int (*translate)(arch_read_pte_fn read, void *ctx, uint64_t root, unsigned mode,
			 uint64_t gva, uint64_t *gpa);

	/* The table base and paging mode (translate's @root and @mode) for @gva that a vCPU's
	 * system registers @sys give, as its gdb layout fills them (x86: CR3 and CR4.LA57; arm64:
	 * TTBR1_EL1 or TTBR0_EL1 by the address's half, with TCR_EL1's fields). Pure. */
	void (*walk_root)(const uint64_t *sys, uint64_t gva, uint64_t *root, unsigned *mode);
	/* The current task's address from a vCPU's registers alone (arm64: SP_EL0 while in the
	 * kernel), 0 when not there. NULL: the ISA's Linux keeps it in memory (x86: per-CPU data).
	 * Pure. */
	uint64_t (*current_task)(const struct arch_regs *r);
	/* The running CPU's per-CPU base from a vCPU's registers, where the backend gave it (x86:
	 * the GS base of a kernel, X86_GS_BASE_SLOT), 0 when not there: `current` is then read at
	 * that base plus the guest's per-CPU offset of its current task. NULL: none. Pure. */
	uint64_t (*percpu_base)(const struct arch_regs *r);
	/* Whether @after_ip, the word a saved context (an interrupt's frame) keeps right after its
	 * instruction pointer, says the context ran in the kernel (x86: CS of ring 0; arm64: the
	 * SPSR of EL1, pt_regs' pstate after pc). NULL: x86's CS test. Pure. */
	bool (*saved_kernel_mode)(uint64_t after_ip);

	const struct arch_gdb_layout *gdb;
};

/* The table of @isa, NULL if out of range. Pure. */
const struct arch *arch_get(enum arch_isa isa);

/* The table of the ISA an ELF file's e_machine names, NULL if hvtrace has none. Pure. */
const struct arch *arch_of_elf(unsigned e_machine);

/* The ISA a guest is taken to be before one is known (names on the command line): x86_64. Pure. */
const struct arch *arch_default(void);

/* Index (0-based) of register @name in @a's set, -1 if it has none. Pure. */
int arch_reg_index(const struct arch *a, const char *name);

/* Formats @n bytes as "0f 1f 44 00 00" into @buf (needs 3*n bytes). Returns @buf. Pure. */
char *arch_format_bytes(const uint8_t *p, size_t n, char *buf);

/* The one line a relocation refusal is, "+OFF at ADDR (BYTES): REASON", into @why (nothing when
 * @why is NULL or @whylen 0): OFF is @at - @base, BYTES the first @n (at most ARCH_SAY_BYTES_MAX)
 * bytes at @p ("no bytes" for none), REASON @fmt with @ap. Pure. */
#define ARCH_SAY_BYTES_MAX 16
void arch_vsay(char *why, size_t whylen, uint64_t base, uint64_t at, const uint8_t *p, size_t n,
	       const char *fmt, va_list ap) __attribute__((format(printf, 7, 0)));

/* ---- hot-path accessors: inline index lookups, no branches on the ISA ------------------------ */

/* The instruction pointer of @r. Pure. */
static inline uint64_t arch_regs_ip(const struct arch *a, const struct arch_regs *r)
{
	return r->r[a->regs.ip];
}

/* The stack pointer of @r. Pure. */
static inline uint64_t arch_regs_sp(const struct arch *a, const struct arch_regs *r)
{
	return r->r[a->regs.sp];
}

/* The frame pointer of @r. Pure. */
static inline uint64_t arch_regs_fp(const struct arch *a, const struct arch_regs *r)
{
	return r->r[a->regs.fp];
}

/* The return value of @r (at a return). Pure. */
static inline uint64_t arch_regs_ret(const struct arch *a, const struct arch_regs *r)
{
	return r->r[a->regs.ret];
}

/* Integer argument @n (0-based) of @r at a function's entry if it is passed in a register, else 0.
 * Pure. */
static inline uint64_t arch_regs_arg(const struct arch *a, const struct arch_regs *r, unsigned n)
{
	return n < a->regs.nr_args ? r->r[a->regs.arg[n]] : 0;
}

/* Register @i (0-based, < a->regs.nr) of @r. Pure. */
static inline uint64_t arch_regs_get(const struct arch *a, const struct arch_regs *r, unsigned i)
{
	return i < a->regs.nr ? r->r[i] : 0;
}

/* Sets the instruction pointer of @r. */
static inline void arch_regs_set_ip(const struct arch *a, struct arch_regs *r, uint64_t v)
{
	r->r[a->regs.ip] = v;
}

/* Sets the stack pointer of @r. */
static inline void arch_regs_set_sp(const struct arch *a, struct arch_regs *r, uint64_t v)
{
	r->r[a->regs.sp] = v;
}

/* Sets the return value of @r. */
static inline void arch_regs_set_ret(const struct arch *a, struct arch_regs *r, uint64_t v)
{
	r->r[a->regs.ret] = v;
}

/* Sets register argument @n of @r (nothing if it is passed on the stack). */
static inline void arch_regs_set_arg(const struct arch *a, struct arch_regs *r, unsigned n,
				     uint64_t v)
{
	if (n < a->regs.nr_args)
		r->r[a->regs.arg[n]] = v;
}

/* Whether register index @i of @a carries an integer argument. Pure. */
static inline bool arch_reg_is_arg(const struct arch *a, unsigned i)
{
	for (unsigned k = 0; k < a->regs.nr_args; k++)
		if (a->regs.arg[k] == i)
			return true;
	return false;
}

/* ---- per-ISA machine definitions ---------------------------------------------------------------
 * What only a backend that drives one ISA's machine itself uses (the embedded VMM's long-mode boot
 * and its exits, Linux's x86 page tables edited to map the stub, QEMU's x86_64 register numbers),
 * exposed here so that nothing outside arch/ includes an ISA's folder. */
#include "arch/x86/x86_machine.h"
#include "arch/arm64/arm64_machine.h"

#endif

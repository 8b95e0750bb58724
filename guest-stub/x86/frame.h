/* The x86-64 stub's stack frame: what its routines save on the guest stack and how they restore it
 * and leave. Included by guest-stub/x86/stub.S (assembler macros). */
#ifndef HVT_STUB_X86_FRAME_H
#define HVT_STUB_X86_FRAME_H
/* clang-format off */

#define X86_EFLAGS_IF 0x200

/* Stack frame after PUSHF and the eleven pushes. */
#define F_R15 0
#define F_R14 8
#define F_R13 16
#define F_R12 24
#define F_R11 32
#define F_R10 40
#define F_RBP 48
#define F_RBX 56
#define F_RDX 64
#define F_RCX 72
#define F_RAX 80
#define F_FLAGS 88
#define F_SITE 96   /* entry: site + 5 */
#define F_SLOT 104  /* entry: the function's return-address slot */
#define F_RSLOT 96 /* return: the slot the RET came through */
/* saved flags, detour routines: bit 31 marks a detour; bit 30 holds IF (which is cleared) */
#define F_DETOUR_BYTE 3
#define F_DETOUR_MARK 0x80
#define F_DETOUR_IF 0x40

/* The eleven registers of the frame, after its flags word. */
.macro SAVE_REGS
	push %rax
	push %rcx
	push %rdx
	push %rbx
	push %rbp
	push %r10
	push %r11
	push %r12
	push %r13
	push %r14
	push %r15
.endm

.macro SAVE
	pushfq
	cli
	SAVE_REGS
.endm

/* SAVE without the CLI: the counting routines' and the return routine's, which raise the preempt
 * count instead (PIN) when the header says where it is. */
.macro SAVE_NOCLI
	pushfq
	SAVE_REGS
.endm

/* After SAVE_NOCLI: this CPU kept until UNPIN, from the preempt count at %gs:H_PREEMPT_GS (no
 * preemption, so no migration and no other task on this CPU; an interrupt or NMI may still nest,
 * and each table update is one instruction), else with interrupts masked as SAVE's. Clobbers rcx
 * and the arithmetic flags. */
.macro PIN
	movq .Lbase+STUB_HDR_OFF+H_PREEMPT_GS(%rip), %rcx
	testq %rcx, %rcx
	jz .Lpin_cli\@
	incl %gs:(%rcx)
	jmp .Lpin_out\@
.Lpin_cli\@:
	cli
.Lpin_out\@:
.endm

/* Undoes PIN (the preempt count lowered, without a reschedule: as preempt_enable_no_resched) and
 * returns as RESTORE_RET does: STI only when interrupts are masked now (PIN's CLI, or a drop
 * record's, ring.S) and SAVE found them on. */
.macro UNPIN_RET
	movq .Lbase+STUB_HDR_OFF+H_PREEMPT_GS(%rip), %rcx
	testq %rcx, %rcx
	jz .Lunpin_if\@
	decl %gs:(%rcx)
.Lunpin_if\@:
	pushfq
	popq %rcx
	testl $X86_EFLAGS_IF, %ecx
	jnz .Lunpin_on\@
	RESTORE_RET
.Lunpin_on\@:
	RESTORE_POPS
	leaq 8(%rsp), %rsp
	ret
.endm

/* Restores the registers SAVE pushed, leaving its flags word on the stack. */
.macro RESTORE_POPS
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %r11
	pop %r10
	pop %rbp
	pop %rbx
	pop %rdx
	pop %rcx
	pop %rax
.endm

/* Restores what SAVE saved and returns. Of the flags only IF is restored, with STI when SAVE found it
 * set: the arithmetic flags are dead at a function's entry and after its return (the psABI keeps
 * none across a call), the stub changes no other flag, and under TCG POPF ends the translation block
 * through the main loop, the dearest instruction here (a third of the stub's cost on Linux 7.3).
 * STI's one-instruction shadow covers the RET: no interrupt comes in before it. */
.macro RESTORE_RET
	RESTORE_POPS
	testb $(X86_EFLAGS_IF >> 8), 1(%rsp)
	leaq 8(%rsp), %rsp
	jz .Lrr_off\@
	sti
	ret
.Lrr_off\@:
	ret
.endm

/* A detour routine's SAVE: the saved flags marked as a detour's, their IF moved aside (so the
 * routine returns with interrupts off, see .Lout). Clobbers the arithmetic flags only. */
.macro DETOUR_MARK
	orb $F_DETOUR_MARK, F_FLAGS+F_DETOUR_BYTE(%rsp)
	btrl $9, F_FLAGS(%rsp)
	jnc 1f
	orb $F_DETOUR_IF, F_FLAGS+F_DETOUR_BYTE(%rsp)
1:
.endm

/* clang-format on */
#endif

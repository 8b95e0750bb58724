/* The exit-free stub: the only hvtrace code that runs inside a guest besides the trampoline byte.
 * Layout and record format: stub_abi.h. Assembled into the host binary as data (.rodata) and
 * copied into the guest by host/trace/stub.c; every reference is RIP-relative inside the blob or goes
 * through the header, so the bytes run wherever they are placed.
 *
 * hvt_stub_entry      reached by CALL rel32 from a patched site: records the entry and returns past
 *                     the site. 0(%rsp) = site + 5, 8(%rsp) = the function's return address.
 * hvt_stub_entry_ret  the same, and hooks the return: the return address is pushed on the shadow
 *                     stack of its guest stack (in guest memory, next to the rings) and replaced by
 *                     hvt_stub_ret.
 * hvt_stub_entry_args, hvt_stub_entry_ret_args
 *                     the same two, recording the argument registers too (a second record).
 * hvt_stub_ret        reached by the hooked function's RET: pops the frame matching the slot,
 *                     records the return and goes on to the saved address. It needs nothing from
 *                     the host, so a guest whose tracer vanished still returns correctly.
 *
 * Interrupts are off from the first instruction to the last (CLI after PUSHF; STI just before the
 * RET when they were on, see RESTORE_RET), so a record and a shadow-stack update are never split by
 * preemption or migration. Every register is preserved, and of the flags IF (the others are dead
 * across a call, and the stub changes none of them). */
#include "guest-stub/stub_abi.h"

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

.macro SAVE
	pushfq
	cli
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

/* The head of the record at rax: type \type on CPU r12 (depth 0), no flags, the TSC in rbp.
 * Clobbers \tmp (a 32-bit register). */
.macro REC_HEAD type, tmp
	movl %r12d, \tmp
	shll $16, \tmp
	orl $\type, \tmp
	movl \tmp, R_TYPE(%rax)
	movl $0, R_FLAGS(%rax)
	movq %rbp, R_TSC(%rax)
.endm

/* A frame just popped from the shadow stack at r10 may have been the graph's root. Clobbers rcx. */
.macro FIX_ROOT
	movq S_ROOT(%r10), %rcx
	cmpq S_NR(%r10), %rcx
	jbe 11f
	movq $0, S_ROOT(%r10)
11:
.endm

/* rcx = the top frame of the shadow stack at r10; to \empty when it holds none. */
.macro TOP_FRAME empty
	movq S_NR(%r10), %rcx
	testq %rcx, %rcx
	jz \empty
	shlq $5, %rcx
	leaq S_E-32(%r10,%rcx), %rcx
.endm

/* The top frame of the shadow stack at r10 is gone: its drop record, the frame popped, then back
 * to \loop. */
.macro DROP_TOP loop
	call .Lemit_drop
	decq S_NR(%r10)
	FIX_ROOT
	jmp \loop
.endm

/* rcx = the shadow stack at probe \idx from the hash in r9: stacks[(r9 + \idx) & mask]. */
.macro STACK_AT idx
	leaq (%r9,\idx), %rcx
	andq H_STACKS_MASK(%rbx), %rcx
	shlq $STUB_STACK_SHIFT, %rcx
	addq H_STACKS(%rbx), %rcx
.endm

/* The hot paths are straight-line code: under TCG every RET is an indirect jump looked up at run
 * time, so what runs on every event is expanded in place (TASK, TASK_ID, ANNOUNCE, RESERVE1, SLOT,
 * DEPTH) and only the rare cases call out of line. */

/* rcx = CPU r12's ring header (STUB_RINGHDR_OFF + r12 * STUB_RINGHDR_SIZE); clobbers \tmp. */
.macro RING_HDR tmp
	movq %r12, %rcx
	shlq $6, %rcx
	leaq .Lbase+STUB_RINGHDR_OFF(%rip), \tmp
	addq \tmp, %rcx
.endm

/* rax = the current task pointer of CPU r12 (0 if unknown): the u64 at %gs:H_CUR_GS_OFF when
 * H_CUR_GS_ON is set, else the u64 H_CUR_SLOTS[r12] points at. */
.macro TASK
	cmpq $0, H_CUR_GS_ON(%rbx)
	jne .Ltask_gs\@
	movq H_CUR_SLOTS(%rbx,%r12,8), %rax
	testq %rax, %rax
	jz .Ltask_out\@
	movq (%rax), %rax
	jmp .Ltask_out\@
.Ltask_gs\@:
	movq H_CUR_GS_OFF(%rbx), %rax
	movq %gs:(%rax), %rax
.Ltask_out\@:
.endm

/* edx = the identity of task rax (stub_task_id in stub_abi.h); 0 with no task or when the header's
 * H_COMM_OFF is 0. Clobbers rcx. */
.macro TASK_ID
	xorl %edx, %edx
	testq %rax, %rax
	jz .Ltid_out\@
	movq H_COMM_OFF(%rbx), %rcx
	testq %rcx, %rcx
	jz .Ltid_out\@
	movq (%rax,%rcx), %rdx
	xorq 8(%rax,%rcx), %rdx
	movq %rdx, %rcx
	shrq $32, %rcx
	xorl %ecx, %edx
	movq H_PID_OFF(%rbx), %rcx
	movl (%rax,%rcx), %ecx
	imull $0x9e3779b1, %ecx, %ecx
	xorl %ecx, %edx
	orl $1, %edx
.Ltid_out\@:
.endm

/* r15 = CPU r12's current task, edx = its identity (TASK, TASK_ID), announced (.Lannounce) when
 * it is not the one this CPU's ring last announced. Clobbers rax, rcx. */
.macro ANNOUNCE
	TASK
	TASK_ID
	movq %rax, %r15
	testl %edx, %edx
	jz .Lann_out\@
	RING_HDR %rax
	cmpq RH_LAST_TASK(%rcx), %r15
	jne .Lann_new\@
	cmpl RH_LAST_ID(%rcx), %edx
	je .Lann_out\@
.Lann_new\@:
	call .Lannounce
.Lann_out\@:
.endm

/* The record of index rax on CPU r12's ring, in rax, its sequence number stashed. Clobbers rcx, rdx. */
.macro SLOT
	leaq 1(%rax), %rdx
	movq H_RING_MASK(%rbx), %rcx
	andq %rcx, %rax
	incq %rcx
	imulq %r12, %rcx
	addq %rcx, %rax
	shlq $STUB_REC_SHIFT, %rax
	addq H_RINGS(%rbx), %rax
	movl %edx, R_STASH(%rax)
.endm

/* One record reserved on CPU r12's ring, in rax (0: the ring is full; .Lreserve, which waits for
 * room under backpressure and counts the loss, decides). Clobbers rcx, rdx.
 * Only CPU r12 moves its ring's head (the host moves the tail), with interrupts off, so the one thing
 * that can come between the read of the head and its update is an NMI whose handler reaches a probe:
 * CMPXCHG is one instruction, atomic against that without LOCK (as the kernel's local_cmpxchg). */
.macro RESERVE1
	RING_HDR %rdx
.Lrs_again\@:
	movq RH_HEAD(%rcx), %rax
	movq %rax, %rdx
	subq RH_TAIL(%rcx), %rdx
	cmpq H_RING_MASK(%rbx), %rdx
	ja .Lrs_full\@
	leaq 1(%rax), %rdx
	cmpxchgq %rdx, RH_HEAD(%rcx) /* no LOCK: see above */
	jne .Lrs_again\@
	SLOT
	jmp .Lrs_out\@
.Lrs_full\@:
	push %r11
	movl $1, %r11d
	call .Lreserve
	pop %r11
.Lrs_out\@:
.endm

/* The depth of frame rcx on the shadow stack at r10, counted from the graph's root frame when there
 * is one, at most 255, in eax. Clobbers rdx. */
.macro DEPTH
	movq %rcx, %rax
	movq S_ROOT(%r10), %rdx
	testq %rdx, %rdx
	jz .Ldepth_root\@
	decq %rdx
	subq %rdx, %rax
.Ldepth_root\@:
	cmpq $255, %rax
	jbe .Ldepth_out\@
	movl $255, %eax
.Ldepth_out\@:
.endm

/* Unlocks the shadow stack at r10, freed if it is empty. Clobbers rcx. */
.macro RELEASE
	movq S_NR(%r10), %rcx
	testq %rcx, %rcx
	jnz .Lrel_busy\@
	movq $0, S_KEY(%r10)
.Lrel_busy\@:
	movq $0, S_LOCK(%r10)
.endm

/* rbx = header, rbp = TSC, r12 = CPU number (all-ones when out of range): from one RDTSCP
 * (ECX = IA32_TSC_AUX, masked) when the header's H_AUX_MASK is set; else RDTSC and the u32 at
 * %gs:H_CPU_GS_OFF, or with H_CPUID set CPUID leaf 1's APIC ID (EBX[31:24]; the VMM sets it per
 * vCPU, the guest cannot change it). Clobbers rax, rcx, rdx. */
.macro PROLOGUE
	leaq .Lbase+STUB_HDR_OFF(%rip), %rbx
	movq H_AUX_MASK(%rbx), %r12
	testq %r12, %r12
	jz 15f
	rdtscp
	andl %ecx, %r12d
	jmp 16f
15:	cmpq $0, H_CPUID(%rbx)
	jne 17f
	rdtsc
	movq H_CPU_GS_OFF(%rbx), %rcx
	movl %gs:(%rcx), %r12d
	jmp 16f
17:	movl $1, %eax
	xorl %ecx, %ecx
	cpuid
	shrl $24, %ebx
	movl %ebx, %r12d
	rdtsc
	leaq .Lbase+STUB_HDR_OFF(%rip), %rbx
16:	shlq $32, %rdx
	orq %rdx, %rax
	movq %rax, %rbp
	cmpl H_NR_CPUS(%rbx), %r12d
	jb 1f
	lock incq H_BAD_CPU(%rbx)
	movq $-1, %r12
1:
.endm

	.section .rodata.hvt_stub, "a"
	.balign 4096
	.globl hvt_stub_start, hvt_stub_entry, hvt_stub_entry_ret, hvt_stub_entry_args
	.globl hvt_stub_entry_ret_args, hvt_stub_entry_root, hvt_stub_entry_root_args
	.globl hvt_stub_detour, hvt_stub_detour_ret, hvt_stub_detour_args, hvt_stub_detour_ret_args
	.globl hvt_stub_detour_root, hvt_stub_detour_root_args
	.globl hvt_stub_ret, hvt_stub_end
hvt_stub_start:
.Lbase:

/* r10: bit 0 hook the return, bit 1 record the argument registers, bit 2 a graph root, bit 3 an
 * entry outside the graph recorded for its event alone (R_FLAGS gets r10 >> 1) */
hvt_stub_entry:
	SAVE
	xorl %r10d, %r10d
	jmp .Lentry

hvt_stub_entry_ret:
	SAVE
	movl $1, %r10d
	jmp .Lentry

hvt_stub_entry_args:
	SAVE
	movl $2, %r10d
	jmp .Lentry

hvt_stub_entry_root:
	SAVE
	movl $5, %r10d
	jmp .Lentry

hvt_stub_entry_root_args:
	SAVE
	movl $7, %r10d
	jmp .Lentry

hvt_stub_entry_ret_args:
	SAVE
	movl $3, %r10d
	jmp .Lentry

/* The same six, reached from a detour slot (stub_abi.h): they return with interrupts off. */
hvt_stub_detour:
	SAVE
	DETOUR_MARK
	xorl %r10d, %r10d
	jmp .Lentry

hvt_stub_detour_ret:
	SAVE
	DETOUR_MARK
	movl $1, %r10d
	jmp .Lentry

hvt_stub_detour_args:
	SAVE
	DETOUR_MARK
	movl $2, %r10d
	jmp .Lentry

hvt_stub_detour_root:
	SAVE
	DETOUR_MARK
	movl $5, %r10d
	jmp .Lentry

hvt_stub_detour_root_args:
	SAVE
	DETOUR_MARK
	movl $7, %r10d
	jmp .Lentry

hvt_stub_detour_ret_args:
	SAVE
	DETOUR_MARK
	movl $3, %r10d
.Lentry:
	PROLOGUE
	cmpq $-1, %r12
	je .Lout
	leaq F_SLOT(%rsp), %r14
	/* set_graph_function: below no live root on this stack, a call is not traced at all */
	cmpq $0, H_GRAPH(%rbx)
	je 2f
	testl $4, %r10d
	jnz 2f
	xorl %edx, %edx
	call .Lstack_get
	testq %rax, %rax
	jz 3f
	cmpq $0, S_ROOT(%rax)
	movq $0, S_LOCK(%rax)
	jne 2f
3:	/* outside the graph: an -e event still fires (as ftrace's do), its return not hooked */
	testl $2, %r10d
	jz .Lout
	movl $10, %r10d
2:
	ANNOUNCE
	movl %edx, %r11d
	shlq $32, %r11
	orq %r11, %r10 /* the identity, kept in r10's high half until the commit */
	testl $2, %r10d
	jnz 1f
	RESERVE1
	jmp 4f
1:	movl $2, %r11d /* the entry and the argument registers */
	call .Lreserve
4:	movq %rax, %r13
	testq %r13, %r13
	jz .Lout /* ring full: counted, and the return is not hooked either */
	testl $2, %r10d
	jz 1f
	/* the argument registers, committed first: the host reads the entry before them */
	movl $STUB_REC_ARGS, R_TYPE(%rcx)
	movq %rdi, R_ARGS+0(%rcx)
	movq %rsi, R_ARGS+8(%rcx)
	movq F_RDX(%rsp), %rax
	movq %rax, R_ARGS+16(%rcx)
	movq F_RCX(%rsp), %rax
	movq %rax, R_ARGS+24(%rcx)
	movq %r8, R_ARGS+32(%rcx)
	movq %r9, R_ARGS+40(%rcx)
	movl R_STASH(%rcx), %eax
	movl %eax, R_SEQ(%rcx)
1:	movl %r10d, %eax
	shrl $1, %eax
	movl %eax, R_FLAGS(%r13)
	movq %rbp, R_TSC(%r13)
	movq F_SITE(%rsp), %rax
	subq $5, %rax
	movq %rax, R_IP(%r13)
	movq (%r14), %rax
	movq %rax, R_PARENT(%r13)
	movq F_RAX(%rsp), %rax
	movq %rax, R_RAX(%r13)
	movq %r15, R_TASK(%r13)
	movq %r10, %rax
	shrq $32, %rax
	movl %eax, R_T0(%r13) /* kept there (unused in an entry) until the commit */
	movl %r12d, %r11d
	shll $16, %r11d
	orl $STUB_REC_ENTRY, %r11d
	testl $1, %r10d
	jz .Lcommit_entry

	/* Hook the return: the shadow stack of this guest stack, locked (busy or full: not hooked). */
	movl $1, %edx
	call .Lstack_get
	testq %rax, %rax
	jz .Lnohook
	movq %rax, %r10
.Ldrop_loop:
	/* Frames deeper than this slot are gone; so is one at this slot unless it holds hvt_stub_ret
	 * (a tail call, whose frame stays below the new one). */
	TOP_FRAME .Lpush
	cmpq %r14, E_SLOT(%rcx)
	jb .Ldrop
	jne .Lpush
	movq (%r14), %rax
	cmpq H_RET(%rbx), %rax
	je .Lpush
.Ldrop:
	DROP_TOP .Ldrop_loop
.Lpush:
	movq S_NR(%r10), %rcx
	cmpq H_MAX_DEPTH(%rbx), %rcx
	jae .Lfull
	cmpq $STUB_STACK_DEPTH, %rcx /* the room, whatever the header says now */
	jae .Lfull
	cmpq $0, H_GRAPH(%rbx)
	je 5f
	testl $2, R_FLAGS(%r13) /* a root (R_FLAGS holds the routine's bits >> 1) */
	jnz 6f
	cmpq $0, S_ROOT(%r10)
	je .Lskip /* its root was unwound just now: outside the graph */
	jmp 5f
6:	cmpq $0, S_ROOT(%r10)
	jne 5f
	leaq 1(%rcx), %rax
	movq %rax, S_ROOT(%r10)
5:	DEPTH
	shll $8, %eax
	orl %eax, %r11d
	shlq $5, %rcx
	leaq S_E(%r10,%rcx), %rcx
	movq %r14, E_SLOT(%rcx)
	movq (%r14), %rax
	movq %rax, E_ORIG(%rcx)
	movq F_SITE(%rsp), %rax
	subq $5, %rax
	movq %rax, E_IP(%rcx)
	movq %rbp, E_TSC(%rcx)
	incq S_NR(%r10)
	movq H_RET(%rbx), %rax
	movq %rax, (%r14)
	movq $0, S_LOCK(%r10)
	jmp .Lcommit_entry
.Lfull:
	RELEASE
.Lnohook:
	lock incq H_NO_STACK(%rbx)
	xorl $(STUB_REC_ENTRY ^ STUB_REC_ENTRY_NOHOOK), %r11d
	jmp .Lcommit_entry
.Lskip:
	RELEASE
	andl $0xffff0000, %r11d
	testl $STUB_F_ARGS, R_FLAGS(%r13)
	jz 7f
	/* an -e event: recorded alone, as outside the graph above */
	orl $STUB_F_ALONE, R_FLAGS(%r13)
	orl $STUB_REC_ENTRY, %r11d
	jmp .Lcommit_entry
7:	orl $STUB_REC_SKIP, %r11d
.Lcommit_entry:
	movl %r11d, R_TYPE(%r13)
	movl R_STASH(%r13), %eax
	movl R_T0(%r13), %edx
	movl %edx, R_TASK_ID(%r13) /* before the commit: the host reads it once R_SEQ is there */
	movl %eax, R_SEQ(%r13)
.Lout:
	testb $(X86_EFLAGS_IF >> 8), F_FLAGS+1(%rsp)
	jz .Lout_off
	RESTORE_POPS
	leaq 8(%rsp), %rsp
	sti /* its shadow covers the RET */
	ret
.Lout_off:
	/* interrupts stay off; from a detour slot: where it goes on after the relocated code */
	testb $F_DETOUR_MARK, F_FLAGS+F_DETOUR_BYTE(%rsp)
	jz 1f
	movq F_SITE(%rsp), %rax /* the slot + 5 */
	leaq DT_NOSTI-5(%rax), %rcx
	leaq DT_STI-5(%rax), %rax
	testb $F_DETOUR_IF, F_FLAGS+F_DETOUR_BYTE(%rsp)
	cmovzq %rcx, %rax
	movq %rax, F_SLOT-STUB_DETOUR_SCRATCH(%rsp)
1:	RESTORE_POPS
	leaq 8(%rsp), %rsp
	ret

hvt_stub_ret:
	subq $8, %rsp
	SAVE
	PROLOGUE
	leaq F_RSLOT(%rsp), %r14
	xorl %edx, %edx
	call .Lstack_get
	testq %rax, %rax
	jz .Lorphan
	movq %rax, %r10
.Lr_pop:
	TOP_FRAME .Lorphan
	cmpq %r14, E_SLOT(%rcx)
	je .Lr_match
	ja .Lorphan
	DROP_TOP .Lr_pop
.Lr_match:
	movq E_ORIG(%rcx), %rax
	movq %rax, (%r14)
	movq E_IP(%rcx), %r13
	movq E_TSC(%rcx), %r11
	decq S_NR(%r10)
	movq S_NR(%r10), %rcx
	DEPTH
	FIX_ROOT /* the root itself returning ends the graph */
	RELEASE
	movl %r12d, %r10d
	shll $16, %r10d
	shll $8, %eax
	orl %eax, %r10d
	orl $STUB_REC_RETURN, %r10d
	cmpq $-1, %r12
	je .Lr_out
	ANNOUNCE
	push %rdx /* the identity */
	RESERVE1
	pop %rdx
	testq %rax, %rax
	jz .Lr_out
	movl %r10d, R_TYPE(%rax)
	movl $0, R_FLAGS(%rax)
	movq %rbp, R_TSC(%rax)
	movq %r13, R_IP(%rax)
	movq (%r14), %rcx
	movq %rcx, R_PARENT(%rax)
	movq F_RAX(%rsp), %rcx
	movq %rcx, R_RAX(%rax)
	movq %r11, R_T0(%rax)
	movq %r15, R_TASK(%rax)
	movl R_STASH(%rax), %ecx
	movl %edx, R_TASK_ID(%rax)
	movl %ecx, R_SEQ(%rax)
.Lr_out:
	RESTORE_RET /* to the saved return address, now back in the slot */
.Lorphan:
	/* A return through the stub with no frame for its slot: only a host bug can cause it. */
	ud2

/* Reserves r11 (1 or 2) consecutive records on CPU r12's ring: the first in rax, the second in rcx,
 * each with its sequence number stashed; rax = 0 when the ring is full (counted in the ring's lost).
 * With H_WAIT_TSC set (backpressure), a full ring is first waited for, a PAUSE loop bounded by that
 * many TSC ticks, until the host has made room; a wait that times out sets the ring's RH_GAVE_UP, and
 * no more is waited on that ring until the host clears it. Clobbers rdx. */
.Lreserve:
	RING_HDR %rdx
7:	movq RH_HEAD(%rcx), %rax
	leaq -1(%rax,%r11), %rdx
	subq RH_TAIL(%rcx), %rdx
	cmpq H_RING_MASK(%rbx), %rdx
	ja 8f
	leaq (%rax,%r11), %rdx
	cmpxchgq %rdx, RH_HEAD(%rcx) /* this CPU's alone: no LOCK needed (see RESERVE1) */
	jne 7b
	cmpl $1, %r11d
	je .Lslot
	push %rax
	incq %rax
	call .Lslot
	xchgq %rax, (%rsp)
	call .Lslot
	pop %rcx
	ret
8:	cmpq $0, H_WAIT_TSC(%rbx)
	je 9f
	cmpq $0, RH_GAVE_UP(%rcx)
	jne 9f
	incq RH_WAITS(%rcx)
	rdtsc
	shlq $32, %rdx
	orq %rdx, %rax
	addq H_WAIT_TSC(%rbx), %rax
	pushq %rax /* the deadline */
10:	pause
	movq RH_HEAD(%rcx), %rax
	leaq -1(%rax,%r11), %rdx
	subq RH_TAIL(%rcx), %rdx
	cmpq H_RING_MASK(%rbx), %rdx
	jbe 11f
	rdtsc
	shlq $32, %rdx
	orq %rdx, %rax
	cmpq (%rsp), %rax
	jb 10b
	movq $1, RH_GAVE_UP(%rcx)
	addq $8, %rsp
	jmp 9f
11:	addq $8, %rsp /* room now: reserve again */
	jmp 7b
9:	incq RH_LOST(%rcx)
	xorl %eax, %eax
	ret

/* SLOT, out of line for .Lreserve. */
.Lslot:
	SLOT
	ret

/* Announces task r15 of identity edx on CPU r12, whose ring header is rcx (ANNOUNCE found it is
 * not the one this ring last announced: a task switch, or a new identity: exec renamed it, or its
 * struct now holds another task): a STUB_REC_TASK record with its pointer, identity, pid and comm as
 * they are now, ahead of the event's record, so that the host names the events after it as the task
 * was then, however late it reads them. With a full ring, nothing (counted lost; the next event
 * tries again). Preserves edx; clobbers rax, rcx. */
.Lannounce:
	push %r11
	push %r13
	push %rdx
	movq %rcx, %r13
	movl $1, %r11d
	call .Lreserve
	testq %rax, %rax
	jz 8f
	REC_HEAD STUB_REC_TASK, %ecx
	movq %r15, R_TASK(%rax)
	movq H_PID_OFF(%rbx), %rdx
	movl (%r15,%rdx), %edx
	movq %rdx, R_IP(%rax)
	movq $0, R_PARENT(%rax)
	movq H_COMM_OFF(%rbx), %rdx
	leaq (%r15,%rdx), %rcx
	movq (%rcx), %rdx
	movq %rdx, R_RAX(%rax)
	movq 8(%rcx), %rdx
	movq %rdx, R_T0(%rax)
	movl (%rsp), %edx /* the identity */
	movl R_STASH(%rax), %ecx
	movl %edx, R_TASK_ID(%rax)
	movl %ecx, R_SEQ(%rax)
	movq %r15, RH_LAST_TASK(%r13)
	movl %edx, RH_LAST_ID(%r13)
8:	pop %rdx
	pop %r13
	pop %r11
	ret

/* Records that the shadow frame at rcx was abandoned. Preserves rcx; clobbers rax, rdx. */
.Lemit_drop:
	cmpq $-1, %r12
	je 10f
	push %rcx
	push %r11
	movl $1, %r11d
	call .Lreserve
	pop %r11
	pop %rcx
	testq %rax, %rax
	jz 10f
	REC_HEAD STUB_REC_DROP, %edx
	movq E_IP(%rcx), %rdx
	movq %rdx, R_IP(%rax)
	movq E_ORIG(%rcx), %rdx
	movq %rdx, R_PARENT(%rax)
	movq E_TSC(%rcx), %rdx
	movq %rdx, R_T0(%rax)
	movq $0, R_TASK(%rax)
	movl R_STASH(%rax), %edx
	movl $0, R_TASK_ID(%rax)
	movl %edx, R_SEQ(%rax)
10:	ret

/* The shadow stack of the guest stack holding slot r14, locked, in rax; 0 if there is none. With edx = 1
 * it is created if needed and only tried-locked (0 if busy); with edx = 0 the lock is waited for.
 * Clobbers rcx, rdx. */
.Lstack_get:
	push %rsi
	push %rdi
	push %r8
	push %r9
	movl %edx, %r8d
.Lsg_retry:
	movq %r14, %rsi
	movq H_STACK_SHIFT(%rbx), %rcx
	shrq %cl, %rsi
	incq %rsi
	movq %rsi, %r9
	movabsq $0x9e3779b97f4a7c15, %rax
	imulq %rax, %r9
	shrq $32, %r9
	xorl %edi, %edi
.Lsg_find:
	STACK_AT %rdi
	cmpq %rsi, S_KEY(%rcx)
	je .Lsg_found
	incl %edi
	cmpl $STUB_STACK_PROBES, %edi
	jb .Lsg_find
	testl %r8d, %r8d
	jz .Lsg_none
	xorl %edi, %edi
.Lsg_claim:
	STACK_AT %rdi
	xorl %eax, %eax
	lock cmpxchgq %rsi, S_KEY(%rcx)
	je .Lsg_found
	cmpq %rsi, %rax /* another CPU just claimed it for the same stack: share it */
	je .Lsg_found
	incl %edi
	cmpl $STUB_STACK_PROBES, %edi
	jb .Lsg_claim
	jmp .Lsg_none
.Lsg_found:
	testl %r8d, %r8d
	jz .Lsg_spin
	lock btsq $0, S_LOCK(%rcx)
	jc .Lsg_none
	jmp .Lsg_check
.Lsg_spin:
	lock btsq $0, S_LOCK(%rcx)
	jnc .Lsg_check
	pause
	jmp .Lsg_spin
.Lsg_check:
	/* freed (emptied) or taken for another stack while we waited for the lock: look again */
	cmpq %rsi, S_KEY(%rcx)
	je .Lsg_ok
	movq $0, S_LOCK(%rcx)
	jmp .Lsg_retry
.Lsg_ok:
	movq %rcx, %rax
	jmp .Lsg_out
.Lsg_none:
	xorl %eax, %eax
.Lsg_out:
	pop %r9
	pop %r8
	pop %rdi
	pop %rsi
	ret

hvt_stub_end:
	.section .note.GNU-stack, "", @progbits

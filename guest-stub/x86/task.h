/* The x86-64 stub's task identity: the current task of a CPU, its identity, and its announcement
 * on the CPU's ring (guest-stub/x86/ring.S writes the record). Included by guest-stub/x86/stub.S
 * (assembler macros). */
#ifndef HVT_STUB_X86_TASK_H
#define HVT_STUB_X86_TASK_H
/* clang-format off */

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

/* r10 = the key of mode r11 (STUB_AGG_*) for CPU r12's current task, bucket 0: its pid with
 * STUB_AGG_PID (0 when unknown; r15 = the task, for the comm), else STUB_AGG_NOPID (the task is not
 * read). Clobbers rax, rcx. */
.macro AGG_KEY
	movl $STUB_AGG_NOPID, %r10d
	testl $STUB_AGG_PID, %r11d
	jz .Lak_out\@
	TASK
	movq %rax, %r15
	xorl %r10d, %r10d
	testq %r15, %r15
	jz .Lak_out\@
	cmpq $0, H_COMM_OFF(%rbx)
	je .Lak_out\@
	movq H_PID_OFF(%rbx), %rcx
	movl (%r15,%rcx), %r10d
.Lak_out\@:
.endm

/* clang-format on */
#endif

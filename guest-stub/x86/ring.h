/* The x86-64 stub's ring writing, inline: a CPU's ring header, a record reserved and addressed,
 * a record's head. The out-of-line part is guest-stub/x86/ring.S. Included by guest-stub/x86/stub.S
 * (assembler macros). */
#ifndef HVT_STUB_X86_RING_H
#define HVT_STUB_X86_RING_H
/* clang-format off */

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

/* R_PARENT and R_RAX of the record at \rec: what the return-address slot r14 holds and the RAX
 * SAVE found. Clobbers \tmp. */
.macro REC_CALLER rec, tmp
	movq (%r14), \tmp
	movq \tmp, R_PARENT(\rec)
	movq F_RAX(%rsp), \tmp
	movq \tmp, R_RAX(\rec)
.endm

/* clang-format on */
#endif

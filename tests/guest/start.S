/* Entry per the boot contract: RDI = vCPU index, RSI = vCPU count, RSP = top of this vCPU's stack. */
	.section .text.entry, "ax"
	.globl _start
_start:
	andq	$-16, %rsp
	call	guest_entry
1:	cli
	hlt
	jmp	1b

/* void context_switch(uint64_t *save_rsp, uint64_t new_rsp): cooperative switch of callee-saved state. */
	.text
	.globl context_switch
context_switch:
	pushq	%rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	movq	%rsp, (%rdi)
	movq	%rsi, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	ret

/* First code of a new task: context_switch "returns" here with the task in %r12. */
	.globl task_start
task_start:
	movq	%r12, %rdi
	call	task_main
	ud2

/* long nl_setjmp(struct jmpbuf *b): saves callee-saved state, returns 0 (and v from nl_longjmp). */
	.globl nl_setjmp
nl_setjmp:
	movq	%rbx, 0(%rdi)
	movq	%rbp, 8(%rdi)
	movq	%r12, 16(%rdi)
	movq	%r13, 24(%rdi)
	movq	%r14, 32(%rdi)
	movq	%r15, 40(%rdi)
	leaq	8(%rsp), %rdx
	movq	%rdx, 48(%rdi)
	movq	(%rsp), %rdx
	movq	%rdx, 56(%rdi)
	xorl	%eax, %eax
	ret

/* void nl_longjmp(struct jmpbuf *b, long v): resumes at nl_setjmp's return with v. */
	.globl nl_longjmp
nl_longjmp:
	movq	0(%rdi), %rbx
	movq	8(%rdi), %rbp
	movq	16(%rdi), %r12
	movq	24(%rdi), %r13
	movq	32(%rdi), %r14
	movq	40(%rdi), %r15
	movq	48(%rdi), %rsp
	movq	%rsi, %rax
	jmp	*56(%rdi)

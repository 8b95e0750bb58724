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

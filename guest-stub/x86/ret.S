/* The x86-64 stub's return routine, where a hooked return slot points: pops the frame of its
 * slot, records the return and goes on to the saved address. Part of guest-stub/x86/stub.S, which
 * includes it; not assembled alone. */

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
	REC_CALLER %rax, %rcx
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


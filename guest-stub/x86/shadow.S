/* The x86-64 stub's shadow stacks, out of line: the shadow stack of a guest stack, found or
 * claimed, and locked. The inline part is guest-stub/x86/shadow.h. Part of guest-stub/x86/stub.S,
 * which includes it; not assembled alone. */

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


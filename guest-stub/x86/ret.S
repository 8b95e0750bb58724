/* The x86-64 stub's return routine, where a hooked return slot points: pops the frame of its
 * slot, records the return and goes on to the saved address. Part of guest-stub/x86/stub.S, which
 * includes it; not assembled alone. */

hvt_stub_ret:
	subq $8, %rsp
	cmpq $0, .Lbase+STUB_HDR_OFF+H_FAST(%rip)
	jne .Lprof_ret /* the function profiler's frames first (prof.S), which comes back below */
.Lret_general:
	SAVE_NOCLI
	PIN
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
	movq E_IP(%rcx), %r13 /* a record frame's site; a counting frame's is decoded at .Lr_count */
	movq E_TSC(%rcx), %r11
	decq S_NR(%r10)
	movq S_NR(%r10), %rcx
	DEPTH
	FIX_ROOT /* the root itself returning ends the graph */
	RELEASE
	btq $61, %r11 /* a counting routine's frame (agg.S): counted, not recorded */
	jc .Lr_count
	cli /* a record: the ring is written with interrupts masked */
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
	UNPIN_RET /* to the saved return address, now back in the slot */
.Lr_count:
	/* the duration in ns ((ticks * H_NS_MULT) >> H_NS_SHIFT), keyed by the frame's mode (bits
	 * 63..61 of its E_TSC, in r11) and added to the CPU's table */
	cmpq $-1, %r12
	je .Lr_out
	DECODE_SITE %r13
	movq %r11, %r10
	shrq $61, %r10
	movabsq $STUB_AGG_TSC_MASK, %rax
	andq %rax, %r11
	movq %rbp, %rax
	subq %r11, %rax
	jae 1f
	xorl %eax, %eax /* a TSC behind the entry's (another CPU's): 0 */
1:	mulq H_NS_MULT(%rbx)
	movq H_NS_SHIFT(%rbx), %rcx
	shrdq %cl, %rdx, %rax
	push %rax
	movl %r10d, %r11d
	AGG_KEY
	movl %r11d, %eax /* the mode */
	pop %r11 /* the duration */
	movl $1, %ecx /* bucket 1: a return */
	testl $STUB_AGG_LOG2, %eax
	jz 2f
	movl $2, %ecx /* 2 + log2 of the duration as ftrace's .log2: ilog2(roundup_pow_of_two) */
	cmpq $1, %r11
	jbe 2f
	leaq -1(%r11), %rax
	bsrq %rax, %rax
	leal 3(%rax), %ecx
2:	shlq $32, %rcx
	orq %rcx, %r10
	call .Lagg
	jmp .Lr_out
.Lorphan:
	/* A return through the stub with no frame for its slot: only a host bug can cause it. */
	ud2

/* the end of the routines that run with interrupts on (agg.S, then this file) */
hvt_stub_ret_end:


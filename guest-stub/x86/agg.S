/* The x86-64 stub's counting routines (aggregation in the guest, stub_abi.h): reached by CALL rel32
 * from a patched site like the entry routines, they add the call to their CPU's table instead of
 * recording it, hook the return when asked (a frame marked as counting, which the return routine
 * counts in turn), and return past the site. Part of guest-stub/x86/stub.S, which includes it; not
 * assembled alone. */

/* r10 = the routine's mode, STUB_AGG_* (its index in struct stub's agg[]) */
hvt_stub_count:
	SAVE_NOCLI
	xorl %r10d, %r10d
	jmp .Lagg_entry

hvt_stub_count_pid:
	SAVE_NOCLI
	movl $STUB_AGG_PID, %r10d
	jmp .Lagg_entry

/* hvt_stub_count_ret (prof.S) comes here when its short path does not apply */
.Lcount_ret_general:
	SAVE_NOCLI
	movl $STUB_AGG_RET, %r10d
	jmp .Lagg_entry

hvt_stub_count_ret_pid:
	SAVE_NOCLI
	movl $(STUB_AGG_RET | STUB_AGG_PID), %r10d
	jmp .Lagg_entry

hvt_stub_count_ret_log2:
	SAVE_NOCLI
	movl $(STUB_AGG_RET | STUB_AGG_LOG2), %r10d
	jmp .Lagg_entry

hvt_stub_count_ret_pid_log2:
	SAVE_NOCLI
	movl $(STUB_AGG_RET | STUB_AGG_PID | STUB_AGG_LOG2), %r10d
.Lagg_entry:
	PIN
	PROLOGUE
	cmpq $-1, %r12
	je .Lcount_out
	leaq F_SLOT(%rsp), %r14
	movq F_SITE(%rsp), %r13
	subq $5, %r13
	movl %r10d, %r11d
	AGG_KEY
	push %r11
	xorl %r11d, %r11d /* a call: bucket 0, no duration */
	call .Lagg
	pop %r10
	testl $STUB_AGG_RET, %r10d
	jz .Lcount_out
	/* the return hooked: a frame whose E_TSC holds the mode in bits 63..61 (bit 61, STUB_AGG_RET,
	 * marks it as counting) over the TSC */
	movq %r10, %r11
	shlq $61, %r11
	movabsq $STUB_AGG_TSC_MASK, %rax
	andq %rbp, %rax
	orq %rax, %r11
	movl $1, %edx
	call .Lstack_get
	testq %rax, %rax
	jz .Lagg_nohook
	movq %rax, %r10
.Lagg_drop_loop:
	/* as the entry routine's: frames deeper than this slot are gone (tail calls excepted) */
	TOP_FRAME .Lagg_push
	cmpq %r14, E_SLOT(%rcx)
	jb .Lagg_drop
	jne .Lagg_push
	movq (%r14), %rax
	cmpq H_RET(%rbx), %rax
	je .Lagg_push
.Lagg_drop:
	DROP_TOP .Lagg_drop_loop
.Lagg_push:
	movq S_NR(%r10), %rcx
	cmpq H_MAX_DEPTH(%rbx), %rcx
	jae .Lagg_full
	cmpq $STUB_STACK_DEPTH, %rcx
	jae .Lagg_full
	shlq $5, %rcx
	leaq S_E(%r10,%rcx), %rcx
	movq %r14, E_SLOT(%rcx)
	movq (%r14), %rax
	movq %rax, E_ORIG(%rcx)
	movq %r13, E_IP(%rcx)
	movq %r11, E_TSC(%rcx)
	incq S_NR(%r10)
	movq H_RET(%rbx), %rax
	movq %rax, (%r14)
	movq $0, S_LOCK(%r10)
	jmp .Lcount_out
.Lagg_full:
	RELEASE
.Lagg_nohook:
	lock incq H_NO_STACK(%rbx)
	jmp .Lcount_out

.Lcount_out:
	UNPIN_RET

/* Adds one event of site r13 and key r10 with duration r11 (ns; 0 for a call) to CPU r12's table:
 * the entry of that key found or claimed within STUB_AGG_PROBES entries of its hash (a pid key's
 * first claim copies task r15's comm), else counted in the CPU's RH_AGG_DROP. Clobbers rax, rcx,
 * rdx. */
.Lagg:
	cmpq $0, H_AGG(%rbx)
	je 9f
	push %r14
	movq H_AGG_MASK(%rbx), %rax
	incq %rax
	imulq %r12, %rax
	shlq $STUB_AGG_SHIFT, %rax
	addq H_AGG(%rbx), %rax /* the CPU's table */
	movq %r10, %rdx
	rolq $29, %rdx
	xorq %r13, %rdx
	imulq $0x5bd1e995, %rdx, %rdx
	movq %rdx, %rcx
	shrq $29, %rcx
	xorq %rcx, %rdx
	movl $STUB_AGG_PROBES, %r14d
1:	andq H_AGG_MASK(%rbx), %rdx
	movq %rdx, %rcx
	shlq $STUB_AGG_SHIFT, %rcx
	addq %rax, %rcx
	cmpq %r13, A_IP(%rcx)
	jne 2f
	cmpq %r10, A_KEY(%rcx)
	je 4f
	jmp 3f
2:	cmpq $0, A_IP(%rcx)
	jne 3f
	/* an empty entry: the key first, then the claim (an NMI that claims it in between leaves
	 * its own key, and the claim fails: this entry is looked at again) */
	movq %r10, A_KEY(%rcx)
	push %rax
	xorl %eax, %eax
	cmpxchgq %r13, A_IP(%rcx) /* this CPU's alone: no LOCK (as RESERVE1's) */
	pop %rax
	jne 1b
	cmpl $STUB_AGG_NOPID, %r10d
	je 4f
	testq %r15, %r15
	jz 4f
	movq H_COMM_OFF(%rbx), %rdx
	testq %rdx, %rdx
	jz 4f
	movq (%r15,%rdx), %rax
	movq %rax, A_COMM(%rcx)
	movq 8(%r15,%rdx), %rax
	movq %rax, A_COMM+8(%rcx)
	jmp 4f
3:	incq %rdx
	decl %r14d
	jnz 1b
	RING_HDR %rax
	incq RH_AGG_DROP(%rcx)
	jmp 5f
4:	incq A_HITS(%rcx)
	addq %r11, A_SUM(%rcx)
	movq %r11, %rax
	imulq %rax, %rax
	addq %rax, A_SUMSQ(%rcx)
	cmpq A_MAX(%rcx), %r11
	jbe 5f
	movq %r11, A_MAX(%rcx)
5:	pop %r14
9:	ret

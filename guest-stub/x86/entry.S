/* The x86-64 stub's entry routines, reached by CALL rel32 from a patched site (or from a detour
 * slot): each records the entry, hooks the return when asked, and returns past the site (or to the
 * detour's way back). Part of guest-stub/x86/stub.S, which includes it; not assembled alone. */

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
	REC_CALLER %r13, %rax
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

/* The x86-64 stub's ring writing, out of line: records reserved (waiting for room under
 * backpressure), a task announced, a dropped frame recorded. The inline part is
 * guest-stub/x86/ring.h. Part of guest-stub/x86/stub.S, which includes it; not assembled alone. */

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

/* Records that the shadow frame at rcx was abandoned (a counting routine's frame: counts it in the
 * CPU's table, bucket STUB_AGG_UNWOUND). Preserves rcx; clobbers rax, rdx. */
.Lemit_drop:
	cmpq $-1, %r12
	je 10f
	btq $61, E_TSC(%rcx)
	jc .Ldrop_count
	cli /* a record (PIN may have left interrupts on): UNPIN_RET turns them back on */
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
.Ldrop_count:
	push %rcx
	push %r10
	push %r11
	push %r13
	movq E_IP(%rcx), %r13
	DECODE_SITE %r13
	movabsq $((STUB_AGG_UNWOUND << 32) | STUB_AGG_NOPID), %r10
	xorl %r11d, %r11d
	call .Lagg
	pop %r13
	pop %r11
	pop %r10
	pop %rcx
	ret

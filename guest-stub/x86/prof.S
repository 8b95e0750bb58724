/* The x86-64 stub's short path for the function profiler (mode STUB_AGG_RET, header H_FAST): the
 * counting routine hvt_stub_count_ret and the first part of the return routine. It does in about a
 * hundred instructions each way what agg.S and ret.S do in about three hundred in all, which under
 * TCG is most of what a counted call costs:
 * - it saves only what it uses: at the entry the argument registers it touches (R10 and R11 are
 *   free at a function's entry, as Linux's own ftrace_caller takes them), at the return RAX and
 *   RDX (the return value; the other caller-saved registers are dead there, as for the kernel's
 *   return_to_handler);
 * - one table entry per site and CPU (bucket STUB_AGG_BOTH) counts calls and returns, and the frame
 *   keeps its address, so the return adds its duration without hashing again;
 * - no call inside: under TCG each RET is a lookup of its target.
 * It takes only the common case: the shadow stack at the first place its hash gives, already
 * claimed, the new frame above the others, the return on the entry's CPU. Anything else goes,
 * before anything is changed, to the general routines (agg.S, ret.S), which redo it all; a return
 * on another CPU is counted there in that CPU's table. Part of guest-stub/x86/stub.S, which
 * includes it; not assembled alone. */

/* A header field, RIP-relative (no register holds the header). */
#define HDR(f) .Lbase+STUB_HDR_OFF+f(%rip)
/* The entry's frame after its five pushes. */
#define PF_SITE 40 /* site + 5 */
#define PF_SLOT 48 /* the function's return-address slot */
/* The return's frame after its two pushes (and the slot's word the RET left). */
#define PR_SLOT 16

/* rax = the TSC, r10d = the CPU number (RDTSCP, else RDTSC and %gs: H_FAST says there is no
 * CPUID case); to \bad when it is not below the header's nr_cpus. Clobbers rcx, rdx. */
.macro PROF_NOW bad
	cmpq $0, HDR(H_AUX_MASK)
	je 1f
	rdtscp
	andl HDR(H_AUX_MASK), %ecx
	movl %ecx, %r10d
	jmp 2f
1:	rdtsc
	movq HDR(H_CPU_GS_OFF), %rcx
	movl %gs:(%rcx), %r10d
2:	shlq $32, %rdx
	orq %rdx, %rax
	cmpl HDR(H_NR_CPUS), %r10d
	jae \bad
.endm

/* rdi = the shadow stack of slot rsi, locked, if it is claimed at the first place its hash gives
 * (shadow.S's first probe); to \none if it is not there or is locked, to \unlock (locked here)
 * if it was taken for another stack meanwhile. Claiming is left to the general routines: one that
 * looked at only one place could claim a second shadow stack for a guest stack already holding
 * one further on. The lock is taken without LOCK: a guest stack is used by one CPU at a time (its
 * task's, or the CPU's own interrupt stacks), so only what nests on this CPU (an interrupt, an
 * NMI) can race for it, and one instruction is atomic against those. Clobbers rcx, rdx. */
.macro PROF_STACK none, unlock
	movq HDR(H_STACK_SHIFT), %rcx
	movq %rsi, %rdx
	shrq %cl, %rdx
	incq %rdx /* the key */
	movabsq $0x9e3779b97f4a7c15, %rdi
	imulq %rdx, %rdi
	shrq $32, %rdi
	andq HDR(H_STACKS_MASK), %rdi
	shlq $STUB_STACK_SHIFT, %rdi
	addq HDR(H_STACKS), %rdi
	cmpq %rdx, S_KEY(%rdi)
	jne \none
	btsq $0, S_LOCK(%rdi)
	jc \none
	cmpq %rdx, S_KEY(%rdi)
	jne \unlock
.endm

/* Raises (PIN) or lowers (UNPIN) the preempt count at %gs:H_PREEMPT_GS. Clobbers rcx. */
.macro PROF_PIN op
	movq HDR(H_PREEMPT_GS), %rcx
	\op %gs:(%rcx)
.endm

hvt_stub_count_ret:
	cmpq $0, HDR(H_FAST)
	je .Lcount_ret_general
	push %rax
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	PROF_PIN incl
	PROF_NOW .Lpf_general
	leaq PF_SLOT(%rsp), %rsi
	PROF_STACK .Lpf_general, .Lpf_unlock
	/* the frames below must all be above this slot: a stale deeper frame or a tail call (one at
	 * this slot) is the general routine's */
	movq S_NR(%rdi), %rcx
	testq %rcx, %rcx
	jz 1f
	shlq $5, %rcx
	cmpq %rsi, S_E-32+E_SLOT(%rdi,%rcx)
	jbe .Lpf_unlock
	shrq $5, %rcx
1:	cmpq HDR(H_MAX_DEPTH), %rcx
	jae .Lpf_unlock
	cmpq $STUB_STACK_DEPTH, %rcx
	jae .Lpf_unlock
	cmpq $0, HDR(H_AGG)
	je .Lpf_unlock
	/* the new frame (not counted in S_NR until its entry is found): the slot, what it holds, the
	 * CPU (its entry or'ed in below), the mode over the TSC */
	shlq $5, %rcx
	leaq S_E(%rdi,%rcx), %rdx
	movq %rsi, E_SLOT(%rdx)
	movq (%rsi), %rcx
	movq %rcx, E_ORIG(%rdx)
	movq %r10, E_IP(%rdx)
	movabsq $STUB_AGG_TSC_MASK, %rcx
	andq %rcx, %rax
	btsq $61, %rax /* STUB_AGG_RET */
	movq %rax, E_TSC(%rdx)
	/* the site's STUB_AGG_BOTH entry in the CPU's table, found or claimed within STUB_AGG_PROBES
	 * entries of its hash (as agg.S's .Lagg, whose entries are keyed otherwise) */
	movq HDR(H_AGG_MASK), %rcx
	incq %rcx
	imulq %rcx, %r10
	shlq $STUB_AGG_SHIFT, %r10
	addq HDR(H_AGG), %r10 /* the CPU's table */
	movq PF_SITE(%rsp), %r11
	subq $5, %r11 /* the site */
	movabsq $0x9e3779b97f4a7c15, %rcx
	imulq %r11, %rcx
	shrq $32, %rcx
	movl $STUB_AGG_PROBES, %eax
2:	andq HDR(H_AGG_MASK), %rcx
	movq %rcx, %rsi
	shlq $STUB_AGG_SHIFT, %rsi
	addq %r10, %rsi
	cmpq %r11, A_IP(%rsi)
	jne 3f
	cmpq $-1, A_KEY(%rsi) /* STUB_AGG_NOPID, STUB_AGG_BOTH */
	je 5f
	jmp 4f
3:	cmpq $0, A_IP(%rsi)
	jne 4f
	/* an empty entry: the key first, then the claim (as .Lagg's) */
	movq $-1, A_KEY(%rsi)
	push %rax
	xorl %eax, %eax
	cmpxchgq %r11, A_IP(%rsi) /* this CPU's alone: no LOCK */
	pop %rax
	jne 2b
	jmp 5f
4:	incq %rcx
	decl %eax
	jnz 2b
	jmp .Lpf_unlock /* no room: the general routine counts the drop */
5:	incq A_HITS(%rsi)
	btrq $63, %rsi
	orq %rsi, E_IP(%rdx)
	incq S_NR(%rdi)
	movq E_SLOT(%rdx), %rsi
	movq HDR(H_RET), %rcx
	movq %rcx, (%rsi) /* the return hooked */
	movq $0, S_LOCK(%rdi)
	PROF_PIN decl
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rax
	ret /* past the site */
.Lpf_unlock:
	/* the stack is left as it was (a frame written above S_NR is no frame) */
	movq $0, S_LOCK(%rdi)
.Lpf_general:
	PROF_PIN decl
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rax
	jmp .Lcount_ret_general

/* The return routine's first part (hvt_stub_ret jumps here with H_FAST set, its slot's word on the
 * stack): a profiler frame (E_IP bit 63 clear) on top of the slot's shadow stack is popped and its
 * return counted in the entry it names; any other frame goes to the general part, .Lret_general. */
.Lprof_ret:
	push %rax
	push %rdx
	PROF_PIN incl
	leaq PR_SLOT(%rsp), %rsi
	PROF_STACK .Lpr_general, .Lpr_unlock
	movq S_NR(%rdi), %rcx
	testq %rcx, %rcx
	jz .Lpr_unlock
	shlq $5, %rcx
	leaq S_E-32(%rdi,%rcx), %rcx /* the top frame */
	cmpq %rsi, E_SLOT(%rcx)
	jne .Lpr_unlock
	movq E_IP(%rcx), %r9
	btq $63, %r9
	jc .Lpr_unlock /* a site: another routine's frame */
	/* popped: the slot gets its address back */
	movq E_TSC(%rcx), %r8
	movq E_ORIG(%rcx), %rdx
	movq %rdx, (%rsi)
	decq S_NR(%rdi)
	movq S_ROOT(%rdi), %rdx /* shadow.h's FIX_ROOT and RELEASE, on rdi */
	cmpq S_NR(%rdi), %rdx
	jbe 1f
	movq $0, S_ROOT(%rdi)
1:	cmpq $0, S_NR(%rdi)
	jne 2f
	movq $0, S_KEY(%rdi)
2:	movq $0, S_LOCK(%rdi)
	PROF_NOW .Lpr_bad_cpu
	movl %r9d, %ecx
	andl $63, %ecx
	cmpl %ecx, %r10d
	jne .Lpr_other_cpu
	andq $-64, %r9
	btsq $63, %r9 /* the entry */
	movabsq $STUB_AGG_TSC_MASK, %rdx
	andq %rdx, %r8
	subq %r8, %rax
	jae 3f
	xorl %eax, %eax /* a TSC behind the entry's: 0 */
3:	mulq HDR(H_NS_MULT)
	movq HDR(H_NS_SHIFT), %rcx
	shrdq %cl, %rdx, %rax /* the duration in ns */
	incq A_COMM(%r9) /* the returns */
	addq %rax, A_SUM(%r9)
	cmpq A_MAX(%r9), %rax
	jbe 4f
	movq %rax, A_MAX(%r9)
4:	imulq %rax, %rax
	addq %rax, A_SUMSQ(%r9)
.Lpr_out:
	PROF_PIN decl
	pop %rdx
	pop %rax
	ret /* to the address back in the slot */
.Lpr_bad_cpu:
	lock incq HDR(H_BAD_CPU)
	jmp .Lpr_out
.Lpr_other_cpu:
	/* migrated since the entry: counted in this CPU's table as the general routine counts it,
	 * from its frame's registers (ret.S's .Lr_count) */
	andq $-64, %r9
	btsq $63, %r9
	movq A_IP(%r9), %r9 /* the site */
	movq %rax, %rsi
	movl %r10d, %edi
	pop %rdx
	pop %rax
	SAVE_NOCLI
	leaq .Lbase+STUB_HDR_OFF(%rip), %rbx
	movl %edi, %r12d
	movq %rsi, %rbp
	movq %r8, %r11
	movq %r9, %r13
	jmp .Lr_count /* which UNPINs: the count raised above */
.Lpr_unlock:
	movq $0, S_LOCK(%rdi)
.Lpr_general:
	PROF_PIN decl
	pop %rdx
	pop %rax
	jmp .Lret_general

#undef HDR

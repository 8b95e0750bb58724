/* The x86-64 stub's shadow stacks, inline: a stack found by its hash, its top frame, a frame
 * dropped, its depth, the stack unlocked. The out-of-line part is guest-stub/x86/shadow.S. Included
 * by guest-stub/x86/stub.S (assembler macros). */
#ifndef HVT_STUB_X86_SHADOW_H
#define HVT_STUB_X86_SHADOW_H
/* clang-format off */

/* A frame just popped from the shadow stack at r10 may have been the graph's root. Clobbers rcx. */
.macro FIX_ROOT
	movq S_ROOT(%r10), %rcx
	cmpq S_NR(%r10), %rcx
	jbe 11f
	movq $0, S_ROOT(%r10)
11:
.endm

/* rcx = the top frame of the shadow stack at r10; to \empty when it holds none. */
.macro TOP_FRAME empty
	movq S_NR(%r10), %rcx
	testq %rcx, %rcx
	jz \empty
	shlq $5, %rcx
	leaq S_E-32(%r10,%rcx), %rcx
.endm

/* The top frame of the shadow stack at r10 is gone: its drop record, the frame popped, then back
 * to \loop. */
.macro DROP_TOP loop
	call .Lemit_drop
	decq S_NR(%r10)
	FIX_ROOT
	jmp \loop
.endm

/* rcx = the shadow stack at probe \idx from the hash in r9: stacks[(r9 + \idx) & mask]. */
.macro STACK_AT idx
	leaq (%r9,\idx), %rcx
	andq H_STACKS_MASK(%rbx), %rcx
	shlq $STUB_STACK_SHIFT, %rcx
	addq H_STACKS(%rbx), %rcx
.endm

/* The depth of frame rcx on the shadow stack at r10, counted from the graph's root frame when there
 * is one, at most 255, in eax. Clobbers rdx. */
.macro DEPTH
	movq %rcx, %rax
	movq S_ROOT(%r10), %rdx
	testq %rdx, %rdx
	jz .Ldepth_root\@
	decq %rdx
	subq %rdx, %rax
.Ldepth_root\@:
	cmpq $255, %rax
	jbe .Ldepth_out\@
	movl $255, %eax
.Ldepth_out\@:
.endm

/* Unlocks the shadow stack at r10, freed if it is empty. Clobbers rcx. */
.macro RELEASE
	movq S_NR(%r10), %rcx
	testq %rcx, %rcx
	jnz .Lrel_busy\@
	movq $0, S_KEY(%r10)
.Lrel_busy\@:
	movq $0, S_LOCK(%r10)
.endm

/* The site of a counting frame whose E_IP is in \reg (rbx = the header): E_IP itself, or, for a
 * frame of prof.S's short path (bit 63 clear: its table entry and CPU, STUB_AGG_BOTH), the site that
 * entry holds. Only with H_FAST are there such frames: without it a site is E_IP whatever its bit 63
 * (a freestanding guest's text is in the lower half; decoded, its site was a non-canonical address
 * and the load a #GP). */
.macro DECODE_SITE reg
	cmpq $0, H_FAST(%rbx)
	je .Lds_out\@
	btq $63, \reg
	jc .Lds_out\@
	andq $-64, \reg
	btsq $63, \reg
	movq A_IP(\reg), \reg
.Lds_out\@:
.endm

/* clang-format on */
#endif

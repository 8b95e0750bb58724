/* The x86-64 stub's prologue: which CPU runs it and when. Included by guest-stub/x86/stub.S
 * (assembler macros). */
#ifndef HVT_STUB_X86_CPU_H
#define HVT_STUB_X86_CPU_H
/* clang-format off */

/* rbx = header, rbp = TSC, r12 = CPU number (all-ones when out of range): from one RDTSCP
 * (ECX = IA32_TSC_AUX, masked) when the header's H_AUX_MASK is set; else RDTSC and the u32 at
 * %gs:H_CPU_GS_OFF, or with H_CPUID set CPUID leaf 1's APIC ID (EBX[31:24]; the VMM sets it per
 * vCPU, the guest cannot change it). Clobbers rax, rcx, rdx. */
.macro PROLOGUE
	leaq .Lbase+STUB_HDR_OFF(%rip), %rbx
	movq H_AUX_MASK(%rbx), %r12
	testq %r12, %r12
	jz 15f
	rdtscp
	andl %ecx, %r12d
	jmp 16f
15:	cmpq $0, H_CPUID(%rbx)
	jne 17f
	rdtsc
	movq H_CPU_GS_OFF(%rbx), %rcx
	movl %gs:(%rcx), %r12d
	jmp 16f
17:	movl $1, %eax
	xorl %ecx, %ecx
	cpuid
	shrl $24, %ebx
	movl %ebx, %r12d
	rdtsc
	leaq .Lbase+STUB_HDR_OFF(%rip), %rbx
16:	shlq $32, %rdx
	orq %rdx, %rax
	movq %rax, %rbp
	cmpl H_NR_CPUS(%rbx), %r12d
	jb 1f
	lock incq H_BAD_CPU(%rbx)
	movq $-1, %r12
1:
.endm

/* clang-format on */
#endif

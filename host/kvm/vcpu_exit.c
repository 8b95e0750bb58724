#include "host/kvm/vcpu_exit.h"
#include "arch/arch.h"

#define X86_RESET_RIP 0xfff0 /* RIP after INIT (with CS base 0xffff0000) */

bool vcpu_exit_bp_addr(const struct kvm_run *run, uint64_t rip, uint64_t *addr)
{
	switch (run->exit_reason) {
	case KVM_EXIT_DEBUG:
		if (run->debug.arch.exception != X86_BP_VECTOR)
			return false;
		*addr = run->debug.arch.pc;
		return true;
	case KVM_EXIT_INTERNAL_ERROR:
		if (run->internal.suberror != KVM_INTERNAL_ERROR_EMULATION)
			return false;
		*addr = rip;
		return true;
	case KVM_EXIT_SHUTDOWN:
		*addr = rip - 1;
		return true;
	default:
		return false;
	}
}

bool vcpu_exit_was_reset(const struct kvm_run *run)
{
	return run->exit_reason == KVM_EXIT_SHUTDOWN && run->s.regs.regs.rip == X86_RESET_RIP &&
	       !(run->s.regs.sregs.cr0 & X86_CR0_PG);
}

const char *vcpu_exit_name(uint32_t reason)
{
	static const char *const names[] = {
		[KVM_EXIT_UNKNOWN] = "KVM_EXIT_UNKNOWN",
		[KVM_EXIT_EXCEPTION] = "KVM_EXIT_EXCEPTION",
		[KVM_EXIT_IO] = "KVM_EXIT_IO",
		[KVM_EXIT_HYPERCALL] = "KVM_EXIT_HYPERCALL",
		[KVM_EXIT_DEBUG] = "KVM_EXIT_DEBUG",
		[KVM_EXIT_HLT] = "KVM_EXIT_HLT",
		[KVM_EXIT_MMIO] = "KVM_EXIT_MMIO",
		[KVM_EXIT_IRQ_WINDOW_OPEN] = "KVM_EXIT_IRQ_WINDOW_OPEN",
		[KVM_EXIT_SHUTDOWN] = "KVM_EXIT_SHUTDOWN",
		[KVM_EXIT_FAIL_ENTRY] = "KVM_EXIT_FAIL_ENTRY",
		[KVM_EXIT_INTR] = "KVM_EXIT_INTR",
		[KVM_EXIT_SET_TPR] = "KVM_EXIT_SET_TPR",
		[KVM_EXIT_TPR_ACCESS] = "KVM_EXIT_TPR_ACCESS",
		[KVM_EXIT_NMI] = "KVM_EXIT_NMI",
		[KVM_EXIT_INTERNAL_ERROR] = "KVM_EXIT_INTERNAL_ERROR",
		[KVM_EXIT_SYSTEM_EVENT] = "KVM_EXIT_SYSTEM_EVENT",
	};

	if (reason < sizeof(names) / sizeof(names[0]) && names[reason])
		return names[reason];
	return "KVM_EXIT_(other)";
}

/* A vCPU's state from a foreign VMM: KVM answers a vCPU's ioctls only from its VM's process, so
 * the VMM's own thread makes them, by ptrace injection (ptrace_inject): ioctl(VCPU_FD, KVM_GET_*,
 * BUF) with BUF on that thread's stack below its red zone, read back through /proc/PID/mem, the
 * thread and its stack put back after each call. Every thread of the VMM is held by the caller's
 * ptrace_inject_attach, so no vCPU is in KVM_RUN. x86_64 hosts and guests. */
#ifndef HVT_KVM_INJECT_H
#define HVT_KVM_INJECT_H

#include <stddef.h>
#include <linux/kvm.h>

#include "host/vmm/ptrace_inject.h"

/* KVM_GET_REGS / KVM_GET_SREGS on the VMM's fd @vcpu_fd, made by the thread @pi has chosen
 * (ptrace_inject_select), which is restored before they return. 0, or a negative errno with one
 * line (the ioctl's own error, a seccomp refusal, the thread or VMM gone). Main thread. */
int kvm_inject_get_regs(struct ptrace_inject *pi, int vcpu_fd, struct kvm_regs *regs, char *err,
			size_t errlen);
int kvm_inject_get_sregs(struct ptrace_inject *pi, int vcpu_fd, struct kvm_sregs *sregs, char *err,
			 size_t errlen);

/* KVM_SET_REGS on @vcpu_fd, made the same way (@regs copied to the thread's stack first). */
int kvm_inject_set_regs(struct ptrace_inject *pi, int vcpu_fd, const struct kvm_regs *regs,
			char *err, size_t errlen);

#endif

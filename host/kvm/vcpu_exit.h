/* Reading a KVM exit: is it a breakpoint hit, and what to call it in a message. */
#ifndef HVT_VCPU_EXIT_H
#define HVT_VCPU_EXIT_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>

/* True if the exit in @run may be an INT3 hit, with *@addr the address of the INT3. The one place where
 * the two kinds of host differ: real KVM (VMX/SVM) with KVM_GUESTDBG_USE_SW_BP reports KVM_EXIT_DEBUG
 * (#BP) with the INT3's address; this machine's PVM reports an emulation failure with RIP at the INT3
 * (CPL0), or a shutdown with RIP just past it (CPL3). The caller confirms by looking the address up in
 * its probes. Pure. */
bool vcpu_exit_bp_addr(const struct kvm_run *run, uint64_t rip, uint64_t *addr);

/* True if the exit in @run (with sync_regs) is a shutdown after which KVM put the vCPU in its INIT
 * state (RIP 0xfff0, paging off): what KVM on AMD does at a triple fault, so that the exit's registers
 * no longer say where the guest was. Pure. */
bool vcpu_exit_was_reset(const struct kvm_run *run);

/* "KVM_EXIT_SHUTDOWN" etc.; static string. Pure. */
const char *vcpu_exit_name(uint32_t reason);

#endif

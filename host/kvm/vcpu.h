/* The run loop of one vCPU thread: KVM_RUN, exit handling (console, debug-exit, breakpoints, faults),
 * parking while the VM is paused. */
#ifndef HVT_VCPU_H
#define HVT_VCPU_H

#include <signal.h>

struct vcpu;

/* Signal that kicks a vCPU thread out of KVM_RUN (its handler does nothing). */
#define VCPU_KICK_SIGNAL SIGUSR1

/* Enables KVM_GUESTDBG_USE_SW_BP so that INT3 exits to the host on real KVM. Returns 0 or -errno. */
int vcpu_enable_sw_breakpoints(struct vcpu *c);

/* pthread entry point of vCPU @arg (a struct vcpu *). Returns when the VM ends. */
void *vcpu_thread(void *arg);

#endif

/* The vCPU threads of a VM: one per vCPU, each running KVM_RUN and handling its exits (console,
 * debug-exit, breakpoints, faults); starting them, pausing and resuming them all (stop_machine),
 * ending the run and joining them. */
#ifndef HVT_VCPU_H
#define HVT_VCPU_H

#include "host/kvm/vm.h"

#include <signal.h>
#include <stddef.h>

/* Signal that kicks a vCPU thread out of KVM_RUN (its handler does nothing). */
#define VCPU_KICK_SIGNAL SIGUSR1

/* Installs the do-nothing handler of VCPU_KICK_SIGNAL (process-wide), so a kick interrupts KVM_RUN
 * with EINTR instead of ending the process. Any thread. */
void vcpu_kick_handler_install(void);

/* Starts one thread per vCPU of @vm. Call with SIGINT/SIGTERM blocked (threads inherit the mask).
 * Returns 0, or a negative errno with a reason in @err (the VM has then ended). Main thread. */
int vcpu_start_all(struct vm *vm, char *err, size_t errlen);

/* Stops every vCPU out of KVM_RUN and waits until all are parked (stop_machine). Not from a vCPU
 * thread. Returns 0. Calls nest: vcpu_resume_all undoes one. */
int vcpu_pause_all(struct vm *vm);
void vcpu_resume_all(struct vm *vm);

/* Ends the VM if still running ("stopped by the host") and joins the vCPU threads. Main thread. */
void vcpu_join_all(struct vm *vm);

#endif

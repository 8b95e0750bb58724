/* A foreign KVM VMM's VM as the generic backend holds it (issue 41): found from /proc (kvm_proc),
 * every VMM thread held by ptrace (no vCPU in guest mode) for as short a time as a step needs, and
 * each vCPU's registers read by KVM_GET_REGS / KVM_GET_SREGS injected into the VMM's own thread
 * (kvm_inject). Main thread. */
#ifndef HVT_VMMPID_VM_H
#define HVT_VMMPID_VM_H

#include "host/vmm/kvm_proc.h"
#include "host/vmm/ptrace_inject.h"
#include "vmi/vmi_task.h"

#include <linux/kvm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct vmmpid_cpu {
	struct kvm_regs regs;
	uint64_t cr3, cr4, efer, gs_base;
};

struct vmmpid_vm {
	struct kvm_proc kp;
	struct ptrace_inject pi;
	bool held;	  /* every thread of the VMM stopped by our ptrace */
	unsigned nr_cpus; /* kp.nr_vcpus, at most VMI_MAX_CPUS */
	pid_t inject_tid; /* the thread whose injected ioctls worked last (0: none yet) */
	unsigned holds;	  /* times held */
	uint64_t held_ns; /* time held, in all */
	uint64_t hold_at; /* CLOCK_MONOTONIC ns of the current hold */
	struct vmmpid_cpu cpu[VMI_MAX_CPUS]; /* as at the last hold */
};

/* Finds @pid's VM into @v (caller-owned, zeroed; large: allocate it). 0, or a negative errno with
 * one line in @err: kvm_proc_discover's (-ESRCH, -EACCES, -ENODEV), -E2BIG for more vCPUs than
 * VMI_MAX_CPUS. Changes nothing in the process. */
int vmmpid_vm_open(struct vmmpid_vm *v, pid_t pid, char *err, size_t errlen);

/* Stops every thread of the VMM (ptrace_inject_attach), finds the vCPU threads, and reads every
 * vCPU's registers by injection, on a vCPU thread or else the main thread (the first whose
 * seccomp filter and KVM allow it). 0 with the VMM held; else a negative errno with one line and
 * nothing held. */
int vmmpid_vm_hold(struct vmmpid_vm *v, char *err, size_t errlen);

/* Lets every thread of the VMM go (each with any signal it was stopped with). Idempotent. */
void vmmpid_vm_release(struct vmmpid_vm *v);

#endif

/* The VM behind QEMU's gdbstub as the QEMU target and its run loop both see it: stopped or running
 * (all-stop: a stop stops every vCPU), and each vCPU's registers at the current stop, fetched once
 * and written back with the continue. Shared by target_qemu.c (the target) and target_qemu_run.c
 * (the run loop), which never call each other. Main thread (or the guardian's, once it adopts). */
#ifndef HVT_QEMU_VM_H
#define HVT_QEMU_VM_H

#include "host/vmm/gdbstub.h"
#include "arch/arch.h"
#include "arch/arch_tlb.h"
#include "vmi/vmi_task.h"

#include <stdbool.h>
#include <stdint.h>

struct qemu_cpu {
	int thread;	      /* gdbstub thread id */
	struct arch_tlb tlb;  /* invalidated at every stop: page tables may change */
	struct arch_regs regs; /* valid while the VM is stopped, once fetched */
	uint64_t sys[ARCH_GDB_SYS_MAX]; /* the gdb layout's system registers */
	uint64_t cr3, cr4, efer;	/* x86: from sys[] */
	bool regs_valid;
	bool rip_dirty; /* regs.rip set by the tracer, not yet written (goes with the continue) */
};

struct qemu_vm {
	struct gdb *gdb; /* borrowed, connected */
	unsigned nr_cpus;
	struct qemu_cpu cpu[VMI_MAX_CPUS];
	bool stopped;
};

/* The guest's ISA, as the gdbstub's target description named it. */
static inline const struct arch *qemu_vm_arch(const struct qemu_vm *vm)
{
	return vm->gdb->arch ? vm->gdb->arch : arch_default();
}

/* vCPU @cpu's registers at this stop, read from the gdbstub once per stop. 0 or -errno. */
int qemu_vm_cpu_regs(struct qemu_vm *vm, unsigned cpu);

/* Writes out the RIPs changed at this stop and not yet sent (they normally go out with the
 * continue): before the VM is left stopped for others or stepped. 0 or -errno. */
int qemu_vm_flush_rips(struct qemu_vm *vm);

/* Forgets every vCPU's registers and translations (they change while the VM runs). */
void qemu_vm_invalidate_regs(struct qemu_vm *vm);

/* Lets the stopped VM run (the changed RIPs written first). 0 or -errno; vm->stopped says whether
 * the VM runs (it does whenever the continue went out). */
int qemu_vm_resume(struct qemu_vm *vm);

/* Stops the running VM (0x03), or keeps it stopped (the RIPs changed at this stop written). 0,
 * -ESRCH when the VM is gone, or -errno. */
int qemu_vm_stop(struct qemu_vm *vm);

/* Lets the VM run for @ms milliseconds, then stops it again. 0 or -errno; -ESRCH when the guest is
 * gone. */
int qemu_vm_run_for(struct qemu_vm *vm, int ms);

#endif

/* The target interface on any KVM VMM by pid (issue 41): guest memory through the VMM process
 * (/proc/PID/mem at the map vmmpid_ram proved) and the guest's page tables; pause = every VMM
 * thread stopped by ptrace (no vCPU in guest mode), resume = let go; registers by KVM_GET_REGS /
 * KVM_SET_REGS injected into the VMM's thread while paused; stub probes only (no breakpoint:
 * a foreign VMM handles no KVM_EXIT_DEBUG). Main thread, but for read_phys / write_phys /
 * read_kernel / kernel_gpa (any thread, any time). */
#ifndef HVT_TARGET_VMMPID_H
#define HVT_TARGET_VMMPID_H

#include "host/vmm/proc_mem.h"
#include "host/vmm/stub_map.h"
#include "host/vmm/write_journal.h"
#include "host/vmmpid/vmmpid_vm.h"
#include "host/trace/target.h"

#include <stdbool.h>
#include <stdint.h>

struct target_vmmpid {
	struct target t;
	struct vmmpid_vm *vm;	    /* borrowed */
	const struct proc_mem *mem; /* borrowed, its map proved */
	uint64_t kcr3;		    /* the kernel's page tables (the proof's root) */
	unsigned kmode;		    /* 1: 5-level */
	unsigned paused;	    /* pause nesting */
	struct stub_map stub;
	/* when set: every text and page-table write logged first (the guardian undoes them if
	 * hvtrace dies while it patches); a write the journal has no room for is not made */
	struct write_journal *journal;
	uint64_t set_regs; /* KVM_SET_REGS injected (statistics) */
	char err[320];	   /* why the last pause failed */
};

/* Binds @q to the VM @vm whose RAM @mem maps, the kernel's tables at @kcr3 (@kmode). */
void target_vmmpid_init(struct target_vmmpid *q, struct vmmpid_vm *vm, const struct proc_mem *mem,
			uint64_t kcr3, unsigned kmode);

/* Kernel-address reads for vmi (a vmi_read_fn) through the kernel's tables. Any thread. */
int target_vmmpid_read_kernel(void *ctx, uint64_t gva, void *buf, size_t len);

/* Offers stub probes guest-physical [@lo, @hi) of low memory the kernel never uses and kernel
 * address @va (stub_map_set_area). */
void target_vmmpid_set_stub_area(struct target_vmmpid *q, uint64_t lo, uint64_t hi, uint64_t va);

#endif

/* The target interface on a running QEMU: breakpoints, stops and registers through QEMU's gdbstub
 * (all-stop: a hit stops every vCPU, the host handles it, the VM continues), guest memory through
 * the QEMU process (/proc/PID/mem) and the guest's own page tables. The gdbstub's Z0 breakpoints
 * are owned by QEMU, which removes them itself if the connection drops. */
#ifndef HVT_TARGET_QEMU_H
#define HVT_TARGET_QEMU_H

#include "host/vmm/gdbstub.h"
#include "host/vmm/stub_map.h"
#include "host/vmm/stub_map_arm64.h"
#include "host/qemu/qemu_mem.h"
#include "host/qemu/qemu_vm.h"
#include "host/trace/target.h"
#include "arch/arch_tlb.h"
#include "vmi/vmi_task.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct target_qemu {
	struct target t;
	struct qemu_vm vm; /* the gdbstub's VM: stops, vCPU registers (vm.nr_cpus == t.nr_cpus) */
	struct proc_mem mem;
	target_bp_fn bp;
	void *bp_ctx;
	uint64_t stops, hits; /* statistics */
	uint64_t
	    nop5_refused; /* NOP5 emulations refused: the guest's bytes were no NOP5 (stepped) */
	uint64_t
	    steps_again;  /* steps QEMU reported done with the vCPU still before the instruction */
	uint64_t held_ns; /* time the VM stood stopped at stops target_qemu_run handled */
	bool (*hold)(void *ctx); /* target_qemu_set_hold */
	/* QEMU runs with -no-shutdown: its gdbstub's stop with SIGQUIT is the guest's power-off
	 * (target_qemu_run ends with QEMU_RUN_GUEST_OFF) */
	bool no_shutdown;
	void *hold_ctx;
	uint64_t holds, hold_ns; /* times target_qemu_run held the VM for @hold, and how long */
	char err[224];		 /* why target_qemu_run ended with QEMU_RUN_ERROR */

	/* stub probes: where they may live (target_qemu_set_stub_area), what stub_map changed */
	struct stub_map stub;
	const char *stub_low_why; /* why low memory, not reserved RAM (NULL: not said); borrowed */
	uint64_t kcr3;		  /* kernel page tables for read_kernel, captured by stub_map */
	unsigned kmode;		  /* and their walk's mode (x86: LA57; arm64: TCR_EL1's fields) */
	/* arm64: how the stub's blocks encode their permissions, learned once from the guest's
	 * system registers (target_qemu_stub_arm64_perm); s1perm_state 0 not yet, 1 learned, < 0 the
	 * stub cannot follow the guest (why in s1perm_why) */
	struct stub_map_arm64_perm s1perm;
	int s1perm_state;
	char s1perm_why[224];
	bool phys_mode; /* the gdbstub's memory packets take physical addresses now */
	bool tcg;	/* QEMU said it runs TCG: a single step ignores the breakpoint at its start
			 * (target_qemu_set_tcg; false: KVM or not said) */
};

/* Binds @q to the connected gdbstub @gdb of QEMU process @pid: stops the VM, lists the vCPUs, opens
 * the guest RAM at the map learned through the monitor @hmp / @qmp (qemu_mem_open; through the
 * gdbstub's physical mode when @gdb_memory, or when the QEMU process's memory cannot be mapped).
 * Returns 0 or a negative errno with @err. */
int target_qemu_init(struct target_qemu *q, struct gdb *gdb, pid_t pid, qemu_hmp_fn hmp,
		     qemu_qmp_fn qmp, void *mon_ctx, bool gdb_memory, char *err, size_t errlen);

/* The program counter of a vCPU that runs kernel code at this stop (the kernel half of the
 * address space), 0 when none does: where an arm64 kernel's image is looked for. VM stopped. */
uint64_t target_qemu_kernel_pc(struct target_qemu *q);

/* Lets the VM run for @ms milliseconds, then stops it again (for polling a booting guest). 0 or
 * -errno; -ESRCH when the guest is gone. */
int target_qemu_run_for(struct target_qemu *q, int ms);

/* Kernel-address reads for vmi (a vmi_read_fn) through CPU 0's page tables. */
int target_qemu_read_kernel(void *ctx, uint64_t gva, void *buf, size_t len);

/* Offers stub probes guest-physical [@phys_lo, @phys_hi) of low memory that the guest kernel never
 * uses (vmi_linux_stub_area) and the kernel address @va after the kernel image for mapping it; with
 * @resv_size, the stub's pages are [@resv_gpa, +@resv_size) instead, RAM the kernel reserved (2 MiB
 * aligned), and only its page-table page is low. Without it, stub_map refuses. */
void target_qemu_set_stub_area(struct target_qemu *q, uint64_t phys_lo, uint64_t phys_hi,
			       uint64_t va, uint64_t resv_gpa, uint64_t resv_size);

/* arm64: whether the stub's blocks and code can follow what the guest kernel enabled (stage-1
 * permission indirection, 128-bit descriptors, an EL1 guarded control stack), learned from its
 * system registers once, with the VM stopped: 0, 1 when it cannot be told yet (the VM runs), or
 * -ENOTSUP with one line in @why. 0 for other ISAs. */
int target_qemu_stub_arm64_perm(struct target_qemu *q, char *why, size_t whylen);

/* Bytes of guest RAM (a multiple of 2 MiB) to reserve for a stub region of @region bytes. Pure. */
uint64_t target_qemu_stub_reserve(uint64_t region);

/* Where stub_map would place the stub's region (guest-physical), 0 without a stub area. */
uint64_t target_qemu_stub_gpa(const struct target_qemu *q);

/* In a process forked from the tracing one (the guardian), once it has stopped the VM through its
 * own connection @gdb to the same gdbstub: makes @q use it, with nothing cached from before. */
void target_qemu_adopt(struct target_qemu *q, struct gdb *gdb);

/* Leaves the gdbstub's physical-address mode if stub patching turned it on (before a detach). */
void target_qemu_leave_phys_mode(struct target_qemu *q);

void target_qemu_close(struct target_qemu *q);

#endif

/* The target interface on a running QEMU: breakpoints, stops and registers through QEMU's gdbstub
 * (all-stop: a hit stops every vCPU, the host handles it, the VM continues), guest memory through the
 * QEMU process (/proc/PID/mem) and the guest's own page tables. The gdbstub's Z0 breakpoints are owned by
 * QEMU, which removes them itself if the connection drops. */
#ifndef HVT_TARGET_QEMU_H
#define HVT_TARGET_QEMU_H

#include "host/vmm/gdbstub.h"
#include "host/qemu/qemu_mem.h"
#include "host/qemu/qemu_stub_map.h"
#include "host/trace/target.h"
#include "arch/arch_tlb.h"
#include "vmi/vmi_task.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct qemu_cpu {
	int thread;	       /* gdbstub thread id */
	struct arch_tlb tlb;   /* invalidated at every stop: page tables may change */
	struct arch_regs regs; /* valid while the VM is stopped, once fetched */
	uint64_t cr3, cr4, efer;
	bool regs_valid;
	bool rip_dirty; /* regs.rip set by the tracer, not yet written (goes with the continue) */
};

struct target_qemu {
	struct target t;
	struct gdb *gdb; /* borrowed, connected */
	struct qemu_mem mem;
	struct qemu_cpu cpu[VMI_MAX_CPUS];
	bool stopped;
	target_bp_fn bp;
	void *bp_ctx;
	uint64_t stops, hits; /* statistics */
	uint64_t nop5_refused; /* NOP5 emulations refused: the guest's bytes were no NOP5 (stepped) */
	uint64_t steps_again;  /* steps QEMU reported done with the vCPU still before the instruction */
	uint64_t held_ns;      /* time the VM stood stopped at stops target_qemu_run handled */
	bool (*hold)(void *ctx); /* target_qemu_set_hold */
	void *hold_ctx;
	uint64_t holds, hold_ns; /* times target_qemu_run held the VM for @hold, and how long */
	char err[224];	      /* why target_qemu_run ended with QEMU_RUN_ERROR */

	/* stub probes: where they may live (target_qemu_set_stub_area), what stub_map changed */
	struct qemu_stub stub;
	const char *stub_low_why; /* why low memory, not reserved RAM (NULL: not said); borrowed */
	uint64_t kcr3;		  /* kernel page tables for read_kernel, captured by stub_map */
	bool kla57;
	bool phys_mode; /* the gdbstub's memory packets take physical addresses now */
	bool tcg; /* QEMU said it runs TCG: a single step ignores the breakpoint at its start
		   * (target_qemu_set_tcg; false: KVM or not said) */
};

/* QEMU said whether it runs TCG (@tcg) or KVM (or nothing): how a breakpoint's instruction is
 * stepped over. Before target_qemu_run. */
void target_qemu_set_tcg(struct target_qemu *q, bool tcg);

/* Result of target_qemu_run. */
enum qemu_run_end { QEMU_RUN_STOP_ASKED, QEMU_RUN_GUEST_GONE, QEMU_RUN_ERROR };

/* Binds @q to the connected gdbstub @gdb of QEMU process @pid: stops the VM, lists the vCPUs, opens
 * the guest RAM at the map learned through the monitor @hmp / @qmp (qemu_mem_open; through the
 * gdbstub's physical mode when @gdb_memory, or when the QEMU process's memory cannot be mapped).
 * Returns 0 or a negative errno with @err. */
int target_qemu_init(struct target_qemu *q, struct gdb *gdb, pid_t pid, qemu_hmp_fn hmp,
		     qemu_qmp_fn qmp, void *mon_ctx, bool gdb_memory, char *err, size_t errlen);

/* Lets the VM run, handing every breakpoint stop to the registered callback, until @should_stop
 * (polled at least every 50 ms, and at once when a wait is interrupted: tcp_set_interrupt) says so
 * (the VM is then left stopped) or the guest is gone. QEMU_RUN_ERROR when the gdbstub fails or lies
 * (a stop of a thread that is no vCPU, a reply out of shape): q->err says how. Main thread. */
enum qemu_run_end target_qemu_run(struct target_qemu *q, bool (*should_stop)(void *ctx), void *ctx);

/* From now on target_qemu_run polls @hold (every HOLD_POLL_MS at most, on its own thread) and keeps
 * the VM stopped (a gdbstub stop: QEMU's virtual clock stands still too) for as long as it says so;
 * @should_stop still ends the run at once, the VM left stopped as always. Counted in q->holds and
 * q->hold_ns. NULL: no holds. Main thread, before target_qemu_run. */
void target_qemu_set_hold(struct target_qemu *q, bool (*hold)(void *ctx), void *ctx);

/* Lets the VM run for @ms milliseconds, then stops it again (for polling a booting guest). 0 or -errno;
 * -ESRCH when the guest is gone. */
int target_qemu_run_for(struct target_qemu *q, int ms);

/* Kernel-address reads for vmi (a vmi_read_fn) through CPU 0's page tables. */
int target_qemu_read_kernel(void *ctx, uint64_t gva, void *buf, size_t len);

/* Offers stub probes guest-physical [@phys_lo, @phys_hi) of low memory that the guest kernel never
 * uses (vmi_linux_stub_area) and the kernel address @va after the kernel image for mapping it; with
 * @resv_size, the stub's pages are [@resv_gpa, +@resv_size) instead, RAM the kernel reserved (2 MiB
 * aligned), and only its page-table page is low. Without it, stub_map refuses. */
void target_qemu_set_stub_area(struct target_qemu *q, uint64_t phys_lo, uint64_t phys_hi,
			       uint64_t va, uint64_t resv_gpa, uint64_t resv_size);

/* Bytes of guest RAM (a multiple of 2 MiB) to reserve for a stub region of @region bytes. Pure. */
uint64_t target_qemu_stub_reserve(uint64_t region);

/* Where stub_map would place the stub's region (guest-physical), 0 without a stub area. */
uint64_t target_qemu_stub_gpa(const struct target_qemu *q);

/* In a process forked from the tracing one (the guardian), once it has stopped the VM through its own
 * connection @gdb to the same gdbstub: makes @q use it, with nothing cached from before. */
void target_qemu_adopt(struct target_qemu *q, struct gdb *gdb);

/* Leaves the gdbstub's physical-address mode if stub patching turned it on (before a detach). */
void target_qemu_leave_phys_mode(struct target_qemu *q);

void target_qemu_close(struct target_qemu *q);

#endif

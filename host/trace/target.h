/* The one interface through which the tracer core reaches a guest. Implemented by the embedded VMM
 * (host/kvm/target_kvm.c) and by the QEMU backend (host/qemu/target_qemu.c). */
#ifndef HVT_TARGET_H
#define HVT_TARGET_H

#include "arch/arch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct target;
struct target_region;

/* Called on the thread that owns vCPU @cpu when it hits an INT3 at @addr, which the backend learned
 * of at monotonic ns @at_ns (clock_now_ns: read as soon as the exit or stop came back, so that the
 * hit's records are stamped nearest to the breakpoint; 0: the callback reads the clock itself).
 * Returns 0 if the breakpoint is the tracer's (its instruction pointer then says where to resume:
 * @addr itself executes the breakpoint again, as the return trampoline does for a tail call's
 * second frame),
 * TARGET_BP_IN_PLACE if it is the tracer's and the instruction under it is to run in place (an
 * entry probe: only on a target with bp_in_place), -ENOENT otherwise. Must not block for long. */
#define TARGET_BP_IN_PLACE 1
typedef int (*target_bp_fn)(void *ctx, unsigned cpu, uint64_t addr, struct arch_regs *regs,
			    uint64_t at_ns);

struct target_ops {
	/* Guest-virtual memory as vCPU @cpu sees it. 0 or -EFAULT. From that vCPU's hit callback, or from
	 * any thread while the target is paused (or not yet started). */
	int (*read_virt)(struct target *t, unsigned cpu, uint64_t gva, void *buf, size_t len);
	int (*write_virt)(struct target *t, unsigned cpu, uint64_t gva, const void *buf, size_t len);
	/* The guest-physical address of @gva as vCPU @cpu sees it now (its current page tables). 0
	 * or -errno (-EFAULT: not mapped). Same threads as read_virt. The tracer resolves each site
	 * once at attach and each return slot on the hitting vCPU, and from then on writes by
	 * guest-physical address only: a vCPU that switches page tables later cannot redirect a
	 * write. */
	int (*translate)(struct target *t, unsigned cpu, uint64_t gva, uint64_t *gpa);
	/* Breakpoint on the site that vCPUs execute at @gva, whose first byte is at guest-physical
	 * @gpa (resolved at attach). Checks that byte is still @orig, writes INT3 and checks it
	 * landed: 0, -ESTALE when the byte is not @orig (nothing written), -EFAULT, -EIO. Any
	 * thread: one byte, safe while vCPUs run. (QEMU: a gdbstub Z0 at @gva; no guest byte
	 * changes.) */
	int (*insert_bp)(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig);
	/* Puts @orig back at @gpa if it still holds the INT3: 0, -ESTALE when the guest rewrote
	 * that byte (nothing written), -EFAULT. Same threads as insert_bp. */
	int (*remove_bp)(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig);
	/* Stops all vCPUs (nesting) / lets them run again. Not from a hit callback. */
	int (*pause)(struct target *t);
	void (*resume)(struct target *t);
	/* Optional: lets the paused target run for about @us microseconds (or the least its backend
	 * can: QEMU's gdbstub, a continue and an interrupt, a millisecond or more) and pauses it
	 * again. 0 or -errno (the target could not be paused again). Without it: resume, sleep,
	 * pause. Not from a hit callback. */
	int (*run_for)(struct target *t, unsigned us);
	/* Registers of a vCPU while the target is paused: read, and write back for when it resumes. */
	int (*get_regs)(struct target *t, unsigned cpu, struct arch_regs *regs);
	int (*set_regs)(struct target *t, unsigned cpu, const struct arch_regs *regs);
	/* Registers @fn as the breakpoint callback; before the guest runs. */
	void (*set_bp_handler)(struct target *t, target_bp_fn fn, void *ctx);
	/* Guest-physical memory, data only (code caches do not see writes). 0 or -EFAULT. Any
	 * thread, any time (QEMU with --gdb-memory: only while stopped, on the main thread). */
	int (*read_phys)(struct target *t, uint64_t gpa, void *buf, size_t len);
	int (*write_phys)(struct target *t, uint64_t gpa, const void *buf, size_t len);

	/* Stub probes; all NULL on a target that cannot host them. */
	/* While paused: finds guest memory the guest kernel never uses, at least @min and at most @want
	 * bytes, and maps it executable in the guest's kernel page tables within +-2 GiB of every address
	 * in [@lo, @hi]. Returns 0 with *@out filled, or -errno with a reason in @err. */
	int (*stub_map)(struct target *t, uint64_t lo, uint64_t hi, uint64_t min, uint64_t want,
			struct target_region *out, char *err, size_t errlen);
	/* Optional, while paused, after stub_map: the region mapped with no page both writable and
	 * executable: its code's pages (STUB_CODE_SIZE) and [@exec_off, +@exec_len) (detour slots, 0: none)
	 * read-only and executable, the rest writable and not executable, where the guest uses NX
	 * (page granularity where the target maps with small pages; a large page that holds any of
	 * the executable range stays executable). The host writes the region by physical address
	 * whatever the mapping. 0, or -errno with the mapping as stub_map left it. */
	int (*stub_protect)(struct target *t, const struct target_region *r, uint64_t exec_off,
			    uint64_t exec_len);
	/* While paused: undoes stub_map (nothing may run in the region any more). */
	void (*stub_unmap)(struct target *t, const struct target_region *r);
	/* While paused: writes @len bytes of guest text at guest-physical @gpa (resolved at
	 * attach), so that every vCPU executes the new bytes (QEMU/TCG: through a path that
	 * invalidates translated code), if those bytes still hold @expect. 0, -ESTALE when they do
	 * not (nothing written), -EFAULT (not RAM, or across a page; QEMU: more than 16 bytes),
	 * -EINTR (QEMU: a stop is asked; nothing written), -errno. */
	int (*write_text)(struct target *t, uint64_t gpa, const void *expect, const void *buf,
			  size_t len);
	/* Kernel-half guest-virtual reads from any thread while the guest runs (through page tables
	 * captured when the target was paused). 0 or -EFAULT. */
	int (*read_kernel)(struct target *t, uint64_t gva, void *buf, size_t len);
	/* The guest-physical address of kernel-half @gva through the same captured page tables (never
	 * whatever CR3 a vCPU holds now): where the stub's return slots are restored. Any thread.
	 * 0 or -EFAULT. */
	int (*kernel_gpa)(struct target *t, uint64_t gva, uint64_t *gpa);
	/* Optional, while paused: offers @hit every 8-byte aligned u64 of guest RAM whose value lies
	 * in [@lo, @hi], with the u64 after it (an interrupt frame's saved RIP is followed by its
	 * CS), until @hit says true. 1 then, 0 when it never did, -errno when RAM cannot be read.
	 * Main thread. (Stub detours: whether a context interrupted inside bytes about to be
	 * replaced, or inside a detour about to go, is saved anywhere.) */
	int (*scan_ram)(struct target *t, uint64_t lo, uint64_t hi,
			bool (*hit)(void *ctx, uint64_t v, uint64_t next), void *ctx);
	/* A guest TSC value and the host CLOCK_MONOTONIC ns at which it was current, and the guest TSC
	 * rate; optional (NULL: the stub clock is anchored at its first records). While paused. */
	int (*tsc_sync)(struct target *t, uint64_t *tsc, uint64_t *ns, uint64_t *khz);
	/* Optional: each vCPU's guest TSC offset followed as the host moves it (a host whose TSC is
	 * unstable moves it at every vcpu_load). Takes in the moves up to now; false when they are
	 * not followed (tsc_sync's anchor holds then). Drain thread. */
	bool (*tsc_update)(struct target *t);
	/* Optional, after a tsc_update that said true: the host TSC at which vCPU @cpu's guest read
	 * @tsc (the host's TSC runs at tsc_sync's rate); false: unknown for that vCPU. Drain thread. */
	bool (*tsc_host)(struct target *t, unsigned cpu, uint64_t tsc, uint64_t *host);
};

/* A region of guest memory placed for the stub. */
struct target_region {
	uint64_t gva, gpa, size;
	/* Nonzero: the stub's code goes here (pages of its own, executable, the region's first
	 * STUB_CODE_SIZE bytes then hold none), at STUB_CODE_DELTA below the region (arm64, whose
	 * blocks are 2 MiB or larger) */
	uint64_t code_gva, code_gpa;
	/* the kernel's text is guarded (arm64's GP: BTI at EL1): a detour's B over a function's first
	 * word (a PACIxSP, an implicit landing pad) would fault where the function is called
	 * indirectly, so no detour is written */
	bool text_guarded;
	const char
	    *where; /* static: "memslot", "reserved" (RAM the kernel reserved), "low-memory" */
	/* static, NULL for the ISA's only way: how the descriptors mapping it give permissions
	 * (arm64: "ap" AP/PXN/UXN, "pie" the kernel's stage-1 permission indirection) */
	const char *perm;
};

struct target {
	const struct target_ops *ops;
	const char *name;
	const struct arch *arch; /* the guest's ISA: its registers, encodings, decoder */
	unsigned nr_cpus;
	uint64_t trampoline; /* GVA of a guest-executable byte the tracer may own for returns, 0: none */
	/* With no trampoline of the guest's own (0 above) and returns traced, the tracer maps a
	 * page of its own for one (stub_map, guest_stub_trampoline's bytes at STUB_CODE_OFF) from
	 * tracer_new to the end of tracer_detach, or tracer_free: a kernel booted under hvtrace
	 * with trap probes, whose candidate byte (__fentry__'s RET) the kernel rewrites at boot */
	bool trampoline_page;
	unsigned stack_shift; /* guest stacks are 1 << stack_shift aligned regions */
	/* A hit callback that leaves RIP on the breakpoint has the instruction there run in place
	 * (QEMU's gdbstub steps over it): entry probes need it. */
	bool bp_in_place;
	/* Every hit callback runs with every vCPU stopped (QEMU's all-stop gdbstub), so it may write
	 * wider than one byte (write_text): needed for internal probes at the guest's patchers. */
	bool hit_all_stopped;
	/* Nonzero: the stub's time is a counter at this rate (kHz) that runs with the host's
	 * CLOCK_MONOTONIC, not the host's TSC (arm64 under TCG: CNTVCT_EL0 at CNTFRQ_EL0) */
	uint64_t counter_khz;
	void *priv;	      /* backend state */
};

/* The ISA of @t's guest: its arch, or arch_default() for a target that names none. Any thread. */
static inline const struct arch *target_arch(const struct target *t)
{
	return t->arch ? t->arch : arch_default();
}

#endif

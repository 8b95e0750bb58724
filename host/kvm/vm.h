/* The embedded VMM: one KVM VM with its guest RAM and vCPUs, long-mode set-up per the freestanding
 * boot contract, and guest memory access. The vCPU threads that run it (console, isa-debug-exit,
 * pause/resume of all vCPUs) are host/kvm/vcpu.h. */
#ifndef HVT_VM_H
#define HVT_VM_H

#include "host/trace/target.h"
#include "arch/arch_tlb.h"
#include "host/kvm/exit_stats.h"
#include "host/kvm/step_slots.h"
#include "host/kvm/uart8250.h"
#include "vmi/vmi_elf.h"

#include <linux/kvm.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define VM_MAX_VCPUS 64
#define VM_STUB_PDES 128 /* a Linux guest's stub region: at most this many 2 MiB pages */
#define VM_STACK_SHIFT 16 /* boot contract: guest stacks are 64 KiB-aligned 64 KiB regions */
#define VM_STACK_SIZE (1 << VM_STACK_SHIFT)
#define VM_PORT_DEBUGCON 0xe9
#define VM_PORT_DEBUG_EXIT 0xf4

struct vm_config {
	unsigned smp;	 /* vCPUs, 1..VM_MAX_VCPUS */
	unsigned mem_mb; /* guest RAM, 2..3072 */
	FILE *console;	 /* debugcon output; borrowed */
	/* A PC for a Linux kernel (vm_load_linux): in-kernel irqchip and PIT, the COM1 UART (to
	 * @console), ACPI power-off, reset; no debugcon/debug-exit ports, no software breakpoints. */
	bool linux_pc;
	/* Out-of-line copies to make room for in the VMM area (step_slots.h): one per entry probe
	 * of a freestanding guest; 0 none. */
	size_t step_slots;
};

/* Why a VM stopped running. */
enum vm_end {
	VM_END_NONE,
	VM_END_GUEST_EXIT, /* wrote port 0xf4; status holds the value */
	VM_END_HALTED,	   /* every vCPU executed HLT without writing port 0xf4 */
	VM_END_FAULT,	   /* triple fault, failed entry, unexpected exit */
	VM_END_STOPPED,	   /* the host asked (signal, timeout, end of tracing) */
	VM_END_ERROR,	   /* a KVM call failed */
	VM_END_POWEROFF,   /* linux_pc: ACPI S5 written to the sleep control register */
	VM_END_REBOOT,	   /* linux_pc: reset (ACPI reset register, 8042; triple fault if asked) */
	VM_END_PANIC,	   /* linux_pc: "Kernel panic - not syncing" on the console */
};

/* How a breakpoint hit reached the host: real KVM, or this machine's PVM at CPL0 / CPL3. */
enum vcpu_bp_kind { VCPU_BP_DEBUG, VCPU_BP_EMULATION, VCPU_BP_SHUTDOWN };

enum vcpu_state { VCPU_RUNNING, VCPU_PARKED, VCPU_HALTED, VCPU_DONE };

struct vcpu {
	struct vm *vm;
	unsigned index;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	bool started;
	_Atomic int tid; /* the vCPU thread's host thread id, set as it starts (0 before) */
	enum vcpu_state state; /* under vm->lock */
	uint64_t cr3;	       /* from the last exit's sregs; the vCPU's own thread */
	bool la57;
	struct arch_tlb tlb; /* the vCPU's own thread; invalidated at every exit */
	char con[256]; /* debugcon line being assembled */
	unsigned con_len;
	uint64_t exits;
	uint64_t last_rip;  /* RIP as the last exit before the current one reported it; own thread */
	uint32_t last_exit; /* that exit's reason */
	bool has_last;	    /* false until an exit has been handled */
	uint64_t bp_exits[3]; /* breakpoint hits the tracer owned, by exit kind (enum vcpu_bp_kind) */
	/* host TSC cycles (elapsed: a preemption meanwhile counts) from KVM_RUN's return to the end
	 * of handling the breakpoint exits the tracer owned: user space's share of a hit (make
	 * bench); own thread, then final */
	uint64_t bp_cycles;
	uint64_t cpu_ns; /* the thread's CPU time, user and kernel, set as it ends */
	struct exit_stats xs; /* own thread */
};

struct vm {
	int kvm_fd, vm_fd;
	uint8_t *ram;
	uint64_t ram_size;
	uint64_t reserved_gpa; /* [reserved_gpa, ram_size): page tables, GDT, stub page, stacks */
	uint64_t stub_gpa;     /* one page the VMM maps for guest-stub code */
	uint64_t step_gpa;     /* the out-of-line copies' area (identity-mapped), step_cap slots */
	size_t step_cap;
	struct step_slots step; /* written before the vCPUs run, read-only after (vcpu.c) */
	uint8_t *extra;	       /* memslot 1: memory outside RAM for the exit-free stub, or NULL */
	uint64_t extra_gpa, extra_size;
	uint64_t entry;
	bool tsc_aux; /* every vCPU's RDTSCP returns its index in ECX (IA32_TSC_AUX, set and read back) */
	bool cpuid_apic_id; /* every vCPU's CPUID leaf 1 has its index as APIC ID (EBX[31:24]) */
	bool tsc_shared;    /* every vCPU has vCPU 0's TSC offset (KVM_VCPU_TSC_OFFSET) */
	/* each vCPU's TSC offset followed as the host moves it (an unstable host TSC); NULL: not.
	 * Owned: kvm_run starts it before the vCPUs first run and closes it after the drain */
	struct tsc_follow *follow;
	uint64_t cr3_boot; /* identity-map page tables */
	uint64_t gdt_gpa;
	unsigned nr_vcpus;
	struct vcpu *vcpus;
	size_t run_size;
	FILE *console;
	pthread_mutex_t console_lock;
	int console_err; /* errno of the first failed console write, 0 none (under console_lock) */

	/* Breakpoint hits, on the hitting vCPU's own thread: @addr is the INT3's address, @regs the
	 * vCPU's registers with RIP as the exit left it. Must not block. */
	target_bp_fn bp_hit;
	void *bp_ctx;
	/* bp_hit takes no time (a bench's raw round trip): the exit's clock is not read for it, and
	 * its at_ns is 0 */
	bool bp_untimed;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	atomic_int pause_req;
	uint64_t pauses, paused_ns; /* vcpu_pause_all calls and the time from each to its resume */
	uint64_t pause_start_ns;    /* of the outermost pause in progress */
	atomic_int stop;
	enum vm_end end;
	int end_status;
	char end_msg[256];
	bool linux_pc;
	struct uart8250 uart; /* linux_pc: COM1, under uart_lock */
	pthread_mutex_t uart_lock;
	int uart_irq_level; /* the level last given to KVM_IRQ_LINE, -1 none yet; under uart_lock */
	/* linux_pc: KVM's coalesced ring, where it queues writes to COM1's THR (port 0x3f8) without
	 * an exit; NULL where KVM has no coalesced PIO. Drained under uart_lock (vcpu.c). */
	struct kvm_coalesced_mmio_ring *pio_ring;
	uint64_t pio_coalesced; /* ring entries drained; under uart_lock */
	char uart_line[256];	/* COM1 output being assembled into a line; under uart_lock */
	unsigned uart_line_len;
	/* linux_pc with trap probes (vm_guest_debug): INT3 exits to hvtrace, and a breakpoint
	 * that is not hvtrace's (the kernel's own: int3_selftest, text_poke_bp, kprobes) goes back
	 * to the guest as its #BP (vcpu.c) */
	bool guest_debug;
	/* linux_pc: the kernel reboots by a triple fault (reboot=t): that triple fault is its
	 * reset; any other is a crash (Linux resets through the ACPI reset register or the 8042
	 * first) */
	bool triple_fault_reboots;
	_Atomic uint64_t bp_reinjected; /* those, counted */
	bool tsc_deadline; /* linux_pc: KVM's local APIC has the TSC-deadline timer (CPUID says so) */
	uint64_t xcr0_supported; /* CPUID 0xD.0 EDX:EAX as the vCPUs were given it */
	/* linux_pc (target_kvm_linux_init): the kernel's top-level page table (init_top_pgt) and
	 * level3_kernel_pgt (guest-physical, 0: not known yet); the entry of the latter the stub is
	 * mapped through, and what it held */
	uint64_t kcr3, kpud_gpa, pud_old;
	bool pud_set;
	uint8_t stub_pt_saved[0x2000]; /* LB_STUB_PT_SIZE: what the stub's page tables replaced */
	int event_fd; /* readable once the VM has ended */
};

/* The least --mem (MB) for @smp vCPUs: the VMM's area at the top of RAM (a 64 KiB stack per vCPU,
 * page tables, GDT, trampoline page) must take less than half of it. Pure; any thread. */
unsigned vm_min_mem_mb(unsigned smp);

/* Writes the out-of-line copy of every entry site of @sites into the area vm_create made room for
 * (vm_config.step_slots), their bytes read from guest RAM as loaded: vm->step. 0 or -errno with one
 * line in @err. Main thread, after vm_load_elf, before the vCPUs run. */
int vm_write_step_slots(struct vm *vm, const struct vmi_sites *sites, char *err, size_t errlen);

/* Creates the VM, its RAM and vCPUs (not yet running). Returns 0 or a negative errno with a one-line
 * reason in @err. On failure nothing needs freeing. Main thread. */
int vm_create(struct vm *vm, const struct vm_config *cfg, char *err, size_t errlen);

/* Copies @img's loadable segments to their physical addresses and sets every vCPU's entry state per the
 * boot contract. Returns 0, or -ERANGE with a reason when a segment does not fit below the VMM's area. */
int vm_load_elf(struct vm *vm, const struct vmi_elf *img, char *err, size_t errlen);

/* Sets every vCPU's entry state per the boot contract, entering at @entry (vm_load_elf does this for
 * an ELF image). Returns 0 or a negative errno with a reason in @err. Main thread, vCPUs not started. */
int vm_boot_at(struct vm *vm, uint64_t entry, char *err, size_t errlen);

/* Whether this host's /dev/kvm can boot a stock Linux kernel: not on PVM (software virtualization, the
 * kvm_pvm module). Returns 0, or -ENOTSUP with one line in @err. Any thread. */
int vm_check_linux_host(char *err, size_t errlen);

/* A Linux VM (linux_pc) with trap probes: every vCPU's INT3 exits to hvtrace
 * (KVM_SET_GUEST_DEBUG, USE_SW_BP) from now on, the guest's own given back to it as its #BP. Before
 * the vCPUs first run. 0, or a negative errno with @err. Main thread. */
int vm_guest_debug(struct vm *vm, char *err, size_t errlen);

/* Maps @size bytes of zeroed memory at guest-physical @gpa (outside RAM, inside the boot identity map)
 * as a second memslot: memory the guest has never been told about. 0 or -errno. Main thread. */
int vm_map_extra(struct vm *vm, uint64_t gpa, uint64_t size);

/* Guest-physical addresses below this are identity-mapped by the boot page tables. */
#define VM_IDMAP_END (4ull << 30)
/* Removes it again. Main thread, vCPUs paused. */
void vm_unmap_extra(struct vm *vm);

/* vCPU 0's guest TSC (IA32_TSC), the host CLOCK_MONOTONIC ns it was read at, and the guest TSC rate.
 * vCPUs paused. 0 or -errno. */
int vm_tsc_sync(struct vm *vm, uint64_t *tsc, uint64_t *ns, uint64_t *khz);

/* The largest difference, in microseconds, between what another vCPU's TSC and vCPU 0's say for the
 * same host time (read one after the other, the host's clock between): 0 where they agree (the stub's
 * one clock anchor then holds for every vCPU), -1 when it cannot be read. vCPUs stopped. */
/* vCPU @i's TSC offset now (KVM_VCPU_TSC_OFFSET: guest TSC - host TSC), into *@offset. 0 or
 * -errno (-ENXIO: the host's KVM has no such attribute, before Linux 5.16). While paused. */
int vm_tsc_offset(struct vm *vm, unsigned i, uint64_t *offset);

long long vm_tsc_skew_us(const struct vm *vm);

/* Host pointer to guest-physical [gpa, gpa+len) or NULL if that is not all RAM (or the extra slot).
 * Any thread. */
void *vm_gpa_ptr(struct vm *vm, uint64_t gpa, uint64_t len);

/* The 8-byte page-table entry at guest-physical @gpa of struct vm @vm (an x86_read_pte_fn), read
 * once (atomically: the guest may be writing it). 0 or -EFAULT outside RAM. Any thread. */
int vm_read_pte(void *vm, uint64_t gpa, uint64_t *pte);

/* Copies @len bytes between @buf and guest-physical @gpa of struct vm @vm (an arch_gpa_copy_fn):
 * into guest RAM when @write. 0 or -EFAULT when the range is not all RAM. Any thread. */
int vm_copy_phys(void *vm, uint64_t gpa, void *buf, size_t len, bool write);

/* A vCPU's long-mode entry state at CPL0: flat code and data segments @cs and @ds of the GDT at
 * [@gdt_base, +@gdt_limit], no IDT, paging at @cr3. */
struct vm_long_mode {
	uint16_t cs, ds;
	uint64_t gdt_base;
	uint16_t gdt_limit;
	uint64_t cr3, cr4, efer;
};

/* Puts vCPU @c in long mode per @m (CR0 PE, PG and the usual bits) with general registers @regs.
 * 0 or -errno. Main thread, vCPU not running. */
int vm_vcpu_long_mode(struct vcpu *c, const struct vm_long_mode *m, const struct kvm_regs *regs);

/* The guest-physical address of @gva through vCPU @cpu's page tables (the CR3 of its last exit).
 * Returns 0 or -EFAULT (-EINVAL: no such vCPU). Safe on that vCPU's thread (through its translation
 * cache), or on any thread while the vCPUs are paused or not started. */
int vm_translate(struct vm *vm, unsigned cpu, uint64_t gva, uint64_t *gpa);

/* Reads/writes guest-virtual memory through vCPU @cpu's page tables (the CR3 of its last exit).
 * Returns 0 or -EFAULT. Safe on that vCPU's thread, or on any thread while the vCPUs are paused. */
int vm_read_virt(struct vm *vm, unsigned cpu, uint64_t gva, void *buf, size_t len);
int vm_write_virt(struct vm *vm, unsigned cpu, uint64_t gva, const void *buf, size_t len);

/* Frees everything vm_create made. The vCPU threads must be joined (vcpu_join_all). */
void vm_destroy(struct vm *vm);

#endif

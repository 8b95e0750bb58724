#include "host/kvm/vm.h"
#include "host/kvm/pio_ring.h"
#include "host/trace/clock.h"
#include "arch/arch.h"
#include "arch/arch_tlb.h"
#include "guest-stub/trampoline.h"
#include "host/util/msg_fmt.h"

#define MSR_TSC_AUX 0xc0000103

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define IDMAP_GIB 4 /* VM_IDMAP_END */
#define CPUID_1_ECX_TSC_DEADLINE (1u << 24)

#define HUGE_2M (2ull << 20)

/* Guest RAM, 2 MiB-aligned and marked for transparent huge pages, so that KVM maps it with 2 MiB
 * nested page table entries where the host gives huge pages (one fault per 2 MiB the guest touches,
 * not per 4 KiB: each is an exit, and a costly one nested). NULL with errno on failure. */
static uint8_t *map_ram(uint64_t size)
{
	uint8_t *p = mmap(NULL, size + HUGE_2M, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t base, end, a;

	if (p == MAP_FAILED)
		return NULL;
	base = (uintptr_t)p;
	end = base + size + HUGE_2M;
	a = (base + HUGE_2M - 1) & ~(uintptr_t)(HUGE_2M - 1);
	if (a > base)
		munmap(p, a - base);
	if (end > a + size)
		munmap((void *)(a + size), end - (a + size));
	/* only advice: without THP the RAM works the same, in 4 KiB pages */
	madvise((void *)a, size, MADV_HUGEPAGE);
	return (uint8_t *)a;
}

static int fail(char *err, size_t errlen, int e, const char *what)
{
	msg_fmt(err, errlen, "%s: %s", what, strerror(e));
	return -e;
}

/* INT3 exits to the host on real KVM. */
static int enable_sw_breakpoints(struct vcpu *c)
{
	struct kvm_guest_debug dbg = {.control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_SW_BP};

	return ioctl(c->fd, KVM_SET_GUEST_DEBUG, &dbg) < 0 ? -errno : 0;
}

int vm_guest_debug(struct vm *vm, char *err, size_t errlen)
{
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		int ret = enable_sw_breakpoints(&vm->vcpus[i]);

		if (ret < 0)
			return fail(err, errlen, -ret, "KVM_SET_GUEST_DEBUG");
	}
	vm->guest_debug = true;
	return 0;
}

/* Whether vCPU @c's CPUID table, as KVM gives it back, has @index as leaf 1's initial APIC ID. */
static bool cpuid_apic_id_is(struct vcpu *c, struct kvm_cpuid2 *cpuid, unsigned n, unsigned index)
{
	cpuid->nent = n;
	if (ioctl(c->fd, KVM_GET_CPUID2, cpuid) < 0)
		return false;
	for (unsigned i = 0; i < cpuid->nent; i++)
		if (cpuid->entries[i].function == 1)
			return cpuid->entries[i].ebx >> 24 == index;
	return false;
}

/* Gives the vCPU KVM's supported CPUID with its own index as APIC ID (leaf 1 EBX[31:24], leaves 0xB
 * and 0x1F EDX), as QEMU does; *@rdtscp: it includes RDTSCP (0x80000001 EDX bit 27); *@apic_id: KVM
 * kept the index in leaf 1 (read back), so CPUID in the guest tells which vCPU runs it. */
static int setup_cpuid(struct vm *vm, struct vcpu *c, bool *rdtscp, bool *apic_id)
{
	int n = 128;
	struct kvm_cpuid2 *cpuid = calloc(1, sizeof(*cpuid) + n * sizeof(struct kvm_cpuid_entry2));
	int ret = 0;

	*rdtscp = *apic_id = false;
	if (!cpuid)
		return -ENOMEM;
	cpuid->nent = n;
	if (ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, cpuid) < 0) {
		free(cpuid);
		return -errno;
	}
	for (unsigned i = 0; i < cpuid->nent; i++) {
		struct kvm_cpuid_entry2 *e = &cpuid->entries[i];

		if (e->function == 0x80000001)
			*rdtscp = e->edx >> 27 & 1;
		if (e->function == 1) { /* the initial APIC ID, as the local APIC's */
			e->ebx = (e->ebx & 0xffffff) | c->index << 24;
			e->ecx |= 1u << 31; /* a hypervisor: Linux looks for KVM's leaves (kvm-clock) */
			/* KVM's local APIC has the TSC-deadline timer (not in the supported list: the
			 * VMM says it, as QEMU does): Linux then needs no APIC timer calibration */
			if (vm->tsc_deadline)
				e->ecx |= CPUID_1_ECX_TSC_DEADLINE;
		}
		if (e->function == 0xb || e->function == 0x1f)
			e->edx = c->index;
		if (e->function == 0xd && e->index == 0) /* the XCR0 bits the guest may set */
			vm->xcr0_supported = e->eax | (uint64_t)e->edx << 32;
	}
	if (ioctl(c->fd, KVM_SET_CPUID2, cpuid) < 0)
		ret = -errno;
	else
		*apic_id = cpuid_apic_id_is(c, cpuid, n, c->index);
	free(cpuid);
	return ret;
}

/* XCR0 as Linux sets it (every user state component CPUID offers), already in KVM's copy before the
 * guest runs. Under QEMU TCG's SVM (the nested lane's L0), XSETBV in L2 is not intercepted: KVM in L1
 * never learns the guest's XCR0, keeps the reset value (x87 only), loads it at every VM entry and
 * computes CPUID 0xD's sizes from it; Linux then warns "XSAVE consistency problem" (a 3 KB splat on
 * the console) and its XSAVE keeps no SSE/AVX state. With the guest's value preset, both agree.
 * Where XSETBV is intercepted (real hardware) the guest's own write replaces it. Best effort: a
 * refusal leaves KVM's reset value. */
static void preset_xcr0(struct vcpu *c, uint64_t xcr0)
{
	struct kvm_xcrs xcrs = {.nr_xcrs = 1, .xcrs = {{.xcr = 0, .value = xcr0}}};

	if (xcr0 & 1) /* x87 is part of any valid XCR0 */
		ioctl(c->fd, KVM_SET_XCRS, &xcrs);
}

/* IA32_TSC_AUX = the vCPU's index, so that RDTSCP in the guest returns it in ECX (the stub's CPU
 * number). True only if KVM took it and gives the same value back. */
/* Gives every vCPU vCPU 0's TSC offset (KVM_VCPU_TSC_OFFSET, Linux 5.16 and later): one guest
 * TSC for all of them, so that one anchor converts any vCPU's stub timestamps (KVM offsets each
 * vCPU's TSC as it creates it, and its matching of the later ones fails when they come slowly,
 * as in the nested lane: there vCPU 1 ran 30 ms ahead). Whether every vCPU has it now. */
static bool share_tsc(struct vm *vm)
{
	uint64_t offset;
	struct kvm_device_attr a = {.group = KVM_VCPU_TSC_CTRL,
				    .attr = KVM_VCPU_TSC_OFFSET,
				    .addr = (uintptr_t)&offset};

	if (ioctl(vm->vcpus[0].fd, KVM_HAS_DEVICE_ATTR, &a) < 0 ||
	    ioctl(vm->vcpus[0].fd, KVM_GET_DEVICE_ATTR, &a) < 0)
		return false;
	for (unsigned i = 1; i < vm->nr_vcpus; i++)
		if (ioctl(vm->vcpus[i].fd, KVM_SET_DEVICE_ATTR, &a) < 0)
			return false;
	return true;
}

static bool set_tsc_aux(struct vcpu *c)
{
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e;
	} m = {.h.nmsrs = 1, .e.index = MSR_TSC_AUX, .e.data = c->index};

	if (ioctl(c->fd, KVM_SET_MSRS, &m) != 1)
		return false;
	m.e.data = ~0ull;
	return ioctl(c->fd, KVM_GET_MSRS, &m) == 1 && m.e.data == c->index;
}

static void set_seg(struct kvm_segment *s, uint16_t sel, uint8_t type, bool code)
{
	memset(s, 0, sizeof(*s));
	s->selector = sel;
	s->base = 0;
	s->limit = 0xffffffff;
	s->type = type;
	s->present = 1;
	s->dpl = 0;
	s->s = 1;
	s->l = code;
	s->db = !code;
	s->g = 1;
}

int vm_vcpu_long_mode(struct vcpu *c, const struct vm_long_mode *m, const struct kvm_regs *regs)
{
	struct kvm_sregs sregs;

	if (ioctl(c->fd, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	set_seg(&sregs.cs, m->cs, 11, true);
	set_seg(&sregs.ds, m->ds, 3, false);
	sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
	sregs.gdt.base = m->gdt_base;
	sregs.gdt.limit = m->gdt_limit;
	sregs.idt.base = 0;
	sregs.idt.limit = 0;
	sregs.cr0 = X86_CR0_PE | X86_CR0_MP | X86_CR0_ET | X86_CR0_NE | X86_CR0_WP | X86_CR0_PG;
	sregs.cr3 = m->cr3;
	sregs.cr4 = m->cr4;
	sregs.efer = m->efer;
	if (ioctl(c->fd, KVM_SET_SREGS, &sregs) < 0)
		return -errno;
	c->cr3 = m->cr3;
	c->la57 = false;
	if (ioctl(c->fd, KVM_SET_REGS, regs) < 0)
		return -errno;
	return 0;
}

/* Long mode at CPL0, flat segments, identity map, per-vCPU stack; RDI = index, RSI = count. */
static int setup_vcpu_regs(struct vm *vm, struct vcpu *c, uint64_t cr3, uint64_t gdt_gpa)
{
	const struct vm_long_mode m = {
	    .cs = X86_SEL_CODE64,
	    .ds = X86_SEL_DATA,
	    .gdt_base = gdt_gpa,
	    .gdt_limit = X86_GDT_ENTRIES * 8 - 1,
	    .cr3 = cr3,
	    .cr4 = X86_CR4_PAE | X86_CR4_OSFXSR | X86_CR4_OSXMMEXCPT,
	    .efer = X86_EFER_LME | X86_EFER_LMA | X86_EFER_SCE | X86_EFER_NXE,
	};
	struct kvm_regs regs;

	memset(&regs, 0, sizeof(regs));
	regs.rip = vm->entry;
	regs.rdi = c->index;
	regs.rsi = vm->nr_vcpus;
	regs.rsp = vm->reserved_gpa + (uint64_t)(c->index + 1) * VM_STACK_SIZE;
	regs.rflags = 2;
	return vm_vcpu_long_mode(c, &m, &regs);
}

/* Bytes of the out-of-line copies' area for @n slots: whole pages. */
static uint64_t step_bytes(size_t n)
{
	return ((uint64_t)n * STEP_SLOT_SIZE + X86_PAGE_SIZE - 1) & ~(uint64_t)(X86_PAGE_SIZE - 1);
}

/* Bytes of the VMM area at the top of RAM for @smp vCPUs: stacks, page tables, GDT, stub page,
 * the out-of-line copies of @steps entry probes. */
static uint64_t reserved_bytes(unsigned smp, size_t steps)
{
	uint64_t tables = (X86_IDMAP_PAGES(IDMAP_GIB) + 2) * X86_PAGE_SIZE;

	return ((uint64_t)smp * VM_STACK_SIZE + tables + step_bytes(steps) + 0xffff) & ~0xffffull;
}

unsigned vm_min_mem_mb(unsigned smp)
{
	return (unsigned)(2 * reserved_bytes(smp, 0) >> 20) + 1;
}

/* Reads guest RAM by its identity-mapped address (@ctx: the struct vm). */
static int read_ram(void *ctx, uint64_t gva, void *buf, size_t len)
{
	void *p = vm_gpa_ptr(ctx, gva, len);

	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

int vm_write_step_slots(struct vm *vm, const struct vmi_sites *sites, char *err, size_t errlen)
{
	int ret = step_slots_write(&vm->step, sites, vm->ram + vm->step_gpa, vm->step_gpa,
				   vm->step_cap, read_ram, vm, err, errlen);

	if (ret == -ENOMEM)
		msg_fmt(err, errlen, "out of memory");
	return ret;
}

/* Has KVM queue the guest's writes to COM1's transmit holding register (port 0x3f8) in its coalesced
 * ring instead of exiting for each byte; the vCPU threads replay them before any other access to the
 * UART (vcpu.c). The ring, mapped in every vCPU's kvm_run area, or NULL where KVM cannot (then every
 * write exits, as before). */
static struct kvm_coalesced_mmio_ring *coalesce_thr(struct vm *vm)
{
	struct kvm_coalesced_mmio_zone zone = {.addr = UART_COM1, .size = 1, .pio = 1};
	long page = sysconf(_SC_PAGESIZE);
	int off = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_COALESCED_MMIO);

	if (off <= 0 || page != PIO_RING_PAGE ||
	    (size_t)(off + 1) * (size_t)page > vm->run_size ||
	    ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_COALESCED_PIO) <= 0 ||
	    ioctl(vm->vm_fd, KVM_REGISTER_COALESCED_MMIO, &zone) < 0)
		return NULL;
	return (struct kvm_coalesced_mmio_ring *)((uint8_t *)vm->vcpus[0].run +
						  (size_t)off * (size_t)page);
}

int vm_create(struct vm *vm, const struct vm_config *cfg, char *err, size_t errlen)
{
	bool tsc_aux = true, apic_ids = true, rdtscp, apic_id;
	int ret;

	memset(vm, 0, sizeof(*vm));
	vm->kvm_fd = vm->vm_fd = vm->event_fd = -1;
	if (cfg->smp < 1 || cfg->smp > VM_MAX_VCPUS) {
		msg_fmt(err, errlen, "--smp %u: must be 1..%d", cfg->smp, VM_MAX_VCPUS);
		return -EINVAL;
	}
	if (cfg->mem_mb < 2 || cfg->mem_mb > 3072) {
		msg_fmt(err, errlen, "--mem %u: must be 2..3072 MB", cfg->mem_mb);
		return -EINVAL;
	}
	pthread_mutex_init(&vm->lock, NULL);
	pthread_cond_init(&vm->cond, NULL);
	pthread_mutex_init(&vm->console_lock, NULL);
	pthread_mutex_init(&vm->uart_lock, NULL);
	uart_init(&vm->uart);
	vm->uart_irq_level = -1;
	vm->linux_pc = cfg->linux_pc;
	vm->console = cfg->console;
	vm->nr_vcpus = cfg->smp;
	vm->ram_size = (uint64_t)cfg->mem_mb << 20;

	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0) {
		ret = fail(err, errlen, errno, "/dev/kvm");
		goto out;
	}
	if (ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) {
		msg_fmt(err, errlen, "/dev/kvm: unsupported KVM API version");
		ret = -ENOTSUP;
		goto out;
	}
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0) {
		ret = fail(err, errlen, errno, "KVM_CREATE_VM");
		goto out;
	}
	vm->ram = map_ram(vm->ram_size);
	if (!vm->ram) {
		ret = fail(err, errlen, errno, "guest RAM");
		goto out;
	}
	struct kvm_userspace_memory_region region = {
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = vm->ram_size,
		.userspace_addr = (uintptr_t)vm->ram,
	};
	if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
		ret = fail(err, errlen, errno, "KVM_SET_USER_MEMORY_REGION");
		goto out;
	}

	/* VMM area at the top of RAM: stacks, then page tables, GDT and the stub page. */
	uint64_t reserved = reserved_bytes(vm->nr_vcpus, cfg->step_slots);

	if (cfg->mem_mb < vm_min_mem_mb(cfg->smp) || 2 * reserved > vm->ram_size) {
		msg_fmt(err, errlen, "--mem %u: too small for %u vCPUs%s", cfg->mem_mb, cfg->smp,
			cfg->step_slots ? " and the entry probes' out-of-line copies" : "");
		ret = -EINVAL;
		goto out;
	}
	vm->reserved_gpa = vm->ram_size - reserved;
	uint64_t pt_gpa = vm->reserved_gpa + (uint64_t)vm->nr_vcpus * VM_STACK_SIZE;
	uint64_t gdt_gpa = pt_gpa + X86_IDMAP_PAGES(IDMAP_GIB) * X86_PAGE_SIZE;

	vm->stub_gpa = gdt_gpa + X86_PAGE_SIZE;
	memcpy(vm->ram + vm->stub_gpa, guest_stub_trampoline, guest_stub_trampoline_size);
	vm->step_gpa = vm->stub_gpa + X86_PAGE_SIZE;
	vm->step_cap = (size_t)(step_bytes(cfg->step_slots) / STEP_SLOT_SIZE);
	x86_build_identity_map(vm->ram + pt_gpa, pt_gpa, IDMAP_GIB);
	x86_build_gdt(vm->ram + gdt_gpa);
	vm->cr3_boot = pt_gpa;
	vm->gdt_gpa = gdt_gpa;

	if (vm->linux_pc) {
		/* the PC's interrupt controllers and timer, in the kernel: before the first vCPU */
		struct kvm_pit_config pit = {.flags = 0};

		if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, 0xfffbd000ul) < 0) {
			ret = fail(err, errlen, errno, "KVM_SET_TSS_ADDR");
			goto out;
		}
		if (ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0) {
			ret = fail(err, errlen, errno, "KVM_CREATE_IRQCHIP");
			goto out;
		}
		if (ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0) {
			ret = fail(err, errlen, errno, "KVM_CREATE_PIT2");
			goto out;
		}
		vm->tsc_deadline = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_TSC_DEADLINE_TIMER) > 0;
	}
	ret = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (ret < 0) {
		ret = fail(err, errlen, errno, "KVM_GET_VCPU_MMAP_SIZE");
		goto out;
	}
	vm->run_size = ret;
	vm->vcpus = calloc(vm->nr_vcpus, sizeof(*vm->vcpus));
	if (!vm->vcpus) {
		ret = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vm->vcpus[i].fd = -1;
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *c = &vm->vcpus[i];

		c->vm = vm;
		c->index = i;
		c->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, i);
		if (c->fd < 0) {
			ret = fail(err, errlen, errno, "KVM_CREATE_VCPU");
			goto out;
		}
		c->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
		if (c->run == MAP_FAILED) {
			c->run = NULL;
			ret = fail(err, errlen, errno, "mmap kvm_run");
			goto out;
		}
		ret = setup_cpuid(vm, c, &rdtscp, &apic_id);
		if (ret < 0) {
			ret = fail(err, errlen, -ret, "KVM_SET_CPUID2");
			goto out;
		}
		tsc_aux = tsc_aux && rdtscp && set_tsc_aux(c);
		apic_ids = apic_ids && apic_id;
		if (vm->linux_pc)
			preset_xcr0(c, vm->xcr0_supported);
		ret = vm->linux_pc ? 0 : enable_sw_breakpoints(c);
		if (ret < 0) {
			ret = fail(err, errlen, -ret, "KVM_SET_GUEST_DEBUG");
			goto out;
		}
	}
	vm->tsc_aux = tsc_aux;
	vm->cpuid_apic_id = apic_ids;
	vm->tsc_shared = share_tsc(vm);
	if (vm->linux_pc)
		vm->pio_ring = coalesce_thr(vm);
	vm->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vm->event_fd < 0) {
		ret = fail(err, errlen, errno, "eventfd");
		goto out;
	}
	return 0;
out:
	vm_destroy(vm);
	return ret;
}

int vm_load_elf(struct vm *vm, const struct vmi_elf *img, char *err, size_t errlen)
{
	for (size_t i = 0; i < img->nr_segs; i++) {
		const struct vmi_segment *s = &img->segs[i];

		if (s->paddr + s->memsz < s->paddr || s->paddr + s->memsz > vm->reserved_gpa) {
			msg_fmt(err, errlen,
				"%s: segment at 0x%" PRIx64 "+0x%" PRIx64
				" does not fit in guest RAM below 0x%" PRIx64 " (raise --mem)",
				img->path, s->paddr, s->memsz, vm->reserved_gpa);
			return -ERANGE;
		}
	}
	for (size_t i = 0; i < img->nr_segs; i++) {
		const struct vmi_segment *s = &img->segs[i];

		memcpy(vm->ram + s->paddr, s->data, s->filesz);
		memset(vm->ram + s->paddr + s->filesz, 0, s->memsz - s->filesz);
	}
	return vm_boot_at(vm, img->entry, err, errlen);
}

int vm_boot_at(struct vm *vm, uint64_t entry, char *err, size_t errlen)
{
	vm->entry = entry;
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		int ret = setup_vcpu_regs(vm, &vm->vcpus[i], vm->cr3_boot, vm->gdt_gpa);

		if (ret < 0)
			return fail(err, errlen, -ret, "setting vCPU registers");
	}
	return 0;
}

int vm_check_linux_host(char *err, size_t errlen)
{
	if (access("/sys/module/kvm_pvm", F_OK) == 0) {
		msg_fmt(
		    err, errlen,
		    "/dev/kvm is PVM (kvm_pvm): this host cannot boot a stock Linux kernel in the "
		    "embedded VMM (use run --qemu, or real KVM)");
		return -ENOTSUP;
	}
	return 0;
}

void *vm_gpa_ptr(struct vm *vm, uint64_t gpa, uint64_t len)
{
	if (vm->extra && gpa >= vm->extra_gpa && gpa - vm->extra_gpa < vm->extra_size &&
	    len <= vm->extra_size - (gpa - vm->extra_gpa))
		return vm->extra + (gpa - vm->extra_gpa);
	if (gpa >= vm->ram_size || len > vm->ram_size - gpa)
		return NULL;
	return vm->ram + gpa;
}

int vm_map_extra(struct vm *vm, uint64_t gpa, uint64_t size)
{
	struct kvm_userspace_memory_region region = {
		.slot = 1,
		.guest_phys_addr = gpa,
		.memory_size = size,
	};
	uint8_t *mem;

	if (vm->extra || gpa < vm->ram_size || (gpa | size) & (X86_PAGE_SIZE - 1) ||
	    gpa + size > VM_IDMAP_END)
		return -EINVAL;
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return -ENOMEM;
	region.userspace_addr = (uintptr_t)mem;
	if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
		int e = errno;

		munmap(mem, size);
		return -e;
	}
	vm->extra_gpa = gpa;
	vm->extra_size = size;
	__atomic_store_n(&vm->extra, mem, __ATOMIC_RELEASE);
	return 0;
}

/* vCPU @cpu's TSC (IA32_TSC through KVM_GET_MSRS) and the host CLOCK_MONOTONIC ns halfway
 * through the read. 0 or -errno. */
static int vcpu_tsc(const struct vm *vm, unsigned cpu, uint64_t *tsc, uint64_t *ns)
{
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e;
	} m = {.h.nmsrs = 1, .e.index = 0x10 /* IA32_TSC */};
	uint64_t before = clock_now_ns(), after;

	if (ioctl(vm->vcpus[cpu].fd, KVM_GET_MSRS, &m) != 1)
		return -errno ? -errno : -EIO;
	after = clock_now_ns();
	*tsc = m.e.data;
	*ns = before + (after - before) / 2;
	return 0;
}

int vm_tsc_sync(struct vm *vm, uint64_t *tsc, uint64_t *ns, uint64_t *khz)
{
	int r = vcpu_tsc(vm, 0, tsc, ns);

	if (r < 0)
		return r;
	r = ioctl(vm->vcpus[0].fd, KVM_GET_TSC_KHZ, 0);
	if (r <= 0)
		return -EIO;
	*khz = (uint64_t)r;
	return 0;
}

int vm_tsc_offset(struct vm *vm, unsigned i, uint64_t *offset)
{
	struct kvm_device_attr a = {.group = KVM_VCPU_TSC_CTRL,
				    .attr = KVM_VCPU_TSC_OFFSET,
				    .addr = (uintptr_t)offset};

	if (i >= vm->nr_vcpus)
		return -EINVAL;
	if (ioctl(vm->vcpus[i].fd, KVM_HAS_DEVICE_ATTR, &a) < 0)
		return -ENXIO;
	return ioctl(vm->vcpus[i].fd, KVM_GET_DEVICE_ATTR, &a) < 0 ? -errno : 0;
}

long long vm_tsc_skew_us(const struct vm *vm)
{
	uint64_t t0, n0, t, n;
	double worst = 0;
	int khz = vm->nr_vcpus ? ioctl(vm->vcpus[0].fd, KVM_GET_TSC_KHZ, 0) : 0;

	if (khz <= 0 || vcpu_tsc(vm, 0, &t0, &n0) < 0)
		return -1;
	for (unsigned i = 1; i < vm->nr_vcpus; i++) {
		double d;

		if (vcpu_tsc(vm, i, &t, &n) < 0)
			return -1;
		/* what vCPU i's TSC says minus what vCPU 0's says for the same host time, in us */
		d = (double)(int64_t)(t - t0) * 1000.0 / khz - (double)(n - n0) / 1000.0;
		d = d < 0 ? -d : d;
		if (d > worst)
			worst = d;
	}
	return worst < 9e15 ? (long long)worst : -1;
}

void vm_unmap_extra(struct vm *vm)
{
	struct kvm_userspace_memory_region region = {.slot = 1, .guest_phys_addr = vm->extra_gpa};

	if (!vm->extra)
		return;
	ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region); /* size 0 deletes the slot */
	/* the mapping stays: another thread may still be reading records through vm_gpa_ptr */
}

int vm_read_pte(void *vm, uint64_t gpa, uint64_t *pte)
{
	uint64_t *p = vm_gpa_ptr(vm, gpa, 8);

	if (!p)
		return -EFAULT;
	*pte = __atomic_load_n(p, __ATOMIC_RELAXED);
	return 0;
}

/* A page walk through vCPU @ctx's page tables (the CR3 of its last exit). */
static int walk(void *ctx, uint64_t gva, uint64_t *gpa)
{
	struct vcpu *c = ctx;

	return x86_translate(vm_read_pte, c->vm, c->cr3, c->la57, gva, gpa) < 0 ? -EFAULT : 0;
}

/* Guest-physical address of @gva for vCPU @ctx, through its translation cache (valid until its next
 * exit: the guest may change its page tables while it runs). The cache belongs to the vCPU's own
 * thread; other threads (lazy arming on another vCPU, the main thread while paused) walk the
 * tables. */
static int translate(void *ctx, uint64_t gva, uint64_t *gpa)
{
	struct vcpu *c = ctx;

	if (!c->started || !pthread_equal(pthread_self(), c->thread))
		return walk(c, gva, gpa);
	return arch_tlb_translate(&c->tlb, c->cr3, gva, walk, c, gpa);
}

int vm_copy_phys(void *vm, uint64_t gpa, void *buf, size_t len, bool write)
{
	uint8_t *p = vm_gpa_ptr(vm, gpa, len);

	if (!p)
		return -EFAULT;
	if (write)
		memcpy(p, buf, len);
	else
		memcpy(buf, p, len);
	return 0;
}

static int copy_phys(void *ctx, uint64_t gpa, void *buf, size_t len, bool write)
{
	struct vcpu *c = ctx;

	return vm_copy_phys(c->vm, gpa, buf, len, write);
}

int vm_translate(struct vm *vm, unsigned cpu, uint64_t gva, uint64_t *gpa)
{
	if (cpu >= vm->nr_vcpus)
		return -EINVAL;
	return translate(&vm->vcpus[cpu], gva, gpa);
}

int vm_read_virt(struct vm *vm, unsigned cpu, uint64_t gva, void *buf, size_t len)
{
	return arch_copy_virt(gva, buf, len, false, translate, copy_phys, &vm->vcpus[cpu]);
}

int vm_write_virt(struct vm *vm, unsigned cpu, uint64_t gva, const void *buf, size_t len)
{
	return arch_copy_virt(gva, (void *)buf, len, true, translate, copy_phys, &vm->vcpus[cpu]);
}

void vm_destroy(struct vm *vm)
{
	for (unsigned i = 0; vm->vcpus && i < vm->nr_vcpus; i++) {
		struct vcpu *c = &vm->vcpus[i];

		if (c->run)
			munmap(c->run, vm->run_size);
		if (c->fd >= 0)
			close(c->fd);
	}
	free(vm->vcpus);
	vm->vcpus = NULL;
	step_slots_free(&vm->step);
	if (vm->ram)
		munmap(vm->ram, vm->ram_size);
	vm->ram = NULL;
	if (vm->extra)
		munmap(vm->extra, vm->extra_size);
	vm->extra = NULL;
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	if (vm->event_fd >= 0)
		close(vm->event_fd);
	vm->vm_fd = vm->kvm_fd = vm->event_fd = -1;
}

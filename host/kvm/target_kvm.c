#include "host/kvm/target_kvm.h"
#include "host/kvm/vcpu.h"
#include "arch/x86/x86_insn.h"
#include "arch/x86/x86_longmode.h"
#include "arch/x86/x86_pagewalk.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int kvm_read_virt(struct target *t, unsigned cpu, uint64_t gva, void *buf, size_t len)
{
	return vm_read_virt(t->priv, cpu, gva, buf, len);
}

static int kvm_write_virt(struct target *t, unsigned cpu, uint64_t gva, const void *buf, size_t len)
{
	return vm_write_virt(t->priv, cpu, gva, buf, len);
}

static int kvm_translate(struct target *t, unsigned cpu, uint64_t gva, uint64_t *gpa)
{
	return vm_translate(t->priv, cpu, gva, gpa);
}

/* One byte of guest RAM swapped atomically if it still holds @from: safe while the vCPUs run, and
 * a guest that rewrote the byte meanwhile keeps what it wrote. */
static int swap_byte(struct vm *vm, uint64_t gpa, uint8_t from, uint8_t to)
{
	uint8_t *p = vm_gpa_ptr(vm, gpa, 1);

	if (!p)
		return -EFAULT;
	if (!__atomic_compare_exchange_n(p, &from, to, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return -ESTALE;
	return 0;
}

static int kvm_insert_bp(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig)
{
	(void)gva;
	return swap_byte(t->priv, gpa, orig, X86_INT3);
}

static int kvm_remove_bp(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig)
{
	(void)gva;
	return swap_byte(t->priv, gpa, X86_INT3, orig);
}

static int kvm_pause(struct target *t)
{
	return vcpu_pause_all(t->priv);
}

static void kvm_resume(struct target *t)
{
	vcpu_resume_all(t->priv);
}

static int kvm_get_regs(struct target *t, unsigned cpu, struct x86_regs *regs)
{
	struct vm *vm = t->priv;

	if (cpu >= vm->nr_vcpus)
		return -EINVAL;
	memcpy(regs, &vm->vcpus[cpu].run->s.regs.regs, sizeof(*regs));
	return 0;
}

/* The vCPU is parked outside KVM_RUN: the synced registers are applied when it next enters. */
static int kvm_set_regs(struct target *t, unsigned cpu, const struct x86_regs *regs)
{
	struct vm *vm = t->priv;
	struct kvm_run *run;

	if (cpu >= vm->nr_vcpus)
		return -EINVAL;
	run = vm->vcpus[cpu].run;
	memcpy(&run->s.regs.regs, regs, sizeof(*regs));
	run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
	return 0;
}

static void kvm_set_bp_handler(struct target *t, target_bp_fn fn, void *ctx)
{
	struct vm *vm = t->priv;

	vm->bp_hit = fn;
	vm->bp_ctx = ctx;
}

/* The stub region: a memslot right above RAM (2 MiB aligned), which the freestanding guest, told
 * only about its RAM, never uses; the boot identity map already maps it, executable. Any size up to
 * the end of the identity map: only its first page (the code) must be within CALL rel32 reach. */
static int kvm_stub_map(struct target *t, uint64_t lo, uint64_t hi, uint64_t min, uint64_t want,
			struct target_region *out, char *err, size_t errlen)
{
	struct vm *vm = t->priv;
	uint64_t gpa = (vm->ram_size + (2ull << 20) - 1) & ~((2ull << 20) - 1);
	uint64_t size = (want + 4095) & ~4095ull;
	int ret;

	if (gpa >= VM_IDMAP_END || VM_IDMAP_END - gpa < min) {
		snprintf(err, errlen,
			 "stub probes: the guest's identity map ends at 4 GiB, %llu KiB "
			 "above its RAM at guest-physical 0x%llx",
			 gpa < VM_IDMAP_END ? (unsigned long long)(VM_IDMAP_END - gpa) >> 10 : 0,
			 (unsigned long long)gpa);
		return -ENOSPC;
	}
	if (size > VM_IDMAP_END - gpa)
		size = VM_IDMAP_END - gpa;
	if (gpa + 4096 - lo > (2ull << 30) || (hi > gpa && hi - gpa > (2ull << 30))) {
		snprintf(err, errlen, "stub probes: guest RAM (--mem) too large to place the stub within "
				      "2 GiB of the traced code");
		return -ERANGE;
	}
	ret = vm_map_extra(vm, gpa, size);
	if (ret < 0) {
		snprintf(err, errlen, "stub probes: cannot map %llu KiB at 0x%llx: %s",
			 (unsigned long long)size >> 10, (unsigned long long)gpa, strerror(-ret));
		return ret;
	}
	*out = (struct target_region){.gva = gpa, .gpa = gpa, .size = size, .where = "memslot"};
	return 0;
}

static void kvm_stub_unmap(struct target *t, const struct target_region *r)
{
	(void)r;
	vm_unmap_extra(t->priv);
}

static int kvm_read_phys(struct target *t, uint64_t gpa, void *buf, size_t len)
{
	void *p = vm_gpa_ptr(t->priv, gpa, len);

	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

static int kvm_write_phys(struct target *t, uint64_t gpa, const void *buf, size_t len)
{
	void *p = vm_gpa_ptr(t->priv, gpa, len);

	if (!p)
		return -EFAULT;
	memcpy(p, buf, len);
	return 0;
}

/* KVM executes guest RAM as it is: a write with the vCPUs out of KVM_RUN is seen by all of them. */
static int kvm_write_text(struct target *t, uint64_t gpa, const void *expect, const void *buf,
			  size_t len)
{
	uint8_t *p = vm_gpa_ptr(t->priv, gpa, len);

	if (!p)
		return -EFAULT;
	if (memcmp(p, expect, len))
		return -ESTALE;
	memcpy(p, buf, len);
	return 0;
}

/* The freestanding guest keeps the boot identity map. */
static int kvm_read_kernel(struct target *t, uint64_t gva, void *buf, size_t len)
{
	return kvm_read_phys(t, gva, buf, len);
}

static int kvm_kernel_gpa(struct target *t, uint64_t gva, uint64_t *gpa)
{
	if (!vm_gpa_ptr(t->priv, gva, 1))
		return -EFAULT;
	*gpa = gva;
	return 0;
}

static int kvm_tsc_sync(struct target *t, uint64_t *tsc, uint64_t *ns, uint64_t *khz)
{
	return vm_tsc_sync(t->priv, tsc, ns, khz);
}

static const struct target_ops kvm_ops = {
	.stub_map = kvm_stub_map,
	.stub_unmap = kvm_stub_unmap,
	.read_phys = kvm_read_phys,
	.write_phys = kvm_write_phys,
	.write_text = kvm_write_text,
	.read_kernel = kvm_read_kernel,
	.kernel_gpa = kvm_kernel_gpa,
	.tsc_sync = kvm_tsc_sync,
	.set_bp_handler = kvm_set_bp_handler,
	.get_regs = kvm_get_regs,
	.set_regs = kvm_set_regs,
	.read_virt = kvm_read_virt,
	.write_virt = kvm_write_virt,
	.translate = kvm_translate,
	.insert_bp = kvm_insert_bp,
	.remove_bp = kvm_remove_bp,
	.pause = kvm_pause,
	.resume = kvm_resume,
};

void target_kvm_init(struct target *t, struct vm *vm)
{
	t->ops = &kvm_ops;
	t->name = "kvm";
	t->nr_cpus = vm->nr_vcpus;
	t->trampoline = vm->stub_gpa; /* identity-mapped */
	t->stack_shift = VM_STACK_SHIFT;
	t->priv = vm;
}


/* ---- a Linux guest (linux_pc) ---------------------------------------------------------------- */

#define PMD_SPAN (2ull << 20)
#define PDE_STUB (X86_PTE_P | X86_PTE_RW | (1ull << 5) | (1ull << 6) | X86_PTE_PS) /* A, D, 2M */
#define APIC_MMIO 0xfec00000ull /* the in-kernel IOAPIC and LAPIC live above */

static int pte_read(void *ctx, uint64_t gpa, uint64_t *pte)
{
	uint64_t *p = vm_gpa_ptr(ctx, gpa, 8);

	if (!p)
		return -EFAULT;
	*pte = __atomic_load_n(p, __ATOMIC_RELAXED);
	return 0;
}

static uint64_t kernel_cr3(struct vm *vm)
{
	return (vm->kcr3 ? vm->kcr3 : vm->vcpus[0].cr3) & X86_PTE_ADDR;
}

static int klinux_translate(void *ctx, uint64_t gva, uint64_t *gpa)
{
	struct vm *vm = ctx;

	return x86_translate(pte_read, vm, kernel_cr3(vm), false, gva, gpa) < 0 ? -EFAULT : 0;
}

static int klinux_copy_phys(void *ctx, uint64_t gpa, void *buf, size_t len, bool write)
{
	uint8_t *p = vm_gpa_ptr(ctx, gpa, len);

	if (!p)
		return -EFAULT;
	if (write)
		memcpy(p, buf, len);
	else
		memcpy(buf, p, len);
	return 0;
}

static int klinux_read_kernel(struct target *t, uint64_t gva, void *buf, size_t len)
{
	return x86_copy_virt(gva, buf, len, false, klinux_translate, klinux_copy_phys, t->priv);
}

static int klinux_kernel_gpa(struct target *t, uint64_t gva, uint64_t *gpa)
{
	return klinux_translate(t->priv, gva, gpa);
}

static void klinux_stub_unmap(struct target *t, const struct target_region *r)
{
	struct vm *vm = t->priv;

	(void)r;
	for (unsigned i = 0; i < vm->nr_pde; i++) {
		uint64_t *p = vm_gpa_ptr(vm, vm->pde_gpa[i], 8);

		if (p)
			__atomic_store_n(p, vm->pde_old[i], __ATOMIC_SEQ_CST);
	}
	vm->nr_pde = 0;
	vm_unmap_extra(vm);
}

/* The stub's memory is a memslot above RAM, which the kernel (told of its RAM by e820 only) never
 * uses, mapped by 2 MiB page-directory entries in the kernel image's page directory (shared by
 * every address space) at stub_va: the only change to the guest's page tables. */
static int klinux_stub_map(struct target *t, uint64_t lo, uint64_t hi, uint64_t min, uint64_t want,
			   struct target_region *out, char *err, size_t errlen)
{
	struct vm *vm = t->priv;
	uint64_t gpa = (vm->ram_size + PMD_SPAN - 1) & ~(PMD_SPAN - 1), size, va = vm->stub_va;
	unsigned npde;
	int ret;

	size = (want < min ? min : want);
	size = (size + X86_PAGE_SIZE - 1) & ~(X86_PAGE_SIZE - 1);
	if (size > VM_STUB_PDES * PMD_SPAN)
		size = VM_STUB_PDES * PMD_SPAN;
	if (size < min || gpa + size > APIC_MMIO || !va) {
		snprintf(err, errlen, "stub probes: %s",
			 !va ? "no free kernel address past the kernel image"
			     : "no room for the stub between guest RAM and the APICs (lower --mem)");
		return -ENOSPC;
	}
	npde = (unsigned)((size + PMD_SPAN - 1) / PMD_SPAN);
	vm->kcr3 = vm->vcpus[0].cr3 & X86_PTE_ADDR;
	if (va + X86_PAGE_SIZE - lo > (2ull << 30) || (hi > va && hi - va > (2ull << 30))) {
		snprintf(err, errlen, "stub probes: 0x%llx is not within 2 GiB of the traced code",
			 (unsigned long long)va);
		return -ERANGE;
	}
	for (unsigned i = 0; i < npde; i++) {
		uint64_t pde;

		if (x86_pde_addr(pte_read, vm, vm->kcr3, false, va + i * PMD_SPAN, &vm->pde_gpa[i]) <
			0 ||
		    pte_read(vm, vm->pde_gpa[i], &pde) < 0 || (pde & X86_PTE_P)) {
			snprintf(err, errlen,
				 "stub probes: the kernel address 0x%llx is mapped or its page "
				 "directory missing",
				 (unsigned long long)(va + i * PMD_SPAN));
			return -ENOSPC;
		}
		vm->pde_old[i] = pde;
	}
	ret = vm_map_extra(vm, gpa, size);
	if (ret < 0) {
		snprintf(err, errlen, "stub probes: cannot map %llu KiB at 0x%llx: %s",
			 (unsigned long long)size >> 10, (unsigned long long)gpa, strerror(-ret));
		return ret;
	}
	for (vm->nr_pde = 0; vm->nr_pde < npde; vm->nr_pde++) {
		uint64_t *p = vm_gpa_ptr(vm, vm->pde_gpa[vm->nr_pde], 8);

		__atomic_store_n(p, (gpa + vm->nr_pde * PMD_SPAN) | PDE_STUB, __ATOMIC_SEQ_CST);
	}
	*out = (struct target_region){.gva = va, .gpa = gpa, .size = size, .where = "memslot"};
	return 0;
}

static struct target_ops klinux_ops;

void target_kvm_linux_init(struct target *t, struct vm *vm, uint64_t stub_va)
{
	target_kvm_init(t, vm);
	klinux_ops = kvm_ops;
	klinux_ops.stub_map = klinux_stub_map;
	klinux_ops.stub_unmap = klinux_stub_unmap;
	klinux_ops.read_kernel = klinux_read_kernel;
	klinux_ops.kernel_gpa = klinux_kernel_gpa;
	t->ops = &klinux_ops;
	t->name = "kvm-linux";
	t->trampoline = 0;
	t->stack_shift = 14; /* x86_64 THREAD_SIZE */
	vm->stub_va = stub_va;
}

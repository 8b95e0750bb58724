#include "host/kvm/target_kvm.h"
#include "host/hosttrace/tsc_follow.h"
#include "host/kvm/linux_boot.h"
#include "host/kvm/vcpu.h"
#include "host/vmm/stub_pt.h"
#include "guest-stub/stub_abi.h"
#include "arch/arch.h"
#include "host/util/msg_fmt.h"

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

static int kvm_get_regs(struct target *t, unsigned cpu, struct arch_regs *regs)
{
	struct vm *vm = t->priv;

	if (cpu >= vm->nr_vcpus)
		return -EINVAL;
	memset(regs, 0, sizeof(*regs));
	memcpy(regs->r, &vm->vcpus[cpu].run->s.regs.regs, sizeof(struct kvm_regs));
	return 0;
}

/* The vCPU is parked outside KVM_RUN: the synced registers are applied when it next enters. */
static int kvm_set_regs(struct target *t, unsigned cpu, const struct arch_regs *regs)
{
	struct vm *vm = t->priv;
	struct kvm_run *run;

	if (cpu >= vm->nr_vcpus)
		return -EINVAL;
	run = vm->vcpus[cpu].run;
	memcpy(&run->s.regs.regs, regs->r, sizeof(struct kvm_regs));
	run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
	return 0;
}

static void kvm_set_bp_handler(struct target *t, target_bp_fn fn, void *ctx)
{
	struct vm *vm = t->priv;

	vm->bp_hit = fn;
	vm->bp_ctx = ctx;
}

/* The stub's memory: @size bytes at guest-physical @gpa as the extra memslot. 0 or -errno with a
 * reason in @err. */
static int map_extra(struct vm *vm, uint64_t gpa, uint64_t size, char *err, size_t errlen)
{
	int ret = vm_map_extra(vm, gpa, size);

	if (ret < 0)
		msg_fmt(err, errlen, "stub probes: cannot map %llu KiB at 0x%llx: %s",
			(unsigned long long)size >> 10, (unsigned long long)gpa, strerror(-ret));
	return ret;
}

/* The stub region: a memslot right above RAM (2 MiB aligned), which the freestanding guest, told
 * only about its RAM, never uses; the boot identity map already maps it, executable. Any size up to
 * the end of the identity map: only its code (STUB_CODE_SIZE) must be within CALL rel32 reach. */
static int kvm_stub_map(struct target *t, uint64_t lo, uint64_t hi, uint64_t min, uint64_t want,
			struct target_region *out, char *err, size_t errlen)
{
	struct vm *vm = t->priv;
	uint64_t gpa = (vm->ram_size + (2ull << 20) - 1) & ~((2ull << 20) - 1);
	uint64_t size = (want + 4095) & ~4095ull;
	int ret;

	if (gpa >= VM_IDMAP_END || VM_IDMAP_END - gpa < min) {
		msg_fmt(err, errlen,
			"stub probes: the guest's identity map ends at 4 GiB, %llu KiB "
			"above its RAM at guest-physical 0x%llx",
			gpa < VM_IDMAP_END ? (unsigned long long)(VM_IDMAP_END - gpa) >> 10 : 0,
			(unsigned long long)gpa);
		return -ENOSPC;
	}
	if (size > VM_IDMAP_END - gpa)
		size = VM_IDMAP_END - gpa;
	if (gpa + STUB_CODE_SIZE - lo > (2ull << 30) || (hi > gpa && hi - gpa > (2ull << 30))) {
		msg_fmt(err, errlen,
			"stub probes: guest RAM (--mem) too large to place the stub within "
			"2 GiB of the traced code");
		return -ERANGE;
	}
	ret = map_extra(vm, gpa, size, err, errlen);
	if (ret < 0)
		return ret;
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

/* Every u64 of guest RAM (a context interrupted inside a detour or the stub leaves its RIP on its
 * own stack, wherever in its RAM the guest keeps stacks; the stub's memslot holds none). */
static int kvm_scan_ram(struct target *t, uint64_t lo, uint64_t hi,
			bool (*hit)(void *ctx, uint64_t v, uint64_t next), void *ctx)
{
	const struct vm *vm = t->priv;

	for (uint64_t off = 0; vm->ram_size >= 16 && off <= vm->ram_size - 16; off += 8) {
		uint64_t v, next;

		memcpy(&v, vm->ram + off, 8);
		if (v < lo || v > hi)
			continue;
		memcpy(&next, vm->ram + off + 8, 8);
		if (hit(ctx, v, next))
			return 1;
	}
	return 0;
}

static int kvm_tsc_sync(struct target *t, uint64_t *tsc, uint64_t *ns, uint64_t *khz)
{
	return vm_tsc_sync(t->priv, tsc, ns, khz);
}

static bool kvm_tsc_update(struct target *t)
{
	struct vm *vm = t->priv;

	if (!vm->follow)
		return false;
	tsc_follow_update(vm->follow);
	return true;
}

static bool kvm_tsc_host(struct target *t, unsigned cpu, uint64_t tsc, uint64_t *host)
{
	struct vm *vm = t->priv;

	return vm->follow && tsc_follow_host(vm->follow, cpu, tsc, host);
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
	.tsc_update = kvm_tsc_update,
	.tsc_host = kvm_tsc_host,
	.scan_ram = kvm_scan_ram,
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
	t->arch = arch_get(ARCH_X86_64);
	t->nr_cpus = vm->nr_vcpus;
	t->trampoline = vm->stub_gpa; /* identity-mapped */
	t->stack_shift = VM_STACK_SHIFT;
	/* entry probes run their instruction out of line (step_slots.h), where copies were made */
	t->bp_in_place = vm->step.nr > 0;
	t->priv = vm;
}


/* ---- a Linux guest (linux_pc) ---------------------------------------------------------------- */

#define PMD_SPAN (2ull << 20)
#define APIC_MMIO 0xfec00000ull /* the in-kernel IOAPIC and LAPIC live above */
#define IMAGE_BASE 0xffffffff80000000ull /* __START_KERNEL_map: the kernel image's 1 GiB */
#define IMAGE_END  0xffffffffc0000000ull
#define STUB_PUD   509 /* level3_kernel_pgt's entry for [-3 GiB, -2 GiB): Linux's "unused hole" */
#define STUB_TOP   IMAGE_BASE /* the stub's region ends where the kernel image's space starts */

/* The kernel image runs at its link address (no KASLR: the decompressor never runs), so its 1 GiB
 * is guest-physical = virtual - IMAGE_BASE from before the first instruction to the end; the rest
 * (the direct map, vmalloc, per-CPU areas) through the kernel's own top-level table (kcr3, once
 * known), else vCPU 0's. */
static int klinux_translate(void *ctx, uint64_t gva, uint64_t *gpa)
{
	struct vm *vm = ctx;
	uint64_t cr3 = (vm->kcr3 ? vm->kcr3 : vm->vcpus[0].cr3) & X86_PTE_ADDR;

	if (gva >= IMAGE_BASE && gva < IMAGE_END) {
		*gpa = gva - IMAGE_BASE;
		return 0;
	}
	return x86_translate(vm_read_pte, vm, cr3, false, gva, gpa) < 0 ? -EFAULT : 0;
}

static int klinux_read_kernel(struct target *t, uint64_t gva, void *buf, size_t len)
{
	return arch_copy_virt(gva, buf, len, false, klinux_translate, vm_copy_phys, t->priv);
}

static int klinux_kernel_gpa(struct target *t, uint64_t gva, uint64_t *gpa)
{
	return klinux_translate(t->priv, gva, gpa);
}

/* Every vCPU sees the kernel's addresses the same way: through the kernel's view. */
static int klinux_translate_cpu(struct target *t, unsigned cpu, uint64_t gva, uint64_t *gpa)
{
	(void)cpu;
	return klinux_translate(t->priv, gva, gpa);
}

static void klinux_stub_unmap(struct target *t, const struct target_region *r)
{
	(void)r;
	struct vm *vm = t->priv;
	uint64_t *pud = vm->pud_set ? vm_gpa_ptr(vm, vm->kpud_gpa + 8 * STUB_PUD, 8) : NULL;
	uint8_t *pts = vm->pud_set ? vm_gpa_ptr(vm, LB_STUB_PT_GPA, LB_STUB_PT_SIZE) : NULL;

	if (pud)
		__atomic_store_n(pud, vm->pud_old, __ATOMIC_SEQ_CST);
	if (pts) /* the two pages as the kernel left them */
		memcpy(pts, vm->stub_pt_saved, LB_STUB_PT_SIZE);
	vm->pud_set = false;
	vm_unmap_extra(vm);
}

/* The stub's memory is a memslot above RAM, which the kernel (told of its RAM by e820 only) never
 * uses, mapped at the top of [-3 GiB, -2 GiB) (within CALL reach of the kernel's text) by one entry
 * in level3_kernel_pgt, the table every address space shares from the first instruction on (the
 * early page tables, init_top_pgt, every process's), which Linux leaves empty there. The page
 * directory and page table behind it are two pages of the first MiB (LB_STUB_PT_GPA, saved and put
 * back at unmap): the kernel walks page tables through its direct map, which covers RAM only. The
 * code pages are read-only and executable, everything else writable and not executable (no W+X
 * mapping for the kernel's CONFIG_DEBUG_WX check to find). */
static int klinux_stub_map(struct target *t, uint64_t lo, uint64_t hi, uint64_t min, uint64_t want,
			   struct target_region *out, char *err, size_t errlen)
{
	struct vm *vm = t->priv;
	uint64_t gpa = (vm->ram_size + PMD_SPAN - 1) & ~(PMD_SPAN - 1), size, span, va, pd_gpa, old = 0;
	uint64_t *pd, *pt, *pud;
	unsigned npde, first;
	int ret;

	size = (want < min ? min : want);
	size = (size + X86_PAGE_SIZE - 1) & ~(X86_PAGE_SIZE - 1);
	if (size > VM_STUB_PDES * PMD_SPAN)
		size = VM_STUB_PDES * PMD_SPAN;
	span = (size + PMD_SPAN - 1) & ~(PMD_SPAN - 1);
	pd_gpa = LB_STUB_PT_GPA;
	if (size < min || gpa + span > APIC_MMIO || !vm->kpud_gpa) {
		msg_fmt(err, errlen, "stub probes: %s",
			!vm->kpud_gpa ? "the kernel's level3_kernel_pgt is not known"
				      : "no room for the stub between guest RAM and the APICs "
					"(lower --mem)");
		return -ENOSPC;
	}
	npde = (unsigned)(span / PMD_SPAN);
	va = STUB_TOP - span;
	if ((lo < va + STUB_CODE_SIZE && va + STUB_CODE_SIZE - lo > (2ull << 30)) ||
	    (hi > va && hi - va > (2ull << 30))) {
		msg_fmt(err, errlen, "stub probes: 0x%llx is not within 2 GiB of the traced code",
			(unsigned long long)va);
		return -ERANGE;
	}
	if (vm_read_pte(vm, vm->kpud_gpa + 8 * STUB_PUD, &old) < 0 || (old & X86_PTE_P)) {
		msg_fmt(err, errlen,
			"stub probes: the kernel maps 0x%llx already (level3_kernel_pgt[%d] is "
			"0x%llx)",
			(unsigned long long)va, STUB_PUD, (unsigned long long)old);
		return -ENOSPC;
	}
	ret = map_extra(vm, gpa, span, err, errlen);
	if (ret < 0)
		return ret;
	pd = vm_gpa_ptr(vm, pd_gpa, X86_PAGE_SIZE);
	pt = vm_gpa_ptr(vm, pd_gpa + X86_PAGE_SIZE, X86_PAGE_SIZE);
	pud = vm_gpa_ptr(vm, vm->kpud_gpa + 8 * STUB_PUD, 8);
	if (!pd || !pt || !pud) {
		vm_unmap_extra(vm);
		msg_fmt(err, errlen, "stub probes: the stub's page tables are not addressable");
		return -EFAULT;
	}
	memcpy(vm->stub_pt_saved, pd, X86_PAGE_SIZE);
	memcpy(vm->stub_pt_saved + X86_PAGE_SIZE, pt, X86_PAGE_SIZE);
	first = 512 - npde; /* va's index in its page directory */
	memset(pd, 0, X86_PAGE_SIZE);
	pd[first] = stub_pt_table_entry(pd_gpa + X86_PAGE_SIZE);
	for (unsigned i = 1; i < npde; i++)
		pd[first + i] = stub_pt_large_entry(gpa + i * PMD_SPAN, true);
	/* the code's pages (STUB_CODE_OFF, STUB_CODE_SIZE), never written by the guest; the rest data,
	 * not code */
	stub_pt_fill(pt, gpa, STUB_PT_ENTRIES, 0, 0, true);
	vm->pud_old = old;
	vm->pud_set = true;
	__atomic_store_n(pud, stub_pt_table_entry(pd_gpa), __ATOMIC_SEQ_CST);
	*out = (struct target_region){.gva = va, .gpa = gpa, .size = size, .where = "memslot"};
	return 0;
}

static struct target_ops klinux_ops;

void target_kvm_linux_init(struct target *t, struct vm *vm)
{
	target_kvm_init(t, vm);
	klinux_ops = kvm_ops;
	klinux_ops.stub_map = klinux_stub_map;
	klinux_ops.stub_unmap = klinux_stub_unmap;
	klinux_ops.read_kernel = klinux_read_kernel;
	klinux_ops.kernel_gpa = klinux_kernel_gpa;
	klinux_ops.translate = klinux_translate_cpu;
	t->ops = &klinux_ops;
	t->name = "kvm-linux";
	t->arch = arch_get(ARCH_X86_64);
	t->trampoline = 0;
	t->stack_shift = 14; /* x86_64 THREAD_SIZE */
	vm->kcr3 = 0;
	vm->kpud_gpa = 0;
	vm->pud_set = false;
}

int target_kvm_linux_tables(struct target *t, uint64_t init_top_pgt, uint64_t level3_kernel_pgt)
{
	struct vm *vm = t->priv;
	uint64_t top, pud;

	if (klinux_translate(vm, init_top_pgt, &top) < 0 ||
	    klinux_translate(vm, level3_kernel_pgt, &pud) < 0 || (top | pud) & (X86_PAGE_SIZE - 1) ||
	    !vm_gpa_ptr(vm, top, X86_PAGE_SIZE) || !vm_gpa_ptr(vm, pud, X86_PAGE_SIZE))
		return -EINVAL;
	vm->kcr3 = top;
	vm->kpud_gpa = pud;
	return 0;
}

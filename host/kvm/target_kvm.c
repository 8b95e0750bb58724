#include "host/kvm/target_kvm.h"
#include "host/kvm/vcpu.h"
#include "arch/x86/x86_insn.h"

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


#include "host/vmmpid/target_vmmpid.h"
#include "host/vmm/kvm_inject.h"
#include "arch/arch.h"
#include "arch/arch_tlb.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define PTI_USER_BIT 0x1000ull
#define KERNEL_HALF  0xffff800000000000ull
#define CR4_LA57     (1ull << 12)
#define EFER_NXE     (1ull << 11)

static struct target_vmmpid *tv(struct target *t)
{
	return (struct target_vmmpid *)t;
}

static int read_pte(void *ctx, uint64_t gpa, uint64_t *pte)
{
	const struct target_vmmpid *q = ctx;

	return proc_mem_read(q->mem, gpa, pte, 8);
}

static int copy_phys(void *ctx, uint64_t gpa, void *buf, size_t len, bool write)
{
	const struct target_vmmpid *q = ctx;

	return write ? proc_mem_write(q->mem, gpa, buf, len) : proc_mem_read(q->mem, gpa, buf, len);
}

/* @gva through table root @root: the kernel half of a PTI pair for a kernel address. */
static int walk(const struct target_vmmpid *q, uint64_t root, unsigned mode, uint64_t gva,
		uint64_t *gpa)
{
	const struct arch *a = arch_get(ARCH_X86_64);
	int ret = a->translate(read_pte, (void *)q, root, mode, gva, gpa);

	if (ret < 0 && gva >= KERNEL_HALF && (root & PTI_USER_BIT))
		ret = a->translate(read_pte, (void *)q, root & ~PTI_USER_BIT, mode, gva, gpa);
	return ret;
}

static int kernel_walk(void *ctx, uint64_t gva, uint64_t *gpa)
{
	const struct target_vmmpid *q = ctx;

	return walk(q, q->kcr3, q->kmode, gva, gpa);
}

int target_vmmpid_read_kernel(void *ctx, uint64_t gva, void *buf, size_t len)
{
	return arch_copy_virt(gva, buf, len, false, kernel_walk, copy_phys, ctx);
}

static int op_read_kernel(struct target *t, uint64_t gva, void *buf, size_t len)
{
	return target_vmmpid_read_kernel(tv(t), gva, buf, len);
}

static int op_kernel_gpa(struct target *t, uint64_t gva, uint64_t *gpa)
{
	return kernel_walk(tv(t), gva, gpa);
}

/* A vCPU's view: its CR3 as at the last pause (every vCPU's registers are read at each). */
struct vref {
	struct target_vmmpid *q;
	unsigned cpu;
};

static int cpu_walk(void *ctx, uint64_t gva, uint64_t *gpa)
{
	const struct vref *r = ctx;
	const struct vmmpid_cpu *c = &r->q->vm->cpu[r->cpu];

	return walk(r->q, c->cr3 & ~0xfffull & 0x000ffffffffff000ull, (c->cr4 & CR4_LA57) != 0, gva,
		    gpa);
}

static int cpu_copy(void *ctx, uint64_t gpa, void *buf, size_t len, bool write)
{
	const struct vref *r = ctx;

	return copy_phys(r->q, gpa, buf, len, write);
}

static int op_access_virt(struct target *t, unsigned cpu, uint64_t gva, void *buf, size_t len,
			  bool write)
{
	struct vref r = {tv(t), cpu};

	if (cpu >= t->nr_cpus)
		return -EFAULT;
	return arch_copy_virt(gva, buf, len, write, cpu_walk, cpu_copy, &r);
}

static int op_read_virt(struct target *t, unsigned cpu, uint64_t gva, void *buf, size_t len)
{
	return op_access_virt(t, cpu, gva, buf, len, false);
}

static int op_write_virt(struct target *t, unsigned cpu, uint64_t gva, const void *buf, size_t len)
{
	return op_access_virt(t, cpu, gva, (void *)buf, len, true);
}

static int op_translate(struct target *t, unsigned cpu, uint64_t gva, uint64_t *gpa)
{
	struct vref r = {tv(t), cpu};

	if (cpu >= t->nr_cpus)
		return -EFAULT;
	return cpu_walk(&r, gva, gpa) < 0 ? -EFAULT : 0;
}

/* No breakpoint: a foreign VMM handles no KVM_EXIT_DEBUG (trap probes are refused before any
 * probe, pipeline_guest's no_trap). The return trampoline's is the one asked for: only a trap
 * probe's hooked return would ever lead there, and there is none, so it is accepted and nothing
 * is written (stub probes' returns go through the stub's own return routine). */
static int op_insert_bp(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig)
{
	(void)gpa, (void)orig;
	return gva && gva == t->trampoline ? 0 : -ENOTSUP;
}

static int op_remove_bp(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig)
{
	(void)gpa, (void)orig;
	return gva && gva == t->trampoline ? 0 : -ENOTSUP;
}

static int op_pause(struct target *t)
{
	struct target_vmmpid *q = tv(t);
	int ret;

	if (q->paused++)
		return 0;
	ret = vmmpid_vm_hold(q->vm, q->err, sizeof(q->err));
	if (ret < 0)
		q->paused = 0;
	return ret;
}

static void op_resume(struct target *t)
{
	struct target_vmmpid *q = tv(t);

	if (!q->paused || --q->paused)
		return;
	vmmpid_vm_release(q->vm);
}

static int op_run_for(struct target *t, unsigned us)
{
	struct target_vmmpid *q = tv(t);
	struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
	int ret;

	if (!q->vm->held)
		return -EINVAL;
	vmmpid_vm_release(q->vm);
	nanosleep(&ts, NULL);
	ret = vmmpid_vm_hold(q->vm, q->err, sizeof(q->err));
	if (ret < 0)
		q->paused = 0;
	return ret;
}

static int op_get_regs(struct target *t, unsigned cpu, struct arch_regs *regs)
{
	struct target_vmmpid *q = tv(t);

	if (cpu >= t->nr_cpus || !q->vm->held)
		return -EINVAL;
	_Static_assert(sizeof(struct kvm_regs) == 18 * 8, "kvm_regs is x86's 18 registers");
	memset(regs, 0, sizeof(*regs));
	memcpy(regs->r, &q->vm->cpu[cpu].regs, sizeof(struct kvm_regs));
	return 0;
}

/* Only RIP is ever changed by the tracer: KVM_SET_REGS with the rest as read at this pause. */
static int op_set_regs(struct target *t, unsigned cpu, const struct arch_regs *regs)
{
	struct target_vmmpid *q = tv(t);
	struct kvm_regs kr;
	int ret;

	if (cpu >= t->nr_cpus || !q->vm->held)
		return -EINVAL;
	memcpy(&kr, regs->r, sizeof(kr));
	if (!memcmp(&kr, &q->vm->cpu[cpu].regs, sizeof(kr)))
		return 0;
	ret = ptrace_inject_select(&q->vm->pi, q->vm->inject_tid, q->err, sizeof(q->err));
	if (ret == 0)
		ret = kvm_inject_set_regs(&q->vm->pi, q->vm->kp.vcpu[cpu].fd, &kr, q->err,
					  sizeof(q->err));
	ptrace_inject_restore(&q->vm->pi);
	if (ret == 0) {
		q->vm->cpu[cpu].regs = kr;
		q->set_regs++;
	}
	return ret;
}

static void op_set_bp_handler(struct target *t, target_bp_fn fn, void *ctx)
{
	(void)t, (void)fn, (void)ctx; /* no breakpoint ever hits */
}

static int op_read_phys(struct target *t, uint64_t gpa, void *buf, size_t len)
{
	return proc_mem_read(tv(t)->mem, gpa, buf, len);
}

static int op_write_phys(struct target *t, uint64_t gpa, const void *buf, size_t len)
{
	return proc_mem_write(tv(t)->mem, gpa, buf, len);
}

/* KVM runs the guest on the VMM's own pages: a write there is what every vCPU executes next (each
 * re-enters the guest through a serializing VM entry). Only while paused. */
static int op_write_text(struct target *t, uint64_t gpa, const void *expect, const void *buf,
			 size_t len)
{
	struct target_vmmpid *q = tv(t);
	uint8_t now[64];

	if (!q->vm->held)
		return -EINVAL;
	if (len > sizeof(now) || (gpa & 4095) + len > 4096)
		return -EFAULT;
	if (proc_mem_read(q->mem, gpa, now, len) < 0)
		return -EFAULT;
	if (memcmp(now, expect, len))
		return -ESTALE;
	if (q->journal && write_journal_note(q->journal, gpa, now, buf, len) < 0)
		return -ENOSPC;
	return proc_mem_write(q->mem, gpa, buf, len);
}

static int stub_mem_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	const struct target_vmmpid *q = ctx;

	return proc_mem_read(q->mem, gpa, buf, len);
}

/* The stub's page-table writes, logged first when a journal is kept. */
static int stub_mem_write(void *ctx, uint64_t gpa, const void *buf, size_t len)
{
	const struct target_vmmpid *q = ctx;
	uint8_t old[WRITE_JOURNAL_WRITE_MAX];

	if (q->journal) {
		if (len > sizeof(old) || proc_mem_read(q->mem, gpa, old, len) < 0)
			return -EFAULT;
		if (write_journal_note(q->journal, gpa, old, buf, len) < 0)
			return -ENOSPC;
	}
	return proc_mem_write(q->mem, gpa, buf, len);
}

static struct stub_map_mem stub_mem(struct target_vmmpid *q)
{
	return (struct stub_map_mem){stub_mem_read, stub_mem_write, q};
}

static int kernel_pt(void *ctx, uint64_t *cr3, bool *la57)
{
	const struct target_vmmpid *q = ctx;

	*cr3 = q->kcr3 & ~PTI_USER_BIT;
	*la57 = q->kmode != 0;
	return 0;
}

/* With a journal, the stub's pages as they were are logged as taken (the writes there, the stub's
 * and the guest's, need no entries of their own) before hvtrace writes there: the mapper kept
 * them. */
static int op_stub_map(struct target *t, uint64_t lo, uint64_t hi, uint64_t min, uint64_t want,
		       struct target_region *out, char *err, size_t errlen)
{
	struct target_vmmpid *q = tv(t);
	struct stub_map_mem mem = stub_mem(q);
	int ret =
	    stub_map_map(&q->stub, &mem, NULL, kernel_pt, q, lo, hi, min, want, out, err, errlen);

	for (uint64_t off = 0; ret == 0 && q->journal && off < q->stub.saved_len;
	     off += WRITE_JOURNAL_WRITE_MAX) {
		uint64_t n = q->stub.saved_len - off < WRITE_JOURNAL_WRITE_MAX
				 ? q->stub.saved_len - off
				 : WRITE_JOURNAL_WRITE_MAX;

		ret = write_journal_note_taken(q->journal, q->stub.saved_gpa + off,
					       q->stub.saved + off, (size_t)n);
		if (ret < 0) {
			/* unlogged (the journal is full): the put-back makes no new state */
			struct write_journal *j = q->journal;

			q->journal = NULL;
			stub_map_unmap(&q->stub, &mem);
			q->journal = j;
			msg_fmt(err, errlen, "stub probes: the patch hold's journal is full");
		}
	}
	return ret;
}

static int op_stub_protect(struct target *t, const struct target_region *r, uint64_t exec_off,
			   uint64_t exec_len)
{
	struct target_vmmpid *q = tv(t);
	struct stub_map_mem mem = stub_mem(q);

	(void)r;
	if (!(q->vm->cpu[0].efer & EFER_NXE))
		return 0; /* no NX in this guest */
	return stub_map_protect(&q->stub, &mem, exec_off, exec_len);
}

static void op_stub_unmap(struct target *t, const struct target_region *r)
{
	struct target_vmmpid *q = tv(t);
	struct stub_map_mem mem = stub_mem(q);

	(void)r;
	stub_map_unmap(&q->stub, &mem);
}

static int op_scan_ram(struct target *t, uint64_t lo, uint64_t hi,
		       bool (*hit)(void *ctx, uint64_t v, uint64_t next), void *ctx)
{
	return proc_mem_scan(tv(t)->mem, lo, hi, hit, ctx);
}

static const struct target_ops vmmpid_target_ops = {
    .read_virt = op_read_virt,
    .write_virt = op_write_virt,
    .translate = op_translate,
    .insert_bp = op_insert_bp,
    .remove_bp = op_remove_bp,
    .pause = op_pause,
    .resume = op_resume,
    .run_for = op_run_for,
    .get_regs = op_get_regs,
    .set_regs = op_set_regs,
    .set_bp_handler = op_set_bp_handler,
    .read_phys = op_read_phys,
    .write_phys = op_write_phys,
    .stub_map = op_stub_map,
    .stub_protect = op_stub_protect,
    .stub_unmap = op_stub_unmap,
    .write_text = op_write_text,
    .read_kernel = op_read_kernel,
    .kernel_gpa = op_kernel_gpa,
    .scan_ram = op_scan_ram,
};

void target_vmmpid_init(struct target_vmmpid *q, struct vmmpid_vm *vm, const struct proc_mem *mem,
			uint64_t kcr3, unsigned kmode)
{
	memset(q, 0, sizeof(*q));
	q->t.ops = &vmmpid_target_ops;
	q->t.name = "vmm";
	q->t.arch = arch_get(ARCH_X86_64);
	q->t.nr_cpus = vm->nr_cpus;
	q->t.priv = q;
	q->vm = vm;
	q->mem = mem;
	q->kcr3 = kcr3;
	q->kmode = kmode;
}

void target_vmmpid_set_stub_area(struct target_vmmpid *q, uint64_t lo, uint64_t hi, uint64_t va)
{
	stub_map_set_area(&q->stub, lo, hi, va, 0, 0);
}

#include "host/qemu/target_qemu.h"
#include "host/vmm/tcp.h"
#include "host/vmm/gdb_target_desc.h"
#include "host/vmm/stub_map_arm64.h"
#include "arch/arch.h"
#include "arch/arch_tlb.h"
#include "host/trace/clock.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KERNEL_HALF  0xffff800000000000ull
#define PTI_USER_BIT 0x1000ull /* PTI: the user PGD is the kernel PGD + 4 KiB */
#define POLL_MS	     50

static struct target_qemu *tq(struct target *t)
{
	return (struct target_qemu *)t;
}

/* Guest-physical memory: through the QEMU process when it could be opened, else through the gdbstub
 * in physical-address mode (the VM is stopped whenever this runs). */
static int phys_access(struct target_qemu *q, uint64_t gpa, void *buf, size_t len, bool write)
{
	if (q->mem.fd >= 0)
		return write ? proc_mem_write(&q->mem, gpa, buf, len)
			     : proc_mem_read(&q->mem, gpa, buf, len);
	if (write)
		return gdb_write_mem(q->vm.gdb, 0, gpa, buf, len) < 0 ? -EFAULT : 0;
	return gdb_read_mem(q->vm.gdb, 0, gpa, buf, len) < 0 ? -EFAULT : 0;
}

static int read_pte(void *ctx, uint64_t gpa, uint64_t *pte)
{
	return phys_access(ctx, gpa, pte, 8, false);
}

/* A vCPU of the target, the context of the translation callbacks. */
struct vcpu_ref {
	struct target_qemu *q;
	unsigned cpu;
};

/* Guest-physical address of @gva as the vCPU sees it; for kernel addresses seen from a PTI user
 * page table, through the kernel half of the pair. */
static int walk(void *ctx, uint64_t gva, uint64_t *gpa)
{
	const struct vcpu_ref *r = ctx;
	const struct arch *a = target_arch(&r->q->t);
	struct qemu_cpu *c = &r->q->vm.cpu[r->cpu];
	unsigned mode;
	uint64_t root;
	int ret;

	a->walk_root(c->sys, gva, &root, &mode);
	ret = a->translate(read_pte, r->q, root, mode, gva, gpa);
	if (ret < 0 && a == arch_get(ARCH_X86_64) && gva >= KERNEL_HALF && (root & PTI_USER_BIT))
		ret = a->translate(read_pte, r->q, root & ~PTI_USER_BIT, mode, gva, gpa);
	return ret;
}

/* The same through the vCPU's translation cache. */
static int translate(void *ctx, uint64_t gva, uint64_t *gpa)
{
	const struct vcpu_ref *r = ctx;
	struct qemu_cpu *c = &r->q->vm.cpu[r->cpu];

	return arch_tlb_translate(&c->tlb, c->cr3, gva, walk, ctx, gpa);
}

/* Kernel addresses through the page tables stub_map captured. */
static int translate_kernel(void *ctx, uint64_t gva, uint64_t *gpa)
{
	const struct vcpu_ref *r = ctx;

	return target_arch(&r->q->t)->translate(read_pte, r->q, r->q->kcr3, r->q->kmode, gva, gpa);
}

static int copy_phys(void *ctx, uint64_t gpa, void *buf, size_t len, bool write)
{
	const struct vcpu_ref *r = ctx;

	return phys_access(r->q, gpa, buf, len, write);
}

/* Guest-virtual memory of vCPU @cpu (its page tables), the VM stopped. 0 or -errno. */
static int access_virt(struct target_qemu *q, unsigned cpu, uint64_t gva, void *buf, size_t len,
		       bool write)
{
	struct vcpu_ref r = {q, cpu};

	if (cpu >= q->t.nr_cpus || !q->vm.stopped || qemu_vm_cpu_regs(&q->vm, cpu) < 0)
		return -EFAULT;
	return arch_copy_virt(gva, buf, len, write, translate, copy_phys, &r);
}

static int qemu_read_virt(struct target *t, unsigned cpu, uint64_t gva, void *buf, size_t len)
{
	return access_virt(tq(t), cpu, gva, buf, len, false);
}

/* Data only (return slots): TCG would not see code written this way. */
static int qemu_write_virt(struct target *t, unsigned cpu, uint64_t gva, const void *buf,
			   size_t len)
{
	return access_virt(tq(t), cpu, gva, (void *)buf, len, true);
}

static int qemu_translate(struct target *t, unsigned cpu, uint64_t gva, uint64_t *gpa)
{
	struct target_qemu *q = tq(t);
	struct vcpu_ref r = {q, cpu};

	if (cpu >= q->t.nr_cpus || !q->vm.stopped || qemu_vm_cpu_regs(&q->vm, cpu) < 0 ||
	    translate(&r, gva, gpa) < 0)
		return -EFAULT;
	return 0;
}

/* Whether vCPU @cpu's own page tables (as QEMU walks them: no PTI fallback) map @gva to @gpa. */
static bool cpu_maps(struct target_qemu *q, unsigned cpu, uint64_t gva, uint64_t gpa)
{
	const struct arch *a = target_arch(&q->t);
	struct vcpu_ref r = {q, cpu};
	uint64_t root, at;
	unsigned mode;

	if (qemu_vm_cpu_regs(&q->vm, cpu) < 0)
		return false;
	a->walk_root(q->vm.cpu[cpu].sys, gva, &root, &mode);
	return a->translate(read_pte, r.q, root, mode, gva, &at) == 0 && at == gpa;
}

/* QEMU's gdbstub under KVM writes (and takes back) a Z0's INT3 through the page tables of its
 * current CPU, c_cpu. A stop without a hit leaves that wherever QEMU put it: QEMU 10.0 and 11 name
 * the last vCPU in an interrupt stop, and while Linux boots that one has not been started yet
 * (paging off), so Z0 got E22 there where 7.2's stop named vCPU 0. The breakpoint goes through a
 * vCPU whose own page tables map @gva to @gpa: the current one if it does, else the first. */
static int select_bp_cpu(struct target_qemu *q, uint64_t gva, uint64_t gpa)
{
	struct gdb *g = q->vm.gdb;

	for (unsigned i = 0; i < q->t.nr_cpus; i++)
		if (q->vm.cpu[i].thread == g->bp_thread && cpu_maps(q, i, gva, gpa))
			return 0;
	for (unsigned i = 0; i < q->t.nr_cpus; i++)
		if (cpu_maps(q, i, gva, gpa))
			return gdb_select_bp_thread(g, q->vm.cpu[i].thread);
	return 0; /* none does (an address hvtrace mapped otherwise): QEMU's answer says */
}

/* A gdbstub breakpoint changes no guest byte: the one at @gpa is only checked to be still @orig.
 * The VM is stopped (attach, or a hit being handled). */
static int qemu_insert_bp(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig)
{
	struct target_qemu *q = tq(t);
	uint8_t now;
	int ret;

	if (!q->vm.stopped || phys_access(q, gpa, &now, 1, false) < 0)
		return -EFAULT;
	if (now != orig)
		return -ESTALE;
	ret = select_bp_cpu(q, gva, gpa);
	return ret ? ret : gdb_insert_bp(q->vm.gdb, gva);
}

/* QEMU owns the breakpoint and never wrote the guest's byte: nothing there to check or put back
 * (under KVM QEMU takes its INT3 back through its current CPU, chosen as for the insert). */
static int qemu_remove_bp(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig)
{
	struct target_qemu *q = tq(t);
	int ret = q->vm.stopped ? select_bp_cpu(q, gva, gpa) : 0;

	(void)orig;
	return ret ? ret : gdb_remove_bp(q->vm.gdb, gva);
}

/* The VM is stopped whenever the tracer runs (hits are handled at a stop); pausing makes sure of
 * it. */
static int qemu_pause(struct target *t)
{
	return qemu_vm_stop(&tq(t)->vm);
}

static void qemu_resume(struct target *t)
{
	(void)t; /* target_qemu_run continues the VM */
}

/* A short run of the stopped VM (a detach waiting for vCPUs to leave the stub): continue, about
 * @us (a millisecond at the least), interrupt. */
static int qemu_run_for(struct target *t, unsigned us)
{
	struct target_qemu *q = tq(t);
	int ms = (int)((us + 999) / 1000);

	return qemu_vm_run_for(&q->vm, ms ? ms : 1);
}

static int qemu_get_regs(struct target *t, unsigned cpu, struct arch_regs *regs)
{
	struct target_qemu *q = tq(t);
	int ret;

	if (cpu >= q->t.nr_cpus || !q->vm.stopped)
		return -EINVAL;
	ret = qemu_vm_cpu_regs(&q->vm, cpu);
	if (ret == 0)
		*regs = q->vm.cpu[cpu].regs;
	return ret;
}

/* Only RIP is ever changed by the tracer: that is what is written back. */
static int qemu_set_regs(struct target *t, unsigned cpu, const struct arch_regs *regs)
{
	struct target_qemu *q = tq(t);
	const struct arch *a;
	int ret;

	if (cpu >= q->t.nr_cpus || !q->vm.stopped)
		return -EINVAL;
	ret = qemu_vm_cpu_regs(&q->vm, cpu);
	if (ret < 0)
		return ret;
	a = target_arch(t);
	if (arch_regs_ip(a, regs) == arch_regs_ip(a, &q->vm.cpu[cpu].regs))
		return 0; /* also when that RIP is still to be sent: it goes out with the continue */
	ret = gdb_write_reg(q->vm.gdb, q->vm.cpu[cpu].thread, a->gdb->pc, arch_regs_ip(a, regs));
	if (ret == 0) {
		arch_regs_set_ip(a, &q->vm.cpu[cpu].regs, arch_regs_ip(a, regs));
		q->vm.cpu[cpu].rip_dirty = false;
	}
	return ret;
}

static void qemu_set_bp_handler(struct target *t, target_bp_fn fn, void *ctx)
{
	tq(t)->bp = fn;
	tq(t)->bp_ctx = ctx;
}

/* ---- stub probes (host/vmm/stub_map) --------------------------------------------------------- */

static int stub_mem_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	return proc_mem_read(ctx, gpa, buf, len);
}

static int stub_mem_write(void *ctx, uint64_t gpa, const void *buf, size_t len)
{
	return proc_mem_write(ctx, gpa, buf, len);
}

/* The stub's memory and page tables through the QEMU process (stub_map_map requires it). */
static struct stub_map_mem stub_mem(struct target_qemu *q)
{
	return (struct stub_map_mem){stub_mem_read, stub_mem_write, &q->mem};
}

/* The kernel's page tables, vCPU 0's at this stop: captured for read_kernel and stub_map. */
static int capture_kernel_pt(void *ctx, uint64_t *cr3, bool *la57)
{
	struct target_qemu *q = ctx;
	int ret = qemu_vm_cpu_regs(&q->vm, 0);

	if (ret < 0)
		return ret;
	q->kcr3 = q->vm.cpu[0].cr3 & ~PTI_USER_BIT & X86_PTE_ADDR;
	q->kmode = (q->vm.cpu[0].cr4 & X86_CR4_LA57) != 0;
	*cr3 = q->kcr3;
	*la57 = q->kmode;
	return 0;
}

/* arm64: the kernel half's tables (TTBR1_EL1) and their walk (TCR_EL1), vCPU 0's at this stop,
 * captured for read_kernel and the stub's map. */
static int capture_kernel_pt_arm64(struct target_qemu *q)
{
	const struct arch *a = target_arch(&q->t);
	int ret = qemu_vm_cpu_regs(&q->vm, 0);

	if (ret < 0)
		return ret;
	a->walk_root(q->vm.cpu[0].sys, a->kernel_half, &q->kcr3, &q->kmode);
	return q->kmode ? 0 : -EINVAL;
}

int target_qemu_stub_arm64_perm(struct target_qemu *q, char *why, size_t whylen)
{
	const struct gdb *g = q->vm.gdb;
	struct stub_map_arm64_regs r = {0};
	uint64_t *val[ARM64_ONCE_NR] = {&r.tcr2, &r.pir, &r.pire0, &r.gcscr, &r.mmfr3};
	bool *has[ARM64_ONCE_NR] = {&r.has_tcr2, &r.has_pir, &r.has_pire0, &r.has_gcscr,
				    &r.has_mmfr3};

	if (target_arch(&q->t) != arch_get(ARCH_ARM64))
		return 0;
	if (!q->s1perm_state) {
		if (!q->vm.stopped || !q->vm.nr_cpus)
			return 1;
		/* vCPU 0's: the kernel sets them alike on every CPU at boot */
		for (unsigned i = 0; i < ARM64_ONCE_NR; i++)
			*has[i] = g->once_regno[i] >= 0 &&
				  gdb_read_reg(q->vm.gdb, q->vm.cpu[0].thread,
					       (unsigned)g->once_regno[i], val[i]) == 0;
		q->s1perm_state = stub_map_arm64_perm(&r, &q->s1perm, q->s1perm_why,
						      sizeof(q->s1perm_why)) < 0
				      ? -ENOTSUP
				      : 1;
	}
	if (q->s1perm_state < 0) {
		msg_fmt(why, whylen, "%s", q->s1perm_why);
		return -ENOTSUP;
	}
	return 0;
}

static int qemu_stub_map_op(struct target *t, uint64_t lo, uint64_t hi, uint64_t min, uint64_t want,
			    struct target_region *out, char *err, size_t errlen)
{
	struct target_qemu *q = tq(t);
	struct stub_map_mem mem = stub_mem(q);
	int ret;

	if (q->mem.fd < 0) {
		msg_fmt(err, errlen,
			"stub probes: guest memory must be readable through the QEMU "
			"process (not --gdb-memory)");
		return -ENOTSUP;
	}
	if (target_arch(t) == arch_get(ARCH_ARM64)) {
		if (capture_kernel_pt_arm64(q) < 0) {
			msg_fmt(err, errlen, "stub probes: cannot read the kernel's TTBR1_EL1/TCR_EL1");
			return -EFAULT;
		}
		ret = target_qemu_stub_arm64_perm(q, err, errlen);
		if (ret) {
			if (ret > 0)
				msg_fmt(err, errlen, "stub probes: the guest's system registers "
						     "cannot be read (the VM runs)");
			return ret > 0 ? -EAGAIN : ret;
		}
		return stub_map_arm64_map(&q->stub, &mem, q->kcr3, q->kmode, &q->s1perm, lo, hi,
					  min, want, out, err, errlen);
	}
	return stub_map_map(&q->stub, &mem, q->stub_low_why, capture_kernel_pt, q, lo, hi, min,
			    want, out, err, errlen);
}

#define EFER_NXE (1ull << 11)

static int qemu_stub_protect_op(struct target *t, const struct target_region *r, uint64_t exec_off,
				uint64_t exec_len)
{
	struct target_qemu *q = tq(t);
	struct stub_map_mem mem = stub_mem(q);
	int ret = qemu_vm_cpu_regs(&q->vm, 0);

	(void)r;
	if (ret < 0)
		return ret;
	if (target_arch(t) != arch_get(ARCH_X86_64))
		return 0; /* arm64: 2 MiB blocks, the first (code, header, ring headers) as placed */
	if (!(q->vm.cpu[0].efer & EFER_NXE))
		return 0; /* no NX in this guest: nothing can be made non-executable */
	return stub_map_protect(&q->stub, &mem, exec_off, exec_len);
}

static void qemu_stub_unmap_op(struct target *t, const struct target_region *r)
{
	struct target_qemu *q = tq(t);
	struct stub_map_mem mem = stub_mem(q);

	(void)r;
	stub_map_unmap(&q->stub, &mem);
}

/* Through the QEMU process from any thread; with --gdb-memory through the gdbstub, only while the
 * VM is stopped (the main thread's). */
static int qemu_read_phys(struct target *t, uint64_t gpa, void *buf, size_t len)
{
	struct target_qemu *q = tq(t);

	if (q->mem.fd < 0 && !q->vm.stopped)
		return -EFAULT;
	return phys_access(q, gpa, buf, len, false);
}

static int qemu_write_phys(struct target *t, uint64_t gpa, const void *buf, size_t len)
{
	struct target_qemu *q = tq(t);

	if (q->mem.fd < 0 && !q->vm.stopped)
		return -EFAULT;
	return phys_access(q, gpa, (void *)buf, len, true);
}

/* Checks and writes text, the gdbstub's waits with their deadlines but no stop. */
static int write_text_whole(struct target_qemu *q, uint64_t gpa, const void *expect,
			    const void *buf, size_t len)
{
	uint8_t now[16];

	if (phys_access(q, gpa, now, len, false) < 0)
		return -EFAULT;
	if (memcmp(now, expect, len))
		return -ESTALE;
	if (!q->phys_mode) {
		if (gdb_set_phys_mode(q->vm.gdb, true) < 0)
			return -ENOTSUP;
		q->phys_mode = true;
	}
	return gdb_write_mem(q->vm.gdb, 0, gpa, buf, len) < 0 ? -EIO : 0;
}

/* Test hook: with $HVTRACE_TEST_SIGINT_AT_TEXT_WRITE=N, hvtrace sends itself a SIGINT once N text
 * writes are done (a Ctrl-C in the middle of a stub attach, at a site a test chooses). */
static void sigint_hook(void)
{
	static long at = -1, done;

	if (at < 0) {
		const char *env = getenv("HVTRACE_TEST_SIGINT_AT_TEXT_WRITE");

		at = env ? strtol(env, NULL, 10) : 0;
	}
	if (at > 0 && ++done == at)
		kill(getpid(), SIGINT);
}

/* Through the gdbstub at the physical address: QEMU then drops translated code of those bytes. A
 * write a stop cut short would still be carried out by QEMU, after hvtrace took it for failed and
 * maybe after it read the bytes again: so once a stop is asked text writes are refused (-EINTR,
 * nothing sent), and one under way waits for its reply whatever comes. */
static int qemu_write_text(struct target *t, uint64_t gpa, const void *expect, const void *buf,
			   size_t len)
{
	struct target_qemu *q = tq(t);
	int fd = tcp_interrupt_fd(), ret;

	if (!q->vm.stopped || len > 16 || ((gpa ^ (gpa + len - 1)) & ~(X86_PAGE_SIZE - 1)))
		return -EFAULT;
	if (tcp_interrupted())
		return -EINTR;
	tcp_set_interrupt(-1);
	ret = write_text_whole(q, gpa, expect, buf, len);
	tcp_set_interrupt(fd);
	if (ret == 0)
		sigint_hook();
	return ret;
}

static int qemu_read_kernel(struct target *t, uint64_t gva, void *buf, size_t len)
{
	struct vcpu_ref r = {tq(t), 0};

	if (!r.q->kcr3 || r.q->mem.fd < 0 ||
	    arch_copy_virt(gva, buf, len, false, translate_kernel, copy_phys, &r) < 0)
		return -EFAULT;
	return 0;
}

static int qemu_kernel_gpa(struct target *t, uint64_t gva, uint64_t *gpa)
{
	struct vcpu_ref r = {tq(t), 0};

	if (!r.q->kcr3 || translate_kernel(&r, gva, gpa) < 0)
		return -EFAULT;
	return 0;
}

void target_qemu_set_stub_area(struct target_qemu *q, uint64_t phys_lo, uint64_t phys_hi,
			       uint64_t va, uint64_t resv_gpa, uint64_t resv_size)
{
	stub_map_set_area(&q->stub, phys_lo, phys_hi, va, resv_gpa, resv_size);
}

uint64_t target_qemu_stub_reserve(uint64_t region)
{
	return stub_map_reserve(region);
}

uint64_t target_qemu_stub_gpa(const struct target_qemu *q)
{
	return stub_map_gpa(&q->stub);
}

static int qemu_scan_ram(struct target *t, uint64_t lo, uint64_t hi,
			 bool (*hit)(void *ctx, uint64_t v, uint64_t next), void *ctx)
{
	return proc_mem_scan(&tq(t)->mem, lo, hi, hit, ctx);
}

static const struct target_ops qemu_ops = {
    .scan_ram = qemu_scan_ram,
    .stub_map = qemu_stub_map_op,
    .stub_protect = qemu_stub_protect_op,
    .stub_unmap = qemu_stub_unmap_op,
    .read_phys = qemu_read_phys,
    .write_phys = qemu_write_phys,
    .write_text = qemu_write_text,
    .read_kernel = qemu_read_kernel,
    .kernel_gpa = qemu_kernel_gpa,
    .read_virt = qemu_read_virt,
    .write_virt = qemu_write_virt,
    .translate = qemu_translate,
    .insert_bp = qemu_insert_bp,
    .remove_bp = qemu_remove_bp,
    .pause = qemu_pause,
    .resume = qemu_resume,
    .run_for = qemu_run_for,
    .get_regs = qemu_get_regs,
    .set_regs = qemu_set_regs,
    .set_bp_handler = qemu_set_bp_handler,
};

/* Guest-physical reads through the gdbstub in physical mode (qemu_mem_open's content check). */
static int gdb_phys_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	return gdb_read_mem(ctx, 0, gpa, buf, len) < 0 ? -EFAULT : 0;
}

int target_qemu_init(struct target_qemu *q, struct gdb *gdb, pid_t pid, qemu_hmp_fn hmp,
		     qemu_qmp_fn qmp, void *mon_ctx, bool gdb_memory, char *err, size_t errlen)
{
	int threads[VMI_MAX_CPUS], ret;
	unsigned n = 0;
	bool phys;

	memset(q, 0, sizeof(*q));
	q->mem.fd = -1;
	q->t.ops = &qemu_ops;
	q->t.name = "qemu";
	q->t.arch = arch_default(); /* until the gdbstub's target description says */
	q->t.bp_in_place = true; /* handle_stop steps over an instruction under a breakpoint */
	q->t.hit_all_stopped = true; /* all-stop: a hit is handled with the VM stopped */
	q->t.priv = q;
	q->vm.gdb = gdb;
	ret = qemu_vm_stop(&q->vm);
	if (ret < 0) {
		if (gdb->why[0])
			msg_fmt(err, errlen, "%s", gdb->why);
		else
			msg_fmt(err, errlen, "gdbstub: cannot stop the VM: %s", strerror(-ret));
		return ret;
	}
	ret = gdb_threads(gdb, threads, VMI_MAX_CPUS, &n);
	if (ret < 0 || !n) {
		msg_fmt(err, errlen, "%s",
			ret < 0 && gdb->why[0] ? gdb->why : "gdbstub: no vCPU threads");
		return ret < 0 ? ret : -ENOENT;
	}
	ret = gdb_target_desc(gdb, err, errlen);
	if (ret < 0)
		return ret;
	q->t.arch = gdb->arch;
	q->t.nr_cpus = n;
	{
		/* the stub's counter rate, once (bounded: 1 MHz to 10 GHz) */
		uint64_t hz = 0;

		if (gdb->freq_regno >= 0 &&
		    gdb_read_reg(gdb, threads[0], (unsigned)gdb->freq_regno, &hz) == 0 &&
		    hz >= 1000000 && hz <= 10000000000ull)
			q->t.counter_khz = hz / 1000;
	}
	q->vm.nr_cpus = n;
	for (unsigned i = 0; i < n; i++)
		q->vm.cpu[i].thread = threads[i];
	phys = gdb_set_phys_mode(gdb, true) == 0;
	if (gdb_memory && !phys) {
		msg_fmt(err, errlen, "gdbstub: no physical memory mode (qemu.PhyMemMode)");
		return -ENOTSUP;
	}
	/* the VM is stopped: the gdbstub's view and the process's memory hold the same bytes */
	if (!gdb_memory && qemu_mem_open(&q->mem, pid, hmp, qmp, mon_ctx,
					 phys ? gdb_phys_read : NULL, gdb, err, errlen) < 0) {
		fprintf(stderr, "hvtrace: %s: guest memory goes through the gdbstub (slower)\n",
			err);
		if (!phys) {
			msg_fmt(err, errlen, "gdbstub: no physical memory mode (qemu.PhyMemMode)");
			return -ENOTSUP;
		}
		gdb_memory = true;
	}
	if (!gdb_memory && phys && gdb_set_phys_mode(gdb, false) < 0) {
		msg_fmt(err, errlen, "gdbstub: cannot leave physical memory mode");
		return -EIO;
	}
	return 0;
}

uint64_t target_qemu_kernel_pc(struct target_qemu *q)
{
	const struct arch *a = target_arch(&q->t);

	for (unsigned i = 0; i < q->t.nr_cpus; i++)
		if (q->vm.stopped && qemu_vm_cpu_regs(&q->vm, i) == 0 &&
		    arch_regs_ip(a, &q->vm.cpu[i].regs) >= a->kernel_half)
			return arch_regs_ip(a, &q->vm.cpu[i].regs);
	return 0;
}

int target_qemu_run_for(struct target_qemu *q, int ms)
{
	return qemu_vm_run_for(&q->vm, ms);
}

int target_qemu_read_kernel(void *ctx, uint64_t gva, void *buf, size_t len)
{
	return access_virt(ctx, 0, gva, buf, len, false);
}

void target_qemu_adopt(struct target_qemu *q, struct gdb *gdb)
{
	q->vm.gdb = gdb;
	q->vm.stopped = true;
	qemu_vm_invalidate_regs(&q->vm);
	q->phys_mode = false; /* a new connection: say it again before writing text */
}

void target_qemu_leave_phys_mode(struct target_qemu *q)
{
	if (q->phys_mode && gdb_set_phys_mode(q->vm.gdb, false) == 0)
		q->phys_mode = false;
}

void target_qemu_close(struct target_qemu *q)
{
	proc_mem_close(&q->mem);
}

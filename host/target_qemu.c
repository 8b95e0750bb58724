#include "target_qemu.h"
#include "../arch/x86/x86_longmode.h"
#include "../arch/x86/x86_pagewalk.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define KERNEL_HALF 0xffff800000000000ull
#define PTI_USER_BIT 0x1000ull /* PTI: the user PGD is the kernel PGD + 4 KiB */
#define POLL_MS 50

static struct target_qemu *tq(struct target *t)
{
	return (struct target_qemu *)t;
}

/* Registers of @cpu at the current stop, fetched once per stop. */
static int cpu_regs(struct target_qemu *q, unsigned cpu)
{
	struct qemu_cpu *c = &q->cpu[cpu];
	struct gdb_regs r;
	int ret;

	if (c->regs_valid)
		return 0;
	ret = gdb_read_regs(q->gdb, c->thread, &r);
	if (ret < 0)
		return ret;
	c->regs = r.gp;
	c->cr3 = r.cr3;
	c->cr4 = r.cr4;
	c->regs_valid = true;
	c->rip_dirty = false;
	return 0;
}

/* Guest-physical memory: through the QEMU process when it could be opened, else through the gdbstub
 * in physical-address mode (the VM is stopped whenever this runs). */
static int phys_access(struct target_qemu *q, uint64_t gpa, void *buf, size_t len, bool write)
{
	if (q->mem.fd >= 0)
		return write ? qemu_mem_write(&q->mem, gpa, buf, len) : qemu_mem_read(&q->mem, gpa, buf, len);
	if (write)
		return gdb_write_mem(q->gdb, 0, gpa, buf, len) < 0 ? -EFAULT : 0;
	return gdb_read_mem(q->gdb, 0, gpa, buf, len) < 0 ? -EFAULT : 0;
}

static int read_pte(void *ctx, uint64_t gpa, uint64_t *pte)
{
	return phys_access(ctx, gpa, pte, 8, false);
}

/* Guest-physical address of @gva as @cpu sees it; for kernel addresses seen from a PTI user page table,
 * through the kernel half of the pair. */
static int translate(struct target_qemu *q, unsigned cpu, uint64_t gva, uint64_t *gpa)
{
	struct qemu_cpu *c = &q->cpu[cpu];
	bool la57 = c->cr4 & X86_CR4_LA57;
	uint64_t vpage = gva & ~(X86_PAGE_SIZE - 1);
	struct qemu_tlb *e = &c->tlb[(vpage >> 12) % QEMU_TLB_ENTRIES];
	int ret;

	if (e->valid && e->vpage == vpage && e->cr3 == c->cr3) {
		c->tlb_hits++;
		*gpa = e->ppage | (gva & (X86_PAGE_SIZE - 1));
		return 0;
	}
	c->tlb_walks++;
	ret = x86_translate(read_pte, q, c->cr3, la57, gva, gpa);
	if (ret < 0 && gva >= KERNEL_HALF && (c->cr3 & PTI_USER_BIT))
		ret = x86_translate(read_pte, q, c->cr3 & ~PTI_USER_BIT, la57, gva, gpa);
	if (ret == 0)
		*e = (struct qemu_tlb){.cr3 = c->cr3, .vpage = vpage,
				       .ppage = *gpa & ~(X86_PAGE_SIZE - 1), .valid = true};
	return ret;
}

static int access_virt(struct target_qemu *q, unsigned cpu, uint64_t gva, void *buf, size_t len,
		       bool write)
{
	uint8_t *b = buf;

	if (cpu >= q->t.nr_cpus || !q->stopped || cpu_regs(q, cpu) < 0)
		return -EFAULT;
	while (len) {
		uint64_t gpa;
		size_t chunk = X86_PAGE_SIZE - (gva & (X86_PAGE_SIZE - 1));
		int ret;

		if (chunk > len)
			chunk = len;
		if (translate(q, cpu, gva, &gpa) < 0)
			return -EFAULT;
		ret = phys_access(q, gpa, b, chunk, write);
		if (ret < 0)
			return ret;
		gva += chunk;
		b += chunk;
		len -= chunk;
	}
	return 0;
}

static int qemu_read_virt(struct target *t, unsigned cpu, uint64_t gva, void *buf, size_t len)
{
	return access_virt(tq(t), cpu, gva, buf, len, false);
}

/* Data only (return slots): TCG would not see code written this way. */
static int qemu_write_virt(struct target *t, unsigned cpu, uint64_t gva, const void *buf, size_t len)
{
	return access_virt(tq(t), cpu, gva, (void *)buf, len, true);
}

/* A gdbstub breakpoint changes no guest byte: *orig is the byte that stays there. */
static int qemu_insert_bp(struct target *t, uint64_t gva, uint8_t *orig)
{
	struct target_qemu *q = tq(t);
	int ret = access_virt(q, 0, gva, orig, 1, false);

	if (ret < 0)
		return ret;
	return gdb_insert_bp(q->gdb, gva);
}

static int qemu_remove_bp(struct target *t, uint64_t gva, uint8_t orig)
{
	(void)orig;
	return gdb_remove_bp(tq(t)->gdb, gva);
}

/* At every stop: registers are fetched again, and translations walked again. */
static void invalidate_regs(struct target_qemu *q)
{
	for (unsigned i = 0; i < q->t.nr_cpus; i++) {
		q->cpu[i].regs_valid = false;
		for (unsigned k = 0; k < QEMU_TLB_ENTRIES; k++)
			q->cpu[i].tlb[k].valid = false;
	}
}

static int stop_vm(struct target_qemu *q)
{
	struct gdb_stop st;
	int ret;

	if (q->stopped)
		return 0;
	ret = gdb_interrupt(q->gdb, 5000, &st);
	if (ret < 0)
		return ret;
	if (st.kind != GDB_STOP_SIGNAL)
		return -ESRCH;
	/* a breakpoint hit may have raced with the interrupt: it is handled when the VM next runs, as
	 * the vCPU executes the breakpoint again */
	q->stopped = true;
	invalidate_regs(q);
	return 0;
}

/* The VM is stopped whenever the tracer runs (hits are handled at a stop); pausing makes sure of it. */
static int qemu_pause(struct target *t)
{
	return stop_vm(tq(t));
}

static void qemu_resume(struct target *t)
{
	(void)t; /* target_qemu_run continues the VM */
}

static int qemu_get_regs(struct target *t, unsigned cpu, struct x86_regs *regs)
{
	struct target_qemu *q = tq(t);
	int ret;

	if (cpu >= q->t.nr_cpus || !q->stopped)
		return -EINVAL;
	ret = cpu_regs(q, cpu);
	if (ret == 0)
		*regs = q->cpu[cpu].regs;
	return ret;
}

/* Only RIP is ever changed by the tracer: that is what is written back. */
static int qemu_set_regs(struct target *t, unsigned cpu, const struct x86_regs *regs)
{
	struct target_qemu *q = tq(t);
	int ret;

	if (cpu >= q->t.nr_cpus || !q->stopped)
		return -EINVAL;
	ret = cpu_regs(q, cpu);
	if (ret < 0)
		return ret;
	if (regs->rip == q->cpu[cpu].regs.rip)
		return 0;
	ret = gdb_write_reg(q->gdb, q->cpu[cpu].thread, GDB_REG_RIP, regs->rip);
	if (ret == 0)
		q->cpu[cpu].regs.rip = regs->rip;
	return ret;
}

static void qemu_set_bp_handler(struct target *t, target_bp_fn fn, void *ctx)
{
	tq(t)->bp = fn;
	tq(t)->bp_ctx = ctx;
}

static const struct target_ops qemu_ops = {
	.read_virt = qemu_read_virt,
	.write_virt = qemu_write_virt,
	.insert_bp = qemu_insert_bp,
	.remove_bp = qemu_remove_bp,
	.pause = qemu_pause,
	.resume = qemu_resume,
	.get_regs = qemu_get_regs,
	.set_regs = qemu_set_regs,
	.set_bp_handler = qemu_set_bp_handler,
};

int target_qemu_init(struct target_qemu *q, struct gdb *gdb, pid_t pid, uint64_t ram_size,
		     bool gdb_memory, char *err, size_t errlen)
{
	int threads[VMI_MAX_CPUS], ret;
	unsigned n = 0;

	memset(q, 0, sizeof(*q));
	q->mem.fd = -1;
	q->t.ops = &qemu_ops;
	q->t.name = "qemu";
	q->t.priv = q;
	q->gdb = gdb;
	if (!gdb_memory && qemu_mem_open(&q->mem, pid, ram_size, err, errlen) < 0) {
		fprintf(stderr, "hvtrace: %s: guest memory goes through the gdbstub (slower)\n", err);
		q->mem.fd = -1;
		gdb_memory = true;
	}
	ret = stop_vm(q);
	if (ret < 0) {
		snprintf(err, errlen, "gdbstub: cannot stop the VM: %s", strerror(-ret));
		return ret;
	}
	ret = gdb_threads(gdb, threads, VMI_MAX_CPUS, &n);
	if (ret < 0 || !n) {
		snprintf(err, errlen, "gdbstub: no vCPU threads");
		return ret < 0 ? ret : -ENOENT;
	}
	q->t.nr_cpus = n;
	for (unsigned i = 0; i < n; i++)
		q->cpu[i].thread = threads[i];
	if (gdb_memory && gdb_set_phys_mode(gdb, true) < 0) {
		snprintf(err, errlen, "gdbstub: no physical memory mode (qemu.PhyMemMode)");
		return -ENOTSUP;
	}
	return 0;
}

static unsigned cpu_of_thread(struct target_qemu *q, int thread)
{
	for (unsigned i = 0; i < q->t.nr_cpus; i++)
		if (q->cpu[i].thread == thread)
			return i;
	return 0;
}

/* Handles one stop: a breakpoint of the tracer's gets its callback and the new RIP. */
static int handle_stop(struct target_qemu *q, const struct gdb_stop *st)
{
	unsigned cpu = cpu_of_thread(q, st->thread);
	struct qemu_cpu *c = &q->cpu[cpu];
	uint64_t rip;
	int ret;

	q->stops++;
	if (!q->bp)
		return 0;
	ret = cpu_regs(q, cpu);
	if (ret < 0)
		return ret;
	rip = c->regs.rip;
	if (q->bp(q->bp_ctx, cpu, rip, &c->regs) < 0)
		return 0; /* not ours (an interrupt, another debugger's stop) */
	q->hits++;
	if (c->regs.rip != rip)
		return gdb_write_reg(q->gdb, c->thread, GDB_REG_RIP, c->regs.rip);
	return 0;
}

enum qemu_run_end target_qemu_run(struct target_qemu *q, bool (*should_stop)(void *ctx), void *ctx)
{
	for (;;) {
		struct gdb_stop st;
		int ret;

		if (should_stop(ctx))
			return stop_vm(q) == 0 ? QEMU_RUN_STOP_ASKED : QEMU_RUN_GUEST_GONE;
		if (q->stopped) {
			ret = gdb_continue(q->gdb);
			if (ret < 0)
				return QEMU_RUN_GUEST_GONE;
			q->stopped = false;
			invalidate_regs(q);
		}
		ret = gdb_wait_stop(q->gdb, POLL_MS, &st);
		if (ret == -ETIMEDOUT)
			continue;
		if (ret < 0 || st.kind != GDB_STOP_SIGNAL)
			return QEMU_RUN_GUEST_GONE;
		q->stopped = true;
		if (handle_stop(q, &st) < 0)
			return QEMU_RUN_ERROR;
	}
}

int target_qemu_run_for(struct target_qemu *q, int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	int ret;

	if (q->stopped) {
		ret = gdb_continue(q->gdb);
		if (ret < 0)
			return -ESRCH;
		q->stopped = false;
		invalidate_regs(q);
	}
	nanosleep(&ts, NULL);
	return stop_vm(q);
}

int target_qemu_read_kernel(void *ctx, uint64_t gva, void *buf, size_t len)
{
	return access_virt(ctx, 0, gva, buf, len, false);
}

void target_qemu_close(struct target_qemu *q)
{
	qemu_mem_close(&q->mem);
}

/* The VM behind QEMU's gdbstub: stops, continues and each vCPU's registers at a stop. */
#include "host/qemu/qemu_vm.h"

#include <errno.h>
#include <string.h>
#include <time.h>

int qemu_vm_cpu_regs(struct qemu_vm *vm, unsigned cpu)
{
	struct qemu_cpu *c = &vm->cpu[cpu];
	struct gdb_regs r;
	int ret;

	if (c->regs_valid)
		return 0;
	ret = gdb_read_regs(vm->gdb, c->thread, &r);
	if (ret < 0)
		return ret;
	c->regs = r.gp;
	memcpy(c->sys, r.sys, sizeof(c->sys));
	if (qemu_vm_arch(vm) == arch_get(ARCH_X86_64)) {
		c->cr3 = r.sys[X86_GDB_SYS(X86_GDB_CR3)];
		c->cr4 = r.sys[X86_GDB_SYS(X86_GDB_CR4)];
		c->efer = r.sys[X86_GDB_SYS(X86_GDB_EFER)];
	} else { /* the translation cache's key */
		qemu_vm_arch(vm)->walk_root(c->sys, 0, &c->cr3, &(unsigned){0});
	}
	c->regs_valid = true;
	c->rip_dirty = false;
	return 0;
}

int qemu_vm_flush_rips(struct qemu_vm *vm)
{
	for (unsigned i = 0; i < vm->nr_cpus; i++) {
		struct qemu_cpu *c = &vm->cpu[i];
		int ret;

		if (!c->rip_dirty)
			continue;
		ret = gdb_write_reg(vm->gdb, c->thread, qemu_vm_arch(vm)->gdb->pc,
				    arch_regs_ip(qemu_vm_arch(vm), &c->regs));
		if (ret < 0) {
			c->regs_valid = false; /* RIP may be as it was: read it again */
			c->rip_dirty = false;
			return ret;
		}
		c->rip_dirty = false;
	}
	return 0;
}

/* At every stop: registers are fetched again, and translations walked again. */
void qemu_vm_invalidate_regs(struct qemu_vm *vm)
{
	for (unsigned i = 0; i < vm->nr_cpus; i++) {
		vm->cpu[i].regs_valid = false;
		vm->cpu[i].rip_dirty = false;
		arch_tlb_invalidate(&vm->cpu[i].tlb);
	}
}

/* The RIP the last hit changed goes out with the continue, in one segment (gdb_write_pc_continue);
 * any other changed RIP first. */
int qemu_vm_resume(struct qemu_vm *vm)
{
	struct qemu_cpu *last = NULL;
	int ret = 0;

	for (unsigned i = 0; i < vm->nr_cpus; i++)
		if (vm->cpu[i].rip_dirty) {
			if (last)
				ret = qemu_vm_flush_rips(
				    vm); /* more than one (not from hits): all now */
			last = &vm->cpu[i];
		}
	if (ret == 0 && last && last->rip_dirty)
		ret = gdb_write_pc_continue(vm->gdb, last->thread, arch_regs_ip(qemu_vm_arch(vm), &last->regs));
	else if (ret == 0)
		ret = gdb_continue(vm->gdb);
	if (vm->gdb->running) {
		vm->stopped = false;
		qemu_vm_invalidate_regs(vm);
	}
	return ret;
}

int qemu_vm_stop(struct qemu_vm *vm)
{
	struct gdb_stop st;
	int ret;

	if (vm->stopped)
		return qemu_vm_flush_rips(
		    vm); /* it stays stopped: RIPs changed at this stop go out now */
	ret = gdb_interrupt(vm->gdb, 5000, &st);
	if (ret < 0)
		return ret;
	if (st.kind != GDB_STOP_SIGNAL)
		return -ESRCH;
	/* a breakpoint hit may have raced with the interrupt: it is handled when the VM next runs,
	 * as the vCPU executes the breakpoint again */
	vm->stopped = true;
	qemu_vm_invalidate_regs(vm);
	return 0;
}

int qemu_vm_run_for(struct qemu_vm *vm, int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	int ret;

	if (vm->stopped) {
		ret = qemu_vm_resume(vm);
		if (ret < 0 && vm->stopped)
			return -ESRCH;
	}
	nanosleep(&ts, NULL);
	return qemu_vm_stop(vm);
}

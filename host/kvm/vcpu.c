#include "host/kvm/vcpu.h"
#include "host/kvm/vcpu_exit.h"
#include "host/kvm/acpi.h"
#include "host/kvm/pio_ring.h"
#include "host/sink/out_fail.h"
#include "host/trace/clock.h"
#include "arch/arch.h"
#include "host/util/msg_fmt.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

/* struct kvm_regs is copied as a block into and out of struct arch_regs (x86_64's order) */
static_assert(sizeof(struct kvm_regs) == 8 * X86_NR_REGS, "x86 registers as kvm_regs");
static_assert(sizeof(struct kvm_regs) <= sizeof(struct arch_regs), "kvm_regs fits arch_regs");
static_assert(offsetof(struct kvm_regs, rip) == 8 * X86_RIP, "rip offset");
static_assert(offsetof(struct kvm_regs, rsp) == 8 * X86_RSP, "rsp offset");
static_assert(offsetof(struct kvm_regs, r8) == 8 * X86_R8, "r8 offset");
static_assert(offsetof(struct kvm_regs, rflags) == 8 * X86_RFLAGS, "rflags offset");

static void kick_all(struct vm *vm)
{
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *c = &vm->vcpus[i];

		if (!c->started)
			continue;
		__atomic_store_n(&c->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
		pthread_kill(c->thread, VCPU_KICK_SIGNAL);
	}
}

/* Records why the VM ends (the first call wins), stops every vCPU and makes event_fd readable.
 * Any thread, including vCPU threads. */
static __attribute__((format(printf, 4, 5))) void end_vm(struct vm *vm, enum vm_end why, int status,
							 const char *fmt, ...)
{
	va_list ap;
	uint64_t one = 1;

	pthread_mutex_lock(&vm->lock);
	if (vm->end != VM_END_NONE) {
		pthread_mutex_unlock(&vm->lock);
		return;
	}
	vm->end = why;
	vm->end_status = status;
	va_start(ap, fmt);
	msg_vfmt(vm->end_msg, sizeof(vm->end_msg), fmt, ap);
	va_end(ap);
	atomic_store(&vm->stop, 1);
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
	kick_all(vm);
	if (write(vm->event_fd, &one, sizeof(one)) < 0) {
		/* the counter cannot overflow with one write per VM; nothing to do */
	}
}

#define PANIC_TEXT "Kernel panic - not syncing"

/* @len bytes of console text to vm->console; a failed write is kept (vm->console_err), ends the
 * run (out_fail_raise) and later text is dropped. Any thread. */
static void console_write(struct vm *vm, const char *buf, size_t len)
{
	pthread_mutex_lock(&vm->console_lock);
	errno = 0;
	if (!vm->console_err && (fwrite(buf, 1, len, vm->console) != len || fflush(vm->console))) {
		vm->console_err = errno ? errno : EIO;
		out_fail_raise(); /* the run ends, as for the trace */
	}
	pthread_mutex_unlock(&vm->console_lock);
}

/* The debugcon line vCPU @c is assembling. */
static void console_flush(struct vcpu *c)
{
	if (!c->con_len)
		return;
	console_write(c->vm, c->con, c->con_len);
	c->con_len = 0;
}

static void console_putc(struct vcpu *c, char ch)
{
	c->con[c->con_len++] = ch;
	if (ch == '\n' || c->con_len == sizeof(c->con))
		console_flush(c);
}

/* COM1's output line (one stream, whichever vCPU wrote it), and the panic verdict when the line
 * says so. Under uart_lock. */
static void uart_line_flush(struct vm *vm)
{
	bool panic;

	if (!vm->uart_line_len)
		return;
	panic = memmem(vm->uart_line, vm->uart_line_len, PANIC_TEXT, strlen(PANIC_TEXT));
	console_write(vm, vm->uart_line, vm->uart_line_len);
	vm->uart_line_len = 0;
	if (panic)
		end_vm(vm, VM_END_PANIC, 0, "the guest kernel panicked (see the console)");
}

/* Drives COM1's IRQ line to the UART's level (KVM_IRQ_LINE: the PIC's and the IOAPIC's pin 4), when
 * it changed. Under uart_lock. */
static void uart_sync_irq(struct vm *vm)
{
	struct kvm_irq_level l = {.irq = UART_COM1_IRQ, .level = uart_irq(&vm->uart)};

	if ((int)l.level == vm->uart_irq_level)
		return;
	if (ioctl(vm->vm_fd, KVM_IRQ_LINE, &l) < 0) {
		/* only an invalid VM fails here; the guest just misses the interrupt */
		return;
	}
	vm->uart_irq_level = (int)l.level;
}

/* A write of @v to COM1 register @off, and the byte it sends to the console. Under uart_lock. */
static void uart_out(struct vm *vm, unsigned off, uint8_t v)
{
	int ch = uart_write(&vm->uart, off, v);

	if (ch < 0 || ch == '\r')
		return;
	vm->uart_line[vm->uart_line_len++] = (char)ch;
	if (ch == '\n' || vm->uart_line_len == sizeof(vm->uart_line))
		uart_line_flush(vm);
}

static void uart_out_cb(void *vm, unsigned off, uint8_t v)
{
	uart_out(vm, off, v);
}

/* Replays, in order, the THR writes KVM queued in the coalesced ring since the last drain: before
 * any other access to the UART, so that the UART sees every access in the guest's order. Under
 * uart_lock. */
static void uart_drain(struct vm *vm)
{
	if (vm->pio_ring)
		vm->pio_coalesced +=
		    pio_ring_drain(vm->pio_ring, UART_COM1, UART_NR_PORTS, uart_out_cb, vm);
}

/* Everything COM1 was given, out on the console: the queued THR writes and the line being
 * assembled. Before the VM's end is reported, and when a vCPU thread ends. */
static void uart_flush_all(struct vm *vm)
{
	pthread_mutex_lock(&vm->uart_lock);
	uart_drain(vm);
	uart_sync_irq(vm);
	uart_line_flush(vm);
	pthread_mutex_unlock(&vm->uart_lock);
}

/* The linux_pc ports: COM1, the 8042's status and reset, ACPI sleep control and reset register.
 * Returns false for any other port. */
static bool handle_pc_io(struct vcpu *c, uint16_t port, bool in, uint8_t *data, uint32_t size,
			 uint32_t count)
{
	struct vm *vm = c->vm;

	if (port >= UART_COM1 && port < UART_COM1 + UART_NR_PORTS) {
		pthread_mutex_lock(&vm->uart_lock);
		uart_drain(vm);
		for (uint32_t i = 0; i < count; i++) {
			uint8_t *d = data + (size_t)i * size;

			if (in) {
				memset(d, 0, size);
				d[0] = uart_read(&vm->uart, port - UART_COM1);
			} else {
				uart_out(vm, port - UART_COM1, d[0]);
			}
		}
		uart_sync_irq(vm);
		pthread_mutex_unlock(&vm->uart_lock);
		return true;
	}
	switch (port) {
	case 0x60:
	case 0x64: /* 8042: nothing to read, ready for input; 0xfe to the command port resets */
		if (in)
			memset(data, 0, (size_t)size * count);
		else if (port == 0x64 && data[0] == 0xfe) {
			uart_flush_all(vm);
			end_vm(vm, VM_END_REBOOT, 0, "the guest reset the machine (8042)");
		}
		return true;
	case ACPI_SLEEP_CTL_PORT:
	case ACPI_SLEEP_STS_PORT:
		if (in)
			memset(data, 0, (size_t)size * count);
		else if (port == ACPI_SLEEP_CTL_PORT && acpi_is_s5(data[0])) {
			uart_flush_all(vm);
			end_vm(vm, VM_END_POWEROFF, 0, "the guest powered off");
		}
		return true;
	case ACPI_RESET_PORT:
		if (!in && (data[0] & 0x04)) {
			uart_flush_all(vm);
			end_vm(vm, VM_END_REBOOT, 0, "the guest reset the machine (ACPI)");
		}
		return !in;
	default:
		return false;
	}
}

static void handle_io(struct vcpu *c)
{
	struct kvm_run *run = c->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;

	if (c->vm->linux_pc) {
		if (!handle_pc_io(c, run->io.port, run->io.direction == KVM_EXIT_IO_IN, data,
				  run->io.size, run->io.count) &&
		    run->io.direction == KVM_EXIT_IO_IN)
			memset(data, 0xff, (size_t)run->io.size * run->io.count);
		return; /* no debugcon or debug-exit port on a PC */
	}

	if (run->io.direction == KVM_EXIT_IO_IN) {
		memset(data, 0xff, (size_t)run->io.size * run->io.count);
		return;
	}
	if (run->io.port == VM_PORT_DEBUGCON) {
		for (uint32_t i = 0; i < run->io.count; i++)
			console_putc(c, data[i * run->io.size]);
	} else if (run->io.port == VM_PORT_DEBUG_EXIT) {
		uint32_t v = 0;

		memcpy(&v, data, run->io.size < 4 ? run->io.size : 4);
		console_flush(c);
		end_vm(c->vm, VM_END_GUEST_EXIT, (int)v, "guest wrote 0x%x to port 0x%x", v,
		       VM_PORT_DEBUG_EXIT);
	}
}

/* Waits while the VM is paused; the vCPU counts as parked meanwhile. */
static void park(struct vcpu *c, enum vcpu_state parked_as)
{
	struct vm *vm = c->vm;

	pthread_mutex_lock(&vm->lock);
	c->state = parked_as;
	pthread_cond_broadcast(&vm->cond);
	while ((atomic_load(&vm->pause_req) || parked_as == VCPU_HALTED) && !atomic_load(&vm->stop))
		pthread_cond_wait(&vm->cond, &vm->lock);
	c->state = VCPU_RUNNING;
	pthread_mutex_unlock(&vm->lock);
}

static bool all_halted(struct vm *vm)
{
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i].state != VCPU_HALTED)
			return false;
	return true;
}

static void halt(struct vcpu *c)
{
	struct vm *vm = c->vm;
	bool all;

	console_flush(c);
	pthread_mutex_lock(&vm->lock);
	c->state = VCPU_HALTED;
	all = all_halted(vm);
	pthread_mutex_unlock(&vm->lock);
	if (all)
		end_vm(vm, VM_END_HALTED, 0,
		       "every vCPU halted without writing to port 0x%x (last: cpu%u)",
		       VM_PORT_DEBUG_EXIT, c->index);
	/* No interrupt can wake a vCPU of this VMM: stay parked until the VM ends. */
	park(c, VCPU_HALTED);
}

static void fault(struct vcpu *c, const char *what)
{
	struct kvm_run *run = c->run;

	console_flush(c);
	end_vm(c->vm, VM_END_FAULT, 0, "cpu%u: %s%s at RIP 0x%" PRIx64, c->index,
	       vcpu_exit_name(run->exit_reason), what, (uint64_t)run->s.regs.regs.rip);
}

/* A triple fault: where the guest was. KVM on AMD resets the vCPU before the exit (RIP 0xfff0):
 * the RIP of this vCPU's previous exit is given too, and alone when the exit's is the reset's. */
static void triple_fault(struct vcpu *c, bool reset)
{
	char last[96];

	console_flush(c);
	if (c->has_last)
		snprintf(last, sizeof(last), "; last RIP hvtrace saw: 0x%" PRIx64 " (%s)",
			 c->last_rip, vcpu_exit_name(c->last_exit));
	else
		snprintf(last, sizeof(last), "; no earlier exit of this vCPU");
	if (reset)
		end_vm(c->vm, VM_END_FAULT, 0,
		       "cpu%u: KVM_EXIT_SHUTDOWN (triple fault; KVM reset the vCPU to 0xfff0)%s",
		       c->index, last);
	else
		end_vm(c->vm, VM_END_FAULT, 0,
		       "cpu%u: KVM_EXIT_SHUTDOWN (triple fault) at RIP 0x%" PRIx64 "%s", c->index,
		       (uint64_t)c->run->s.regs.regs.rip, last);
}

/* Returns true if the exit was a breakpoint the tracer owns (and it resumed the vCPU's RIP).
 * @at_ns: when KVM_RUN came back with it. */
static bool handle_bp(struct vcpu *c, uint64_t at_ns)
{
	struct kvm_run *run = c->run;
	struct vm *vm = c->vm;
	struct arch_regs regs;
	uint64_t addr;
	int ret;

	if (!vm->bp_hit || !vcpu_exit_bp_addr(run, run->s.regs.regs.rip, &addr))
		return false;
	memcpy(regs.r, &run->s.regs.regs, sizeof(run->s.regs.regs));
	memset(regs.r + X86_NR_REGS, 0, sizeof(regs) - sizeof(run->s.regs.regs));
	if (vm->linux_pc) /* `current` is at the kernel's GS base (the tracer's percpu_base) */
		regs.r[X86_GS_BASE_SLOT] = run->s.regs.sregs.gs.base;
	ret = vm->bp_hit(vm->bp_ctx, c->index, addr, &regs, at_ns);
	if (ret < 0)
		return false;
	memcpy(&run->s.regs.regs, regs.r, sizeof(run->s.regs.regs));
	if (ret == TARGET_BP_IN_PLACE) {
		/* an entry probe: its instruction runs out of line, then jumps back */
		uint64_t slot = step_slots_find(&vm->step, addr);

		if (!slot)
			return false; /* never made (target_kvm_init): reported as any stray INT3 */
		run->s.regs.regs.rip = slot;
	}
	run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
	c->bp_exits[run->exit_reason == KVM_EXIT_DEBUG		? VCPU_BP_DEBUG
		    : run->exit_reason == KVM_EXIT_INTERNAL_ERROR ? VCPU_BP_EMULATION
								  : VCPU_BP_SHUTDOWN]++;
	return true;
}

/* The guest's own INT3 (not hvtrace's) on a Linux VM with guest debug on (vm_guest_debug): its #BP
 * goes back to it, injected as the exception KVM took, RIP left at the INT3 (KVM moves it past the
 * instruction for a soft exception, as for QEMU's). Returns whether it did. */
static bool give_back_bp(struct vcpu *c)
{
	struct kvm_run *run = c->run;
	struct kvm_vcpu_events ev;

	if (!c->vm->guest_debug || run->exit_reason != KVM_EXIT_DEBUG ||
	    run->debug.arch.exception != 3 || ioctl(c->fd, KVM_GET_VCPU_EVENTS, &ev) < 0 ||
	    ev.exception.injected || ev.exception.pending)
		return false;
	ev.exception.injected = 1;
	ev.exception.nr = 3;
	ev.exception.has_error_code = 0;
	ev.exception.error_code = 0;
	ev.flags = 0; /* NMI, SIPI, shadow and SMM state: as they are */
	if (ioctl(c->fd, KVM_SET_VCPU_EVENTS, &ev) < 0)
		return false;
	atomic_fetch_add_explicit(&c->vm->bp_reinjected, 1, memory_order_relaxed);
	return true;
}

/* pthread entry point of vCPU @arg (a struct vcpu *). Returns when the VM ends. */
static void *vcpu_thread(void *arg)
{
	struct vcpu *c = arg;
	struct vm *vm = c->vm;
	struct kvm_run *run = c->run;
	sigset_t set;
	char what[96];
	uint64_t exit_rip, back, at_ns;
	struct timespec ts;
	bool reset, bp;

	atomic_store(&c->tid, (int)gettid());
	sigemptyset(&set);
	sigaddset(&set, VCPU_KICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;

	while (!atomic_load(&vm->stop)) {
		if (atomic_load(&vm->pause_req)) {
			park(c, VCPU_PARKED);
			continue;
		}
		if (ioctl(c->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				c->xs.kicks++;
				__atomic_store_n(&run->immediate_exit, 0, __ATOMIC_SEQ_CST);
				/* a kicked Linux vCPU may not have exited for long: where it is now */
				if (vm->linux_pc && (run->s.regs.sregs.cr0 & X86_CR0_PG)) {
					c->cr3 = run->s.regs.sregs.cr3;
					c->la57 = run->s.regs.sregs.cr4 & X86_CR4_LA57;
					arch_tlb_invalidate(&c->tlb);
				}
				continue;
			}
			end_vm(vm, VM_END_ERROR, 0, "cpu%u: KVM_RUN: %s", c->index,
			       strerror(errno));
			break;
		}
		back = __rdtsc();
		/* an exit a breakpoint can be (INT3: KVM_EXIT_DEBUG on real KVM, an emulation
		 * failure on PVM): its time now, before anything of hvtrace's runs, as the hit's */
		at_ns = vm->bp_hit && !vm->bp_untimed &&
				(run->exit_reason == KVM_EXIT_DEBUG ||
				 run->exit_reason == KVM_EXIT_INTERNAL_ERROR ||
				 run->exit_reason == KVM_EXIT_SHUTDOWN)
			    ? clock_now_ns()
			    : 0;
		bp = false;
		c->exits++;
		exit_stats_add(&c->xs, run);
		arch_tlb_invalidate(&c->tlb);
		exit_rip = run->s.regs.regs.rip;
		reset = vcpu_exit_was_reset(run);
		if (!reset) { /* after a reset the last page tables stay the ones to use */
			c->cr3 = run->s.regs.sregs.cr3;
			c->la57 = run->s.regs.sregs.cr4 & X86_CR4_LA57;
		}
		switch (run->exit_reason) {
		case KVM_EXIT_IO:
			handle_io(c);
			break;
		case KVM_EXIT_HLT:
			halt(c);
			break;
		case KVM_EXIT_INTR:
			break;
		case KVM_EXIT_MMIO:
			if (vm->linux_pc) { /* no device there: reads see all ones, as on a PC */
				if (!run->mmio.is_write)
					memset(run->mmio.data, 0xff, sizeof(run->mmio.data));
				break;
			}
			snprintf(what, sizeof(what), " (%s 0x%" PRIx64 ", no RAM there)",
				 run->mmio.is_write ? "write to" : "read from",
				 (uint64_t)run->mmio.phys_addr);
			fault(c, what);
			break;
		case KVM_EXIT_DEBUG:
		case KVM_EXIT_INTERNAL_ERROR:
		case KVM_EXIT_SHUTDOWN:
			if (!reset && handle_bp(c, at_ns)) {
				bp = true;
				break;
			}
			if (!reset && give_back_bp(c))
				break;
			if (run->exit_reason == KVM_EXIT_SHUTDOWN && vm->linux_pc &&
			    vm->triple_fault_reboots) {
				/* the way to reboot the kernel was told to take (reboot=t) */
				uart_flush_all(vm);
				end_vm(vm, VM_END_REBOOT, 0, "the guest reset the machine (triple fault)");
				break;
			}
			if (run->exit_reason == KVM_EXIT_SHUTDOWN) {
				triple_fault(c, reset);
				break;
			}
			if (run->exit_reason == KVM_EXIT_INTERNAL_ERROR)
				snprintf(what, sizeof(what), " (suberror %u)", run->internal.suberror);
			else
				snprintf(what, sizeof(what), " (exception %u)",
					 run->debug.arch.exception);
			fault(c, what);
			break;
		case KVM_EXIT_FAIL_ENTRY:
			snprintf(what, sizeof(what), " (hardware reason 0x%llx)",
				 (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
			fault(c, what);
			break;
		default:
			fault(c, "");
			break;
		}
		c->last_rip = exit_rip;
		c->last_exit = run->exit_reason;
		c->has_last = true;
		if (bp)
			c->bp_cycles += __rdtsc() - back;
	}
	if (vm->linux_pc)
		uart_flush_all(vm);
	console_flush(c);
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
		c->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	pthread_mutex_lock(&vm->lock);
	c->state = VCPU_DONE;
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
	return NULL;
}

static void kick_handler(int sig)
{
	(void)sig;
}

void vcpu_kick_handler_install(void)
{
	struct sigaction sa = {.sa_handler = kick_handler};

	sigemptyset(&sa.sa_mask);
	sigaction(VCPU_KICK_SIGNAL, &sa, NULL);
}

int vcpu_start_all(struct vm *vm, char *err, size_t errlen)
{
	vcpu_kick_handler_install();
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *c = &vm->vcpus[i];
		int e = pthread_create(&c->thread, NULL, vcpu_thread, c);

		if (e) {
			end_vm(vm, VM_END_ERROR, 0, "pthread_create: %s", strerror(e));
			msg_fmt(err, errlen, "starting vCPU threads: %s", strerror(e));
			return -e;
		}
		c->started = true;
	}
	return 0;
}

static bool all_parked(struct vm *vm)
{
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i].started && vm->vcpus[i].state == VCPU_RUNNING)
			return false;
	return true;
}

int vcpu_pause_all(struct vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	if (atomic_fetch_add(&vm->pause_req, 1) == 0)
		vm->pause_start_ns = clock_now_ns();
	vm->pauses++;
	pthread_mutex_unlock(&vm->lock);
	kick_all(vm);
	pthread_mutex_lock(&vm->lock);
	while (!all_parked(vm))
		pthread_cond_wait(&vm->cond, &vm->lock);
	pthread_mutex_unlock(&vm->lock);
	return 0;
}

void vcpu_resume_all(struct vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	if (atomic_fetch_sub(&vm->pause_req, 1) == 1)
		vm->paused_ns += clock_now_ns() - vm->pause_start_ns;
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
}

void vcpu_join_all(struct vm *vm)
{
	end_vm(vm, VM_END_STOPPED, 0, "stopped by the host");
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		if (!vm->vcpus[i].started)
			continue;
		pthread_join(vm->vcpus[i].thread, NULL);
		vm->vcpus[i].started = false;
	}
}

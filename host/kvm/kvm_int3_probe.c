#include "host/kvm/kvm_int3_probe.h"
#include "host/kvm/vcpu.h"
#include "host/kvm/vm.h"
#include "host/trace/clock.h"
#include "arch/arch.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

/* The throwaway guest, in the first 2 MiB of its RAM (identity-mapped by the boot contract). */
#define CHECK_MEM_MB	2
#define CODE_GPA	KVM_INT3_CHECK_RIP /* int3; hlt */
#define IDT_GPA		0x2000ull	   /* 32 interrupt gates */
#define HANDLERS_GPA	0x3000ull /* handler of vector v at + 8v: mov $v, %al; out %al, $0x80; hlt */
#define HANDLER_PORT	0x80
#define NR_VECTORS	32
#define CHECK_RUN_MS	3000 /* the guest runs two instructions; a nested host is slow */
#define CHECK_KICK_MS	1000 /* after the bound: kicks until KVM_RUN returns */
#define CHECK_MAX_EXITS 8

/* Each verdict's name (the test hook's, kvm_int3_verdict_parse) and its description. */
static const struct {
	const char *name, *desc;
} verdicts[] = {
    [KVM_INT3_DEBUG_EXIT] = {"debug-exit", "KVM_EXIT_DEBUG (real KVM)"},
    [KVM_INT3_EMULATION] = {"emulation", "emulation failure (PVM-style)"},
    [KVM_INT3_GUEST_IDT] = {"guest-idt",
			    "the guest's own #BP handler ran (INT3 is not intercepted)"},
    [KVM_INT3_TRIPLE_FAULT] = {"triple-fault", "triple fault"},
    [KVM_INT3_OTHER] = {"other", "an unexpected exit"},
    [KVM_INT3_TIMEOUT] = {"timeout", "no exit in time"},
    [KVM_INT3_NO_CHECK] = {"no-check", "not checked"},
};

const char *kvm_int3_verdict_name(enum kvm_int3_verdict v)
{
	return (unsigned)v < sizeof(verdicts) / sizeof(verdicts[0]) && verdicts[v].desc
		   ? verdicts[v].desc
		   : "?";
}

const char *kvm_int3_why(const struct kvm_int3_check *c, bool qemu, char *buf, size_t len)
{
	switch (c->verdict) {
	case KVM_INT3_DEBUG_EXIT:
		snprintf(buf, len, "it does: KVM_EXIT_DEBUG");
		break;
	case KVM_INT3_EMULATION:
		snprintf(buf, len,
			 qemu ? "it ends in an emulation failure, not the KVM_EXIT_DEBUG QEMU "
				"needs"
			      : "it does: emulation failure at the INT3");
		break;
	case KVM_INT3_GUEST_IDT:
		snprintf(buf, len, "it goes to the guest's IDT");
		break;
	case KVM_INT3_TRIPLE_FAULT:
		snprintf(buf, len, "it triple-faults the guest");
		break;
	case KVM_INT3_TIMEOUT:
	case KVM_INT3_OTHER:
		snprintf(buf, len, "a check VM saw %s", c->detail);
		break;
	case KVM_INT3_NO_CHECK:
		snprintf(buf, len, "or cannot tell: the check VM failed: %s", c->detail);
		break;
	}
	return buf;
}

int kvm_int3_verdict_parse(const char *name)
{
	for (size_t i = 0; i < sizeof(verdicts) / sizeof(verdicts[0]); i++)
		if (verdicts[i].name && !strcmp(name, verdicts[i].name))
			return (int)i;
	return -1;
}

bool kvm_int3_exits(enum kvm_int3_verdict v, bool qemu)
{
	return v == KVM_INT3_DEBUG_EXIT || (v == KVM_INT3_EMULATION && !qemu);
}

int kvm_int3_classify(const struct kvm_run *run, int run_errno, bool timed_out, char *detail,
		      size_t len)
{
	uint64_t rip = run->s.regs.regs.rip;

	if (run_errno == EINTR || run_errno == EAGAIN || run->exit_reason == KVM_EXIT_INTR) {
		if (!timed_out)
			return -1;
		snprintf(detail, len, "no exit within %d ms of KVM_RUN", CHECK_RUN_MS);
		return KVM_INT3_TIMEOUT;
	}
	if (run_errno) {
		snprintf(detail, len, "KVM_RUN: %s", strerror(run_errno));
		return KVM_INT3_NO_CHECK;
	}
	switch (run->exit_reason) {
	case KVM_EXIT_DEBUG:
		if (run->debug.arch.exception == X86_BP_VECTOR && run->debug.arch.pc == CODE_GPA) {
			snprintf(detail, len, "KVM_EXIT_DEBUG (#BP) at the INT3");
			return KVM_INT3_DEBUG_EXIT;
		}
		snprintf(detail, len, "KVM_EXIT_DEBUG (exception %u) at 0x%llx, not the INT3's #BP",
			 run->debug.arch.exception, (unsigned long long)run->debug.arch.pc);
		return KVM_INT3_OTHER;
	case KVM_EXIT_INTERNAL_ERROR:
		if (run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION && rip == CODE_GPA) {
			snprintf(detail, len, "KVM_EXIT_INTERNAL_ERROR (emulation) at the INT3");
			return KVM_INT3_EMULATION;
		}
		snprintf(detail, len, "KVM_EXIT_INTERNAL_ERROR (suberror %u) at RIP 0x%" PRIx64,
			 run->internal.suberror, rip);
		return KVM_INT3_OTHER;
	case KVM_EXIT_IO:
		if (run->io.direction == KVM_EXIT_IO_OUT && run->io.port == HANDLER_PORT &&
		    run->io.size == 1) {
			uint8_t v = *((const uint8_t *)run + run->io.data_offset);

			if (v == X86_BP_VECTOR) {
				snprintf(detail, len, "the guest's #BP handler ran");
				return KVM_INT3_GUEST_IDT;
			}
			snprintf(detail, len, "the guest's handler of exception %u ran", v);
			return KVM_INT3_OTHER;
		}
		snprintf(detail, len, "KVM_EXIT_IO on port 0x%x", run->io.port);
		return KVM_INT3_OTHER;
	case KVM_EXIT_SHUTDOWN:
		snprintf(detail, len, "KVM_EXIT_SHUTDOWN (triple fault)");
		return KVM_INT3_TRIPLE_FAULT;
	case KVM_EXIT_HLT:
		snprintf(detail, len, "KVM_EXIT_HLT: the INT3 was stepped over");
		return KVM_INT3_OTHER;
	default:
		snprintf(detail, len, "exit reason %u at RIP 0x%" PRIx64, run->exit_reason, rip);
		return KVM_INT3_OTHER;
	}
}

/* The check guest: `int3; hlt` at CODE_GPA, an IDT whose every handler reports its vector. */
static int write_guest(struct vm *vm, const uint8_t *text, size_t text_len, char *err,
		       size_t errlen)
{
	uint8_t *code = vm_gpa_ptr(vm, CODE_GPA, text_len);
	uint64_t *idt = vm_gpa_ptr(vm, IDT_GPA, NR_VECTORS * 16);
	uint8_t *handlers = vm_gpa_ptr(vm, HANDLERS_GPA, NR_VECTORS * 8);
	struct kvm_sregs sregs;
	int ret;

	if (!code || !idt || !handlers || text_len > IDT_GPA - CODE_GPA ||
	    vm->reserved_gpa < HANDLERS_GPA + NR_VECTORS * 8) {
		msg_fmt(err, errlen, "check VM: no room for its code");
		return -ENOMEM;
	}
	memcpy(code, text, text_len);
	for (unsigned v = 0; v < NR_VECTORS; v++) {
		uint64_t off = HANDLERS_GPA + v * 8;
		uint8_t *h = handlers + v * 8;

		h[0] = 0xb0; /* mov $v, %al */
		h[1] = (uint8_t)v;
		h[2] = 0xe6; /* out %al, $HANDLER_PORT */
		h[3] = HANDLER_PORT;
		h[4] = X86_HLT;
		/* 64-bit interrupt gate, present, DPL 0 */
		idt[2 * v] = (off & 0xffff) | ((uint64_t)X86_SEL_CODE64 << 16) | (0x8eull << 40) |
			     ((off >> 16 & 0xffff) << 48);
		idt[2 * v + 1] = off >> 32;
	}
	ret = vm_boot_at(vm, CODE_GPA, err, errlen);
	if (ret < 0)
		return ret;
	if (ioctl(vm->vcpus[0].fd, KVM_GET_SREGS, &sregs) < 0)
		goto fail;
	sregs.idt.base = IDT_GPA;
	sregs.idt.limit = NR_VECTORS * 16 - 1;
	if (ioctl(vm->vcpus[0].fd, KVM_SET_SREGS, &sregs) < 0)
		goto fail;
	return 0;
fail:
	ret = -errno;
	msg_fmt(err, errlen, "check VM: setting the IDT: %s", strerror(errno));
	return ret;
}

static void run_check(struct kvm_int3_check *res, const uint8_t *code, size_t len);

struct check_run {
	struct vm vm;
	struct kvm_int3_check res; /* the thread's; copied out once it is done */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	atomic_bool timed_out;
};

/* The check's vCPU thread: KVM_RUN until an exit classifies, or the watchdog's kick after the
 * bound. */
static void *check_thread(void *arg)
{
	struct check_run *cr = arg;
	struct kvm_run *run = cr->vm.vcpus[0].run;
	int v = KVM_INT3_OTHER;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, VCPU_KICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	run->kvm_valid_regs = KVM_SYNC_X86_REGS;
	snprintf(cr->res.detail, sizeof(cr->res.detail), "more than %d exits", CHECK_MAX_EXITS);
	for (int i = 0; i < CHECK_MAX_EXITS; i++) {
		int e = ioctl(cr->vm.vcpus[0].fd, KVM_RUN, 0) < 0 ? errno : 0;

		v = kvm_int3_classify(run, e, atomic_load(&cr->timed_out), cr->res.detail,
				      sizeof(cr->res.detail));
		if (v >= 0)
			break;
		__atomic_store_n(&run->immediate_exit, 0, __ATOMIC_SEQ_CST);
		v = KVM_INT3_OTHER;
	}
	pthread_mutex_lock(&cr->lock);
	cr->res.verdict = (enum kvm_int3_verdict)v;
	cr->done = true;
	pthread_cond_broadcast(&cr->cond);
	pthread_mutex_unlock(&cr->lock);
	return NULL;
}

/* Waits until the check thread is done or @ms have passed. Returns whether it is done. */
static bool wait_done(struct check_run *cr, unsigned ms)
{
	struct timespec ts;
	bool done;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&cr->lock);
	while (!cr->done)
		if (pthread_cond_timedwait(&cr->cond, &cr->lock, &ts) == ETIMEDOUT)
			break;
	done = cr->done;
	pthread_mutex_unlock(&cr->lock);
	return done;
}

int kvm_int3_check_code(const uint8_t *code, size_t len, struct kvm_int3_check *res)
{
	uint64_t t0 = clock_now_ns();

	memset(res, 0, sizeof(*res));
	run_check(res, code, len);
	res->ms = (double)(clock_now_ns() - t0) / 1e6;
	return res->verdict == KVM_INT3_NO_CHECK ? -EIO : 0;
}

static void run_check(struct kvm_int3_check *res, const uint8_t *code, size_t len)
{
	struct check_run *cr = calloc(1, sizeof(*cr));
	struct vm_config cfg = {.smp = 1, .mem_mb = CHECK_MEM_MB};
	pthread_condattr_t ca;
	pthread_t th;
	char err[160];
	int e;

	res->verdict = KVM_INT3_NO_CHECK;
	if (!cr) {
		msg_fmt(res->detail, sizeof(res->detail), "out of memory");
		return;
	}
	if (vm_create(&cr->vm, &cfg, err, sizeof(err)) < 0) { /* nothing to free then */
		msg_fmt(res->detail, sizeof(res->detail), "%s", err);
		free(cr);
		return;
	}
	if (write_guest(&cr->vm, code, len, err, sizeof(err)) < 0) {
		msg_fmt(res->detail, sizeof(res->detail), "%s", err);
		vm_destroy(&cr->vm);
		free(cr);
		return;
	}
	pthread_mutex_init(&cr->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cr->cond, &ca);
	pthread_condattr_destroy(&ca);
	vcpu_kick_handler_install();
	e = pthread_create(&th, NULL, check_thread, cr);
	if (e) {
		msg_fmt(res->detail, sizeof(res->detail), "check VM thread: %s", strerror(e));
		vm_destroy(&cr->vm);
		free(cr);
		return;
	}
	if (!wait_done(cr, CHECK_RUN_MS)) {
		atomic_store(&cr->timed_out, true);
		for (unsigned waited = 0; waited < CHECK_KICK_MS; waited += 10) {
			__atomic_store_n(&cr->vm.vcpus[0].run->immediate_exit, 1, __ATOMIC_SEQ_CST);
			pthread_kill(th, VCPU_KICK_SIGNAL);
			if (wait_done(cr, 10))
				break;
		}
	}
	if (!wait_done(cr, 0)) {
		/* KVM_RUN ignores signals: leave the thread and its VM (and what it may still
		 * write) behind rather than hang */
		pthread_detach(th);
		res->verdict = KVM_INT3_TIMEOUT;
		msg_fmt(res->detail, sizeof(res->detail),
			"KVM_RUN did not return within %d ms, even when kicked",
			CHECK_RUN_MS + CHECK_KICK_MS);
		return;
	}
	pthread_join(th, NULL);
	*res = cr->res;
	vm_destroy(&cr->vm);
	pthread_cond_destroy(&cr->cond);
	pthread_mutex_destroy(&cr->lock);
	free(cr);
}

static struct kvm_int3_check the_check;
static pthread_once_t check_once = PTHREAD_ONCE_INIT;

static void check_once_fn(void)
{
	const char *forced = getenv("HVTRACE_TEST_INT3");
	uint64_t t0 = clock_now_ns();

	if (forced && kvm_int3_verdict_parse(forced) >= 0) {
		the_check.verdict = (enum kvm_int3_verdict)kvm_int3_verdict_parse(forced);
		the_check.forced = true;
		snprintf(the_check.detail, sizeof(the_check.detail),
			 "forced by HVTRACE_TEST_INT3=%s (test hook)", forced);
	} else {
		static const uint8_t code[] = {X86_INT3, X86_HLT};

		run_check(&the_check, code, sizeof(code));
	}
	the_check.ms = (double)(clock_now_ns() - t0) / 1e6;
}

const struct kvm_int3_check *kvm_int3_check(void)
{
	pthread_once(&check_once, check_once_fn);
	return &the_check;
}

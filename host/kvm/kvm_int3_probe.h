/* Does INT3 in a guest really exit to the VMM on this host's /dev/kvm? Checked once per process by
 * a throwaway VM on the same /dev/kvm (one vCPU in long mode with KVM_GUESTDBG_USE_SW_BP, an IDT
 * whose handlers write a port, code `int3; hlt`), before the first trap probe is armed. Real KVM
 * (VMX/SVM) reports KVM_EXIT_DEBUG; PVM reports an emulation failure at the INT3 (the embedded VMM
 * handles it, QEMU cannot); a nested SVM under QEMU TCG does not intercept INT3 at all: it reaches
 * the guest's IDT, and trap probes would crash the guest. */
#ifndef HVT_KVM_INT3_PROBE_H
#define HVT_KVM_INT3_PROBE_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kvm_int3_verdict {
	KVM_INT3_DEBUG_EXIT,   /* KVM_EXIT_DEBUG (#BP) at the INT3: real KVM */
	KVM_INT3_EMULATION,    /* KVM_EXIT_INTERNAL_ERROR (emulation) with RIP at the INT3: PVM */
	KVM_INT3_GUEST_IDT,    /* the guest's own #BP handler ran: INT3 is not intercepted */
	KVM_INT3_TRIPLE_FAULT, /* KVM_EXIT_SHUTDOWN */
	KVM_INT3_OTHER,	       /* any other exit (detail says which) */
	KVM_INT3_TIMEOUT,      /* no exit within the check's bound */
	KVM_INT3_NO_CHECK,     /* the check could not run (no /dev/kvm, a KVM call failed) */
};

struct kvm_int3_check {
	enum kvm_int3_verdict verdict;
	bool forced;	  /* from $HVTRACE_TEST_INT3 (a test hook), not from a VM */
	double ms;	  /* how long the check took, VM creation and teardown included */
	char detail[200]; /* what the check saw: "KVM_EXIT_DEBUG (#BP) at the INT3" */
};

/* The check's result: run on the first call (bounded: a few seconds at most, never hangs), cached
 * for the process after that. Test hook: $HVTRACE_TEST_INT3 set to a verdict name (debug-exit,
 * emulation, guest-idt, triple-fault, other, timeout, no-check) gives that verdict without a VM
 * (another value is ignored). Installs the VCPU_KICK_SIGNAL handler. Any thread; the result is
 * immutable. */
const struct kvm_int3_check *kvm_int3_check(void);

/* Whether trap probes work with verdict @v: the embedded VMM handles KVM_EXIT_DEBUG and PVM's
 * emulation failure; QEMU with KVM (@qemu) needs KVM_EXIT_DEBUG. Pure. */
bool kvm_int3_exits(enum kvm_int3_verdict v, bool qemu);

/* Why trap probes cannot work with @c (for the backend @qemu as in kvm_int3_exits), as the tail of
 * "INT3 in a guest does not exit on this host's KVM (...)": "it goes to the guest's IDT", ... Pure.
 */
const char *kvm_int3_why(const struct kvm_int3_check *c, bool qemu, char *buf, size_t len);

/* A short name of @v: "KVM_EXIT_DEBUG (real KVM)", "emulation failure (PVM-style)", ... Pure. */
const char *kvm_int3_verdict_name(enum kvm_int3_verdict v);

/* The verdict named @name (the test hook's names), or -1. Pure. */
int kvm_int3_verdict_parse(const char *name);

/* Where the check guest's INT3 is (guest-physical and virtual: identity-mapped). */
#define KVM_INT3_CHECK_RIP 0x1000ull

/* The same check VM, run now (not cached) with @code (at most 4 KiB) at KVM_INT3_CHECK_RIP instead
 * of `int3; hlt`: for tests (ud2 shows that the guest's IDT works, a jump to itself that the bound
 * holds). Returns 0, or -EIO when the VM could not run (@res says why). Main thread. */
int kvm_int3_check_code(const uint8_t *code, size_t len, struct kvm_int3_check *res);

/* What one KVM_RUN of the check guest says (@run_errno: KVM_RUN's errno, 0 if it returned an exit;
 * @timed_out: the watchdog has kicked it), with a one-line @detail. Returns the verdict, or -1 for
 * "run again" (an interruption before the bound). Pure apart from @detail; for the check and tests.
 */
int kvm_int3_classify(const struct kvm_run *run, int run_errno, bool timed_out, char *detail,
		      size_t len);

#endif

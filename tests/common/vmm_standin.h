/* A stand-in for a foreign KVM VMM (tests of host/vmm/kvm_proc and kvm_inject): a forked process
 * with a KVM VM of its own (hvtrace's embedded VM code as a library: 8 MiB of RAM, one vCPU in long
 * mode running `incq (0x2000); out %al, $0x80; jmp` on a thread of its own that re-enters KVM_RUN
 * after each exit at once, its main thread waiting), registers set
 * with KVM_SET_REGS / KVM_SET_SREGS before it runs, a cookie written into its RAM. It shares
 * nothing with the test but the report it writes once running. Needs /dev/kvm. */
#ifndef HVT_TESTS_VMM_STANDIN_H
#define HVT_TESTS_VMM_STANDIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/kvm.h>

#define VMM_STANDIN_CODE_GPA	0x1000ull /* the guest loop, 12 bytes */
#define VMM_STANDIN_COUNTER_GPA 0x2000ull /* the u64 it increments */
#define VMM_STANDIN_COOKIE_GPA	0x4000ull /* the cookie */

enum vmm_standin_mode {
	VMM_STANDIN_PLAIN, /* the main thread waits */
	VMM_STANDIN_REMAP, /* the main thread maps, unmaps and remaps memory and makes threads */
	VMM_STANDIN_EXIT,  /* the process exits @exit_us after its report */
};

/* What the stand-in reports once its vCPU runs. */
struct vmm_standin_info {
	uint64_t ram_hva, ram_size;
	int vm_fd, vcpu_fd;
	pid_t vcpu_tid;
	char cookie[48];
	struct kvm_regs regs;	/* as set with KVM_SET_REGS before the vCPU ran */
	struct kvm_sregs sregs; /* KVM_GET_SREGS after its KVM_SET_SREGS, before the vCPU ran */
};

struct vmm_standin {
	pid_t pid;
	struct vmm_standin_info info;
};

/* Forks the stand-in and waits (10 s at most) for its report. 0, or a negative errno with one line
 * in @err (-ENODEV: no /dev/kvm). The child dies with the test (PR_SET_PDEATHSIG). */
int vmm_standin_start(struct vmm_standin *s, enum vmm_standin_mode mode, unsigned exit_us,
		      char *err, size_t errlen);

/* SIGKILLs the stand-in and reaps it (whoever reaped it already). Idempotent. */
void vmm_standin_kill(struct vmm_standin *s);

#endif

/* A KVM VMM seen from outside, whatever the VMM (QEMU, Firecracker, Cloud Hypervisor, crosvm,
 * kvmtool, hvtrace's own): its VM and vCPU fds (/proc/PID/fd: anon_inode:kvm-vm,
 * anon_inode:kvm-vcpu:N), the thread running each vCPU (the KVM_RUN it sits in,
 * /proc/PID/task/TID/syscall), each vCPU's kvm_run mapping and the candidates for guest RAM (large
 * writable shared or anonymous mappings) in /proc/PID/maps. Nothing is asked of the VMM and
 * nothing of it changes; everything it shows is bounded before use. */
#ifndef HVT_KVM_PROC_H
#define HVT_KVM_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "host/vmm/proc_maps.h"

#define KVM_PROC_MAX_VCPUS   512	/* vCPUs kept (more: `vcpus_cut` set) */
#define KVM_PROC_MAX_VCPU_ID 65535	/* a larger N in kvm-vcpu:N is not KVM's */
#define KVM_PROC_MAX_RAM     32		/* RAM candidates kept, the largest first */
#define KVM_PROC_RAM_MIN     (1u << 20) /* a smaller mapping is no RAM candidate */
#define KVM_PROC_MAX_FDS     (1u << 20) /* /proc/PID/fd entries looked at */
#define KVM_PROC_MAX_THREADS 4096	/* /proc/PID/task entries looked at */

/* What a link in /proc/PID/fd is, for KVM. */
enum kvm_proc_fd_kind {
	KVM_PROC_FD_OTHER,
	KVM_PROC_FD_DEV,  /* /dev/kvm */
	KVM_PROC_FD_VM,	  /* anon_inode:kvm-vm */
	KVM_PROC_FD_VCPU, /* anon_inode:kvm-vcpu:N */
};

struct kvm_proc_vcpu {
	unsigned id;	  /* N of kvm-vcpu:N (KVM's vcpu_id) */
	int fd;		  /* the VMM's fd of it */
	pid_t tid;	  /* the thread in KVM_RUN on it; 0: none seen */
	uint64_t run_hva; /* its kvm_run mapping in the VMM; 0: none seen */
};

/* A guest RAM candidate: a writable mapping of at least KVM_PROC_RAM_MIN bytes, anonymous, shared
 * memory (memfd, /dev/shm, hugetlbfs, SysV) or any shared file. Which guest-physical range it
 * holds, if any, is for the caller to prove (a page-table walk, the kernel's image). */
struct kvm_proc_ram {
	uint64_t hva, len;
	bool shared;
};

struct kvm_proc {
	pid_t pid;
	char comm[72]; /* the process's comm (at most 16 bytes), escaped by peer_text */
	int vm_fd;     /* -1: none */
	int nr_vm_fds; /* anon_inode:kvm-vm fds seen (more than one: several VMs; vm_fd the lowest)
			*/
	int dev_fd;    /* /dev/kvm, -1: none */
	unsigned nr_fds, nr_threads;
	unsigned nr_vcpus; /* sorted by id */
	bool vcpus_cut;	   /* more vCPU fds than KVM_PROC_MAX_VCPUS */
	struct kvm_proc_vcpu vcpu[KVM_PROC_MAX_VCPUS];
	unsigned nr_ram; /* largest first */
	struct kvm_proc_ram ram[KVM_PROC_MAX_RAM];
};

/* What @link (the target of a /proc/PID/fd entry, NUL-terminated) is; for a vCPU its id in *@id.
 * Pure; any thread. */
enum kvm_proc_fd_kind kvm_proc_fd_kind(const char *link, unsigned *id);

/* Parses /proc/PID/task/TID/syscall's text (@len bytes, no NUL needed): "NR ARG0 ... ARG5 SP PC"
 * while in a syscall, "-1 SP PC" when blocked outside one, "running". 0 with *@nr and @args[6]
 * filled for the first form; -ENOENT for the other two; -EINVAL for anything else. Pure. */
int kvm_proc_parse_syscall(const char *text, size_t len, long *nr, uint64_t args[6]);

/* Takes one maps entry into @kp: a kvm-vcpu:N mapping becomes that vCPU's run_hva (for a vCPU
 * already in @kp), a RAM candidate joins ram[] (the smallest dropped when full). Pure. */
void kvm_proc_take_map(struct kvm_proc *kp, const struct proc_maps_entry *e);

/* Finds @pid's KVM VM: fds, vCPU threads, kvm_run mappings, RAM candidates, into @kp (caller-owned;
 * about 14 KiB). 0, or a negative errno with one line in @err naming the process: -ESRCH (no such
 * process), -EACCES (not allowed to look: ptrace access is needed), -ENODEV (not a KVM VMM: no VM
 * fd, or a VM without vCPUs). vCPU threads as kvm_proc_vcpu_threads finds them (a vCPU whose thread
 * runs guest code keeps tid 0). Changes nothing in the process. Main thread; allocates nothing. */
int kvm_proc_discover(pid_t pid, struct kvm_proc *kp, char *err, size_t errlen);

/* One look at the VMM's threads: each one blocked in ioctl(VCPU_FD, KVM_RUN) (/proc/PID/task/TID/
 * syscall) becomes its vCPU's thread. A thread running guest code is "running", not in a syscall,
 * for /proc: look again with every thread stopped (ptrace_inject_attach; a stopped vCPU thread sits
 * at the end of its KVM_RUN) to find them all. Returns how many vCPUs still have no thread. */
unsigned kvm_proc_vcpu_threads(struct kvm_proc *kp);

/* The vCPU of @kp with fd @fd, or NULL. */
const struct kvm_proc_vcpu *kvm_proc_vcpu_by_fd(const struct kvm_proc *kp, int fd);

#endif

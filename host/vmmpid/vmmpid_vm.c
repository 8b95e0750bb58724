#include "host/vmmpid/vmmpid_vm.h"
#include "host/vmm/kvm_inject.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int vmmpid_vm_open(struct vmmpid_vm *v, pid_t pid, char *err, size_t errlen)
{
	int ret = kvm_proc_discover(pid, &v->kp, err, errlen);

	v->pi.mem_fd = -1;
	if (ret < 0)
		return ret;
	if (v->kp.nr_vcpus > VMI_MAX_CPUS || v->kp.vcpus_cut) {
		msg_fmt(err, errlen, "pid %d (%s): its VM has %u vCPUs, hvtrace traces at most %d",
			(int)pid, v->kp.comm, v->kp.nr_vcpus, VMI_MAX_CPUS);
		return -E2BIG;
	}
	v->nr_cpus = v->kp.nr_vcpus;
	return 0;
}

/* Every vCPU's registers through thread @tid's injected ioctls. */
static int read_cpus(struct vmmpid_vm *v, pid_t tid, char *err, size_t errlen)
{
	int ret = ptrace_inject_select(&v->pi, tid, err, errlen);

	for (unsigned i = 0; ret == 0 && i < v->nr_cpus; i++) {
		struct kvm_sregs sr;
		struct vmmpid_cpu *c = &v->cpu[i];

		ret = kvm_inject_get_sregs(&v->pi, v->kp.vcpu[i].fd, &sr, err, errlen);
		if (ret == 0)
			ret = kvm_inject_get_regs(&v->pi, v->kp.vcpu[i].fd, &c->regs, err, errlen);
		if (ret == 0) {
			c->cr3 = sr.cr3;
			c->cr4 = sr.cr4;
			c->efer = sr.efer;
			c->gs_base = sr.gs.base;
		}
	}
	ptrace_inject_restore(&v->pi);
	return ret;
}

int vmmpid_vm_hold(struct vmmpid_vm *v, char *err, size_t errlen)
{
	pid_t cand[3] = {v->inject_tid, 0, v->kp.pid};
	int ret;

	ret = ptrace_inject_attach(&v->pi, v->kp.pid, 0, err, errlen);
	if (ret < 0)
		return ret;
	v->held = true;
	v->hold_at = now_ns();
	v->holds++;
	kvm_proc_vcpu_threads(&v->kp);
	cand[1] = v->kp.vcpu[0].tid;
	ret = -ESRCH;
	for (unsigned k = 0; k < 3; k++) {
		if (!cand[k] || (k && (cand[k] == cand[0] || (k == 2 && cand[k] == cand[1]))))
			continue;
		ret = read_cpus(v, cand[k], err, errlen);
		if (ret == 0) {
			v->inject_tid = cand[k];
			return 0;
		}
		/* another thread may be allowed what this one's seccomp filter refused; a VMM
		 * that is gone is gone */
		if (ret != -EPERM && ret != -EACCES && ret != -ENOSYS)
			break;
	}
	vmmpid_vm_release(v);
	return ret;
}

void vmmpid_vm_release(struct vmmpid_vm *v)
{
	if (!v->held)
		return;
	ptrace_inject_detach(&v->pi);
	v->held = false;
	v->held_ns += now_ns() - v->hold_at;
}

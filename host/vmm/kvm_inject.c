/* KVM vCPU ioctls made by the VMM's own thread (ptrace injection). */
#include "host/vmm/kvm_inject.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

/* ioctl(@vcpu_fd, @req, scratch) on the chosen thread, the @len bytes KVM wrote there into @out;
 * with @set, @out's bytes are what the scratch holds for KVM to take, and nothing is read back. */
static int state_io(struct ptrace_inject *pi, int vcpu_fd, unsigned long req, const char *name,
		    void *out, size_t len, bool set, char *err, size_t errlen)
{
	uint64_t buf, args[6] = {0};
	int64_t ret = 0;
	int rc;

	rc = ptrace_inject_scratch(pi, len, &buf, err, errlen);
	if (rc)
		return rc;
	/* a pattern KVM overwrites: what comes back is KVM's, not the stack's old bytes */
	if (!set)
		memset(out, 0xa5, len);
	rc = ptrace_inject_write(pi, buf, out, len);
	args[0] = (uint64_t)vcpu_fd;
	args[1] = req;
	args[2] = buf;
	if (!rc)
		rc = ptrace_inject_syscall(pi, name, SYS_ioctl, args, &ret, err, errlen);
	else
		msg_fmt(err, errlen, "pid %d: writing its stack for %s: %s", (int)pi->pid, name,
			strerror(-rc));
	if (!rc && ret < 0) {
		msg_fmt(err, errlen, "pid %d thread %d: the injected ioctl(%d, %s): %s",
			(int)pi->pid, (int)pi->tid, vcpu_fd, name, strerror((int)-ret));
		rc = ret < -4095 ? -EIO : (int)ret;
	}
	if (!rc && !set && ptrace_inject_read(pi, buf, out, len) != 0) {
		msg_fmt(err, errlen, "pid %d: reading back %s's buffer: the VMM's memory is gone",
			(int)pi->pid, name);
		rc = -ESRCH;
	}
	if (ptrace_inject_restore(pi) != 0 && !rc) {
		msg_fmt(err, errlen, "pid %d thread %d: restoring it after %s failed", (int)pi->pid,
			(int)pi->tid, name);
		rc = -ESRCH;
	}
	return rc;
}

int kvm_inject_get_regs(struct ptrace_inject *pi, int vcpu_fd, struct kvm_regs *regs, char *err,
			size_t errlen)
{
	return state_io(pi, vcpu_fd, KVM_GET_REGS, "KVM_GET_REGS", regs, sizeof(*regs), false, err,
			errlen);
}

int kvm_inject_get_sregs(struct ptrace_inject *pi, int vcpu_fd, struct kvm_sregs *sregs, char *err,
			 size_t errlen)
{
	return state_io(pi, vcpu_fd, KVM_GET_SREGS, "KVM_GET_SREGS", sregs, sizeof(*sregs), false,
			err, errlen);
}

int kvm_inject_set_regs(struct ptrace_inject *pi, int vcpu_fd, const struct kvm_regs *regs,
			char *err, size_t errlen)
{
	struct kvm_regs r = *regs;

	return state_io(pi, vcpu_fd, KVM_SET_REGS, "KVM_SET_REGS", &r, sizeof(r), true, err,
			errlen);
}

/* A KVM VMM's VM, vCPUs, vCPU threads and RAM candidates, from /proc alone. */
#include "host/vmm/kvm_proc.h"
#include "host/util/msg_fmt.h"
#include "host/util/proc_state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define VCPU_PREFIX  "anon_inode:kvm-vcpu:"
#define THREAD_LOOKS 3 /* looks at the threads for vCPUs not yet seen in KVM_RUN, 1 ms apart */

enum kvm_proc_fd_kind kvm_proc_fd_kind(const char *link, unsigned *id)
{
	const char *p;
	unsigned long v = 0;

	if (strcmp(link, "/dev/kvm") == 0)
		return KVM_PROC_FD_DEV;
	if (strcmp(link, "anon_inode:kvm-vm") == 0)
		return KVM_PROC_FD_VM;
	if (strncmp(link, VCPU_PREFIX, strlen(VCPU_PREFIX)) != 0)
		return KVM_PROC_FD_OTHER;
	p = link + strlen(VCPU_PREFIX);
	if (*p < '0' || *p > '9')
		return KVM_PROC_FD_OTHER;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > KVM_PROC_MAX_VCPU_ID)
			return KVM_PROC_FD_OTHER;
	}
	if (*p)
		return KVM_PROC_FD_OTHER;
	*id = (unsigned)v;
	return KVM_PROC_FD_VCPU;
}

/* One number at *p: decimal (maybe negative) or 0x hex; advances past it and one blank. */
static bool num_field(const char **p, const char *end, bool is_hex, uint64_t *v, bool *neg)
{
	const char *s = *p;
	uint64_t x = 0;
	unsigned n = 0;

	*neg = false;
	if (!is_hex && s < end && *s == '-') {
		*neg = true;
		s++;
	}
	if (is_hex) {
		if (end - s < 2 || s[0] != '0' || s[1] != 'x')
			return false;
		s += 2;
	}
	for (; s < end; s++, n++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (is_hex && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else
			break;
		if (n >= (is_hex ? 16u : 19u))
			return false;
		x = is_hex ? x << 4 | d : x * 10 + d;
	}
	if (n == 0 || (s < end && *s != ' ' && *s != '\n'))
		return false;
	if (s < end)
		s++;
	*p = s;
	*v = x;
	return true;
}

int kvm_proc_parse_syscall(const char *text, size_t len, long *nr, uint64_t args[6])
{
	const char *p = text, *end = text + len;
	uint64_t v, sp, pc;
	bool neg;

	if (len >= 7 && memcmp(text, "running", 7) == 0 && (len == 7 || text[7] == '\n'))
		return -ENOENT;
	if (!num_field(&p, end, false, &v, &neg) || v > 4095 || (neg && v != 1))
		return -EINVAL;
	if (neg) {
		if (!num_field(&p, end, true, &sp, &neg) || !num_field(&p, end, true, &pc, &neg))
			return -EINVAL;
		return p == end ? -ENOENT : -EINVAL;
	}
	*nr = (long)v;
	for (int i = 0; i < 6; i++)
		if (!num_field(&p, end, true, &args[i], &neg))
			return -EINVAL;
	if (!num_field(&p, end, true, &sp, &neg) || !num_field(&p, end, true, &pc, &neg) ||
	    p != end)
		return -EINVAL;
	return 0;
}

static int by_id(const void *a, const void *b)
{
	const struct kvm_proc_vcpu *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int by_len_desc(const void *a, const void *b)
{
	const struct kvm_proc_ram *x = a, *y = b;

	return x->len > y->len ? -1 : x->len < y->len ? 1 : (x->hva > y->hva) - (x->hva < y->hva);
}

/* Could this mapping's name be guest RAM's? Anonymous, or shared memory of some kind. */
static bool ram_name(const struct proc_maps_entry *e)
{
	static const char *const prefixes[] = {"/memfd:",  "/dev/shm/", "/dev/hugepages",
					       "/SYSV",	   "[anon:",	"/anon_hugepage",
					       "/dev/zero"};

	if (!e->name[0] || e->shared)
		return strncmp(e->name, "anon_inode:", 11) != 0;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(e->name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

void kvm_proc_take_map(struct kvm_proc *kp, const struct proc_maps_entry *e)
{
	unsigned id;

	if (kvm_proc_fd_kind(e->name, &id) == KVM_PROC_FD_VCPU) {
		for (unsigned i = 0; i < kp->nr_vcpus && i < KVM_PROC_MAX_VCPUS; i++)
			if (kp->vcpu[i].id == id && !kp->vcpu[i].run_hva)
				kp->vcpu[i].run_hva = e->lo;
		return;
	}
	if (!e->r || !e->w || e->hi - e->lo < KVM_PROC_RAM_MIN || !ram_name(e))
		return;
	if (kp->nr_ram > KVM_PROC_MAX_RAM)
		kp->nr_ram = KVM_PROC_MAX_RAM;
	if (kp->nr_ram == KVM_PROC_MAX_RAM) {
		unsigned min = 0;

		for (unsigned i = 1; i < KVM_PROC_MAX_RAM; i++)
			if (kp->ram[i].len < kp->ram[min].len)
				min = i;
		if (kp->ram[min].len >= e->hi - e->lo)
			return;
		kp->ram[min] = (struct kvm_proc_ram){e->lo, e->hi - e->lo, e->shared};
	} else {
		kp->ram[kp->nr_ram++] = (struct kvm_proc_ram){e->lo, e->hi - e->lo, e->shared};
	}
}

static int take_map(void *ctx, const struct proc_maps_entry *e)
{
	kvm_proc_take_map(ctx, e);
	return 0;
}

/* The fds: the VM, the vCPUs, /dev/kvm. 0 or a negative errno (the fd folder unreadable). */
static int scan_fds(struct kvm_proc *kp)
{
	char path[64], link[128];
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)kp->pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && kp->nr_fds < KVM_PROC_MAX_FDS) {
		char *endp;
		long fd = strtol(de->d_name, &endp, 10);
		ssize_t n;
		unsigned id;

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || *endp || fd < 0 || fd > INT32_MAX)
			continue;
		kp->nr_fds++;
		n = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		if (n <= 0)
			continue; /* closed meanwhile, or a link too long to be KVM's */
		link[n] = 0;
		switch (kvm_proc_fd_kind(link, &id)) {
		case KVM_PROC_FD_VM:
			if (kp->vm_fd < 0 || fd < kp->vm_fd)
				kp->vm_fd = (int)fd;
			kp->nr_vm_fds++;
			break;
		case KVM_PROC_FD_DEV:
			if (kp->dev_fd < 0)
				kp->dev_fd = (int)fd;
			break;
		case KVM_PROC_FD_VCPU:
			if (kp->nr_vcpus >= KVM_PROC_MAX_VCPUS) {
				kp->vcpus_cut = true;
				break;
			}
			kp->vcpu[kp->nr_vcpus++] = (struct kvm_proc_vcpu){.id = id, .fd = (int)fd};
			break;
		default:
			break;
		}
	}
	closedir(d);
	qsort(kp->vcpu, kp->nr_vcpus, sizeof(kp->vcpu[0]), by_id);
	return 0;
}

const struct kvm_proc_vcpu *kvm_proc_vcpu_by_fd(const struct kvm_proc *kp, int fd)
{
	for (unsigned i = 0; i < kp->nr_vcpus; i++)
		if (kp->vcpu[i].fd == fd)
			return &kp->vcpu[i];
	return NULL;
}

unsigned kvm_proc_vcpu_threads(struct kvm_proc *kp)
{
	char path[64], text[256];
	DIR *d;
	struct dirent *de;
	unsigned seen = 0, missing = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)kp->pid);
	d = opendir(path);
	if (!d)
		return kp->nr_vcpus;
	while ((de = readdir(d)) && seen < KVM_PROC_MAX_THREADS) {
		char *endp;
		long tid = strtol(de->d_name, &endp, 10), nr;
		uint64_t args[6];
		unsigned long flags;
		ssize_t n;
		int fd;
		struct kvm_proc_vcpu *v;

		if (de->d_name[0] < '1' || de->d_name[0] > '9' || *endp || tid <= 0 ||
		    tid > INT32_MAX)
			continue;
		seen++;
		/* the kernel's workers in the process are no vCPU threads, whatever their syscall
		 * file says (KVM's NX recovery thread is cloned from a vCPU thread in KVM_RUN) */
		if (proc_flags(kp->pid, (pid_t)tid, &flags) == 0 && PROC_FLAGS_KERNEL_WORKER(flags))
			continue;
		snprintf(path, sizeof(path), "%ld/syscall", tid);
		fd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
		if (n <= 0 || kvm_proc_parse_syscall(text, (size_t)n, &nr, args) != 0)
			continue;
		if (nr != SYS_ioctl || args[1] != KVM_RUN || args[0] > INT32_MAX)
			continue;
		v = (struct kvm_proc_vcpu *)kvm_proc_vcpu_by_fd(kp, (int)args[0]);
		if (v && !v->tid)
			v->tid = (pid_t)tid;
	}
	closedir(d);
	kp->nr_threads = seen > kp->nr_threads ? seen : kp->nr_threads;
	for (unsigned i = 0; i < kp->nr_vcpus; i++)
		missing += !kp->vcpu[i].tid;
	return missing;
}

/* Has @pid exited (a zombie whose files are closed, or gone)? Its state follows the last ')' of
 * /proc/PID/stat (the comm may hold any byte). */
static bool exited(pid_t pid)
{
	char state;
	int ret = proc_state(pid, 0, &state);

	return ret == 0 ? PROC_STATE_EXITED(state) : ret != -EBADMSG;
}

int kvm_proc_discover(pid_t pid, struct kvm_proc *kp, char *err, size_t errlen)
{
	int rc;

	memset(kp, 0, sizeof(*kp));
	kp->pid = pid;
	kp->vm_fd = kp->dev_fd = -1;
	if (pid <= 0) {
		msg_fmt(err, errlen, "pid %d: not a process id", (int)pid);
		return -ESRCH;
	}
	proc_comm(pid, 0, kp->comm, sizeof(kp->comm));
	rc = scan_fds(kp);
	if (rc == -ENOENT || rc == -ESRCH) {
		msg_fmt(err, errlen, "pid %d: no such process", (int)pid);
		return -ESRCH;
	}
	if (rc) {
		msg_fmt(err, errlen,
			"pid %d (%s): /proc/%d/fd: %s (looking into a VMM needs ptrace access to "
			"it: root, "
			"or its own user with kernel.yama.ptrace_scope 0)",
			(int)pid, kp->comm, (int)pid, strerror(-rc));
		return rc == -EPERM ? -EACCES : rc;
	}
	if (kp->vm_fd < 0 && exited(pid)) {
		msg_fmt(err, errlen, "pid %d (%s) has exited (a zombie, or gone)", (int)pid,
			kp->comm);
		return -ESRCH;
	}
	if (kp->vm_fd < 0) {
		msg_fmt(
		    err, errlen,
		    "pid %d (%s): not a KVM VMM: no anon_inode:kvm-vm among its %u open files%s",
		    (int)pid, kp->comm, kp->nr_fds,
		    kp->dev_fd >= 0 ? " (it has /dev/kvm open, but no VM)" : "");
		return -ENODEV;
	}
	if (kp->nr_vcpus == 0) {
		msg_fmt(err, errlen, "pid %d (%s): its KVM VM (fd %d) has no vCPU", (int)pid,
			kp->comm, kp->vm_fd);
		return -ENODEV;
	}
	rc = proc_maps_each(pid, take_map, kp);
	if (rc) {
		msg_fmt(err, errlen, "pid %d (%s): /proc/%d/maps: %s", (int)pid, kp->comm, (int)pid,
			strerror(-rc));
		return rc == -ENOENT ? -ESRCH : rc;
	}
	qsort(kp->ram, kp->nr_ram, sizeof(kp->ram[0]), by_len_desc);
	for (int look = 0; look < THREAD_LOOKS && kvm_proc_vcpu_threads(kp); look++)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	return 0;
}

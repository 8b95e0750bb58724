#include "tests/common/vmm_standin.h"
#include "host/kvm/vm.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct vm vm; /* the child's */
static atomic_int vcpu_tid;

static void *vcpu_loop(void *arg)
{
	(void)arg;
	atomic_store(&vcpu_tid, (int)syscall(SYS_gettid));
	for (;;)
		if (ioctl(vm.vcpus[0].fd, KVM_RUN, 0) < 0 && errno != EINTR && errno != EAGAIN)
			_exit(20);
	return NULL;
}

static void *nothing(void *arg)
{
	return arg;
}

/* The child: never returns. */
static void standin(int report, enum vmm_standin_mode mode, unsigned exit_us)
{
	/* an exit per round (the OUT): a guest that never exits starves a nested host's CPU of its
	 * timer (the nested lane's L1 stalled in RCU with a pure `incq; jmp` loop in L2) */
	static const uint8_t loop[] = {0x48, 0xff, 0x04, 0x25,
				       0x00, 0x20, 0x00, 0x00, /* incq 0x2000 */
				       0xe6, 0x80,	       /* out %al, $0x80 */
				       0xeb, 0xf4};	       /* jmp loop */
	struct vm_config cfg = {.smp = 1, .mem_mb = 8};
	struct vmm_standin_info info = {0};
	struct timespec ts;
	char err[256];
	pthread_t th;

	if (vm_create(&vm, &cfg, err, sizeof(err)) < 0 ||
	    vm_boot_at(&vm, VMM_STANDIN_CODE_GPA, err, sizeof(err)) < 0) {
		dprintf(2, "vmm_standin: %s\n", err);
		_exit(21);
	}
	memcpy(vm.ram + VMM_STANDIN_CODE_GPA, loop, sizeof(loop));
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(info.cookie, sizeof(info.cookie), "hvtrace-standin:%d:%ld", (int)getpid(),
		 (long)ts.tv_nsec);
	memcpy(vm.ram + VMM_STANDIN_COOKIE_GPA, info.cookie, sizeof(info.cookie));
	if (ioctl(vm.vcpus[0].fd, KVM_GET_REGS, &info.regs) < 0)
		_exit(22);
	info.regs.rbx = 0x1122334455667788ull;
	info.regs.rdx = 0xdeadbeefcafef00dull;
	info.regs.r12 = 0x0123456789abcdefull;
	info.regs.r15 = 0xfedcba9876543210ull;
	if (ioctl(vm.vcpus[0].fd, KVM_SET_REGS, &info.regs) < 0 ||
	    ioctl(vm.vcpus[0].fd, KVM_GET_SREGS, &info.sregs) < 0)
		_exit(23);
	info.sregs.idt.base = 0x3000;
	info.sregs.idt.limit = 0x3ff;
	if (ioctl(vm.vcpus[0].fd, KVM_SET_SREGS, &info.sregs) < 0 ||
	    ioctl(vm.vcpus[0].fd, KVM_GET_SREGS, &info.sregs) < 0)
		_exit(24);
	info.ram_hva = (uint64_t)(uintptr_t)vm.ram;
	info.ram_size = vm.ram_size;
	info.vm_fd = vm.vm_fd;
	info.vcpu_fd = vm.vcpus[0].fd;
	if (pthread_create(&th, NULL, vcpu_loop, NULL))
		_exit(25);
	while (!atomic_load(&vcpu_tid) ||
	       *(volatile uint64_t *)(vm.ram + VMM_STANDIN_COUNTER_GPA) == 0)
		usleep(1000);
	info.vcpu_tid = atomic_load(&vcpu_tid);
	if (write(report, &info, sizeof(info)) != (ssize_t)sizeof(info))
		_exit(26);
	close(report);
	switch (mode) {
	case VMM_STANDIN_EXIT:
		usleep(exit_us);
		_exit(0);
	case VMM_STANDIN_REMAP:
		for (;;) {
			void *p = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0),
			     *q;
			pthread_t t;

			if (p != MAP_FAILED) {
				memset(p, 1, 4096);
				q = mremap(p, 4 << 20, 8 << 20, MREMAP_MAYMOVE);
				munmap(q != MAP_FAILED ? q : p,
				       q != MAP_FAILED ? 8 << 20 : 4 << 20);
			}
			if (pthread_create(&t, NULL, nothing, NULL) == 0)
				pthread_join(t, NULL);
		}
	case VMM_STANDIN_PLAIN:
		for (;;)
			pause();
	}
	_exit(0);
}

int vmm_standin_start(struct vmm_standin *s, enum vmm_standin_mode mode, unsigned exit_us,
		      char *err, size_t errlen)
{
	int fds[2];
	struct pollfd pfd;
	ssize_t n;

	memset(s, 0, sizeof(*s));
	if (access("/dev/kvm", R_OK | W_OK) != 0) {
		snprintf(err, errlen, "no /dev/kvm: %s", strerror(errno));
		return -ENODEV;
	}
	if (pipe(fds) != 0)
		return -errno;
	s->pid = fork();
	if (s->pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -errno;
	}
	if (s->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[0]);
		standin(fds[1], mode, exit_us);
	}
	close(fds[1]);
	pfd = (struct pollfd){.fd = fds[0], .events = POLLIN};
	n = poll(&pfd, 1, 10000) == 1 ? read(fds[0], &s->info, sizeof(s->info)) : -1;
	close(fds[0]);
	if (n != (ssize_t)sizeof(s->info)) {
		vmm_standin_kill(s);
		snprintf(err, errlen,
			 "the stand-in VMM did not report within 10 s (see its line above)");
		return -EIO;
	}
	return 0;
}

void vmm_standin_kill(struct vmm_standin *s)
{
	if (s->pid <= 0)
		return;
	kill(s->pid, SIGKILL);
	/* bounded: a test must fail, not hang, if something keeps the process from being reaped */
	for (int i = 0; i < 10000; i++) {
		pid_t r = waitpid(s->pid, NULL, __WALL | WNOHANG);

		if (r == s->pid || (r < 0 && errno == ECHILD))
			break;
		if (i == 9999)
			dprintf(2, "vmm_standin: pid %d not reaped within 10 s\n", (int)s->pid);
		usleep(1000);
	}
	s->pid = 0;
}

/* A foreign KVM VMM by pid (host/vmm/kvm_proc.c, ptrace_inject.c, kvm_inject.c, proc_mem.c) against
 * a stand-in VMM (tests/common/vmm_standin.h: a process with its own VM on /dev/kvm): its VM, vCPU
 * fd and vCPU thread found from /proc; KVM_GET_REGS / KVM_GET_SREGS made by its own threads (the
 * vCPU thread and the main thread) return exactly what it set; its guest RAM found among the
 * candidates and read through /proc/PID/mem; the guest runs on after the detach. Hostile stand-ins:
 * one that exits at some moment of the attach, one that changes its mappings and makes threads
 * without pause: every call returns within its deadline. Skipped (one line) without /dev/kvm. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/vmm/kvm_inject.h"
#include "host/vmm/kvm_proc.h"
#include "host/vmm/proc_mem.h"
#include "host/vmm/ptrace_inject.h"
#include "tests/common/skip.h"
#include "tests/common/vmm_standin.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct ptrace_inject pi;
static struct kvm_proc kp;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void start(struct vmm_standin *s, enum vmm_standin_mode mode, unsigned exit_us)
{
	char err[256] = "";
	int rc = vmm_standin_start(s, mode, exit_us, err, sizeof(err));

	if (rc)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
}

/* The guest's counter, through the stand-in's memory. */
static uint64_t guest_counter(const struct vmm_standin *s)
{
	struct proc_mem m;
	char err[160];
	uint64_t v = 0;

	assert_int_equal(proc_mem_open(&m, s->pid, err, sizeof(err)), 0);
	m.nr = 1;
	m.region[0] = (struct proc_mem_region){0, s->info.ram_size, s->info.ram_hva};
	assert_int_equal(proc_mem_read(&m, VMM_STANDIN_COUNTER_GPA, &v, sizeof(v)), 0);
	proc_mem_close(&m);
	return v;
}

static void assert_guest_runs(const struct vmm_standin *s)
{
	uint64_t c0 = guest_counter(s), end = now_ms() + 10000;

	while (guest_counter(s) == c0 && now_ms() < end)
		usleep(2000);
	assert_true(guest_counter(s) != c0);
}

/* Attaches to the stand-in with its vCPU thread found: stopped at the end of its KVM_RUN (if the
 * stop caught it between two KVM_RUNs, in the few instructions of its loop, it is let go and
 * stopped again: at most 20 times). */
static void attach_found(const struct vmm_standin *s)
{
	char err[256] = "";

	for (int i = 0; i < 20; i++) {
		int rc = ptrace_inject_attach(&pi, s->pid, 0, err, sizeof(err));

		if (rc)
			fprintf(stderr, "%s\n", err);
		assert_int_equal(rc, 0);
		if (kvm_proc_vcpu_threads(&kp) == 0)
			return;
		ptrace_inject_detach(&pi);
		usleep(1000);
	}
	fail_msg("the vCPU thread was never seen stopped in KVM_RUN");
}

static void test_discover(void **state)
{
	struct vmm_standin s;
	struct proc_mem m;
	char err[256] = "", cookie[48];
	const struct kvm_proc_ram *ram = NULL;
	int rc;

	(void)state;
	start(&s, VMM_STANDIN_PLAIN, 0);
	rc = kvm_proc_discover(s.pid, &kp, err, sizeof(err));
	if (rc)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	assert_int_equal(kp.vm_fd, s.info.vm_fd);
	assert_int_equal(kp.nr_vm_fds, 1);
	assert_true(kp.dev_fd >= 0);
	assert_int_equal(kp.nr_vcpus, 1);
	assert_int_equal(kp.vcpu[0].id, 0);
	assert_int_equal(kp.vcpu[0].fd, s.info.vcpu_fd);
	/* seen in KVM_RUN if blocked there; running guest code, only once it is stopped */
	assert_true(kp.vcpu[0].tid == 0 || kp.vcpu[0].tid == s.info.vcpu_tid);
	assert_true(kp.vcpu[0].run_hva != 0);
	assert_true(kp.nr_threads >= 2);
	attach_found(&s);
	assert_int_equal(kp.vcpu[0].tid, s.info.vcpu_tid);
	ptrace_inject_detach(&pi);
	/* the RAM: one of the candidates holds it, and the cookie is there */
	for (unsigned i = 0; i < kp.nr_ram; i++)
		if (kp.ram[i].hva <= s.info.ram_hva &&
		    s.info.ram_hva + s.info.ram_size <= kp.ram[i].hva + kp.ram[i].len)
			ram = &kp.ram[i];
	assert_non_null(ram);
	assert_int_equal(proc_mem_open(&m, s.pid, err, sizeof(err)), 0);
	m.nr = 1;
	m.region[0] = (struct proc_mem_region){0, s.info.ram_size, s.info.ram_hva};
	assert_int_equal(proc_mem_read(&m, VMM_STANDIN_COOKIE_GPA, cookie, sizeof(cookie)), 0);
	assert_string_equal(cookie, s.info.cookie);
	proc_mem_close(&m);
	vmm_standin_kill(&s);
}

/* The registers it set, read back by its own threads: the vCPU thread, then the main thread. */
static void test_inject_regs(void **state)
{
	struct vmm_standin s;
	struct kvm_regs r;
	struct kvm_sregs sr;
	char err[256] = "";
	pid_t threads[2];
	int rc;

	(void)state;
	start(&s, VMM_STANDIN_PLAIN, 0);
	assert_int_equal(kvm_proc_discover(s.pid, &kp, err, sizeof(err)), 0);
	threads[0] = s.info.vcpu_tid;
	threads[1] = s.pid;
	for (int t = 0; t < 2; t++) {
		uint64_t t0 = now_ms(), t0us = now_us();

		uint64_t t1, t2, t3;

		attach_found(&s);
		t1 = now_us();
		assert_int_equal(kp.vcpu[0].tid, s.info.vcpu_tid);
		assert_int_equal(ptrace_inject_select(&pi, threads[t], err, sizeof(err)), 0);
		if (t == 0) /* the vCPU thread, stopped at the end of its KVM_RUN */
			assert_int_equal((long)pi.saved.orig_rax, SYS_ioctl);
		memset(&r, 0, sizeof(r));
		rc = kvm_inject_get_regs(&pi, kp.vcpu[0].fd, &r, err, sizeof(err));
		if (rc)
			fprintf(stderr, "%s\n", err);
		assert_int_equal(rc, 0);
		assert_int_equal(r.rbx, s.info.regs.rbx);
		assert_int_equal(r.rdx, s.info.regs.rdx);
		assert_int_equal(r.r12, s.info.regs.r12);
		assert_int_equal(r.r15, s.info.regs.r15);
		assert_int_equal(r.rsp, s.info.regs.rsp);
		assert_int_equal(r.rdi, s.info.regs.rdi);
		assert_int_equal(r.rsi, s.info.regs.rsi);
		assert_in_range(r.rip, VMM_STANDIN_CODE_GPA, VMM_STANDIN_CODE_GPA + 11);
		memset(&sr, 0, sizeof(sr));
		rc = kvm_inject_get_sregs(&pi, kp.vcpu[0].fd, &sr, err, sizeof(err));
		if (rc)
			fprintf(stderr, "%s\n", err);
		assert_int_equal(rc, 0);
		assert_int_equal(sr.cr0, s.info.sregs.cr0);
		assert_int_equal(sr.cr3, s.info.sregs.cr3);
		assert_int_equal(sr.cr4, s.info.sregs.cr4);
		assert_int_equal(sr.efer, s.info.sregs.efer);
		assert_int_equal(sr.idt.base, 0x3000);
		assert_int_equal(sr.idt.limit, 0x3ff);
		assert_int_equal(sr.gdt.base, s.info.sregs.gdt.base);
		assert_int_equal(sr.cs.selector, s.info.sregs.cs.selector);
		assert_int_equal(sr.cs.l, 1);
		/* a vCPU fd that is none: KVM's own error, one line */
		assert_int_equal(kvm_inject_get_regs(&pi, 0, &r, err, sizeof(err)), -ENOTTY);
		assert_non_null(strstr(err, "the injected ioctl(0, KVM_GET_REGS)"));
		assert_int_equal(pi.injected, 3);
		t2 = now_us();
		ptrace_inject_detach(&pi);
		t3 = now_us();
		printf("%s thread: attach %llu us, threads + select + 3 injected ioctls %llu us, "
		       "detach %llu us\n",
		       t ? "main" : "vCPU", (unsigned long long)(t1 - t0us),
		       (unsigned long long)(t2 - t1), (unsigned long long)(t3 - t2));
		assert_true(now_ms() - t0 < 10000);
		assert_guest_runs(&s);
	}
	vmm_standin_kill(&s);
}

/* Where a hostile case is, for the watchdog's line if it ever stops making progress. */
static const char *volatile phase = "";
static volatile pid_t phase_pid;
static volatile int phase_round;
static volatile int phase_done; /* the case ended: the watchdog stands down */

/* Prints what the stand-in's threads are doing, then aborts: a hang is a failure with its cause. */
static void *watchdog(void *arg)
{
	char path[96], buf[512];

	sleep((unsigned)(uintptr_t)arg);
	if (phase_done)
		return NULL;
	fprintf(stderr, "watchdog: stuck in round %d at %s (stand-in pid %d)\n", phase_round, phase,
		(int)phase_pid);
	for (const char *f = "status\0syscall\0wchan\0stack\0"; *f; f += strlen(f) + 1) {
		int fd;
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/%s", (int)phase_pid, f);
		fd = open(path, O_RDONLY);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = 0;
		fprintf(stderr, "%s:\n%s\n", path, buf);
	}
	abort();
	return NULL;
}

/* Hostile: the VMM exits at some moment of the attach. */
static void test_exits_during_attach(void **state)
{
	pthread_t wd;

	(void)state;
	assert_int_equal(pthread_create(&wd, NULL, watchdog, (void *)(uintptr_t)90), 0);
	pthread_detach(wd);
	for (unsigned round = 0; round < 12; round++) {
		struct vmm_standin s;
		struct kvm_regs r;
		char err[256] = "";
		uint64_t t0;
		int rc;

		phase_round = (int)round;
		phase = "start";
		start(&s, VMM_STANDIN_EXIT, round * 700);
		phase_pid = s.pid;
		t0 = now_ms();
		phase = "discover";
		rc = kvm_proc_discover(s.pid, &kp, err, sizeof(err));
		phase = "attach";
		if (rc == 0)
			rc = ptrace_inject_attach(&pi, s.pid, 1000, err, sizeof(err));
		if (rc == 0) {
			phase = "threads";
			kvm_proc_vcpu_threads(&kp);
			phase = "select";
			rc = ptrace_inject_select(&pi, kp.vcpu[0].tid ? kp.vcpu[0].tid : s.pid, err,
						  sizeof(err));
			phase = "inject";
			if (rc == 0)
				rc = kvm_inject_get_regs(&pi, kp.vcpu[0].fd, &r, err, sizeof(err));
			if (rc == 0)
				assert_int_equal(r.rbx, s.info.regs.rbx);
			phase = "detach";
			ptrace_inject_detach(&pi);
		}
		fprintf(stderr, "round %u: %d ms: %s\n", round, (int)(now_ms() - t0),
			rc ? err : "registers read");
		phase = "kill";
		if (rc) {
			assert_true(err[0] != 0);
			assert_null(strchr(err, '\n'));
		}
		assert_true(now_ms() - t0 < 5000);
		vmm_standin_kill(&s);
	}
	phase_done = 1;
}

/* Hostile: mappings made, grown, moved and unmapped, threads made, without pause. */
static void test_remapping(void **state)
{
	struct vmm_standin s;

	(void)state;
	start(&s, VMM_STANDIN_REMAP, 0);
	for (int round = 0; round < 8; round++) {
		struct kvm_sregs sr;
		char err[256] = "";
		uint64_t t0 = now_ms();
		int rc = kvm_proc_discover(s.pid, &kp, err, sizeof(err));

		if (rc == 0)
			rc = ptrace_inject_attach(&pi, s.pid, 2000, err, sizeof(err));
		if (rc == 0) {
			rc = ptrace_inject_select(&pi, s.pid, err, sizeof(err));
			if (rc == 0)
				rc = kvm_inject_get_sregs(&pi, s.info.vcpu_fd, &sr, err,
							  sizeof(err));
			if (rc == 0)
				assert_int_equal(sr.cr3, s.info.sregs.cr3);
			ptrace_inject_detach(&pi);
		}
		if (rc)
			fprintf(stderr, "round %d: %s\n", round, err);
		assert_int_equal(rc, 0);
		assert_true(now_ms() - t0 < 10000);
		assert_guest_runs(&s);
	}
	vmm_standin_kill(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_discover),
	    cmocka_unit_test(test_inject_regs),
	    cmocka_unit_test(test_exits_during_attach),
	    cmocka_unit_test(test_remapping),
	};

	if (access("/dev/kvm", R_OK | W_OK) != 0)
		hv_skip_binary("test_kvm_inject: no /dev/kvm for the stand-in VMM's VM (%s)",
			       strerror(errno));
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* A KVM VMM seen from /proc (host/vmm/kvm_proc.c, host/vmm/proc_maps.c): fd links, a thread's
 * syscall line, maps lines (the peer's own names), the RAM candidates kept, and the discovery of
 * processes that are not KVM VMMs (this test itself, a pid that does not exist). The discovery of a
 * real VM is tested against a stand-in VMM in test_kvm_inject.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/vmm/kvm_proc.h"
#include "host/vmm/proc_maps.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct kvm_proc kp;

static void test_fd_kind(void **state)
{
	unsigned id = 99;

	(void)state;
	assert_int_equal(kvm_proc_fd_kind("anon_inode:kvm-vm", &id), KVM_PROC_FD_VM);
	assert_int_equal(kvm_proc_fd_kind("/dev/kvm", &id), KVM_PROC_FD_DEV);
	assert_int_equal(kvm_proc_fd_kind("anon_inode:kvm-vcpu:0", &id), KVM_PROC_FD_VCPU);
	assert_int_equal(id, 0);
	assert_int_equal(kvm_proc_fd_kind("anon_inode:kvm-vcpu:4095", &id), KVM_PROC_FD_VCPU);
	assert_int_equal(id, 4095);
	id = 7;
	assert_int_equal(kvm_proc_fd_kind("anon_inode:kvm-vcpu:", &id), KVM_PROC_FD_OTHER);
	assert_int_equal(kvm_proc_fd_kind("anon_inode:kvm-vcpu:1x", &id), KVM_PROC_FD_OTHER);
	assert_int_equal(kvm_proc_fd_kind("anon_inode:kvm-vcpu:99999999999999999999", &id),
			 KVM_PROC_FD_OTHER);
	assert_int_equal(kvm_proc_fd_kind("anon_inode:kvm-vcpu:65536", &id), KVM_PROC_FD_OTHER);
	assert_int_equal(id, 7);
	assert_int_equal(kvm_proc_fd_kind("anon_inode:kvm-vm (deleted)", &id), KVM_PROC_FD_OTHER);
	assert_int_equal(kvm_proc_fd_kind("anon_inode:[eventfd]", &id), KVM_PROC_FD_OTHER);
	assert_int_equal(kvm_proc_fd_kind("", &id), KVM_PROC_FD_OTHER);
}

#define SYSCALL_OK(s) kvm_proc_parse_syscall(s, strlen(s), &nr, args)

static void test_parse_syscall(void **state)
{
	long nr = -5;
	uint64_t args[6] = {0};

	(void)state;
	assert_int_equal(
	    SYSCALL_OK("16 0xc 0xae80 0x0 0x0 0x0 0x0 0x7f5e3bffe8c8 0x7f5e4bd1fafb\n"), 0);
	assert_int_equal(nr, 16);
	assert_int_equal(args[0], 12);
	assert_int_equal(args[1], 0xae80);
	assert_int_equal(SYSCALL_OK("0 0x3 0x7ffd09fab3a7 0x1 0x7fdffdc584f0 0x0 0x7fdffdc3c8c0 "
				    "0x7ffd09fab398 0x7fdffdd372ad"),
			 0);
	assert_int_equal(args[3], 0x7fdffdc584f0ull);
	assert_int_equal(SYSCALL_OK("running\n"), -ENOENT);
	assert_int_equal(SYSCALL_OK("running"), -ENOENT);
	assert_int_equal(SYSCALL_OK("-1 0x7ffc 0x7f12\n"), -ENOENT);
	assert_int_equal(SYSCALL_OK("-2 0x7ffc 0x7f12\n"), -EINVAL);
	assert_int_equal(SYSCALL_OK("-1 0x7ffc\n"), -EINVAL);
	assert_int_equal(SYSCALL_OK("16 0xc 0xae80 0x0 0x0 0x0\n"), -EINVAL);
	assert_int_equal(SYSCALL_OK("16 0xc 0xae80 0x0 0x0 0x0 0x0 0x1 0x2 0x3\n"), -EINVAL);
	assert_int_equal(SYSCALL_OK("16 0x11112222333344445 0xae80 0x0 0x0 0x0 0x0 0x1 0x2\n"),
			 -EINVAL);
	assert_int_equal(SYSCALL_OK("99999 0x1 0x1 0x0 0x0 0x0 0x0 0x1 0x2\n"), -EINVAL);
	assert_int_equal(SYSCALL_OK("16 12 0xae80 0x0 0x0 0x0 0x0 0x1 0x2\n"), -EINVAL);
	assert_int_equal(SYSCALL_OK("runningX"), -EINVAL);
	assert_int_equal(SYSCALL_OK(""), -EINVAL);
}

#define LINE(s, e) proc_maps_parse_line(s, strlen(s), e)

static void test_maps_line(void **state)
{
	struct proc_maps_entry e;
	char longname[600];

	(void)state;
	assert_int_equal(LINE("7f5e3c000000-7f5e7c000000 rw-p 00000000 00:00 0 ", &e), 0);
	assert_int_equal(e.lo, 0x7f5e3c000000ull);
	assert_int_equal(e.hi, 0x7f5e7c000000ull);
	assert_true(e.r && e.w && !e.x && !e.shared);
	assert_string_equal(e.name, "");
	assert_int_equal(LINE("7f5e3c000000-7f5e7c000000 rw-s 00000000 00:01 1043   "
			      "                  /memfd:pc.ram (deleted)",
			      &e),
			 0);
	assert_true(e.shared);
	assert_string_equal(e.name, "/memfd:pc.ram (deleted)");
	assert_int_equal(LINE("7f5e4bffc000-7f5e4bffd000 rw-s 00000000 00:0e 1045 "
			      "anon_inode:kvm-vcpu:0",
			      &e),
			 0);
	assert_string_equal(e.name, "anon_inode:kvm-vcpu:0");
	assert_int_equal(LINE("55d5e1c00000-55d5e1c21000 rw-p 00000000 00:00 0 [heap]", &e), 0);
	assert_int_equal(
	    LINE("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]", &e), 0);
	assert_true(e.x && !e.r);
	assert_int_equal(LINE("7f5e-7f5e rw-p 00000000 00:00 0", &e), -EINVAL); /* empty */
	assert_int_equal(LINE("7f5f-7f5e rw-p 00000000 00:00 0", &e), -EINVAL);
	assert_int_equal(LINE("7f5e-7f5f rwzp 00000000 00:00 0", &e), -EINVAL);
	assert_int_equal(LINE("7f5e-7f5f rw-p 00000000 00:00", &e), -EINVAL);
	assert_int_equal(LINE("7f5e-7f5f rw-p 00000000 00:00 x", &e), -EINVAL);
	assert_int_equal(LINE("11112222333344445-7f5f rw-p 00000000 00:00 0", &e), -EINVAL);
	assert_int_equal(LINE("", &e), -EINVAL);
	snprintf(longname, sizeof(longname), "1000-2000 rw-s 00000000 00:00 7 /%0550d", 0);
	assert_int_equal(LINE(longname, &e), 0);
	assert_true(e.cut);
	assert_int_equal(strlen(e.name), PROC_MAPS_NAME_MAX - 1);
}

static void take(const char *line)
{
	struct proc_maps_entry e;

	assert_int_equal(LINE(line, &e), 0);
	kvm_proc_take_map(&kp, &e);
}

static void test_ram_candidates(void **state)
{
	char line[160];

	(void)state;
	memset(&kp, 0, sizeof(kp));
	kp.nr_vcpus = 2;
	kp.vcpu[0] = (struct kvm_proc_vcpu){.id = 0, .fd = 12};
	kp.vcpu[1] = (struct kvm_proc_vcpu){.id = 1, .fd = 13};
	take("7f5e3c000000-7f5e7c000000 rw-p 00000000 00:00 0 "); /* 1 GiB anonymous */
	take("7f0000000000-7f0000800000 rw-s 00000000 00:01 9 /memfd:pc.ram (deleted)");
	take("7f1000000000-7f1000100000 rw-p 00000000 00:00 0 "); /* 1 MiB: the least */
	take("7f2000000000-7f20000ff000 rw-p 00000000 00:00 0 "); /* smaller */
	take("7f3000000000-7f3001000000 r-xp 00000000 08:01 5 /usr/lib/libc.so.6");
	take("7f4000000000-7f4001000000 r--p 00000000 00:00 0 "); /* read-only */
	take("7ffc00000000-7ffc00800000 rw-p 00000000 00:00 0 [stack]");
	take("7f5000000000-7f5001000000 rw-p 00000000 08:01 5 /var/lib/private-file");
	take("7f6000000000-7f6001000000 rw-s 00000000 08:01 5 /var/lib/vm.img"); /* shared file */
	take("7f7000000000-7f7000001000 rw-s 00000000 00:0e 10 anon_inode:kvm-vcpu:1");
	take("7f8000000000-7f8000001000 rw-s 00000000 00:0e 10 anon_inode:kvm-vcpu:7"); /* no fd */
	take("7f9000000000-7f9001000000 rw-s 00000000 00:0e 10 anon_inode:kvm-vm");
	assert_int_equal(kp.nr_ram, 4);
	assert_int_equal(kp.ram[0].hva, 0x7f5e3c000000ull);
	assert_false(kp.ram[0].shared);
	assert_int_equal(kp.ram[1].hva, 0x7f0000000000ull);
	assert_true(kp.ram[1].shared);
	assert_int_equal(kp.ram[2].hva, 0x7f1000000000ull);
	assert_int_equal(kp.ram[3].hva, 0x7f6000000000ull);
	assert_int_equal(kp.vcpu[0].run_hva, 0);
	assert_int_equal(kp.vcpu[1].run_hva, 0x7f7000000000ull);
	/* full: the smallest gives way to a larger one, never to a smaller one */
	for (unsigned i = 0; i < 40; i++) {
		snprintf(line, sizeof(line), "%llx-%llx rw-p 00000000 00:00 0 ",
			 0x600000000000ull + (i << 30), 0x600000000000ull + (i << 30) + (2u << 20));
		take(line);
	}
	assert_int_equal(kp.nr_ram, KVM_PROC_MAX_RAM);
	for (unsigned i = 0; i < kp.nr_ram; i++)
		assert_true(kp.ram[i].len >= (2u << 20));
}

static void test_not_a_vmm(void **state)
{
	char err[256], want[200];

	(void)state;
	assert_int_equal(kvm_proc_discover(getpid(), &kp, err, sizeof(err)), -ENODEV);
	snprintf(want, sizeof(want),
		 "pid %d (test_kvm_proc): not a KVM VMM: no anon_inode:kvm-vm "
		 "among its %u open files",
		 (int)getpid(), kp.nr_fds);
	assert_string_equal(err, want);
	assert_true(kp.nr_fds >= 3);
	assert_int_equal(kvm_proc_discover(1 << 23, &kp, err, sizeof(err)), -ESRCH);
	assert_string_equal(err, "pid 8388608: no such process");
	assert_int_equal(kvm_proc_discover(0, &kp, err, sizeof(err)), -ESRCH);
}

/* A process that has exited and is not reaped yet (its files closed): said so, not "not a VMM". */
static void test_zombie(void **state)
{
	char err[256], want[128];
	pid_t pid = fork();

	(void)state;
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	for (int i = 0; i < 5000; i++) { /* until it is a zombie (waitid WNOWAIT leaves it so) */
		siginfo_t si = {0};

		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == 0 && si.si_pid == pid)
			break;
	}
	assert_int_equal(kvm_proc_discover(pid, &kp, err, sizeof(err)), -ESRCH);
	snprintf(want, sizeof(want), "pid %d (test_kvm_proc) has exited (a zombie, or gone)",
		 (int)pid);
	assert_string_equal(err, want);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
}

static int count_lines(void *ctx, const struct proc_maps_entry *e)
{
	(void)e;
	(*(unsigned *)ctx)++;
	return 0;
}

static void test_maps_each_self(void **state)
{
	unsigned n = 0;

	(void)state;
	assert_int_equal(proc_maps_each(getpid(), count_lines, &n), 0);
	assert_true(n > 5);
	assert_int_equal(proc_maps_each(1 << 23, count_lines, &n), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fd_kind),	   cmocka_unit_test(test_parse_syscall),
	    cmocka_unit_test(test_maps_line),	   cmocka_unit_test(test_ram_candidates),
	    cmocka_unit_test(test_not_a_vmm),	   cmocka_unit_test(test_zombie),
	    cmocka_unit_test(test_maps_each_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

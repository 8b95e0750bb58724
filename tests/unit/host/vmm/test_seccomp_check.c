/* A thread's seccomp filters run before a syscall is injected (host/vmm/seccomp_check.c): the
 * classic-BPF interpreter on filters as VMMs write them (by syscall number, by argument, by
 * architecture), and on malformed programs (a peer's): loads outside seccomp_data, jumps past the
 * end, a program without a return, unknown opcodes: -EINVAL, never a read out of bounds. The
 * filters of a real thread are read in test_ptrace_inject.c's test_seccomp. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/vmm/seccomp_check.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define N(f) (unsigned)(sizeof(f) / sizeof((f)[0]))

/* A Firecracker-like vCPU filter: x86_64 only; ioctl allowed for KVM_RUN and KVM_GET_REGS only,
 * other ioctls EPERM; getpid allowed; anything else kills the process. */
static const struct sock_filter vcpu_filter[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpid, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
    BPF_STMT(BPF_ST, 3),
    BPF_STMT(BPF_LDX | BPF_W | BPF_MEM, 3),
    BPF_STMT(BPF_MISC | BPF_TXA, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, KVM_RUN, 2, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, KVM_GET_REGS, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

static uint32_t run(long nr, uint64_t arg1, uint32_t arch)
{
	struct seccomp_data d = {.nr = (int)nr, .arch = arch, .args = {5, arg1}};
	uint32_t ret = 0x12345;

	assert_int_equal(seccomp_check_eval(vcpu_filter, N(vcpu_filter), &d, &ret), 0);
	return ret;
}

static void test_vcpu_filter(void **state)
{
	(void)state;
	assert_int_equal(run(SYS_getpid, 0, AUDIT_ARCH_X86_64), SECCOMP_RET_ALLOW);
	assert_int_equal(run(SYS_ioctl, KVM_GET_REGS, AUDIT_ARCH_X86_64), SECCOMP_RET_ALLOW);
	assert_int_equal(run(SYS_ioctl, KVM_RUN, AUDIT_ARCH_X86_64), SECCOMP_RET_ALLOW);
	assert_int_equal(run(SYS_ioctl, KVM_GET_SREGS, AUDIT_ARCH_X86_64),
			 SECCOMP_RET_ERRNO | EPERM);
	assert_int_equal(run(SYS_mmap, 0, AUDIT_ARCH_X86_64), SECCOMP_RET_KILL_PROCESS);
	assert_int_equal(run(SYS_getpid, 0, AUDIT_ARCH_I386), SECCOMP_RET_KILL_PROCESS);
	assert_string_equal(seccomp_check_action_name(SECCOMP_RET_ERRNO | EPERM),
			    "SECCOMP_RET_ERRNO");
	assert_string_equal(seccomp_check_action_name(0x00100000u),
			    "an unknown seccomp action (the kernel kills)");
}

static void test_alu(void **state)
{
	const struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_IMM, 7),	     BPF_STMT(BPF_ALU | BPF_MUL | BPF_K, 6),
	    BPF_STMT(BPF_LDX | BPF_IMM, 2),	     BPF_STMT(BPF_ALU | BPF_SUB | BPF_X, 0),
	    BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 40), /* past 31: 0 */
	    BPF_STMT(BPF_ALU | BPF_OR | BPF_K, 9),   BPF_STMT(BPF_RET | BPF_A, 0),
	};
	const struct sock_filter div0[] = {
	    BPF_STMT(BPF_LD | BPF_IMM, 7),
	    BPF_STMT(BPF_LDX | BPF_IMM, 0),
	    BPF_STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct seccomp_data d = {0};
	uint32_t ret;

	(void)state;
	assert_int_equal(seccomp_check_eval(f, N(f), &d, &ret), 0);
	assert_int_equal(ret, 9);
	/* a division by zero ends the program with 0 (the kernel's KILL_THREAD) */
	assert_int_equal(seccomp_check_eval(div0, N(div0), &d, &ret), 0);
	assert_int_equal(ret, 0);
}

static void test_malformed(void **state)
{
	const struct sock_filter past_data[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, sizeof(struct seccomp_data)),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	const struct sock_filter unaligned[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 2),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	const struct sock_filter byte_load[] = {
	    BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	const struct sock_filter jump_out[] = {
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 5, 5),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	const struct sock_filter ja_out[] = {
	    BPF_STMT(BPF_JMP | BPF_JA, 0xffffffffu),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	const struct sock_filter no_ret[] = {
	    BPF_STMT(BPF_LD | BPF_IMM, 1),
	};
	const struct sock_filter mem_out[] = {
	    BPF_STMT(BPF_ST, BPF_MEMWORDS),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	const struct sock_filter bad_op[] = {
	    {0xff, 0, 0, 0},
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct seccomp_data d = {0};
	uint32_t ret = 77;

	(void)state;
	assert_int_equal(seccomp_check_eval(past_data, N(past_data), &d, &ret), -EINVAL);
	assert_int_equal(seccomp_check_eval(unaligned, N(unaligned), &d, &ret), -EINVAL);
	assert_int_equal(seccomp_check_eval(byte_load, N(byte_load), &d, &ret), -EINVAL);
	assert_int_equal(seccomp_check_eval(jump_out, N(jump_out), &d, &ret), -EINVAL);
	assert_int_equal(seccomp_check_eval(ja_out, N(ja_out), &d, &ret), -EINVAL);
	assert_int_equal(seccomp_check_eval(no_ret, N(no_ret), &d, &ret), -EINVAL);
	assert_int_equal(seccomp_check_eval(mem_out, N(mem_out), &d, &ret), -EINVAL);
	assert_int_equal(seccomp_check_eval(bad_op, N(bad_op), &d, &ret), -EINVAL);
	assert_int_equal(seccomp_check_eval(bad_op, 0, &d, &ret), -EINVAL);
	assert_int_equal(seccomp_check_eval(bad_op, BPF_MAXINSNS + 1, &d, &ret), -EINVAL);
	assert_int_equal(ret, 77);
}

/* This process has no filter: its own threads cannot be asked (not traced), -ESRCH or -EPERM. */
static void test_not_traced(void **state)
{
	uint64_t args[6] = {0};
	uint32_t action;

	(void)state;
	assert_true(seccomp_check_thread(getpid(), SYS_getpid, args, 0, &action) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_vcpu_filter),
	    cmocka_unit_test(test_alu),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_not_traced),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* host/kvm/kvm_int3_probe.c: how the check VM's exits are classified, which verdicts let which
 * backend use trap probes, the messages; host/qemu/qemu_accel.c: telling that a QEMU uses KVM. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/kvm/kvm_int3_probe.h"
#include "host/qemu/qemu_accel.h"

#include <errno.h>
#include <string.h>

static struct kvm_run *run;
static uint8_t run_page[4096] __attribute__((aligned(4096)));
static char detail[200];

static int clear_run(void **state)
{
	(void)state;
	memset(run_page, 0, sizeof(run_page));
	run = (struct kvm_run *)run_page;
	strcpy(detail, "untouched");
	return 0;
}

static int classify(int run_errno, bool timed_out)
{
	return kvm_int3_classify(run, run_errno, timed_out, detail, sizeof(detail));
}

/* Real KVM: #BP at the check's INT3. Another vector or address is not the answer. */
static void test_debug_exit(void **state)
{
	(void)state;
	run->exit_reason = KVM_EXIT_DEBUG;
	run->debug.arch.exception = 3;
	run->debug.arch.pc = KVM_INT3_CHECK_RIP;
	assert_int_equal(classify(0, false), KVM_INT3_DEBUG_EXIT);
	assert_string_equal(detail, "KVM_EXIT_DEBUG (#BP) at the INT3");
	run->debug.arch.pc = KVM_INT3_CHECK_RIP + 1;
	assert_int_equal(classify(0, false), KVM_INT3_OTHER);
	assert_string_equal(detail, "KVM_EXIT_DEBUG (exception 3) at 0x1001, not the INT3's #BP");
	run->debug.arch.pc = KVM_INT3_CHECK_RIP;
	run->debug.arch.exception = 1;
	assert_int_equal(classify(0, false), KVM_INT3_OTHER);
}

/* PVM: an emulation failure with RIP at the INT3; another suberror or RIP is something else. */
static void test_emulation(void **state)
{
	(void)state;
	run->exit_reason = KVM_EXIT_INTERNAL_ERROR;
	run->internal.suberror = KVM_INTERNAL_ERROR_EMULATION;
	run->s.regs.regs.rip = KVM_INT3_CHECK_RIP;
	assert_int_equal(classify(0, false), KVM_INT3_EMULATION);
	assert_string_equal(detail, "KVM_EXIT_INTERNAL_ERROR (emulation) at the INT3");
	run->s.regs.regs.rip = 0x3018;
	assert_int_equal(classify(0, false), KVM_INT3_OTHER);
	assert_string_equal(detail, "KVM_EXIT_INTERNAL_ERROR (suberror 1) at RIP 0x3018");
	run->s.regs.regs.rip = KVM_INT3_CHECK_RIP;
	run->internal.suberror = KVM_INTERNAL_ERROR_DELIVERY_EV;
	assert_int_equal(classify(0, false), KVM_INT3_OTHER);
}

/* The check guest's handlers write their vector to port 0x80: vector 3 means INT3 went to the
 * guest's IDT; another vector or port is some other fault. */
static void test_guest_idt(void **state)
{
	(void)state;
	run->exit_reason = KVM_EXIT_IO;
	run->io.direction = KVM_EXIT_IO_OUT;
	run->io.port = 0x80;
	run->io.size = 1;
	run->io.count = 1;
	run->io.data_offset = 1024;
	run_page[1024] = 3;
	assert_int_equal(classify(0, false), KVM_INT3_GUEST_IDT);
	assert_string_equal(detail, "the guest's #BP handler ran");
	run_page[1024] = 6;
	assert_int_equal(classify(0, false), KVM_INT3_OTHER);
	assert_string_equal(detail, "the guest's handler of exception 6 ran");
	run_page[1024] = 3;
	run->io.port = 0xe9;
	assert_int_equal(classify(0, false), KVM_INT3_OTHER);
	assert_string_equal(detail, "KVM_EXIT_IO on port 0xe9");
	run->io.port = 0x80;
	run->io.direction = KVM_EXIT_IO_IN;
	assert_int_equal(classify(0, false), KVM_INT3_OTHER);
}

static void test_shutdown_hlt_other(void **state)
{
	(void)state;
	run->exit_reason = KVM_EXIT_SHUTDOWN;
	assert_int_equal(classify(0, false), KVM_INT3_TRIPLE_FAULT);
	run->exit_reason = KVM_EXIT_HLT;
	assert_int_equal(classify(0, false), KVM_INT3_OTHER);
	assert_string_equal(detail, "KVM_EXIT_HLT: the INT3 was stepped over");
	run->exit_reason = KVM_EXIT_MMIO;
	run->s.regs.regs.rip = 0x1001;
	assert_int_equal(classify(0, false), KVM_INT3_OTHER);
	assert_string_equal(detail, "exit reason 6 at RIP 0x1001");
}

/* An interruption before the bound runs again; after it, it is the timeout. A failed KVM_RUN
 * means no check. */
static void test_interrupted_and_failed(void **state)
{
	(void)state;
	assert_int_equal(classify(EINTR, false), -1);
	assert_string_equal(detail, "untouched");
	run->exit_reason = KVM_EXIT_INTR;
	assert_int_equal(classify(0, false), -1);
	assert_int_equal(classify(0, true), KVM_INT3_TIMEOUT);
	assert_int_equal(classify(EINTR, true), KVM_INT3_TIMEOUT);
	assert_string_equal(detail, "no exit within 3000 ms of KVM_RUN");
	run->exit_reason = 0;
	assert_int_equal(classify(EFAULT, false), KVM_INT3_NO_CHECK);
	assert_string_equal(detail, "KVM_RUN: Bad address");
}

/* The embedded VMM handles both exits; QEMU only KVM_EXIT_DEBUG; nothing else lets trap probes in.
 */
static void test_exits_by_backend(void **state)
{
	(void)state;
	for (int v = KVM_INT3_DEBUG_EXIT; v <= KVM_INT3_NO_CHECK; v++) {
		assert_int_equal(kvm_int3_exits(v, false),
				 v == KVM_INT3_DEBUG_EXIT || v == KVM_INT3_EMULATION);
		assert_int_equal(kvm_int3_exits(v, true), v == KVM_INT3_DEBUG_EXIT);
	}
}

static void test_names_and_why(void **state)
{
	static const char *const hook[] = {"debug-exit", "emulation", "guest-idt", "triple-fault",
					   "other",	 "timeout",   "no-check"};
	struct kvm_int3_check c = {.verdict = KVM_INT3_GUEST_IDT};
	char buf[256];

	(void)state;
	for (int v = 0; v < 7; v++)
		assert_int_equal(kvm_int3_verdict_parse(hook[v]), v);
	assert_int_equal(kvm_int3_verdict_parse("yes"), -1);
	assert_int_equal(kvm_int3_verdict_parse(""), -1);
	assert_string_equal(kvm_int3_verdict_name(KVM_INT3_EMULATION),
			    "emulation failure (PVM-style)");
	assert_string_equal(kvm_int3_verdict_name(KVM_INT3_DEBUG_EXIT),
			    "KVM_EXIT_DEBUG (real KVM)");
	assert_string_equal(kvm_int3_why(&c, true, buf, sizeof(buf)), "it goes to the guest's IDT");
	c.verdict = KVM_INT3_EMULATION;
	assert_string_equal(kvm_int3_why(&c, true, buf, sizeof(buf)),
			    "it ends in an emulation failure, not the KVM_EXIT_DEBUG QEMU needs");
	c.verdict = KVM_INT3_NO_CHECK;
	strcpy(c.detail, "/dev/kvm: No such file or directory");
	assert_string_equal(kvm_int3_why(&c, false, buf, sizeof(buf)),
			    "or cannot tell: the check VM failed: /dev/kvm: No such file or "
			    "directory");
}

/* HMP `info kvm` as QEMU 7.2 prints it, and what is not an answer. */
static void test_info_kvm(void **state)
{
	static const char en[] = "kvm support: enabled\r\n", dis[] = "kvm support: disabled\r\n",
			  nc[] = "kvm support: not compiled\r\n";

	(void)state;
	assert_int_equal(qemu_accel_info_kvm(en, strlen(en)), 1);
	assert_int_equal(qemu_accel_info_kvm(dis, strlen(dis)), 0);
	assert_int_equal(qemu_accel_info_kvm(nc, strlen(nc)), 0);
	assert_int_equal(qemu_accel_info_kvm("unknown command: 'info kvm'", 27), -1);
	assert_int_equal(qemu_accel_info_kvm(en, 15), -1); /* cut short: "kvm support: en" */
	assert_int_equal(qemu_accel_info_kvm("", 0), -1);
}

#define CMDLINE(s) s, sizeof(s) - 1

static void test_cmdline_kvm(void **state)
{
	(void)state;
	assert_int_equal(qemu_accel_cmdline_kvm(CMDLINE("qemu\0-enable-kvm\0-m\0512\0")), 1);
	assert_int_equal(qemu_accel_cmdline_kvm(CMDLINE("qemu\0-accel\0kvm\0")), 1);
	assert_int_equal(qemu_accel_cmdline_kvm(CMDLINE("qemu\0--accel\0kvm,kernel-irqchip=on\0")),
			 1);
	assert_int_equal(qemu_accel_cmdline_kvm(CMDLINE("qemu\0-machine\0pc-q35-7.2,accel=kvm\0")),
			 1);
	assert_int_equal(qemu_accel_cmdline_kvm(CMDLINE("qemu\0-M\0accel=kvm:tcg\0")), 1);
	/* libvirt's form */
	assert_int_equal(qemu_accel_cmdline_kvm(CMDLINE(
			     "/usr/bin/qemu-system-x86_64\0-name\0guest=d\0-machine\0pc,usb=off\0"
			     "-accel\0kvm\0-cpu\0host\0")),
			 1);
	assert_int_equal(qemu_accel_cmdline_kvm(CMDLINE("qemu\0-accel\0tcg,thread=multi\0")), 0);
	assert_int_equal(qemu_accel_cmdline_kvm(CMDLINE("qemu\0-machine\0pc,accel=tcg\0")), 0);
	assert_int_equal(qemu_accel_cmdline_kvm(CMDLINE("qemu\0-accel\0kvmx\0")), 0);
	assert_int_equal(qemu_accel_cmdline_kvm(CMDLINE("qemu\0-machine\0pc,xaccel=kvm\0")), 0);
	/* the program name alone, a trailing argument without NUL, nothing */
	assert_int_equal(qemu_accel_cmdline_kvm(CMDLINE("-enable-kvm-not")), 0);
	assert_int_equal(qemu_accel_cmdline_kvm(CMDLINE("qemu\0-accel\0kvm")), 1);
	assert_int_equal(qemu_accel_cmdline_kvm("", 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_debug_exit, clear_run),
	    cmocka_unit_test_setup(test_emulation, clear_run),
	    cmocka_unit_test_setup(test_guest_idt, clear_run),
	    cmocka_unit_test_setup(test_shutdown_hlt_other, clear_run),
	    cmocka_unit_test_setup(test_interrupted_and_failed, clear_run),
	    cmocka_unit_test(test_exits_by_backend),
	    cmocka_unit_test(test_names_and_why),
	    cmocka_unit_test(test_info_kvm),
	    cmocka_unit_test(test_cmdline_kvm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

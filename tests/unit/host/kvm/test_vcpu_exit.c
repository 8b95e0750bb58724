/* host/vcpu_exit.c: which KVM exits are INT3 hits (real KVM and PVM flavours), and exit names;
 * host/kvm/exit_stats.c: exits counted by reason and port, in bounded tables. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/kvm/exit_stats.h"
#include "host/kvm/vcpu_exit.h"

#include <string.h>

#define RIP	  0xffffffff81234567ull
#define UNTOUCHED 0x5a5a5a5a5a5a5a5aull

static struct kvm_run run;

static int clear_run(void **state)
{
	(void)state;
	memset(&run, 0, sizeof(run));
	return 0;
}

/* Real KVM with KVM_GUESTDBG_USE_SW_BP: #BP (vector 3) reports the INT3's address in debug.arch.pc.
 */
static void test_debug_breakpoint(void **state)
{
	uint64_t addr = UNTOUCHED;

	(void)state;
	run.exit_reason = KVM_EXIT_DEBUG;
	run.debug.arch.exception = 3;
	run.debug.arch.pc = 0x401000;
	assert_true(vcpu_exit_bp_addr(&run, RIP, &addr));
	assert_int_equal(addr, 0x401000);
}

/* A #DB (vector 1: single step, hardware breakpoint) is not an INT3 hit, nor is any other vector.
 */
static void test_debug_trap_is_not_bp(void **state)
{
	static const uint32_t vectors[] = {1, 0, 2, 4, 6, 13, 14, 0x103};
	uint64_t addr = UNTOUCHED;

	(void)state;
	run.exit_reason = KVM_EXIT_DEBUG;
	run.debug.arch.pc = 0x401000;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		run.debug.arch.exception = vectors[i];
		assert_false(vcpu_exit_bp_addr(&run, RIP, &addr));
	}
	assert_int_equal(addr, UNTOUCHED);
}

/* PVM at CPL0: an emulation failure with RIP at the INT3. */
static void test_pvm_emulation_failure(void **state)
{
	uint64_t addr = UNTOUCHED;

	(void)state;
	run.exit_reason = KVM_EXIT_INTERNAL_ERROR;
	run.internal.suberror = KVM_INTERNAL_ERROR_EMULATION;
	assert_true(vcpu_exit_bp_addr(&run, RIP, &addr));
	assert_int_equal(addr, RIP);
}

/* Other internal errors are not breakpoints. */
static void test_pvm_other_internal_error(void **state)
{
	static const uint32_t others[] = {KVM_INTERNAL_ERROR_SIMUL_EX,
					  KVM_INTERNAL_ERROR_DELIVERY_EV, 0, 99};
	uint64_t addr = UNTOUCHED;

	(void)state;
	run.exit_reason = KVM_EXIT_INTERNAL_ERROR;
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		run.internal.suberror = others[i];
		assert_false(vcpu_exit_bp_addr(&run, RIP, &addr));
	}
	assert_int_equal(addr, UNTOUCHED);
}

/* PVM at CPL3: a shutdown with RIP just past the one-byte INT3. */
static void test_pvm_shutdown(void **state)
{
	uint64_t addr = UNTOUCHED;

	(void)state;
	run.exit_reason = KVM_EXIT_SHUTDOWN;
	assert_true(vcpu_exit_bp_addr(&run, RIP, &addr));
	assert_int_equal(addr, RIP - 1);
}

/* Ordinary exits are not breakpoints. */
static void test_other_exits(void **state)
{
	static const uint32_t others[] = {
	    KVM_EXIT_IO,	 KVM_EXIT_HLT,	   KVM_EXIT_MMIO,      KVM_EXIT_INTR,
	    KVM_EXIT_FAIL_ENTRY, KVM_EXIT_UNKNOWN, KVM_EXIT_EXCEPTION, KVM_EXIT_SYSTEM_EVENT};
	uint64_t addr = UNTOUCHED;

	(void)state;
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		run.exit_reason = others[i];
		assert_false(vcpu_exit_bp_addr(&run, RIP, &addr));
	}
	assert_int_equal(addr, UNTOUCHED);
}

/* KVM on AMD resets the vCPU at a triple fault (INIT: RIP 0xfff0, paging off) before the shutdown
 * exit; PVM and Intel keep the faulting state. Only the first is a reset. */
static void test_shutdown_reset(void **state)
{
	(void)state;
	run.exit_reason = KVM_EXIT_SHUTDOWN;
	run.s.regs.regs.rip = 0xfff0;
	run.s.regs.sregs.cr0 = 0x60000010; /* INIT's CR0: CD, NW, ET */
	assert_true(vcpu_exit_was_reset(&run));
	/* a long-mode guest faulting with paging on, at 0xfff0 or anywhere else */
	run.s.regs.sregs.cr0 = 0x80050033;
	assert_false(vcpu_exit_was_reset(&run));
	run.s.regs.sregs.cr0 = 0x60000010;
	run.s.regs.regs.rip = 0x1004fa;
	assert_false(vcpu_exit_was_reset(&run));
	/* only a shutdown is a reset */
	run.s.regs.regs.rip = 0xfff0;
	run.exit_reason = KVM_EXIT_INTERNAL_ERROR;
	assert_false(vcpu_exit_was_reset(&run));
}

static void test_exit_names(void **state)
{
	(void)state;
	assert_string_equal(vcpu_exit_name(KVM_EXIT_UNKNOWN), "KVM_EXIT_UNKNOWN");
	assert_string_equal(vcpu_exit_name(KVM_EXIT_IO), "KVM_EXIT_IO");
	assert_string_equal(vcpu_exit_name(KVM_EXIT_DEBUG), "KVM_EXIT_DEBUG");
	assert_string_equal(vcpu_exit_name(KVM_EXIT_HLT), "KVM_EXIT_HLT");
	assert_string_equal(vcpu_exit_name(KVM_EXIT_SHUTDOWN), "KVM_EXIT_SHUTDOWN");
	assert_string_equal(vcpu_exit_name(KVM_EXIT_FAIL_ENTRY), "KVM_EXIT_FAIL_ENTRY");
	assert_string_equal(vcpu_exit_name(KVM_EXIT_INTERNAL_ERROR), "KVM_EXIT_INTERNAL_ERROR");
	assert_string_equal(vcpu_exit_name(KVM_EXIT_SYSTEM_EVENT), "KVM_EXIT_SYSTEM_EVENT");
	/* a hole in the table (s390) and values past its end */
	assert_string_equal(vcpu_exit_name(KVM_EXIT_S390_SIEIC), "KVM_EXIT_(other)");
	assert_string_equal(vcpu_exit_name(KVM_EXIT_SYSTEM_EVENT + 1), "KVM_EXIT_(other)");
	assert_string_equal(vcpu_exit_name(1000), "KVM_EXIT_(other)");
	assert_string_equal(vcpu_exit_name(UINT32_MAX), "KVM_EXIT_(other)");
}

static void io_exit(uint16_t port, uint8_t dir)
{
	memset(&run, 0, sizeof(run));
	run.exit_reason = KVM_EXIT_IO;
	run.io.port = port;
	run.io.direction = dir;
}

/* Counts by reason and by port and direction, most frequent first; ports past the table's
 * XS_SLOTS are counted together ("other"), whatever the guest touches. */
static void test_exit_stats(void **state)
{
	static struct exit_stats xs;
	char buf[4096] = "";
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");

	(void)state;
	memset(&xs, 0, sizeof(xs));
	for (int i = 0; i < 3; i++) {
		io_exit(0x3fd, KVM_EXIT_IO_IN);
		exit_stats_add(&xs, &run);
	}
	io_exit(0x3f8, KVM_EXIT_IO_OUT);
	exit_stats_add(&xs, &run);
	for (unsigned p = 0; p < XS_SLOTS + 5; p++) { /* 0x100.. : XS_SLOTS - 2 new slots fit */
		io_exit((uint16_t)(0x100 + p), KVM_EXIT_IO_OUT);
		exit_stats_add(&xs, &run);
	}
	memset(&run, 0, sizeof(run));
	run.exit_reason = KVM_EXIT_MMIO;
	run.mmio.phys_addr = 0xfed00000;
	run.mmio.is_write = 1;
	exit_stats_add(&xs, &run);
	run.exit_reason = 1000; /* past the reasons counted one by one */
	exit_stats_add(&xs, &run);
	xs.kicks = 2;
	assert_int_equal(xs.nr_io, XS_SLOTS);
	assert_int_equal(xs.io_other, 7);
	exit_stats_print(&xs, 1, f);
	fclose(f);
	assert_non_null(strstr(buf, "hvtrace: stats: cpu1 exits IO 25 MMIO 1 other 1 kicks 2\n"));
	assert_non_null(strstr(buf, "hvtrace: stats: cpu1 io in 0x3fd 3 out 0x3f8 1 out 0x100 1 "));
	assert_non_null(strstr(buf, " out 0x10d 1 other 7\n"));
	assert_null(strstr(buf, "0x10e"));
	assert_non_null(strstr(buf, "hvtrace: stats: cpu1 mmio write 0xfed00000 1\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_debug_breakpoint, clear_run),
	    cmocka_unit_test_setup(test_debug_trap_is_not_bp, clear_run),
	    cmocka_unit_test_setup(test_pvm_emulation_failure, clear_run),
	    cmocka_unit_test_setup(test_pvm_other_internal_error, clear_run),
	    cmocka_unit_test_setup(test_pvm_shutdown, clear_run),
	    cmocka_unit_test_setup(test_other_exits, clear_run),
	    cmocka_unit_test_setup(test_shutdown_reset, clear_run),
	    cmocka_unit_test(test_exit_names),
	    cmocka_unit_test(test_exit_stats),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

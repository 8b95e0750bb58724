/* KVM integration: a stock Linux kernel (build/guest/vmlinuz, `make guest`) booted by `hvtrace run
 * --kernel` in the embedded VMM, traced with stub probes: the init's vfs_read calls with their comm,
 * --expect-call, power-off and panic verdicts. Needs real KVM (the nested lane, scripts/nested-kvm.sh
 * and make test-nested, gives it here): on a host whose /dev/kvm cannot boot Linux (PVM) only the refusal and the bad-input checks
 * run, the rest is skipped with one line. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char kernel[4096], initrd[4096];

static void guest_files(void)
{
	char *dir = strdup(hv_guest(NULL));

	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", dirname(dir));
	snprintf(initrd, sizeof(initrd), "%s/initramfs.cpio.gz", dir);
	free(dir);
}

/* On PVM: one line saying so, exit 2, before any VM exists. */
static void test_pvm_refused(void **state)
{
	const char *argv[] = {"run", "--kernel", kernel, NULL};
	struct hv_result r;

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err,
			    "hvtrace: /dev/kvm is PVM (kvm_pvm): this host cannot boot a "
			    "stock Linux kernel in the embedded VMM (use run --qemu, or real "
			    "KVM)\n");
	hv_result_free(&r);
}

/* Not a bzImage (the initramfs given as the kernel): one line naming the file and the offset. */
static void test_not_a_bzimage(void **state)
{
	const char *argv[] = {"run", "--kernel", initrd, NULL};
	char want[4200];
	struct hv_result r;

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 2);
	assert_int_equal(count_lines(r.err), 1);
	snprintf(want, sizeof(want), "hvtrace: %s: no setup header magic \"HdrS\" at offset 0x202",
		 initrd);
	assert_true(strncmp(r.err, want, strlen(want)) == 0);
	hv_result_free(&r);
}

/* The run: the init's reads, with their comm, and the expectation met; the init's console
 * output whole; the guest powers off by itself (ACPI S5). */
static void test_vfs_read(void **state)
{
	const char *argv[] = {"run",	  "--kernel",  kernel, "--initrd", initrd,
			      "--probe",  "stub",      "-l",   "vfs_read", "--expect-call",
			      "vfs_read", "--timeout", "600",  NULL};
	struct hv_result r;
	long init_reads = 0;
	const char *up, *done;

	(void)state;
	hv_run(&r, argv, 0, 0);
	if (r.status)
		fprintf(stderr, "stderr: %s\nconsole tail: %s\n", r.err,
			r.console && strlen(r.console) > 2000 ? r.console + strlen(r.console) - 2000
							      : r.console);
	assert_int_equal(r.status, 0);
	assert_true(trace_count(&r, "vfs_read", -1) > 0);
	assert_int_equal(trace_count(&r, NULL, -1), trace_count(&r, "vfs_read", -1));
	for (size_t i = 0; i < r.nr_lines; i++)
		init_reads += r.lines[i].pid == 1 && !strcmp(r.lines[i].comm, "init");
	assert_true(init_reads > 0);
	/* the init's own output goes through the tty, driven by COM1's THR-empty interrupt (IRQ 4
	 * from the DSDT, 8250_pnp), then the kernel's last lines (printk): all of it, in order */
	up = strstr(r.console, "hvt-linux: init up, waiting 0s\n");
	assert_non_null(up);
	done = strstr(up, "hvt-linux: workload done\n");
	assert_non_null(done);
	assert_non_null(strstr(done, "reboot: Power down"));
	assert_non_null(strstr(r.console, "00:00: ttyS0 at I/O 0x3f8 (irq = "));
	hv_result_free(&r);
}

/* No init: the kernel panics (panic=-1 is the VMM's), hvtrace says so and exits 5. */
static void test_panic(void **state)
{
	const char *argv[] = {"run",
			      "--kernel",
			      kernel,
			      "--initrd",
			      initrd,
			      "--append",
			      "rdinit=/no-such-init",
			      "--probe",
			      "stub",
			      "-l",
			      "vfs_read",
			      "--timeout",
			      "600",
			      NULL};
	struct hv_result r;

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 5);
	assert_non_null(strstr(r.console, "Kernel panic - not syncing"));
	assert_non_null(strstr(r.err, "hvtrace: the guest kernel panicked (see the console)\n"));
	hv_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest pvm[] = {
	    cmocka_unit_test(test_pvm_refused),
	    cmocka_unit_test(test_not_a_bzimage),
	};
	const struct CMUnitTest kvm[] = {
	    cmocka_unit_test(test_not_a_bzimage),
	    cmocka_unit_test(test_vfs_read),
	    cmocka_unit_test(test_panic),
	};
	char why[256];

	if (!kvm_available())
		return 0;
	guest_files();
	if (access(kernel, R_OK) || access(initrd, R_OK)) {
		printf("test_kvm_linux: SKIP: no %s (make guest)\n", kernel);
		return 0;
	}
	if (vm_check_linux_host(why, sizeof(why)) < 0) {
		int ret = cmocka_run_group_tests_name("kvm_linux_pvm", pvm, NULL, NULL);

		printf("test_kvm_linux: SKIP: booting Linux: %s\n", why);
		return ret;
	}
	return cmocka_run_group_tests_name("kvm_linux", kvm, NULL, NULL);
}

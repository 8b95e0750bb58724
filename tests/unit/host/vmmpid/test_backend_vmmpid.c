/* The generic backend's refusals (host/vmmpid/backend_vmmpid.c, host/cli's choice of it), run as
 * ./hvtrace on this machine without /dev/kvm: a process that is not a KVM VMM (this test's child,
 * which must be left running and untraced), one that is gone, --vmm without --pid or outside
 * attach / list-functions, --vmm generic naming a non-VMM for trap probes, and `attach --pid` of a
 * non-QEMU non-VMM without --vmm, which stays the QEMU backend's line. Each: one line, status 2.
 * The generic backend on a real VM is tests/kvm/test_kvm_generic_vmm.c (the nested lane). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/hv_run.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t child;

static int setup(void **state)
{
	(void)state;
	child = fork();
	if (child == 0) {
		for (;;)
			pause();
	}
	return child > 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return 0;
}

/* One line on stderr, status 2, containing @want. */
static void refused(const char *const *argv, const char *want)
{
	struct hv_result r;

	hv_run(&r, argv, 0, 0);
	if (r.status != 2 || count_lines(r.err) != 1 || !strstr(r.err, want))
		fprintf(stderr, "status %d, stderr: %s", r.status, r.err);
	assert_int_equal(r.status, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, want));
	hv_result_free(&r);
}

/* @pid is left as it was: running (or sleeping), no tracer. */
static void assert_untouched(pid_t pid)
{
	char path[64], *st;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	st = hv_slurp(path);
	assert_non_null(strstr(st, "TracerPid:\t0\n"));
	assert_null(strstr(st, "(stopped)"));
	assert_null(strstr(st, "(tracing stop)"));
	free(st);
}

static void test_not_a_vmm(void **state)
{
	char pid[16], want[128];

	(void)state;
	snprintf(pid, sizeof(pid), "%d", (int)child);
	snprintf(want, sizeof(want), "hvtrace: pid %d (", (int)child);
	const char *list[] = {"list-functions", "--pid", pid, "--vmm", "generic", NULL};
	const char *attach[] = {"attach", "--pid", pid, "--vmm", "generic", "-l", "vfs_read", NULL};
	const char *trap[] = {"attach",	 "--pid", pid,	"--vmm",    "generic",
			      "--probe", "trap",  "-l", "vfs_read", NULL};

	refused(list, "): not a KVM VMM: no anon_inode:kvm-vm among its ");
	refused(attach, want);
	refused(trap, "): not a KVM VMM: no anon_inode:kvm-vm among its ");
	assert_untouched(child);
	/* without --vmm, a process that is neither QEMU nor a KVM VMM stays QEMU's to refuse */
	const char *plain[] = {"attach", "--pid", pid, "-l", "vfs_read", NULL};
	refused(plain, "is not a QEMU");
	assert_untouched(child);
}

static void test_gone(void **state)
{
	pid_t gone = fork();
	char pid[16], want[64];

	(void)state;
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	snprintf(pid, sizeof(pid), "%d", (int)gone);
	snprintf(want, sizeof(want), "hvtrace: pid %d: no such process\n", (int)gone);
	const char *generic[] = {"list-functions", "--pid", pid, "--vmm", "generic", NULL};
	const char *chosen[] = {"attach", "--pid", pid, "-l", "vfs_read", NULL};

	refused(generic, want);
	refused(chosen, want);
}

static void test_bad_options(void **state)
{
	const char *no_pid[] = {"list-functions", "--vmm",	  "generic",
				"--qmp",	  "/nonexistent", NULL};
	const char *word[] = {"attach", "--pid", "1", "--vmm", "firecracker", NULL};
	const char *run[] = {"run", "--vmm", "generic", "build/guest/test-guest.elf", NULL};

	(void)state;
	refused(no_pid, "--vmm generic: goes with --pid PID (the VMM process)");
	refused(word, "--vmm");
	refused(run, "--vmm: goes with attach and list-functions of a running VM");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_not_a_vmm),
	    cmocka_unit_test(test_gone),
	    cmocka_unit_test(test_bad_options),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

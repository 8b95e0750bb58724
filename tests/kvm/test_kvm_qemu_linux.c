/* QEMU with KVM (issue 24): `hvtrace run --qemu --accel kvm` on the Linux test guest, with the
 * machine's QEMU 7.2 and with QEMU 10.0 and 11 where scripts/fetch-qemu.sh put them
 * ($HVTRACE_CACHE/qemu/V, `make qemu-versions`): stub probes on vfs_read and do_sys_openat2, dd's
 * exactly 7 reads and 14 opens, no VM stop and nothing lost. Where INT3 exits (the nested lane with
 * its own L0), trap probes with a BTF-typed -e reading each filename, and an entry probe (no fentry
 * site) with a typed return probe, exact; where it does not, a function without an fentry site (an
 * entry probe is a trap probe) is refused with one line before anything is traced. Needs real KVM
 * (the nested lane gives it here: make test-nested); on a host whose /dev/kvm cannot boot Linux (PVM) the binary is skipped, and a QEMU
 * version that is not fetched has its case skipped with the command that fetches it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/kvm/kvm_int3_probe.h"
#include "host/kvm/vm.h"
#include "tests/common/kernels.h"
#include "tests/kvm/kvm_common.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define BM_READS     7
#define APPEND	     "hvt.bm=7 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1"

static const char *kernel, *initrd;

/* One QEMU: NULL path for the machine's (qemu-system-x86_64 from $PATH). */
struct qemu_case {
	const char *version;
	char path[512];
};

/* `run --qemu --accel kvm` with @args after the guest's files, with @q's QEMU. */
static void run_kvm(const struct qemu_case *q, const char *const *args, struct hv_result *r)
{
	const char *argv[40] = {"run",	    "--qemu", "--accel",  "kvm",  "--kernel", kernel,
				"--initrd", initrd,   "--append", APPEND, "--timeout", "600"};
	size_t n = 12;

	for (size_t i = 0; args[i] && n < ARRAY_LEN(argv) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (q->path[0])
		setenv("HVTRACE_QEMU", q->path, 1);
	else
		unsetenv("HVTRACE_QEMU");
	hv_run(r, argv, 0, 0);
	unsetenv("HVTRACE_QEMU");
}

static const struct qemu_case *case_qemu(void **state)
{
	const struct qemu_case *q = *state;

	if (q->path[0] && access(q->path, X_OK) != 0) {
		printf("SKIPPED: QEMU %s: not fetched (make qemu-versions HVT_QEMUS=%s)\n", q->version,
		       q->version);
		skip();
	}
	return q;
}

/* A case that needs INT3 to exit (trap and entry probes under QEMU): skipped with one line where
 * it does not (a @what probe cannot be made). */
static void skip_unless_int3_exits(const char *what)
{
	if (!kvm_int3_exits(kvm_int3_check()->verdict, true)) {
		printf("SKIPPED: INT3 does not exit on this host's KVM: no %s probe under QEMU\n", what);
		skip();
	}
}

static void print_failure(const struct hv_result *r)
{
	size_t len = r->console ? strlen(r->console) : 0;

	fprintf(stderr, "stderr: %s\nconsole tail: %s\n", r->err,
		len > 2000 ? r->console + len - 2000 : r->console);
}

/* Stub probes under QEMU with KVM: dd's N reads of the binfmt_misc status file (one vfs_read each)
 * and 2N opens (the file and /dev/null), by dd alone (--comm), no VM stop, nothing lost. */
static void test_stub_dd(void **state)
{
	const struct qemu_case *q = case_qemu(state);
	const char *args[] = {"--probe", "stub", "-p",	   "function", "-l", "vfs_read",
			      "-l",	 "do_sys_openat2", "--comm", "dd",	 "--stats", NULL};
	struct hv_result r;

	run_kvm(q, args, &r);
	printf("hvt-kvm-qemu: QEMU %s: status %d, vfs_read %ld, do_sys_openat2 %ld\n", q->version,
	       r.status, trace_count(&r, "vfs_read", -1), trace_count(&r, "do_sys_openat2", -1));
	if (r.status)
		print_failure(&r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.console, "hvt-linux: binfmt_misc status read 7 times"));
	assert_non_null(strstr(r.console, "hvt-linux: workload done"));
	assert_int_equal(trace_count(&r, "vfs_read", -1), BM_READS);
	assert_int_equal(trace_count(&r, "do_sys_openat2", -1), 2 * BM_READS);
	assert_int_equal(trace_count(&r, NULL, -1), 3 * BM_READS);
	for (size_t i = 0; i < r.nr_lines; i++)
		assert_string_equal(r.lines[i].comm, "dd");
	assert_int_equal(hv_stat(r.err, "stub probes ", "lost "), 0);
	assert_int_equal(hv_stat(r.err, "kaslr-slide ", "stops "), 0);
	hv_result_free(&r);
}

/* Trap probes under QEMU with KVM, where INT3 exits (the nested lane with its own L0, issue 40):
 * QEMU's gdbstub breakpoints arrive as KVM_EXIT_DEBUG. dd's 7 reads (vfs_read) and its 14 opens as a
 * BTF-typed -e that reads each filename from guest memory at the call: 7 of the binfmt_misc status
 * file, 7 of /dev/null, by dd alone (--comm). */
static void test_trap_dd(void **state)
{
	const struct qemu_case *q = case_qemu(state);
	const char *args[] = {"--probe", "trap",      "-p", "function", "-l",	 "vfs_read", "-e",
			      "do_sys_openat2(int dfd, string filename)", "--comm", "dd", "--stats",
			      NULL};
	struct hv_result r;

	skip_unless_int3_exits("trap");
	run_kvm(q, args, &r);
	printf("hvt-kvm-qemu: QEMU %s, trap: status %d, vfs_read %ld, opens %ld\n", q->version,
	       r.status, trace_count(&r, "vfs_read", -1),
	       count_text(r.trace, "->do_sys_openat2("));
	if (r.status)
		print_failure(&r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.console, "hvt-linux: binfmt_misc status read 7 times"));
	assert_int_equal(trace_count(&r, "vfs_read", -1), BM_READS);
	assert_int_equal(
	    count_text(r.trace, "->do_sys_openat2(dfd=-100, filename=/tmp/binfmt/status)\n"),
	    BM_READS);
	assert_int_equal(count_text(r.trace, "->do_sys_openat2(dfd=-100, filename=/dev/null)\n"),
			 BM_READS);
	assert_int_equal(count_text(r.trace, "->do_sys_openat2("), 2 * BM_READS);
	/* two gdbstub breakpoints, each hit a stop of the VM */
	assert_int_equal(hv_stat(r.err, "kaslr-slide ", "probes "), 2);
	assert_true(hv_stat(r.err, "kaslr-slide ", "hits ") >= 3 * BM_READS);
	hv_result_free(&r);
}

/* An entry probe and a return probe under QEMU with KVM, where INT3 exits (issue 40): the noinstr
 * do_syscall_64 has no fentry site, so its probe is a breakpoint at its first instruction, with -e
 * 'do_syscall_64(nr)' filtered to nr == 0 and --comm dd: dd's read syscalls are exactly its N reads of
 * the status file; -r 'vfs_read(long ret)' gives each of them its return value, the 8 bytes of
 * "enabled\n" that bs=64 reads. */
static void test_trap_entry_ret_dd(void **state)
{
	const struct qemu_case *q = case_qemu(state);
	const char *args[] = {"--probe",
			      "trap",
			      "-e",
			      "do_syscall_64(nr)",
			      "--filter-event",
			      "do_syscall_64: nr == 0",
			      "-r",
			      "vfs_read(long ret)",
			      "--comm",
			      "dd",
			      "--stats",
			      NULL};
	struct hv_result r;

	skip_unless_int3_exits("entry");
	run_kvm(q, args, &r);
	printf("hvt-kvm-qemu: QEMU %s, entry and return: status %d, do_syscall_64(nr=0) %ld, vfs_read "
	       "returns %ld (ret=8 %ld)\n",
	       q->version, r.status, count_text(r.trace, "->do_syscall_64(nr=0)\n"),
	       count_text(r.trace, " <- vfs_read) ret="),
	       count_text(r.trace, " <- vfs_read) ret=8 duration="));
	if (r.status)
		print_failure(&r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.console, "hvt-linux: binfmt_misc status read 7 times"));
	assert_int_equal(count_text(r.trace, "->do_syscall_64(nr=0)\n"), BM_READS);
	assert_int_equal(count_text(r.trace, "do_syscall_64"), BM_READS);
	assert_int_equal(count_text(r.trace, " <- vfs_read) ret="), BM_READS);
	assert_int_equal(count_text(r.trace, " <- vfs_read) ret=8 duration="), BM_READS);
	/* breakpoints: every syscall of every task stops at do_syscall_64's, and each vfs_read twice */
	assert_true(hv_stat(r.err, "kaslr-slide ", "hits ") >= 3 * BM_READS);
	hv_result_free(&r);
}

/* A function without an fentry site needs a trap probe; where INT3 does not exit (the check hvtrace
 * makes before QEMU starts says so), --probe stub -l __schedule is one line naming it, exit 2. */
static void test_entry_refused(void **state)
{
	const struct qemu_case *q = case_qemu(state);
	const char *args[] = {"--probe", "stub", "-l", "__schedule", NULL};
	struct hv_result r;

	if (kvm_int3_exits(kvm_int3_check()->verdict, true)) {
		printf("SKIPPED: INT3 exits on this host's KVM: an entry probe is traced there, not "
		       "refused\n");
		skip();
	}
	run_kvm(q, args, &r);
	if (r.status != 2)
		print_failure(&r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "hvtrace: __schedule has no fentry site: a probe at its entry "
				      "is a trap probe, and INT3 does not exit on this host's KVM\n"));
	hv_result_free(&r);
}

int main(void)
{
	static struct hv_kernel kernels[8];
	static struct qemu_case qemus[] = {{"7.2", ""}, {"10.0", ""}, {"11", ""}};
	static char names[4 * ARRAY_LEN(qemus)][64];
	struct CMUnitTest tests[4 * ARRAY_LEN(qemus)];
	const char *cache = getenv("HVTRACE_CACHE") ? getenv("HVTRACE_CACHE") : "/var/cache/hvtrace";
	char why[256], *gdir;
	size_t n = 0;
	long nr;

	kvm_require();
	if (vm_check_linux_host(why, sizeof(why)) < 0)
		hv_skip_binary("test_kvm_qemu_linux: booting Linux: %s", why);
	gdir = strdup(hv_guest(NULL));
	if (!gdir)
		return 1;
	nr = hv_kernels_read(dirname(gdir), "6.1", kernels, ARRAY_LEN(kernels));
	for (long i = 0; i < nr && !kernel; i++)
		if (kernels[i].present) {
			kernel = kernels[i].vmlinuz;
			initrd = kernels[i].initrd;
		}
	if (!kernel)
		hv_skip_binary("test_kvm_qemu_linux: no Linux guest (make guest)");
	for (size_t i = 1; i < ARRAY_LEN(qemus); i++)
		snprintf(qemus[i].path, sizeof(qemus[i].path), "%s/qemu/%s/qemu-system-x86_64", cache,
			 qemus[i].version);
	for (size_t i = 0; i < ARRAY_LEN(qemus); i++) {
		snprintf(names[n], sizeof(names[0]), "test_stub_dd_qemu_%s", qemus[i].version);
		tests[n] = (struct CMUnitTest){
		    .name = names[n], .test_func = test_stub_dd, .initial_state = &qemus[i]};
		n++;
	}
	for (size_t i = 0; i < ARRAY_LEN(qemus); i++) {
		snprintf(names[n], sizeof(names[0]), "test_trap_dd_qemu_%s", qemus[i].version);
		tests[n] = (struct CMUnitTest){
		    .name = names[n], .test_func = test_trap_dd, .initial_state = &qemus[i]};
		n++;
	}
	for (size_t i = 0; i < ARRAY_LEN(qemus); i++) {
		snprintf(names[n], sizeof(names[0]), "test_trap_entry_ret_dd_qemu_%s", qemus[i].version);
		tests[n] = (struct CMUnitTest){
		    .name = names[n], .test_func = test_trap_entry_ret_dd, .initial_state = &qemus[i]};
		n++;
	}
	snprintf(names[n], sizeof(names[0]), "test_entry_refused_qemu_%s", qemus[0].version);
	tests[n] = (struct CMUnitTest){
	    .name = names[n], .test_func = test_entry_refused, .initial_state = &qemus[0]};
	n++;
	if (getenv("HVT_TEST_FILTER"))
		cmocka_set_test_filter(getenv("HVT_TEST_FILTER"));
	return _cmocka_run_group_tests("kvm_qemu_linux", tests, n, NULL, NULL);
}

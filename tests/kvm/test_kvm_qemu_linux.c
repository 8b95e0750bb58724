/* QEMU with KVM (issue 24): `hvtrace run --qemu --accel kvm` on the Linux test guest, with the
 * machine's QEMU 7.2 and with QEMU 10.0 and 11 where scripts/fetch-qemu.sh put them
 * ($HVTRACE_CACHE/qemu/V, `make qemu-versions`): stub probes on vfs_read and do_sys_openat2, dd's
 * exactly 7 reads and 14 opens, no VM stop and nothing lost. On a KVM where INT3 does not exit (the
 * nested lane), a function without an fentry site (an entry probe is a trap probe) is refused with
 * one line before anything is traced. Needs real KVM (the nested lane gives it here: make
 * test-nested); on a host whose /dev/kvm cannot boot Linux (PVM) the binary is skipped, and a QEMU
 * version that is not fetched has its case skipped with the command that fetches it. record --host
 * pairs QEMU's vCPU threads' kvm_entry / kvm_exit with the guest's events (test_host_pair_kvm). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/kvm/kvm_int3_probe.h"
#include "host/kvm/vm.h"
#include "tests/common/host_pair.h"
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

/* record --qemu --accel kvm --host (issue 26): QEMU's vCPU threads on a real KVM: the host's file
 * has their kvm_entry / kvm_exit; every stub event of the guest lies between a kvm_entry and the
 * next kvm_exit of its vCPU's thread (the guest's TSC learnt from the records as the host's plus an
 * offset), and report --exits gives, per function, the calls, host time and kvm_exits that
 * trace-cmd's raw view of the pair gives. */
static void test_host_pair_kvm(void **state)
{
	const struct qemu_case *q = case_qemu(state);
	char dat[64], host[80], label[80], *opt, *raw, *rep;
	const char *argv[40] = {"record",   "--qemu",	"--accel", "kvm",      "--kernel", kernel,
				"--initrd", initrd,	"--append", APPEND,    "--timeout", "600",
				"--host",   "--probe", "stub",	   "-p",       "function_graph",
				"-l",	    "vfs_read", "-l",	   "ksys_read", "-l",
				"do_sys_openat2", "-o", dat, NULL};
	struct hv_result r;
	struct hv_pair w;
	int tids[8];

	snprintf(dat, sizeof(dat), "/tmp/hvt-kvmq-%d.dat", (int)getpid());
	snprintf(host, sizeof(host), "/tmp/hvt-kvmq-%d-host.dat", (int)getpid());
	snprintf(label, sizeof(label), "hvt-kvmq-%d-host.dat:", (int)getpid());
	if (q->path[0])
		setenv("HVTRACE_QEMU", q->path, 1);
	hv_run(&r, argv, 0, 0);
	unsetenv("HVTRACE_QEMU");
	if (r.status)
		print_failure(&r);
	assert_int_equal(r.status, 0);
	opt = hv_sh("trace-cmd dump --options -i %s 2>&1", host);
	assert_int_equal(hv_guest_threads(opt, tids, 8), 2);
	raw = hv_sh("trace-cmd report -R -t -i %s -i %s 2>&1", host, dat);
	hv_pair_walk(raw, label, tids, 2, &w);
	printf("hvt-kvm-qemu: --host: %ld guest events, %ld kvm_exits of QEMU's vCPU threads, %ld "
	       "events outside guest mode (the farthest %.1f us after an exit)\n",
	       w.guest_events, w.exits_total, w.outside, w.worst_us);
	assert_true(w.guest_events > 0 && w.exits_total > 0);
	assert_int_equal(w.outside, 0);
	rep = hv_sh("%s report --exits -i %s 2>&1", hv_binary(), dat);
	printf("%s", rep);
	assert_non_null(strstr(rep, "descheduled, or between kvm_exit and kvm_entry"));
	hv_pair_check_exits(rep, &w);
	free(opt);
	free(raw);
	free(rep);
	hv_result_free(&r);
	unlink(dat);
	unlink(host);
}

int main(void)
{
	static struct hv_kernel kernels[8];
	static struct qemu_case qemus[] = {{"7.2", ""}, {"10.0", ""}, {"11", ""}};
	static char names[2 * ARRAY_LEN(qemus) + 1][64];
	struct CMUnitTest tests[2 * ARRAY_LEN(qemus) + 1];
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
	snprintf(names[n], sizeof(names[0]), "test_entry_refused_qemu_%s", qemus[0].version);
	tests[n] = (struct CMUnitTest){
	    .name = names[n], .test_func = test_entry_refused, .initial_state = &qemus[0]};
	n++;
	snprintf(names[n], sizeof(names[0]), "test_host_pair_kvm_qemu_%s", qemus[0].version);
	tests[n] = (struct CMUnitTest){
	    .name = names[n], .test_func = test_host_pair_kvm, .initial_state = &qemus[0]};
	n++;
	if (getenv("HVT_TEST_FILTER"))
		cmocka_set_test_filter(getenv("HVT_TEST_FILTER"));
	return _cmocka_run_group_tests("kvm_qemu_linux", tests, n, NULL, NULL);
}

/* KVM integration: the INT3 check (host/kvm/kvm_int3_probe.c) on this host's /dev/kvm, and what the
 * commands do with its verdict. Every assertion follows the verdict the host really gives, so the
 * same tests pass on PVM (emulation failure), real KVM (KVM_EXIT_DEBUG) and a host whose KVM lets
 * INT3 reach the guest's IDT. The embedded VMM's answer to "INT3 does not exit" is also run here
 * with the verdict forced through the HVTRACE_TEST_INT3 test hook (docs/where-it-runs.md). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"
#include "host/kvm/kvm_int3_probe.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* the check's run bound (3 s) and its kicks (1 s); VM set-up and teardown come on top (0.5 s on a
 * nested AMD host under TCG) */
#define CHECK_BOUND_MS 4000

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* "hvtrace: trap probes: ..." as the commands print it for @qemu's backend. */
static void refusal_line(bool qemu, char *buf, size_t len)
{
	char why[256];

	kvm_int3_why(kvm_int3_check(), qemu, why, sizeof(why));
	snprintf(buf, len,
		 "hvtrace: trap probes: INT3 in a guest does not exit on this host's KVM (%s); use "
		 "--probe stub\n",
		 why);
}

static void auto_line(bool qemu, char *buf, size_t len)
{
	char why[256];

	kvm_int3_why(kvm_int3_check(), qemu, why, sizeof(why));
	snprintf(
	    buf, len,
	    "hvtrace: --probe auto: stub probes for every site: INT3 in a guest does not exit on "
	    "this host's KVM (%s)\n",
	    why);
}

/* The check gives a definite verdict here (a /dev/kvm that opens can run it), within its bound,
 * once per process. */
static void test_check_verdict(void **state)
{
	const struct kvm_int3_check *c = kvm_int3_check(), *again;
	double t0, cached_ms;

	(void)state;
	printf("INT3 check: %s (%s) in %.2f ms\n", kvm_int3_verdict_name(c->verdict), c->detail,
	       c->ms);
	assert_false(c->forced);
	assert_int_not_equal(c->verdict, KVM_INT3_NO_CHECK);
	assert_true(c->ms > 0 && c->ms < CHECK_BOUND_MS + 1000);
	/* cached: the same answer at once, no second VM */
	t0 = now_ms();
	again = kvm_int3_check();
	cached_ms = now_ms() - t0;
	assert_ptr_equal(again, c);
	assert_true(cached_ms < 1);
}

/* The check's verdict agrees with what a real trap-probe run does in the embedded VMM: where it
 * says INT3 exits, every event arrives through the exit it named; where it says not, the run is
 * refused before the guest starts. */
static void test_check_matches_trap_run(void **state)
{
	const struct kvm_int3_check *c = kvm_int3_check();
	const char *argv[] = {"run", "--probe", "trap", "--stats", hv_guest(NULL), NULL};
	struct hv_result r;
	char want[512];

	(void)state;
	hv_run(&r, argv, 0, 0);
	if (!kvm_int3_exits(c->verdict, false)) {
		refusal_line(false, want, sizeof(want));
		assert_int_equal(r.status, 2);
		assert_string_equal(r.err, want);
		hv_result_free(&r);
		return;
	}
	assert_int_equal(r.status, 0);
	for (unsigned cpu = 0; cpu < 2; cpu++) {
		long events = hv_cpu_stat(r.err, cpu, "events ");
		bool debug = c->verdict == KVM_INT3_DEBUG_EXIT;

		assert_true(events > 0);
		assert_int_equal(hv_cpu_stat(r.err, cpu, debug ? "debug " : "emulation "), events);
		assert_int_equal(hv_cpu_stat(r.err, cpu, debug ? "emulation " : "debug "), 0);
	}
	hv_result_free(&r);
}

/* The same VM with other code: its IDT works (ud2 reaches the guest's #UD handler, told apart from
 * an exit), and a guest that never exits is cut off at the bound instead of hanging the check. */
static void test_check_vm_idt_and_bound(void **state)
{
	static const uint8_t ud2[] = {0x0f, 0x0b}, spin[] = {0xeb, 0xfe};
	struct kvm_int3_check c;

	(void)state;
	assert_int_equal(kvm_int3_check_code(ud2, sizeof(ud2), &c), 0);
	assert_int_equal(c.verdict, KVM_INT3_OTHER);
	assert_string_equal(c.detail, "the guest's handler of exception 6 ran");
	assert_int_equal(kvm_int3_check_code(spin, sizeof(spin), &c), 0);
	assert_int_equal(c.verdict, KVM_INT3_TIMEOUT);
	assert_string_equal(c.detail, "no exit within 3000 ms of KVM_RUN");
	printf("spinning check VM stopped after %.0f ms\n", c.ms);
	assert_true(c.ms >= 3000 && c.ms < CHECK_BOUND_MS + 1000);
}

/* $GUEST's folder holds the Linux guest too (make guest); NULL (and a skip line) when it does not.
 */
static const char *linux_file(const char *name, char *buf, size_t len)
{
	const char *g = hv_guest(NULL), *slash = strrchr(g, '/');

	snprintf(buf, len, "%.*s/%s", slash ? (int)(slash - g) : 1, slash ? g : ".", name);
	if (access(buf, R_OK) == 0)
		return buf;
	printf("SKIPPED: %s: not there (make guest)\n", buf);
	return NULL;
}

/* QEMU with KVM needs KVM_EXIT_DEBUG. */
static bool qemu_kvm_refused_here(void)
{
	const struct kvm_int3_check *c = kvm_int3_check();

	if (!kvm_int3_exits(c->verdict, true))
		return true;
	printf("SKIPPED: INT3 exits here as QEMU with KVM needs (%s): nothing to refuse\n",
	       kvm_int3_verdict_name(c->verdict));
	return false;
}

/* `run --qemu --accel kvm --probe trap` where the check says no: one line, status 2, before QEMU
 * starts. */
static void test_qemu_kvm_trap_refused(void **state)
{
	char map[512], kernel[512], want[512];
	struct hv_result r;

	(void)state;
	if (!qemu_kvm_refused_here() || !linux_file("System.map", map, sizeof(map)) ||
	    !linux_file("vmlinuz", kernel, sizeof(kernel)))
		skip();
	const char *argv[] = {"run",	  "--qemu", "--accel",	    "kvm", "--probe", "trap",
			      "--kernel", kernel,   "--system-map", map,   NULL};

	/* QEMU is never started: a qemu-system-x86_64 first in $PATH would leave its mark */
	char dir[] = "/tmp/hvt-noqemu-XXXXXX", fake[600], mark[600], *path = getenv("PATH");
	char *saved = strdup(path ? path : "/usr/bin:/bin"), newpath[4096];
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(fake, sizeof(fake), "%s/qemu-system-x86_64", dir);
	snprintf(mark, sizeof(mark), "%s/started", dir);
	f = fopen(fake, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\ntouch %s\nexec /usr/bin/qemu-system-x86_64 \"$@\"\n", mark);
	fclose(f);
	assert_int_equal(chmod(fake, 0755), 0);
	snprintf(newpath, sizeof(newpath), "%s:%s", dir, saved);
	setenv("PATH", newpath, 1);
	hv_run(&r, argv, 0, 0);
	setenv("PATH", saved, 1);
	free(saved);
	refusal_line(true, want, sizeof(want));
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, want);
	assert_string_equal(r.console, "");
	assert_int_equal(access(mark, F_OK), -1);
	unlink(fake);
	rmdir(dir);
	hv_result_free(&r);
}

/* `--probe auto` there: the decision line first, and no trap probe. A Linux guest of QEMU with KVM
 * cannot boot on PVM, so the run ends at its --timeout (or when the kernel is not up in time); no
 * trace is asserted. */
static void test_qemu_kvm_auto_uses_stubs(void **state)
{
	char map[512], kernel[512], initrd[512], want[512];
	struct hv_result r;

	(void)state;
	if (!qemu_kvm_refused_here() || !linux_file("System.map", map, sizeof(map)) ||
	    !linux_file("vmlinuz", kernel, sizeof(kernel)) ||
	    !linux_file("initramfs.cpio.gz", initrd, sizeof(initrd)))
		skip();
	const char *argv[] = {"run",	      "--qemu", "--accel",  "kvm",  "--probe",	"auto",
			      "--timeout",    "4",	"--kernel", kernel, "--initrd", initrd,
			      "--system-map", map,	NULL};

	hv_run(&r, argv, 0, 0);
	auto_line(true, want, sizeof(want));
	printf("status %d, stderr:\n%s", r.status, r.err);
	assert_int_equal(strncmp(r.err, want, strlen(want)), 0);
	assert_null(strstr(r.err, "trap probes:"));
	assert_int_not_equal(r.status, 0);
	hv_result_free(&r);
}

/* A QEMU (-accel @accel, stopped, no guest) with a QMP socket at @sock; its pid, or -1 (and a skip
 * line) when it cannot start. */
static pid_t start_qemu(const char *accel, const char *sock)
{
	char qmp[256];
	pid_t pid;

	snprintf(qmp, sizeof(qmp), "unix:%s,server=on,wait=off", sock);
	unlink(sock);
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);

		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execlp("qemu-system-x86_64", "qemu-system-x86_64", "-accel", accel, "-m", "64",
		       "-display", "none", "-nodefaults", "-S", "-qmp", qmp, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; pid > 0 && i < 100; i++) {
		if (access(sock, F_OK) == 0)
			return pid;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			break;
		sleep_ms(50);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	printf("SKIPPED: qemu-system-x86_64 -accel %s did not start\n", accel);
	return -1;
}

static void stop_qemu(pid_t pid, const char *sock)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(sock);
}

/* attach to a QEMU that uses KVM (HMP `info kvm`) where the check says no: refused in one line, the
 * VM left running; the same attach to a QEMU under TCG is not checked at all. */
static void test_attach_qemu_kvm_refused(void **state)
{
	char map[512], sock[128], want[512];
	struct hv_result r;
	pid_t qemu;

	(void)state;
	if (!qemu_kvm_refused_here() || !linux_file("System.map", map, sizeof(map)))
		skip();
	snprintf(sock, sizeof(sock), "/tmp/kvmsafe-int3-%d.qmp", (int)getpid());
	qemu = start_qemu("kvm", sock);
	if (qemu < 0)
		skip();
	const char *argv[] = {"attach", "--qmp",   sock,   "--system-map",
			      map,	"--probe", "trap", NULL};

	hv_run(&r, argv, 0, 0);
	refusal_line(true, want, sizeof(want));
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, want);
	assert_int_equal(waitpid(qemu, NULL, WNOHANG), 0); /* QEMU lives on */
	hv_result_free(&r);
	stop_qemu(qemu, sock);

	qemu = start_qemu("tcg", sock);
	if (qemu < 0)
		skip();
	const char *tcg[] = {"attach",	  "--qmp", sock, "--system-map", map, "--probe", "trap",
			     "--timeout", "1",	   NULL};

	hv_run(&r, tcg, 0, 0);
	/* no kernel in that VM: the attach gives up on it, but never over INT3 */
	assert_int_not_equal(r.status, 0);
	assert_null(strstr(r.err, "INT3"));
	hv_result_free(&r);
	stop_qemu(qemu, sock);
}

/* The embedded VMM where INT3 does not exit (forced through the test hook): --probe trap refused,
 * auto traces every call through stub probes (no breakpoint exit at all), and an event that needs
 * a trap probe (it reads guest memory) is refused before the guest starts. */
static void test_embedded_no_int3(void **state)
{
	const char *trap[] = {"run", "--probe", "trap", hv_guest(NULL), NULL};
	const char *autos[] = {"run", "--probe", "auto",	 "--stats",
			       "-l",  "tree_*",	 hv_guest(NULL), NULL};
	const char *mem_event[] = {
	    "run", "--probe", "auto", "-e", "ev_target(string label)", hv_guest(NULL), NULL};
	const char *reg_return[] = {"run", "--probe", "auto", "--stats", "-r", "tree_a(long ret)",
				    "-r", "tree_leaf", hv_guest(NULL), NULL};
	const char *mem_return[] = {
	    "run", "--probe", "auto", "-r", "tree_a(long ret+0)", hv_guest(NULL), NULL};
	const char *want_trap =
	    "hvtrace: trap probes: INT3 in a guest does not exit on this host's "
	    "KVM (it goes to the guest's IDT); use --probe stub\n";
	const char *want_auto = "hvtrace: --probe auto: stub probes for every site: INT3 in a "
				"guest does not exit on this host's KVM (it goes to the guest's "
				"IDT)\n";
	struct hv_result r;

	(void)state;
	setenv("HVTRACE_TEST_INT3", "guest-idt", 1);
	hv_run(&r, trap, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, want_trap);
	assert_string_equal(r.console, "");
	hv_result_free(&r);

	hv_run(&r, autos, 0, 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(strncmp(r.err, want_auto, strlen(want_auto)), 0);
	assert_non_null(strstr(r.console, "hvt-guest: ok\n"));
	for (unsigned cpu = 0; cpu < 2; cpu++) {
		assert_int_equal(hv_cpu_stat(r.err, cpu, "debug "), 0);
		assert_int_equal(hv_cpu_stat(r.err, cpu, "emulation "), 0);
		assert_int_equal(hv_cpu_stat(r.err, cpu, "shutdown "), 0);
	}
	assert_true(hv_stat(r.err, "stub probes ", "stub probes ") > 0);
	static const char *const tree[] = {"tree_root", "tree_a", "tree_b", "tree_leaf"};
	for (size_t i = 0; i < 4; i++) {
		long n = guest_count_all(&r, tree[i], 2);

		assert_true(n > 0);
		assert_int_equal(trace_count(&r, tree[i], -1), n);
	}
	hv_result_free(&r);

	hv_run(&r, mem_event, 0, 0);
	assert_int_equal(r.status, 2);
	/* the decision, then why it cannot be carried out */
	assert_int_equal(strncmp(r.err, want_auto, strlen(want_auto)), 0);
	assert_string_equal(
	    r.err + strlen(want_auto),
	    "hvtrace: trap probes: INT3 in a guest does not exit on this host's KVM, "
	    "and the -e event of ev_target needs one\n");
	assert_string_equal(r.console, "");
	hv_result_free(&r);

	/* return probes of RAX alone are stub probes: auto traces them with no exit */
	hv_run(&r, reg_return, 0, 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(hv_stat(r.err, "stub probes ", "stub probes "), 2);
	for (unsigned cpu = 0; cpu < 2; cpu++) {
		assert_int_equal(hv_cpu_stat(r.err, cpu, "debug "), 0);
		assert_int_equal(hv_cpu_stat(r.err, cpu, "emulation "), 0);
	}
	assert_int_equal(count_text(r.trace, " <- tree_a) ret=25 duration="), 6);
	assert_int_equal(count_text(r.trace, ": r_tree_a: ("), 18);
	assert_int_equal(count_text(r.trace, ": r_tree_leaf: ("), 42);
	hv_result_free(&r);

	/* one reading guest memory needs a trap probe: refused before the guest starts */
	hv_run(&r, mem_return, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(
	    r.err + strlen(want_auto),
	    "hvtrace: trap probes: INT3 in a guest does not exit on this host's KVM, "
	    "and the return probe -r of tree_a needs one\n");
	assert_string_equal(r.console, "");
	hv_result_free(&r);
	unsetenv("HVTRACE_TEST_INT3");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_check_verdict),
	    cmocka_unit_test(test_check_matches_trap_run),
	    cmocka_unit_test(test_check_vm_idt_and_bound),
	    cmocka_unit_test(test_qemu_kvm_trap_refused),
	    cmocka_unit_test(test_qemu_kvm_auto_uses_stubs),
	    cmocka_unit_test(test_attach_qemu_kvm_refused),
	    cmocka_unit_test(test_embedded_no_int3),
	};

	kvm_require();
	return cmocka_run_group_tests_name("kvm_int3_check", tests, NULL, NULL);
}

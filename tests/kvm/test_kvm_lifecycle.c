/* KVM integration: how a run ends. Timeout, SIGINT/SIGTERM, a faulting guest, --duration, and which
 * exit path delivered the breakpoint hits (real KVM's KVM_EXIT_DEBUG or this machine's PVM quirk).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"
#include "host/kvm/kvm_int3_probe.h"

#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --probe for the tests of how a run ends: as the test run asks ($HVTRACE_TEST_PROBE, else trap),
 * but stub where the INT3 check says trap probes cannot work on this host (they are refused there).
 */
static const char *probe_here(void)
{
	const char *env = getenv("HVTRACE_TEST_PROBE");

	if (!kvm_int3_exits(kvm_int3_check()->verdict, false))
		return "stub";
	return env ? env : "trap";
}

/* The run ended by the host still flushes the whole trace: the trailer is there, nothing lost. */
static void assert_flushed(const struct hv_result *r)
{
	char trailer[96];

	assert_true(r->nr_lines > 0);
	snprintf(trailer, sizeof(trailer), "# entries-written: %zu   lost: 0\n", r->nr_lines);
	if (!strstr(r->trace, trailer))
		fail_msg("no \"%.*s\" in the trace, which ends: %s", (int)strlen(trailer) - 1,
			 trailer, r->trace + (strlen(r->trace) > 200 ? strlen(r->trace) - 200 : 0));
}

/* --timeout stops a guest that never ends. 2 s, not less: on a loaded machine (PVM emulates the
 * guest's CPL0 code) the guest was seen to take more than 0.5 s to print its first line. */
static void test_timeout(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run", "--probe",	       probe_here(), "--timeout",
			      "2", hv_guest("loop"), NULL};

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 124);
	assert_string_equal(r.err, "hvtrace: --timeout 2: the guest was stopped after 2 s\n");
	assert_non_null(strstr(r.console, "hvt-guest: looping\n"));
	assert_flushed(&r);
	hv_result_free(&r);
}

static void stop_by_signal(int sig, const char *name)
{
	struct hv_result r;
	const char *argv[] = {"run", "--probe",	       probe_here(), "--timeout",
			      "30",  hv_guest("loop"), NULL};
	char want[64];

	hv_run_signal_on(&r, argv, "hvt-guest: looping\n", 0.5, sig);
	assert_int_equal(r.status, 128 + sig);
	snprintf(want, sizeof(want), "hvtrace: stopped by %s\n", name);
	assert_string_equal(r.err, want);
	assert_flushed(&r);
	hv_result_free(&r);
}

static void test_sigint(void **state)
{
	(void)state;
	stop_by_signal(SIGINT, "SIGINT");
}

static void test_sigterm(void **state)
{
	(void)state;
	stop_by_signal(SIGTERM, "SIGTERM");
}

/* The fault guest calls tree_root and then triple-faults on cpu0. The report names the last RIP
 * hvtrace saw of that vCPU, whatever the exit's own registers say (KVM on AMD resets the vCPU to
 * 0xfff0 before the exit; PVM and Intel keep RIP at the faulting instruction, which is then given
 * too). Where the INT3 check says trap probes work, tree_root's probe hit is that last exit; where
 * not (stub probes, no exit), it is the console write of "hvt-guest: faulting" in putstr. */
static void test_guest_fault(void **state)
{
	bool trap = kvm_int3_exits(kvm_int3_check()->verdict, false);
	const char *argv[] = {
	    "run", "--probe", trap ? "trap" : "stub", "-l", "tree_root", hv_guest("fault"), NULL};
	const char *prefix = "hvtrace: cpu0: KVM_EXIT_SHUTDOWN (triple fault", *last;
	const char *key = "; last RIP hvtrace saw: 0x";
	const struct vmi_sym *at;
	struct guest_image g;
	struct hv_result r;
	char err[256];
	uint64_t rip;

	(void)state;
	assert_int_equal(guest_image_open(&g, hv_guest("fault"), err, sizeof(err)), 0);
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 3);
	assert_int_equal(count_lines(r.err), 1);
	if (strncmp(r.err, prefix, strlen(prefix)))
		fail_msg("unexpected error line: %s", r.err);
	if (strstr(r.err, "(triple fault) at RIP 0xfff0;"))
		fail_msg("the reset's RIP reported as where the guest was: %s", r.err);
	last = strstr(r.err, key);
	if (!last)
		fail_msg("no last RIP seen in: %s", r.err);
	rip = strtoull(last + strlen(key), NULL, 16);
	at = vmi_symtab_lookup(&g.elf.funcs, rip);
	printf("fault report (%s probes): %s", trap ? "trap" : "stub", r.err);
	if (trap) {
		/* the probe hit: on PVM an emulation failure, on real KVM a KVM_EXIT_DEBUG */
		assert_int_equal(rip, vmi_symtab_find(&g.elf.funcs, "tree_root")->addr);
		assert_non_null(strstr(last, kvm_int3_check()->verdict == KVM_INT3_DEBUG_EXIT
						 ? " (KVM_EXIT_DEBUG)\n"
						 : " (KVM_EXIT_INTERNAL_ERROR)\n"));
	} else {
		/* at the OUT (real KVM) or just past it (PVM) */
		assert_non_null(at);
		assert_string_equal(at->name, "putstr");
		assert_non_null(strstr(last, " (KVM_EXIT_IO)\n"));
	}
	guest_image_close(&g);
	assert_string_equal(r.console, "hvt-guest: faulting\n");
	/* the one call was traced (and the trace was flushed after the probes came out) */
	assert_int_equal(r.nr_lines, 1);
	assert_string_equal(r.lines[0].func, "tree_root");
	assert_int_equal(r.lines[0].cpu, 0);
	hv_result_free(&r);
}

/* --duration: tracing stops (every probe removed) long before the guest is stopped; the untraced
 * guest keeps running without meeting an unhandled breakpoint (that would be a triple fault, status
 * 3). */
static void test_duration_detaches(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run",	   "--probe", probe_here(),	"--duration", "0.3",
			      "--timeout", "2.5",     hv_guest("loop"), NULL};
	double last = 0;

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 124);
	assert_flushed(&r);
	for (size_t i = 0; i < r.nr_lines; i++)
		if (r.lines[i].ts > last)
			last = r.lines[i].ts;
	/* the guest ran 2.5 s; events stop at the detach (0.3 s; generous margin for a noisy host)
	 */
	if (last > 1.5)
		fail_msg("an event at %.6f s, after the detach at 0.3 s", last);
	hv_result_free(&r);
}

/* The breakpoint exit path of this host: every event came through it, none through the other. */
static void check_bp_path(const char *want, const char *other)
{
	struct hv_result r;
	const char *argv[] = {"run", "--probe", "trap", "--stats", hv_guest(NULL), NULL};

	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 0);
	for (unsigned c = 0; c < 2; c++) {
		long events = hv_cpu_stat(r.err, c, "events ");
		long got = hv_cpu_stat(r.err, c, want);

		assert_true(events > 0);
		assert_int_equal(got, events);
		assert_int_equal(hv_cpu_stat(r.err, c, other), 0);
		assert_int_equal(trace_count(&r, NULL, (int)c), events);
	}
	hv_result_free(&r);
}

/* Each path is tested where the INT3 check (host/kvm/kvm_int3_probe.c, a throwaway VM on the same
 * /dev/kvm) says the host delivers hits that way; test_kvm_int3_check runs trap probes wherever it
 * says they work at all. */
static bool int3_path_is(enum kvm_int3_verdict want, const char *what)
{
	const struct kvm_int3_check *c = kvm_int3_check();

	if (c->verdict == want)
		return true;
	printf("SKIPPED: %s: the INT3 check on this host's /dev/kvm says %s (%s)\n", what,
	       kvm_int3_verdict_name(c->verdict), c->detail);
	return false;
}

static void test_pvm_emulation_path(void **state)
{
	(void)state;
	if (!int3_path_is(KVM_INT3_EMULATION, "PVM breakpoint path (emulation failure)"))
		skip();
	check_bp_path("emulation ", "debug ");
}

static void test_real_kvm_debug_path(void **state)
{
	(void)state;
	if (!int3_path_is(KVM_INT3_DEBUG_EXIT, "real-KVM breakpoint path (KVM_EXIT_DEBUG)"))
		skip();
	check_bp_path("debug ", "emulation ");
}

/* A reader that goes away (`hvtrace run ... | head -1`) is a write error: one line naming the output
 * and exit status 4 (EXIT_HOST_ERROR), not a death by SIGPIPE. */
static void test_closed_output(void **state)
{
	int fds[2], errp[2], status;
	char line[64];
	pid_t pid;
	FILE *in;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(pipe(errp), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(errp[1], 2);
		close(fds[0]);
		close(errp[0]);
		execl(hv_binary(), "hvtrace", "run", "--probe", probe_here(), "--console", "/dev/null",
		      hv_guest(NULL), (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	close(errp[1]);
	in = fdopen(fds[0], "r");
	assert_non_null(in);
	assert_non_null(fgets(line, sizeof(line), in));
	assert_string_equal(line, "# tracer: function\n");
	fclose(in); /* the reader is gone: the guest's ~100 KB of trace meet a closed pipe */
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 4);
	in = fdopen(errp[0], "r");
	assert_non_null(in);
	assert_non_null(fgets(line, sizeof(line), in));
	assert_string_equal(line, "hvtrace: stdout: Broken pipe\n");
	fclose(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_timeout),
	    cmocka_unit_test(test_sigint),
	    cmocka_unit_test(test_sigterm),
	    cmocka_unit_test(test_guest_fault),
	    cmocka_unit_test(test_duration_detaches),
	    cmocka_unit_test(test_pvm_emulation_path),
	    cmocka_unit_test(test_real_kvm_debug_path),
	    cmocka_unit_test(test_closed_output),
	};

	if (!kvm_available())
		return 0;
	return cmocka_run_group_tests_name("kvm_lifecycle", tests, NULL, NULL);
}

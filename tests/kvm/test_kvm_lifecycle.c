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

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
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

/* The last line of @trace (without its '\n'; "" if it does not end with one) into @buf. */
static void last_line(const char *trace, char *buf, size_t len)
{
	size_t n = strlen(trace), start;

	buf[0] = 0;
	if (!n || trace[n - 1] != '\n')
		return;
	for (start = n - 1; start && trace[start - 1] != '\n'; start--)
		;
	snprintf(buf, len, "%.*s", (int)(n - 1 - start), trace + start);
}

/* The events of the trace's "CPU:N [LOST M EVENTS]" lines. (Each line scanned on its own: sscanf
 * takes the length of all the text it is given, quadratic over a trace of 600,000 lines.) */
static unsigned long long lost_marked(const char *trace)
{
	unsigned long long sum = 0, m;
	char line[96];

	for (const char *l = trace; *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);

		if (!strncmp(l, "CPU:", 4) && n < sizeof(line)) {
			memcpy(line, l, n);
			line[n] = 0;
			if (sscanf(line, "CPU:%*u [LOST %llu EVENTS]", &m) == 1)
				sum += m;
		}
		if (!nl)
			break;
		l = nl + 1;
	}
	return sum;
}

/* The trace's trailer, its last line, as written: "# entries-written: W   lost: L" with
 * "   guest-reported-lost: G" and "   not-written: N" where not 0. Fails the test (showing how the
 * trace ends) when the last line is not such a trailer. */
struct trailer {
	unsigned long long written, lost, guest_lost, not_written;
};

static struct trailer trailer_of(const struct hv_result *r)
{
	struct trailer t = {0};
	char line[256], again[256];
	size_t n = strlen(r->trace);
	int len;

	last_line(r->trace, line, sizeof(line));
	if (sscanf(line, "# entries-written: %llu   lost: %llu", &t.written, &t.lost) == 2) {
		const char *g = strstr(line, "   guest-reported-lost: ");
		const char *w = strstr(line, "   not-written: ");

		if (g)
			t.guest_lost = strtoull(g + strlen("   guest-reported-lost: "), NULL, 10);
		if (w)
			t.not_written = strtoull(w + strlen("   not-written: "), NULL, 10);
		/* exactly that line, nothing more, nothing less */
		len = snprintf(again, sizeof(again), "# entries-written: %llu   lost: %llu", t.written,
			       t.lost);
		if (t.guest_lost)
			len += snprintf(again + len, sizeof(again) - (size_t)len,
					"   guest-reported-lost: %llu", t.guest_lost);
		if (t.not_written)
			snprintf(again + len, sizeof(again) - (size_t)len, "   not-written: %llu",
				 t.not_written);
		if (!strcmp(again, line))
			return t;
	}
	fail_msg("the trace does not end with its trailer line; it ends: %s",
		 r->trace + (n > 200 ? n - 200 : 0));
	return t;
}

/* The run ended by the host still flushes the whole trace: it ends with its trailer, which counts
 * every function line of it, nothing the host took from the guest is lost (lost: 0), and what the
 * guest itself reported lost is all marked in the trace ("CPU:N [LOST M EVENTS]" where it
 * happened). (The guest loses events only where the drain cannot keep up even with backpressure,
 * whose wait in the guest is bounded: seen in the nested lane, whose host side runs under TCG.) */
static void assert_flushed(const struct hv_result *r)
{
	struct trailer t = trailer_of(r);

	assert_true(r->nr_lines > 0);
	assert_int_equal(t.written, r->nr_lines);
	assert_int_equal(t.lost, 0);
	assert_int_equal(t.not_written, 0);
	assert_int_equal(lost_marked(r->trace), t.guest_lost);
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

/* The signal, sent once the guest loops, ends the run. (--timeout is only a safety net, long: in the
 * nested lane on a busy host the guest once took more than 30 s to reach its loop.) */
static void stop_by_signal(int sig, const char *name)
{
	struct hv_result r;
	const char *argv[] = {"run", "--probe",	       probe_here(), "--timeout",
			      "300", hv_guest("loop"), NULL};
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

/* A signal while the rest of the trace is being written cuts it short: the trace written through a
 * FIFO this test does not read until then (so the backlog is certainly there: the writer is blocked
 * on the full pipe, the rings behind it full), with stub probes on the loop guest. The run is ended
 * by @first (a signal, sent once the guest loops) or by --timeout (@first 0); once hvtrace has said
 * so on stderr, @second is sent, and only then is the FIFO read. hvtrace exits by itself with
 * @status (not killed by the pending signal), says how many events it did not write, and the trace
 * still ends with its trailer: every record the drain took from the guest (--stats: records) is
 * written or not-written, both counted exactly; lost is not-written plus what the drain dropped
 * from the guest rings (--stats: lost). */
static void cut_short(int first, int second, int status)
{
	char dir[] = "/tmp/hvt-cut-XXXXXX", fifo[64], con[64], errp[64], said[128], line[256];
	const char *first_line;
	struct hv_result r = {0};
	struct trailer t;
	size_t cap = 1 << 20, len = 0;
	ssize_t n;
	int fd, st;
	pid_t pid;

	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/trace", dir);
	snprintf(con, sizeof(con), "%s/console", dir);
	snprintf(errp, sizeof(errp), "%s/stderr", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* a reader from the start (hvtrace's open does not wait), which reads nothing yet */
	fd = open(fifo, O_RDONLY | O_NONBLOCK);
	assert_true(fd >= 0);
	/* the smallest pipe (a page): what is in flight (pipe and stdio buffer) is ~130 lines, far
	 * fewer than even the guest's workload before it loops */
	assert_true(fcntl(fd, F_SETPIPE_SZ, 4096) > 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644), null = open("/dev/null", O_WRONLY);

		dup2(e, 2);
		dup2(null, 1);
		close(fd);
		execl(hv_binary(), "hvtrace", "run", "--probe", "stub", "--stats", "-o", fifo,
		      "--console", con, "--timeout", first ? "600" : "5", hv_guest("loop"),
		      (char *)NULL);
		_exit(127);
	}
	if (first) {
		hv_wait_for_text(con, "hvt-guest: looping\n", pid);
		kill(pid, first);
		snprintf(said, sizeof(said), "hvtrace: stopped by SIG%s\n", sigabbrev_np(first));
		first_line = said;
	} else {
		first_line = "hvtrace: --timeout 5: the guest was stopped after 5 s\n";
	}
	/* said as the run ends, before the rest is written: the first signal has been taken */
	hv_wait_for_text(errp, first_line, pid);
	kill(pid, second);
	/* nothing is read before hvtrace's watcher has taken the signal: the writer, held by the
	 * full pipe, must not run ahead of it (on a loaded CI machine the watcher woke only after
	 * the reader had let the whole backlog through, and nothing was cut) */
	hv_wait_signal_taken(pid, second);
	assert_int_equal(fcntl(fd, F_SETFL, 0), 0);
	r.trace = malloc(cap);
	assert_non_null(r.trace);
	while ((n = read(fd, r.trace + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (len + 1 == cap) {
			r.trace = realloc(r.trace, cap *= 2);
			assert_non_null(r.trace);
		}
	}
	r.trace[len] = 0;
	close(fd);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	r.err = hv_sh("cat %s", errp);
	free(hv_sh("rm -rf %s", dir));
	hv_parse_trace(&r);
	if (!WIFEXITED(st))
		fail_msg("hvtrace was killed by signal %d; its stderr: %s", WTERMSIG(st), r.err);
	assert_int_equal(WEXITSTATUS(st), status);

	/* stderr: how the run ended, then the cut with its count, then --stats */
	t = trailer_of(&r);
	snprintf(line, sizeof(line),
		 "%shvtrace: SIG%s: the rest of the trace was not written: %llu events, counted as "
		 "lost\nhvtrace: stats: ",
		 first_line, sigabbrev_np(second), t.not_written);
	if (strncmp(r.err, line, strlen(line)))
		fail_msg("stderr is not \"%s...\" but: %s", line, r.err);
	long records = hv_stat(r.err, "stub probes ", "records ");
	long drain_lost = hv_stat(r.err, "stub probes ", "lost ");

	assert_true(records > 0);
	assert_true(drain_lost >= 0);
	assert_true(t.not_written > 0); /* cut: the backlog was far larger than the pipe */
	assert_int_equal(t.written, r.nr_lines);
	assert_int_equal(t.written + t.not_written, records);
	assert_int_equal(t.lost, t.not_written + (unsigned long long)drain_lost);
	assert_int_equal(lost_marked(r.trace), (unsigned long long)drain_lost + t.guest_lost);
	/* the trap probes' own rings: nothing lost there */
	assert_int_equal(hv_cpu_stat(r.err, 0, "lost "), 0);
	assert_int_equal(hv_cpu_stat(r.err, 1, "lost "), 0);
	hv_result_free(&r);
}

/* Ctrl-C, then Ctrl-C again while the backlog is written: exit 130, the trace cut short. */
static void test_second_sigint_cuts_short(void **state)
{
	(void)state;
	cut_short(SIGINT, SIGINT, 130);
}

/* --timeout ended the run; a SIGTERM while the backlog is written cuts it short: exit 124 still. */
static void test_sigterm_after_timeout_cuts_short(void **state)
{
	(void)state;
	cut_short(0, SIGTERM, 124);
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
			      "--timeout", "2.5",     "--stats",	hv_guest("loop"), NULL};
	double last = 0, detached;

	(void)state;
	hv_run(&r, argv, 0, 0);
	assert_int_equal(r.status, 124);
	assert_flushed(&r);
	for (size_t i = 0; i < r.nr_lines; i++)
		if (r.lines[i].ts > last)
			last = r.lines[i].ts;
	/* the guest ran 2.5 s; events stop at the detach, which began at 0.3 s and had every vCPU
	 * stopped when --stats says (later on a loaded host: the nested lane's took 1.5 s once): no
	 * event after that (a stub record's guest TSC, converted, within 1 ms of it) */
	detached = (double)hv_stat(r.err, "probes ", " detached-at-us ") / 1e6;
	assert_true(detached >= 0.3);
	assert_true(last > 0);
	if (last > detached + 0.001)
		fail_msg("an event at %.6f s, after the detach at %.6f s", last, detached);
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
	    cmocka_unit_test(test_second_sigint_cuts_short),
	    cmocka_unit_test(test_sigterm_after_timeout_cuts_short),
	    cmocka_unit_test(test_guest_fault),
	    cmocka_unit_test(test_duration_detaches),
	    cmocka_unit_test(test_pvm_emulation_path),
	    cmocka_unit_test(test_real_kvm_debug_path),
	    cmocka_unit_test(test_closed_output),
	};

	kvm_require();
	return cmocka_run_group_tests_name("kvm_lifecycle", tests, NULL, NULL);
}

/* The generic backend (issue 41): `hvtrace list-functions --pid` and `attach --pid` on a KVM VMM
 * that offers no debug channel: a bare QEMU with KVM started by this test as a separate process
 * (`-nodefaults -monitor none`, no QMP, no gdbstub), the machine's QEMU and QEMU 10.0 and 11 where
 * scripts/fetch-qemu.sh put them, and hvtrace's own VMM (`hvtrace run --kernel -p nop --mem 1024`,
 * another process: no socket, nothing shared). The Linux test guest waits (hvt.wait) so that
 * hvtrace attaches before dd reads the binfmt_misc status file 7 times (7 vfs_read calls by dd, no
 * other reader named dd); then `yes` keeps it busy. Checked: at least 30,000 functions listed, dd's
 * 7 reads exactly with stub probes and nothing lost, the kernel text unchanged after the detach
 * (--verify-text), the VMM let go (no tracer, not stopped) and its guest running on (its CPU time
 * grows), a second attach (function_graph, --duration) detaching as cleanly, and a VMM killed
 * while hvtrace attaches: one line, never a hang. test_patch_hold_guardian_hvtrace: hvtrace
 * SIGKILLed in its patch hold of hvtrace's VMM: the VMM left running, untraced, its text as it was
 * (the patch hold's guardian). Needs
 * real KVM (the nested lane: make test-nested); skipped with one line without /dev/kvm. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/kvm/vm.h"
#include "tests/common/kernels.h"
#include "tests/kvm/kvm_common.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define BM_READS     7
#define APPEND	     "console=ttyS0 hvt.wait=30 hvt.bm=7 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=900"

static const char *kernel, *initrd;

struct qemu_case {
	const char *version; /* "hvtrace": hvtrace's own VMM, not a QEMU */
	char path[512];	     /* "": the machine's qemu-system-x86_64 */
	int kill_hold; /* the last attach: the VMM killed in hvtrace's Nth ptrace hold of it */
};

/* One bare QEMU with KVM, its console in a file (hvtrace's VMM: its stderr in another). */
struct vmm {
	pid_t pid;
	char dir[64], con[96], err[96];
};

static void vmm_start(struct vmm *v, const struct qemu_case *q)
{
	const char *bin = q->path[0] ? q->path : "qemu-system-x86_64";
	char serial[128];

	snprintf(v->dir, sizeof(v->dir), "/tmp/hvt-%s-generic.XXXXXX",
		 getenv("HVT_TEST_DOMAIN") ? getenv("HVT_TEST_DOMAIN") : "t");
	assert_non_null(mkdtemp(v->dir));
	snprintf(v->con, sizeof(v->con), "%s/console.log", v->dir);
	snprintf(v->err, sizeof(v->err), "%s/vmm.err", v->dir);
	snprintf(serial, sizeof(serial), "file:%s", v->con);
	v->pid = fork();
	assert_true(v->pid >= 0);
	if (v->pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		setpgid(0, 0);
		/* hvtrace's VMM, untraced (-p nop): its console in a file, its stderr in another */
		if (!strcmp(q->version, "hvtrace")) {
			int e = open(v->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

			if (e >= 0)
				dup2(e, 2);
			execl(hv_binary(), hv_binary(), "run", "--kernel", kernel, "--initrd",
			      initrd, "--mem", "1024", "--smp", "2", "--append",
			      &APPEND[strlen("console=ttyS0 ")], "-p", "nop", "--console", v->con,
			      (char *)NULL);
		}
		execlp(bin, bin, "-accel", "kvm", "-nodefaults", "-monitor", "none", "-display",
		       "none", "-m", "1024", "-smp", "2", "-kernel", kernel, "-initrd", initrd,
		       "-append", APPEND, "-serial", serial, (char *)NULL);
		_exit(127);
	}
	hv_wait_for_text(v->con, "hvt-linux: init up", v->pid);
	assert_int_equal(kill(v->pid, 0), 0);
}

static void vmm_stop(struct vmm *v)
{
	char cmd[128];

	if (v->pid > 0) {
		kill(v->pid, SIGKILL);
		waitpid(v->pid, NULL, 0);
		v->pid = 0;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", v->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", v->dir);
}

/* The VMM as hvtrace must leave it: no tracer, not stopped; with @busy (the guest runs `yes`), its
 * guest using CPU time. */
static void assert_let_go(pid_t pid, bool busy)
{
	char path[64], *st, *tp, *state;
	unsigned long long t0, t1;
	char *s0, *s1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	st = hv_slurp(path);
	tp = strstr(st, "TracerPid:");
	state = strstr(st, "State:");
	assert_non_null(tp);
	assert_non_null(state);
	assert_int_equal(atoi(tp + 10), 0);
	assert_null(strstr(state, "(stopped)"));
	assert_null(strstr(state, "(tracing stop)"));
	free(st);
	if (!busy)
		return;
	s0 = hv_sh("awk '{print $14+$15}' /proc/%d/stat", (int)pid);
	sleep_ms(3000);
	s1 = hv_sh("awk '{print $14+$15}' /proc/%d/stat", (int)pid);
	t0 = strtoull(s0, NULL, 10);
	t1 = strtoull(s1, NULL, 10);
	printf("hvt-generic: VMM pid %d CPU ticks %llu -> %llu over 3 s\n", (int)pid, t0, t1);
	assert_true(t1 > t0); /* `yes` runs in the guest */
	free(s0);
	free(s1);
}

/* TracerPid of @pid (0: none, -1: gone). */
static int tracer_pid(pid_t pid)
{
	char path[64], buf[2048];
	const char *tp;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	tp = strstr(buf, "TracerPid:");
	return tp ? atoi(tp + 10) : -1;
}

/* Where vfs_read's first byte is in the VMM's own memory: hvtrace's VMM runs the kernel at its link
 * address (no KASLR: System.map's address), guest-physical = virtual - 0xffffffff80000000, all of
 * its 1 GiB of RAM one mapping from guest-physical 0. 0 if not found. */
static uint64_t vfs_read_hva(pid_t pid)
{
	char *dir = strdup(kernel), path[512], *out;
	uint64_t sym = 0, lo = 0, hi = 0;

	snprintf(path, sizeof(path), "%s/System.map", dirname(dir));
	free(dir);
	out = hv_sh("awk '$3 == \"vfs_read\" {print $1}' %s", path);
	sym = strtoull(out, NULL, 16);
	free(out);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	char line[512];
	unsigned long a, b;

	while (f && !lo && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && b - a == (1ul << 30))
			lo = a;
	if (f)
		fclose(f);
	hi = lo + (1ull << 30);
	if (!sym || !lo || sym < 0xffffffff80000000ull || lo + (sym - 0xffffffff80000000ull) >= hi)
		return 0;
	return lo + (sym - 0xffffffff80000000ull);
}

/* What each thread of the VMM @pid does (state, wchan, /proc's syscall line), for a failure's
 * report. */
static char *vmm_threads(pid_t pid)
{
	return hv_sh("for t in /proc/%d/task/*; do echo \"  $(basename $t): $(sed 's/.*) //' "
		     "$t/stat 2>/dev/null | cut -d' ' -f1) $(cat $t/wchan 2>/dev/null) "
		     "$(cut -d' ' -f1-3 $t/syscall 2>/dev/null)\"; done; true",
		     (int)pid);
}

/* hvtrace SIGKILLed in its second ptrace hold of the VMM (the patch hold) once vfs_read's NOP5 has
 * become its CALL (so past the hold's injected register reads, among the text writes): the patch
 * hold's guardian undoes every write, the VMM runs on untraced, and a new attach on the same
 * functions finds every site a NOP5 again and detaches with the text unchanged. hvtrace's own VMM
 * only: a QEMU's kernel lies where its KASLR put it physically. */
static void killed_in_patch_hold(const struct qemu_case *q, struct vmm *v, const char *pid)
{
	char errpath[128], mpath[64], *err = NULL;
	int st, mfd;
	uint8_t b = 0;
	uint64_t at;
	pid_t h;
	struct hv_result r;

	at = vfs_read_hva(v->pid);
	assert_true(at != 0);
	snprintf(mpath, sizeof(mpath), "/proc/%d/mem", (int)v->pid);
	mfd = open(mpath, O_RDONLY | O_CLOEXEC);
	assert_true(mfd >= 0);
	assert_int_equal(pread(mfd, &b, 1, (off_t)at), 1);
	assert_int_equal(b, 0x0f); /* a NOP5 */

	snprintf(errpath, sizeof(errpath), "%s/killed.err", v->dir);
	h = fork();
	assert_true(h >= 0);
	if (h == 0) {
		int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644),
		    null = open("/dev/null", O_RDWR);

		dup2(e, 2);
		dup2(null, 1);
		execl(hv_binary(), hv_binary(), "attach", "--pid", pid, "-l", "vfs_*", "-l",
		      "ksys_*", (char *)NULL);
		_exit(127);
	}
	/* vfs_read's CALL in while hvtrace holds the VMM: only the patch hold writes text (the
	 * first hold reads registers; without --duration no detach hold comes), so the byte and the
	 * VMM's TracerPid say it, looked at without a pause (the hold lasts 0.1 to 0.25 s, and the
	 * lane's L1 may be starved by its host); the hold is over once hvtrace says its probes are
	 * in (the VMM may be let go a moment within the hold, to run out of a detour's bytes) */
	bool in_hold = false, over = false;
	struct timespec t0, t;

	/* the CALLs go in within a few ms at the hold's end (its registers and the stub's pages
	 * come first): the looker runs first in its machine where it may (SCHED_FIFO, root) */
	struct sched_param fifo = {.sched_priority = 1}, was = {0};
	int policy = sched_getscheduler(0);

	sched_getparam(0, &was);
	if (sched_setscheduler(0, SCHED_FIFO, &fifo) != 0)
		policy = -1;
	st = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (t = t0; t.tv_sec - t0.tv_sec < 600 && waitpid(h, &st, WNOHANG) == 0;
	     clock_gettime(CLOCK_MONOTONIC, &t)) {
		if (pread(mfd, &b, 1, (off_t)at) != 1 || b != 0xe8) {
			usleep(20);
			continue;
		}
		if (tracer_pid(v->pid) > 0) { /* (the tracer may be a thread of hvtrace) */
			in_hold = true;
			break;
		}
		free(err);
		err = hv_slurp(errpath);
		if ((over = strstr(err, " stub probes in, ") != NULL))
			break;
	}
	char *after;
	int vst = 0;
	pid_t gone = 0;

	kill(h, SIGKILL); /* in its patch hold, vfs_read patched, or (a failure) wherever it is */
	if (policy >= 0)
		sched_setscheduler(0, policy, &was);
	waitpid(h, &st, 0);
	after = vmm_threads(v->pid);
	close(mfd);
	if (!in_hold) {
		free(err);
		err = hv_slurp(errpath);
		fail_msg("hvtrace's patch hold with vfs_read patched (%02x) not seen%s: %s", b,
			 over ? " (the hold was over when the test looked)" : "", err);
	}
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	free(err);
	err = hv_slurp(errpath);
	if (strstr(err, " stub probes in, "))
		fail_msg("hvtrace was killed after its patch hold, not in it: %s", err);
	/* the guardian's line, then the VMM let go */
	for (int i = 0; i < 200; i++) {
		free(err);
		err = hv_slurp(errpath);
		if (!gone && (gone = waitpid(v->pid, &vst, WNOHANG)) > 0)
			printf("hvt-generic: the VMM ended %d ms after hvtrace's death\n", i * 50);
		if (strstr(err, "hvtrace guardian:") && tracer_pid(v->pid) == 0)
			break;
		sleep_ms(50);
	}
	printf("hvt-generic: VMM %s: hvtrace killed in its patch hold, vfs_read's CALL in: %s",
	       q->version, err);
	if (gone > 0 || !strstr(err, " writes undone, 0 left (changed since), the VMM let go")) {
		char *con = hv_sh(
			 "tail -c 1500 %s; echo; grep -E 'State|TracerPid' /proc/%d/status; true",
			 v->con, (int)v->pid),
		     *verr = hv_sh("tail -c 3000 %s; true", v->err);

		printf("hvt-generic: the VMM's console's end and state: %s\n", con);
		printf("hvt-generic: the VMM's threads at hvtrace's death:\n%s\n", after);
		if (gone > 0)
			printf("hvt-generic: the VMM ended: %s %d\n",
			       WIFEXITED(vst) ? "exit status" : "killed by signal",
			       WIFEXITED(vst) ? WEXITSTATUS(vst) : WTERMSIG(vst));
		printf("hvt-generic: the VMM's stderr: %s\n", verr);
		free(con);
		free(verr);
		if (gone > 0)
			v->pid = 0;
	}
	free(after);
	assert_non_null(strstr(err, "hvtrace guardian: hvtrace died while it patched; "));
	assert_non_null(strstr(err, " writes undone, 0 left (changed since), the VMM let go"));
	assert_null(strstr(err, "; 0 writes undone"));
	free(err);
	assert_let_go(v->pid, true);
	const char *again[] = {"attach", "--pid",  pid,		 "-l", "vfs_*",
			       "-l",	 "ksys_*", "--duration", "2",  "--verify-text",
			       NULL};
	hv_run(&r, again, 0, 0);
	printf("hvt-generic: VMM %s: attach after it: status %d\n", q->version, r.status);
	if (r.status)
		fprintf(stderr, "stderr: %s\n", r.err);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "--verify-text: kernel text unchanged"));
	hv_result_free(&r);
	assert_let_go(v->pid, true);
}

static const struct qemu_case *case_qemu(void **state)
{
	const struct qemu_case *q = *state;

	if (q->path[0] && access(q->path, X_OK) != 0) {
		printf("SKIPPED: QEMU %s: not fetched (make qemu-versions HVT_QEMUS=%s)\n",
		       q->version, q->version);
		skip();
	}
	return q;
}

static void test_generic(void **state)
{
	const struct qemu_case *q = case_qemu(state);
	struct vmm v = {0};
	struct hv_result r;
	char pid[16];

	vmm_start(&v, q);
	snprintf(pid, sizeof(pid), "%d", (int)v.pid);

	/* list-functions --pid: chosen by itself (a QEMU with no QMP and no gdbstub) */
	const char *list[] = {"list-functions", "--pid", pid, NULL};
	hv_run(&r, list, 0, 0);
	printf("hvt-generic: VMM %s: list-functions status %d, %d functions\n", q->version,
	       r.status, count_lines(r.trace));
	if (r.status)
		fprintf(stderr, "stderr: %s\n", r.err);
	assert_int_equal(r.status, 0);
	assert_true(count_lines(r.trace) >= 30000);
	assert_non_null(strstr(r.trace, "\nvfs_read\n"));
	hv_result_free(&r);
	assert_let_go(v.pid, false); /* the guest sleeps (hvt.wait) */

	/* attach --pid, stub probes: dd's reads exactly, then the detach (SIGINT) */
	const char *attach[] = {"attach",	 "--pid", pid,	      "--probe", "stub", "-p",
				"function",	 "-l",	  "vfs_read", "--comm",	 "dd",	 "--stats",
				"--verify-text", NULL};
	hv_run_signal_on_file(&r, attach, v.con, "hvt-linux: binfmt_misc status read", 2, SIGINT);
	printf("hvt-generic: VMM %s: attach status %d, vfs_read by dd %ld\n", q->version, r.status,
	       trace_count(&r, "vfs_read", -1));
	if (r.status)
		fprintf(stderr, "stderr: %s\n", r.err);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "stub probes in"));
	assert_non_null(strstr(r.err, "--verify-text: kernel text unchanged"));
	assert_int_equal(trace_count(&r, "vfs_read", -1), BM_READS);
	for (size_t i = 0; i < r.nr_lines; i++)
		assert_string_equal(r.lines[i].comm, "dd");
	assert_int_equal(hv_stat(r.err, "stub probes ", "lost "), 0);
	assert_int_equal(hv_stat(r.err, "stub probes ", "rejected "), 0);
	hv_result_free(&r);
	assert_let_go(v.pid, true);

	/* again, function_graph on what `yes` calls, for 3 s (--duration) */
	const char *graph[] = {"attach",    "--pid",	      pid,  "--vmm",	     "generic",
			       "-p",	    "function_graph", "-l", "ksys_write",    "-l",
			       "vfs_write", "--duration",     "3",  "--verify-text", "--stats",
			       NULL};
	hv_run(&r, graph, 0, 0);
	printf("hvt-generic: VMM %s: function_graph status %d, %ld ksys_write\n", q->version,
	       r.status, count_text(r.trace, "ksys_write() {"));
	if (r.status)
		fprintf(stderr, "stderr: %s\n", r.err);
	assert_int_equal(r.status, 0);
	assert_true(count_text(r.trace, "ksys_write() {") > 0);
	assert_non_null(strstr(r.err, "--verify-text: kernel text unchanged"));
	hv_result_free(&r);
	assert_let_go(v.pid, true);

	/* trap probes: refused in one line, nothing changed */
	const char *trap[] = {"attach", "--pid", pid, "--probe", "trap", "-l", "vfs_read", NULL};
	hv_run(&r, trap, 0, 0);
	assert_int_equal(r.status, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "KVM_EXIT_DEBUG"));
	hv_result_free(&r);

	/* the VMM killed while hvtrace holds it (its Nth ptrace hold: 1, the registers; 2, the
	 * patch), seen from /proc: one line, no hang */
	pid_t killer = fork();

	assert_true(killer >= 0);
	if (killer == 0) {
		int holds = 0, was = 0;

		for (int i = 0; i < 600000; i++) { /* about 10 minutes at most */
			int now = tracer_pid(v.pid) > 0;

			if (now && !was && ++holds == q->kill_hold) {
				kill(v.pid, SIGKILL);
				_exit(0);
			}
			was = now;
			usleep(1000);
		}
		_exit(1);
	}
	const char *all[] = {"attach", "--pid", pid, "-l", "vfs_*", "-l", "ksys_*", NULL};
	hv_run(&r, all, 0, 0);
	kill(killer, SIGKILL); /* if it never saw that hold */
	waitpid(killer, NULL, 0);
	printf("hvt-generic: VMM %s: VMM killed in hvtrace's hold %d: status %d: %s", q->version,
	       q->kill_hold, r.status, r.err);
	/* before the probes are in: one line, status 2; after: the trace so far, status 0 */
	if (r.status == 2) {
		/* the error line is the last one (a symbols line may come before it) */
		size_t len = strlen(r.err);
		const char *last = r.err;

		for (size_t i = 0; len && i + 1 < len; i++)
			if (r.err[i] == '\n')
				last = r.err + i + 1;
		assert_true(strstr(last, "exited during the attach") ||
			    strstr(last, "has exited (a zombie, or gone)") ||
			    strstr(last, ": no such process"));
	} else {
		assert_int_equal(r.status, 0);
		assert_non_null(strstr(r.err, "the VMM went away"));
	}
	hv_result_free(&r);
	vmm_stop(&v);
}

/* hvtrace's own VMM, hvtrace SIGKILLed in its patch hold (killed_in_patch_hold). */
static void test_patch_hold_guardian_hvtrace(void **state)
{
	const struct qemu_case *q = *state;
	struct vmm v = {0};
	char pid[16];

	vmm_start(&v, q);
	snprintf(pid, sizeof(pid), "%d", (int)v.pid);
	killed_in_patch_hold(q, &v, pid);
	vmm_stop(&v);
}

int main(void)
{
	static struct hv_kernel kernels[8];
	static struct qemu_case qemus[] = {
	    {"7.2", "", 1}, {"10.0", "", 2}, {"11", "", 2}, {"hvtrace", "", 2}};
	static char names[ARRAY_LEN(qemus)][64];
	struct CMUnitTest tests[ARRAY_LEN(qemus) + 1];
	const char *cache =
	    getenv("HVTRACE_CACHE") ? getenv("HVTRACE_CACHE") : "/var/cache/hvtrace";
	char why[256], *gdir;
	long nr;

	kvm_require();
	if (vm_check_linux_host(why, sizeof(why)) < 0)
		hv_skip_binary("test_kvm_generic_vmm: booting Linux: %s", why);
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
		hv_skip_binary("test_kvm_generic_vmm: no Linux guest (make guest)");
	for (size_t i = 1; i + 1 < ARRAY_LEN(qemus); i++)
		snprintf(qemus[i].path, sizeof(qemus[i].path), "%s/qemu/%s/qemu-system-x86_64",
			 cache, qemus[i].version);
	for (size_t i = 0; i < ARRAY_LEN(qemus); i++) {
		snprintf(names[i], sizeof(names[0]), "test_generic_%s%s",
			 i + 1 < ARRAY_LEN(qemus) ? "qemu_" : "", qemus[i].version);
		tests[i] = (struct CMUnitTest){
		    .name = names[i], .test_func = test_generic, .initial_state = &qemus[i]};
	}
	if (getenv("HVT_TEST_FILTER"))
		cmocka_set_test_filter(getenv("HVT_TEST_FILTER"));
	tests[ARRAY_LEN(qemus)] =
	    (struct CMUnitTest){.name = "test_patch_hold_guardian_hvtrace",
				.test_func = test_patch_hold_guardian_hvtrace,
				.initial_state = &qemus[ARRAY_LEN(qemus) - 1]};
	return _cmocka_run_group_tests("kvm_generic_vmm", tests, ARRAY_LEN(qemus) + 1, NULL, NULL);
}

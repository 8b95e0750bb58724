/* KVM integration: stock Linux kernels booted by `hvtrace run --kernel` in the embedded VMM, traced
 * with stub probes: the init's vfs_read calls with their comm, --expect-call, power-off and panic
 * verdicts, and boot tracing (start_kernel and .init.text). Needs real KVM (the nested lane,
 * scripts/nested-kvm.sh and make test-nested, gives it here): on a host whose /dev/kvm cannot boot
 * Linux (PVM) only the refusal and the bad-input checks run, the rest is skipped with one line.
 *
 * The kernel matrix (issue 23): test_vfs_read, test_boot_trace and test_boot_trace_detach_after_init
 * run on each kernel of $HVT_KERNELS (default 6.1; tests/common/kernels.h: 6.1's guest in the
 * directory of $GUEST, `make guest`, any other K's in its K/, `make guest KERNEL=K`), named after it
 * (test_boot_trace_6.12); a kernel whose guest is missing has its cases SKIPPED, each saying how to
 * fetch it. The refusal, bad-input and panic checks run once, on the first kernel present.
 * $HVT_TEST_FILTER (a glob) runs only the cases whose names match. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/kvm/kvm_int3_probe.h"
#include "tests/common/hv_expect.h"
#include "tests/common/kernels.h"
#include "tests/kvm/kvm_common.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_KERNELS  8

/* the files of the first kernel present: the kernel-independent checks run on it */
static const char *kernel, *initrd;

/* The kernel a matrix case runs on (its cmocka state): its files, or the case is skipped with the
 * command that fetches them. */
static const struct hv_kernel *case_kernel(void **state, const char *test)
{
	const struct hv_kernel *k = *state;

	if (!k->present) {
		printf("SKIPPED: %s_%s: no guest for kernel %s (make guest KERNEL=%s)\n", test,
		       k->name, k->name, k->name);
		skip();
	}
	printf("hvt-kvm-linux: %s %s\n", k->name, test);
	fflush(stdout);
	return k;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A failed run's side of the story: hvtrace's stderr and the console from before its first splat
 * (hv_print_console). */
static void print_failure(const struct hv_result *r)
{
	fprintf(stderr, "stderr: %s\n", r->err);
	fflush(stderr);
	hv_print_console("the failed run", r->console);
}

/* `run --kernel` of @k on 2 vCPUs with the kernel command line @append and @args after it
 * (NULL-terminated, at most 24), into @r. */
static void run_kernel(struct hv_result *r, const struct hv_kernel *k, const char *append,
		       const char *const *args)
{
	const char *argv[32] = {"run",	 "--kernel", k->vmlinuz, "--initrd", k->initrd,
				"--smp", "2",	     "--append", append};
	size_t n = 9;

	for (size_t i = 0; args[i] && n < ARRAY_LEN(argv) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	hv_run(r, argv, 0, 0);
}

/* Trap probes in run --kernel need the host's INT3 to exit as KVM_EXIT_DEBUG: the running test is
 * skipped with one line where it does not. */
static void skip_without_trap_probes(void)
{
	if (kvm_int3_exits(kvm_int3_check()->verdict, true))
		return;
	printf("SKIPPED: INT3 does not exit as KVM_EXIT_DEBUG on this host's KVM: no trap probe in "
	       "run --kernel\n");
	skip();
}

/* The guest powered off as if never traced: no oops, BUG or WARNING, no "missing return thunk"
 * (the kernel finding a breakpoint where it rewrites a return). */
static void assert_clean_power_off(const struct hv_result *r)
{
	assert_non_null(strstr(r->console, "reboot: Power down"));
	assert_null(strstr(r->console, "Oops"));
	assert_null(strstr(r->console, "BUG: "));
	assert_null(strstr(r->console, "WARNING: CPU"));
	assert_null(strstr(r->console, "missing return thunk"));
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
	const struct hv_kernel *k = case_kernel(state, "test_vfs_read");
	const char *argv[] = {"run",	  "--kernel",  k->vmlinuz, "--initrd", k->initrd,
			      "--probe",  "stub",      "-l",	   "vfs_read", "--expect-call",
			      "vfs_read", "--timeout", "600",	   NULL};
	struct hv_result r;
	long init_reads = 0;
	const char *up, *done;
	double t0 = now_s();

	hv_run(&r, argv, 0, 0);
	printf("hvt-kvm-linux: %s test_vfs_read: status %d in %.1f s, vfs_read %ld\n", k->name,
	       r.status, now_s() - t0, trace_count(&r, "vfs_read", -1));
	if (r.status)
		print_failure(&r);
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
	/* 8250_pnp found COM1 in the DSDT: "00:00: ttyS0 at I/O 0x3f8 (irq = 4, ..." up to 7.2,
	 * "00:00: ttyS0 I/O:0x3f8 (irq = 4, ..." from 7.3 */
	assert_true(strstr(r.console, "00:00: ttyS0 at I/O 0x3f8 (irq = ") ||
		    strstr(r.console, "00:00: ttyS0 I/O:0x3f8 (irq = "));
	hv_result_free(&r);
}

/* Boot tracing: probes armed before the kernel's first instruction. Each function here runs a
 * known number of times: start_kernel, setup_arch, trap_init, setup_per_cpu_areas, rest_init,
 * kernel_init_freeable and free_initmem once on the boot CPU (the __init ones from .init.text),
 * notify_cpu_starting once on the second vCPU as it comes up, cpu_startup_entry once per vCPU (the
 * boot CPU's idle loop, then the second's). start_kernel is the first event, by the boot task
 * (swapper, pid 0), kernel_init_freeable the init task's (pid 1); the kernel's W+X check finds
 * nothing (the stub's pages are W^X), and the guest's own ftrace still works (its function tracer
 * on vfs_open counts events in the guest's bench rounds). */
static void test_boot_trace(void **state)
{
	static const struct {
		const char *func;
		int cpu;
		long n;
	} want[] = {
	    {"start_kernel", 0, 1},	   {"setup_arch", 0, 1},	    {"trap_init", 0, 1},
	    {"setup_per_cpu_areas", 0, 1}, {"rest_init", 0, 1},		    {"kernel_init_freeable", -1, 1},
	    {"free_initmem", -1, 1},	   {"notify_cpu_starting", 1, 1},   {"cpu_startup_entry", 0, 1},
	    {"cpu_startup_entry", 1, 1},
	};
	const struct hv_kernel *k = case_kernel(state, "test_boot_trace");
	const char *argv[] = {"run",
			      "--kernel",
			      k->vmlinuz,
			      "--initrd",
			      k->initrd,
			      "--smp",
			      "2",
			      "--append",
			      "hvt.bench=1 hvt.ftrace=vfs_open",
			      "--probe",
			      "stub",
			      "-l",
			      "start_kernel",
			      "-l",
			      "setup_arch",
			      "-l",
			      "trap_init",
			      "-l",
			      "setup_per_cpu_areas",
			      "-l",
			      "rest_init",
			      "-l",
			      "kernel_init_freeable",
			      "-l",
			      "free_initmem",
			      "-l",
			      "notify_cpu_starting",
			      "-l",
			      "cpu_startup_entry",
			      "--timeout",
			      "600",
			      NULL};
	struct hv_result r;
	long total = 0, n[ARRAY_LEN(want)];
	const char *ev;
	double t0 = now_s();

	hv_run(&r, argv, 0, 0);
	printf("hvt-kvm-linux: %s test_boot_trace: status %d in %.1f s, %ld lines\n", k->name,
	       r.status, now_s() - t0, trace_count(&r, NULL, -1));
	for (size_t i = 0; i < ARRAY_LEN(want); i++) {
		n[i] = trace_count(&r, want[i].func, want[i].cpu);
		printf("hvt-kvm-linux:   %s on cpu %d: %ld calls%s\n", want[i].func, want[i].cpu,
		       n[i], n[i] == want[i].n ? "" : " (not the expected number)");
	}
	if (r.status)
		print_failure(&r);
	assert_int_equal(r.status, 0);
	for (size_t i = 0; i < ARRAY_LEN(want); i++) {
		assert_int_equal(n[i], want[i].n);
		total += n[i];
	}
	assert_int_equal(trace_count(&r, NULL, -1), total);
	assert_true(r.nr_lines > 0);
	assert_string_equal(r.lines[0].func, "start_kernel");
	assert_int_equal(r.lines[0].pid, 0);
	assert_string_equal(r.lines[0].comm, "swapper");
	for (size_t i = 0; i < r.nr_lines; i++)
		if (!strcmp(r.lines[i].func, "kernel_init_freeable"))
			assert_int_equal(r.lines[i].pid, 1);
	assert_non_null(strstr(r.console, "x86/mm: Checked W+X mappings: passed"));
	assert_null(strstr(r.console, "ftrace failed"));
	ev = strstr(r.console, "hvt-linux: bench ftrace-events ");
	assert_non_null(ev);
	assert_true(atol(ev + strlen("hvt-linux: bench ftrace-events ")) > 0);
	assert_non_null(strstr(r.console, "reboot: Power down"));
	hv_result_free(&r);
}

/* Detached by the host long after boot (--duration; the guest's init sleeps, so --timeout ends the
 * run): the .init.text probe (start_kernel) is left to the kernel, which freed that memory; the
 * other one (free_initmem) is put back, and no vCPU is left inside the stub. */
static void test_boot_trace_detach_after_init(void **state)
{
	const struct hv_kernel *k = case_kernel(state, "test_boot_trace_detach_after_init");
	const char *argv[] = {"run",	       "--kernel", k->vmlinuz,	   "--initrd",
			      k->initrd,       "--append", "hvt.wait=100000", "--probe",
			      "stub",	       "-l",	   "start_kernel",	   "-l",
			      "free_initmem", "--stats",  "--duration",	   "100",
			      "--timeout",    "130",	  NULL};
	struct hv_result r;
	double t0 = now_s();

	hv_run(&r, argv, 0, 0);
	printf("hvt-kvm-linux: %s test_boot_trace_detach_after_init: status %d in %.1f s, "
	       "start_kernel %ld free_initmem %ld\n",
	       k->name, r.status, now_s() - t0, trace_count(&r, "start_kernel", -1),
	       trace_count(&r, "free_initmem", -1));
	if (r.status != 124 || !strstr(r.console, "hvt-linux: init up"))
		print_failure(&r);
	assert_int_equal(r.status, 124);
	assert_non_null(strstr(r.console, "hvt-linux: init up"));
	assert_null(strstr(r.err, "restoring the patched sites failed"));
	assert_null(strstr(r.err, "inside the stub"));
	assert_int_equal(trace_count(&r, "start_kernel", -1), 1);
	assert_int_equal(trace_count(&r, "free_initmem", -1), 1);
	assert_int_equal(hv_stat(r.err, "init-text-probes-left", "init-text-probes-left"), 1);
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

/* Trap probes in the embedded VMM (issue 40), where INT3 exits as KVM_EXIT_DEBUG (real KVM, the
 * nested lane with its own L0): hvtrace takes the VM's INT3s (guest debug) and gives the kernel's
 * own back to it (int3_selftest at boot, text_poke_bp); dd's 7 reads (vfs_read) and its 14 opens as
 * a BTF-typed -e reading each filename from guest memory at the call, by dd alone (--comm: the task
 * read from the kernel's GS base at each hit, its per-CPU areas having moved since boot). */
static void test_trap_event(void **state)
{
	const struct hv_kernel *k = case_kernel(state, "test_trap_event");
	const char *args[] = {
	    "--probe", "trap",	   "-p",      "function",
	    "-l",      "vfs_read", "-e",      "do_sys_openat2(int dfd, string filename)",
	    "--comm",  "dd",	   "--stats", "--timeout",
	    "600",     NULL};
	struct hv_result r;
	double t0 = now_s();

	skip_without_trap_probes();
	run_kernel(&r, k, "hvt.bm=7 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1", args);
	printf("hvt-kvm-linux: %s test_trap_event: status %d in %.1f s, vfs_read %ld, opens %ld\n",
	       k->name, r.status, now_s() - t0, trace_count(&r, "vfs_read", -1),
	       count_text(r.trace, "->do_sys_openat2("));
	if (r.status)
		print_failure(&r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.console, "hvt-linux: binfmt_misc status read 7 times"));
	assert_int_equal(trace_count(&r, "vfs_read", -1), 7);
	assert_int_equal(
	    count_text(r.trace, "->do_sys_openat2(dfd=-100, filename=/tmp/binfmt/status)\n"), 7);
	assert_int_equal(count_text(r.trace, "->do_sys_openat2(dfd=-100, filename=/dev/null)\n"),
			 7);
	assert_int_equal(trace_count(&r, NULL, -1), 7); /* the function lines: vfs_read alone */
	for (size_t i = 0; i < r.nr_lines; i++)
		assert_string_equal(r.lines[i].comm, "dd");
	assert_non_null(strstr(r.err, " guest-debug on bp-given-back "));
	hv_result_free(&r);
}

/* One run of returns_traced: dd's 7 reads of binfmt_misc's status (8 bytes each) as @tracer shows
 * them, with --probe @probe, and @ret's return probe on vfs_read (-r) if set. */
static void returns_run(const struct hv_kernel *k, const char *probe, const char *tracer, bool ret)
{
	const char *args[] = {"--probe",  probe, "-p",	    tracer,	 "-l",	"vfs_read",
			      "--comm",	  "dd",	 "--stats", "--timeout", "600", ret ? "-r" : NULL,
			      "vfs_read", NULL};
	bool graph = !strcmp(tracer, "function_graph");
	struct hv_result r;
	double t0 = now_s();

	run_kernel(&r, k, "hvt.bm=7", args);
	printf("hvt-kvm-linux: %s returns_traced (%s, %s%s): status %d in %.1f s, %ld leaves, "
	       "%ld returns\n",
	       k->name, probe, tracer, ret ? ", -r" : "", r.status, now_s() - t0,
	       count_text(r.trace, "|  vfs_read();\n"),
	       count_text(r.trace, " <- vfs_read) ret=8 duration="));
	if (r.status)
		print_failure(&r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.console, "hvt-linux: binfmt_misc status read 7 times"));
	assert_clean_power_off(&r);
	if (graph) {
		/* a leaf each (no child traced), with its duration */
		assert_int_equal(count_text(r.trace, "|  vfs_read();\n"), 7);
		assert_int_equal(count_text(r.trace, "vfs_read() {"), 0);
		for (const char *l = strstr(r.trace, "|  vfs_read();\n"); l;
		     l = strstr(l + 1, "|  vfs_read();\n")) {
			const char *bol = l;

			while (bol > r.trace && bol[-1] != '\n')
				bol--;
			if (!memmem(bol, (size_t)(l - bol), " us ", 4))
				fail_msg("a vfs_read leaf without its duration: %.*s",
					 (int)(l - bol) + 14, bol);
		}
	} else {
		assert_int_equal(trace_count(&r, "vfs_read", -1), 7);
		assert_int_equal(count_text(r.trace, " <- vfs_read) ret=8 duration="), 7);
		assert_int_equal(count_text(r.trace, "r_vfs_read: "), 7);
	}
	assert_non_null(strstr(r.err, " orphan-returns 0 "));
	hv_result_free(&r);
}

/* Returns traced in hvtrace's own VMM: with trap probes through a return trampoline in a page of
 * hvtrace's own (the kernel rewrites __fentry__'s RET at boot), as function_graph and as -r; with
 * stub probes as function_graph, whose run once ended at the kernel's first instruction (a triple
 * fault on the trampoline's INT3 at __fentry__, which the stub's returns never use) with exit 0. */
static void test_returns_traced(void **state)
{
	const struct hv_kernel *k = case_kernel(state, "test_returns_traced");

	if (kvm_int3_exits(kvm_int3_check()->verdict, true)) {
		returns_run(k, "trap", "function_graph", false);
		returns_run(k, "trap", "function", true);
	} else {
		printf(
		    "hvt-kvm-linux: INT3 does not exit as KVM_EXIT_DEBUG on this host's KVM: the "
		    "stub probes' returns alone\n");
	}
	returns_run(k, "stub", "function_graph", false);
}

/* Trap probes' returns handed back when the host detaches in the middle of a call: function_graph
 * on the clock_nanosleep system call while the init sleeps in it (hvt.wait; busybox's sleep),
 * --duration ending the trace inside that sleep (50 s after the start: the lane boots a kernel in
 * 10-35 s, and the sleep lasts 80). Its return slot points at the trampoline page then; the detach
 * must write the real return address back before it unmaps that page, or the sleep's end returns
 * into nothing. The guest must wake, run its workload and power off. */
#define SLEEP_CALL "__x64_sys_clock_nanosleep"

static void test_returns_detached(void **state)
{
	const struct hv_kernel *k = case_kernel(state, "test_returns_detached");
	const char *args[] = {"--probe", "trap",       "-p", "function_graph", "-l",  SLEEP_CALL,
			      "--stats", "--duration", "50", "--timeout",      "600", NULL};
	struct hv_result r;
	long restored;
	double t0 = now_s();

	skip_without_trap_probes();
	run_kernel(&r, k, "hvt.wait=80 hvt.rounds=1 hvt.yes=0 hvt.yes_sec=0", args);
	restored = hv_restored_slots(r.err);
	printf("hvt-kvm-linux: %s returns_detached: status %d in %.1f s, %ld calls open, "
	       "restored-slots %ld\n",
	       k->name, r.status, now_s() - t0, count_text(r.trace, SLEEP_CALL "() {"), restored);
	if (r.status || !strstr(r.console, "reboot: Power down") || restored != 1)
		print_failure(&r);
	assert_int_equal(r.status, 0);
	/* the init's sleep: entered, not returned when the trace ended, its slot handed back */
	assert_non_null(strstr(r.console, "hvt-linux: init up, waiting 80s"));
	assert_int_equal(count_text(r.trace, SLEEP_CALL "() {"), 1);
	assert_int_equal(count_text(r.trace, SLEEP_CALL "();"), 0);
	assert_int_equal(restored, 1);
	assert_non_null(strstr(r.err, " orphan-returns 0 "));
	/* and the guest went on as if never traced */
	assert_non_null(strstr(r.console, "hvt-linux: workload done"));
	assert_clean_power_off(&r);
	hv_result_free(&r);
}

/* the matrix cases of each kernel: test_<name>_<kernel> */
static const struct {
	const char *name;
	CMUnitTestFunction fn;
} kernel_cases[] = {
    {"test_vfs_read", test_vfs_read},
    {"test_boot_trace", test_boot_trace},
    {"test_boot_trace_detach_after_init", test_boot_trace_detach_after_init},
    {"test_trap_event", test_trap_event},
    {"test_returns_traced", test_returns_traced},
    {"test_returns_detached", test_returns_detached},
};

int main(void)
{
	static struct hv_kernel kernels[MAX_KERNELS];
	static char names[MAX_KERNELS * ARRAY_LEN(kernel_cases)][96];
	const struct CMUnitTest pvm[] = {
	    cmocka_unit_test(test_pvm_refused),
	    cmocka_unit_test(test_not_a_bzimage),
	};
	struct CMUnitTest kvm[2 + ARRAY_LEN(names)] = {
	    cmocka_unit_test(test_not_a_bzimage),
	};
	size_t n = 1;
	static char gdir[512]; /* static: the kernels' paths may point into it until the end */
	char why[256];
	long nr;

	kvm_require();
	snprintf(gdir, sizeof(gdir), "%s", hv_guest(NULL));
	nr = hv_kernels_read(dirname(gdir), "6.1", kernels, MAX_KERNELS);
	if (nr < 0)
		return 1;
	for (long i = 0; i < nr && !kernel; i++)
		if (kernels[i].present) {
			kernel = kernels[i].vmlinuz;
			initrd = kernels[i].initrd;
		}
	if (!kernel)
		hv_skip_binary("test_kvm_linux: no guest of HVT_KERNELS=\"%s\" (make guest)",
			       getenv("HVT_KERNELS") ? getenv("HVT_KERNELS") : "6.1");
	if (vm_check_linux_host(why, sizeof(why)) < 0) {
		int ret = cmocka_run_group_tests_name("kvm_linux_pvm", pvm, NULL, NULL);

		printf("test_kvm_linux: SKIP: booting Linux: %s\n", why);
		return ret;
	}
	for (long i = 0; i < nr; i++)
		for (size_t c = 0; c < ARRAY_LEN(kernel_cases); c++, n++) {
			snprintf(names[n - 1], sizeof(names[0]), "%.40s_%.31s", kernel_cases[c].name,
				 kernels[i].name);
			kvm[n] = (struct CMUnitTest){
			    .name = names[n - 1],
			    .test_func = kernel_cases[c].fn,
			    .initial_state = &kernels[i],
			};
		}
	kvm[n++] = (struct CMUnitTest)cmocka_unit_test(test_panic);
	/* $HVT_TEST_FILTER: only the cases whose names match this glob, e.g. 'test_boot_trace_7.*' */
	if (getenv("HVT_TEST_FILTER"))
		cmocka_set_test_filter(getenv("HVT_TEST_FILTER"));
	return _cmocka_run_group_tests("kvm_linux", kvm, n, NULL, NULL);
}

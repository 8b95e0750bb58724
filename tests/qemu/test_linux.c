/* Linux guest integration: Debian's cloud kernel with the test initramfs (make guest) under QEMU TCG,
 * launched by hvtrace (run --qemu) and attached to by libvirt domain name. */
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
#include <time.h>
#include <unistd.h>

#define DOMAIN "hvtrace-test"
#define CONSOLE "/tmp/hvtrace-libvirt/console.log"

static char kernel[256], initrd[256], sysmap[256];

static bool file_has(const char *path, const char *text)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, text) != NULL;
	if (f)
		fclose(f);
	return found;
}

static bool has_line(const struct hv_result *r, const char *func, const char *comm)
{
	for (size_t i = 0; i < r->nr_lines; i++)
		if (!strcmp(r->lines[i].func, func) && !strcmp(r->lines[i].comm, comm) &&
		    r->lines[i].pid > 1)
			return true;
	return false;
}

/* --profile table on stderr: every listed function returned as often as it was entered, nothing missed
 * or unwound, except the @in_flight calls whose returns were handed back at detach. Returns the number of
 * functions listed. */
static int assert_profile_balanced(const char *err, long in_flight)
{
	const char *p = strstr(err, "  --------");
	long open = 0;
	int n = 0;

	assert_non_null(p);
	p = strchr(p, '\n') + 1;
	while (*p == ' ') {
		char name[128];
		long hit, ret, miss, unw;

		if (sscanf(p, " %127s %ld %ld %ld %ld", name, &hit, &ret, &miss, &unw) != 5)
			break;
		if (ret > hit || miss || unw)
			fail_msg("%s: %ld hits, %ld returns, %ld misses, %ld unwound", name, hit, ret, miss,
				 unw);
		open += hit - ret;
		n++;
		p = strchr(p, '\n') + 1;
	}
	if (open != in_flight)
		fail_msg("%ld entries without a return, %ld returns handed back at detach", open,
			 in_flight);
	return n;
}

/* The "restored-slots N" of --stats: hooked returns in flight at detach. */
static long restored_slots(const char *err)
{
	const char *p = strstr(err, "restored-slots ");

	assert_non_null(p);
	return atol(p + strlen("restored-slots "));
}

/* run --qemu, KASLR on (the default): the function tracer with the real comm of each event. */
static void test_run_qemu_function_kaslr(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run",	      "--qemu",		"--kernel",	   kernel,
			      "--initrd",     initrd,		"--system-map",	   sysmap,
			      "--append",     "hvt.yes_sec=1", "-p",		   "function",
			      "-l",	      "vfs_read",	"-l",		   "do_sys_openat2",
			      "--expect-call", "vfs_read",	"--expect-call",   "do_sys_openat2",
			      "--stats",      "--timeout",	"300",		   NULL};

	(void)state;
	hv_run(&r, argv, 0, 0);
	if (r.status != 0)
		fail_msg("status %d: %s", r.status, r.err);
	assert_non_null(strstr(r.console, "hvt-linux: workload done"));
	assert_non_null(strstr(r.console, "reboot: Power down"));
	assert_non_null(strstr(r.err, "kaslr-slide 0x"));
	assert_true(r.nr_lines > 10);
	for (size_t i = 0; i < r.nr_lines; i++)
		assert_true(!strcmp(r.lines[i].func, "vfs_read") ||
			    !strcmp(r.lines[i].func, "do_sys_openat2"));
	/* the workload's own processes, by name (busybox cat uses sendfile, not vfs_read) */
	assert_true(has_line(&r, "do_sys_openat2", "cat"));
	assert_true(has_line(&r, "do_sys_openat2", "head"));
	assert_true(has_line(&r, "vfs_read", "tail") || has_line(&r, "vfs_read", "sed") ||
		    has_line(&r, "vfs_read", "head"));
	hv_result_free(&r);
}

/* run --qemu, nokaslr: function_graph under do_sys_openat2; every entry has its return. */
static void test_run_qemu_graph_nokaslr(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run",	      "--qemu",		 "--kernel",	 kernel,
			      "--initrd",     initrd,		 "--system-map", sysmap,
			      "--append",     "nokaslr hvt.yes_sec=1", "-p",	 "function_graph",
			      "-g",	      "do_sys_openat2",	 "--funcgraph-retval", "--profile",
			      "--stats",      "--timeout",	 "300",		 NULL};
	const char *p;
	long opens = 0, closes = 0;

	(void)state;
	hv_run(&r, argv, 0, 0);
	if (r.status != 0)
		fail_msg("status %d: %s", r.status, r.err);
	assert_non_null(strstr(r.console, "hvt-linux: workload done"));
	assert_non_null(strstr(r.err, "kaslr-slide 0x0 "));
	assert_int_equal(restored_slots(r.err), 0); /* the guest powered off: nothing in flight */
	assert_true(assert_profile_balanced(r.err, 0) > 5);
	for (p = r.trace; (p = strstr(p, "|  do_sys_openat2() {\n")); p++)
		opens++;
	for (p = r.trace; (p = strstr(p, "|  } /* do_sys_openat2 = 0x")); p++)
		closes++;
	assert_true(opens > 5);
	assert_int_equal(opens, closes);
	assert_non_null(strstr(r.trace, "|    do_filp_open() {\n"));
	hv_result_free(&r);
}

/* Guest memory through the gdbstub's physical mode instead of /proc/PID/mem: same result. */
static void test_run_qemu_gdb_memory(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run",	      "--qemu",	      "--gdb-memory", "--kernel",
			      kernel,	      "--initrd",     initrd,	      "--system-map",
			      sysmap,	      "--append",     "hvt.yes_sec=1", "-l",
			      "vfs_read",     "--expect-call", "vfs_read",    "--timeout",
			      "300",	      NULL};

	(void)state;
	hv_run(&r, argv, 0, 0);
	if (r.status != 0)
		fail_msg("status %d: %s", r.status, r.err);
	assert_true(r.nr_lines > 10);
	assert_true(has_line(&r, "vfs_read", "tail") || has_line(&r, "vfs_read", "sed") ||
		    has_line(&r, "vfs_read", "tr"));
	hv_result_free(&r);
}

/* -e with a string argument: the paths the guest's init and its workload open. */
static void test_linux_event_openat(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run",	     "--qemu",	    "--kernel",	    kernel,
			      "--initrd",    initrd,	    "--system-map", sysmap,
			      "--append",    "hvt.yes_sec=1", "-e", "do_sys_openat2(int dfd, string filename)",
			      "--timeout",   "300",	    NULL};

	(void)state;
	hv_run(&r, argv, 0, 0);
	if (r.status != 0)
		fail_msg("status %d: %s", r.status, r.err);
	assert_true(count_text(r.trace, "->do_sys_openat2(dfd=-100, filename=/etc/motd)\n") >= 3);
	assert_true(count_text(r.trace, "->do_sys_openat2(dfd=-100, filename=/proc/version)\n") >= 3);
	assert_true(strstr(r.trace, "             cat-") != NULL);
	hv_result_free(&r);
}

/* A stub-probe line of --stats: "stub probes N records N lost N". */
static long stub_stat(const char *err, const char *field)
{
	return hv_stat(err, "stub probes ", field);
}

/* Every traceable function of the kernel (tens of thousands of sites) with stub probes: no VM stop at
 * all, the workload runs to completion, nothing is lost, and the guest powers off normally. The trace
 * itself goes to /dev/null (millions of lines); --expect-call checks it saw the workload. */
static void test_run_qemu_all_functions_stub(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run",	       "--qemu",	 "--kernel",	   kernel,
			      "--initrd",      initrd,		 "--system-map",   sysmap,
			      "--append",      "hvt.yes_sec=1", "-p",		   "function",
			      "--probe",       "stub",		 "--stats",	   "--expect-call",
			      "do_sys_openat2", "--expect-call", "vfs_read",	   "-o",
			      "/dev/null",     "--timeout",	 "600",		   NULL};

	(void)state;
	hv_run(&r, argv, 0, 0);
	if (r.status != 0)
		fail_msg("status %d: %s", r.status, r.err);
	assert_non_null(strstr(r.console, "hvt-linux: workload done"));
	assert_non_null(strstr(r.console, "reboot: Power down"));
	assert_true(stub_stat(r.err, "stub probes ") > 20000);
	assert_true(stub_stat(r.err, "records ") > 1000000);
	/* bursts may outrun the guest's small rings on a busy host: counted, never silent */
	assert_true(stub_stat(r.err, "lost ") >= 0);
	assert_non_null(strstr(r.err, " stops 0 hits 0 "));
	hv_result_free(&r);
}

/* Guest rings too small for the event rate (--buffer-size-kb 8: 64 records per CPU): events the stub
 * had no room for are counted, reported as misses, and the guest is unharmed. */
static void test_run_qemu_stub_overflow_counted(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run",	       "--qemu",	 "--kernel",	   kernel,
			      "--initrd",      initrd,		 "--system-map",   sysmap,
			      "--append",      "hvt.yes_sec=1", "-p",		   "function",
			      "--probe",       "stub",		 "--stats",	   "--profile",
			      "--buffer-size-kb", "8",		 "-o",		   "/dev/null",
			      "--timeout",     "600",		 NULL};
	long lost;

	(void)state;
	hv_run(&r, argv, 0, 0);
	if (r.status != 0)
		fail_msg("status %d: %s", r.status, r.err);
	assert_non_null(strstr(r.console, "reboot: Power down"));
	assert_non_null(strstr(r.err, " ring 64/cpu "));
	lost = stub_stat(r.err, "lost ");
	assert_true(lost > 0);
	assert_true(stub_stat(r.err, "records ") > 100000);
	assert_non_null(strstr(r.err, "events missed: the stub's guest rings were full"));
	hv_result_free(&r);
}

/* Seed 001's stress: 32 concurrent `yes > /dev/null`, a return probe on vfs_write for 15 s, then a
 * detach while they still run: every hooked entry got its return line or was handed back at the detach,
 * and nothing was missed (no maxactive to run out of). */
static void test_linux_rprobe_stress(void **state)
{
	struct hv_result r;
	const char *argv[] = {"run",	      "--qemu",	 "--kernel",	 kernel,
			      "--initrd",     initrd,	 "--system-map", sysmap,
			      "--append",     "hvt.yes=32 hvt.yes_sec=12 hvt.rounds=1",
			      "-r",	      "vfs_write(long ret)", "--profile", "--stats",
			      "--duration",   "15",	 "--timeout", "400",	 NULL};
	const char *p;
	long hits, misses, lines;

	(void)state;
	hv_run(&r, argv, 0, 0);
	if (r.status != 0)
		fail_msg("status %d: %s", r.status, r.err);
	p = strstr(r.err, "\n  r_vfs_write ");
	assert_non_null(p);
	assert_int_equal(sscanf(p + strlen("\n  r_vfs_write "), " %ld %ld", &hits, &misses), 2);
	lines = count_text(r.trace, ": r_vfs_write: (");
	assert_true(hits > 100);
	assert_int_equal(lines + restored_slots(r.err), hits);
	assert_int_equal(misses, 0);
	assert_true(count_text(r.trace, "             yes-") > 100);
	hv_result_free(&r);
}

static int domain(const char *cmd, const char *cmdline)
{
	char buf[2048];

	snprintf(buf, sizeof(buf), "tests/qemu/libvirt-domain.sh %s %s %s %s '%s' %s", cmd, DOMAIN,
		 kernel, initrd, cmdline ? cmdline : "", CONSOLE);
	return system(buf);
}

static bool domain_gone(void)
{
	FILE *p = popen("tests/qemu/libvirt-domain.sh state " DOMAIN, "r");
	char state[64] = "";

	if (p) {
		if (!fgets(state, sizeof(state), p))
			state[0] = 0;
		pclose(p);
	}
	return !strncmp(state, "gone", 4) || !strncmp(state, "shut off", 8);
}

static bool wait_console(const char *text, int seconds)
{
	for (int i = 0; i < seconds * 10; i++) {
		if (file_has(CONSOLE, text))
			return true;
		sleep_ms(100);
	}
	return false;
}

/* attach by libvirt domain name, twice, while the guest runs its workload: the function tracer, then
 * function_graph; each detach leaves the kernel text as it was; the guest then finishes and powers off. */
static void test_attach_libvirt(void **state)
{
	struct hv_result r;
	const char *fn[] = {"attach", DOMAIN, "--system-map", sysmap, "-p", "function", "-l",
			    "vfs_read", "--duration", "4", "--verify-text", NULL};
	const char *graph[] = {"attach",	 DOMAIN,	   "--system-map", sysmap,
			       "-p",		 "function_graph", "-g",	   "do_sys_openat2",
			       "--duration",	 "4",		   "--verify-text", "--profile",
			       "--stats",	 NULL};
	const char *stub[] = {"attach", DOMAIN, "--system-map", sysmap, "-p", "function", "--probe",
			      "stub", "-o", "/dev/null", "--duration", "4", "--verify-text", "--stats",
			      NULL};

	(void)state;
	if (domain("start", "hvt.rounds=250 hvt.yes_sec=2"))
		fail_msg("cannot start the libvirt domain");
	if (!wait_console("hvt-linux: workload start", 120)) {
		domain("stop", NULL);
		fail_msg("the guest did not reach its workload");
	}

	hv_run(&r, fn, 0, 0);
	if (r.status != 0) {
		domain("stop", NULL);
		fail_msg("attach (function): status %d: %s", r.status, r.err);
	}
	assert_non_null(strstr(r.err, "--verify-text: kernel text unchanged"));
	assert_true(has_line(&r, "vfs_read", "tail") || has_line(&r, "vfs_read", "sed") ||
		    has_line(&r, "vfs_read", "tr") || has_line(&r, "vfs_read", "head"));
	hv_result_free(&r);

	hv_run(&r, graph, 0, 0);
	if (r.status != 0) {
		domain("stop", NULL);
		fail_msg("attach (function_graph): status %d: %s", r.status, r.err);
	}
	assert_non_null(strstr(r.err, "--verify-text: kernel text unchanged"));
	assert_profile_balanced(r.err, restored_slots(r.err));
	assert_non_null(strstr(r.trace, "|  do_sys_openat2() {\n"));
	hv_result_free(&r);

	/* every function with stub probes: patched and unpatched with the VM stopped, the stub's memory
	 * mapped and handed back */
	hv_run(&r, stub, 0, 0);
	if (r.status != 0) {
		domain("stop", NULL);
		fail_msg("attach (stub probes): status %d: %s", r.status, r.err);
	}
	assert_non_null(strstr(r.err, "--verify-text: kernel text unchanged"));
	assert_true(stub_stat(r.err, "stub probes ") > 20000);
	assert_true(stub_stat(r.err, "records ") > 10000);
	assert_non_null(strstr(r.err, " stops 0 hits 0 "));
	hv_result_free(&r);

	/* untraced again, the guest finishes its workload and powers off by itself */
	for (int i = 0; i < 1800 && !domain_gone(); i++)
		sleep_ms(100);
	if (!domain_gone()) {
		domain("stop", NULL);
		fail_msg("the guest did not power off after the detach");
	}
	assert_true(file_has(CONSOLE, "hvt-linux: workload done"));
	assert_true(file_has(CONSOLE, "reboot: Power down"));
}

/* SIGKILL while hvtrace has the guest patched (return slots rewritten too): hvtrace's guardian restores
 * everything and detaches (QEMU 7.2 would otherwise keep the VM stopped), and the guest runs on to its
 * power-off. */
/* With @then, that command runs right after the kill, its result in *@then_r. */
static void sigkill_case(const char *const *argv, const char *cmdline, int sig,
			 const char *const *then, struct hv_result *then_r)
{
	struct hv_result r;

	if (domain("start", cmdline))
		fail_msg("cannot start the libvirt domain");
	if (!wait_console("hvt-linux: workload start", 120)) {
		domain("stop", NULL);
		fail_msg("the guest did not reach its workload");
	}
	hv_run(&r, argv, 6, sig);
	assert_int_equal(r.status, 128 + SIGKILL);
	hv_result_free(&r);
	if (then)
		hv_run(then_r, then, 0, 0);
	for (int i = 0; i < 1800 && !domain_gone(); i++)
		sleep_ms(100);
	if (!domain_gone()) {
		domain("stop", NULL);
		fail_msg("the guest did not power off after hvtrace was killed");
	}
	assert_true(file_has(CONSOLE, "hvt-linux: workload done"));
}

static void test_sigkill_leaves_guest_alive(void **state)
{
	const char *argv[] = {"attach", DOMAIN, "--system-map", sysmap, "-p", "function_graph", "-g",
			      "do_sys_openat2", NULL};

	(void)state;
	sigkill_case(argv, "hvt.rounds=30 hvt.yes_sec=1", SIGKILL, NULL, NULL);
}

/* The same with stub probes: the guardian puts every CALL back, hands back the return slots from the
 * guest-memory shadow stacks, and unmaps the stub. */
static void test_sigkill_stub_leaves_guest_alive(void **state)
{
	const char *argv[] = {"attach", DOMAIN, "--system-map", sysmap, "-p", "function_graph",
			      "--probe", "stub", "-l", "vfs_*", "-l", "ksys_*", "-l", "*_sys_*", NULL};

	(void)state;
	sigkill_case(argv, "hvt.rounds=400 hvt.yes_sec=10", SIGKILL, NULL, NULL); /* busy at 6 s */
}

/* hvtrace and its guardian both killed: nobody restores anything, yet the guest, its sites calling the
 * stub and return slots pointing into it, runs its workload to the end: the stub needs no host (its
 * rings just fill up), and the return routine finds every saved return address in guest memory. */
static void test_sigkill_all_stub_guest_still_returns(void **state)
{
	const char *argv[] = {"attach", DOMAIN, "--system-map", sysmap, "-p", "function_graph",
			      "--probe", "stub", "-l", "vfs_*", "-l", "ksys_*", "-l", "*_sys_*", NULL};
	const char *again[] = {"attach", DOMAIN, "--system-map", sysmap, "-p", "function", "--probe",
			       "stub", "-l", "vfs_read", NULL};
	struct hv_result r;

	(void)state;
	sigkill_case(argv, "hvt.rounds=400 hvt.yes_sec=10", -SIGKILL, again, &r);
	/* a new session must not overwrite the orphaned stub the guest still runs through */
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--probe stub: the stub of an earlier hvtrace is still live"));
	hv_result_free(&r);
}

static void test_bad_input(void **state)
{
	struct hv_result r;
	const char *a1[] = {"run", "--qemu", "--kernel", kernel, "--system-map", "/nonexistent/map",
			    NULL};
	const char *a2[] = {"attach", "no-such-domain", "--system-map", sysmap, NULL};
	const char *a3[] = {"attach", "--qmp", "/nonexistent/qmp.sock", "--system-map", sysmap, NULL};

	(void)state;
	hv_run(&r, a1, 0, 0);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err,
			    "hvtrace: --system-map /nonexistent/map: No such file or directory\n");
	hv_result_free(&r);
	/* a fresh machine has no libvirtd yet: start it so the lookup itself is what fails */
	if (system("tests/qemu/libvirt-domain.sh daemons") != 0)
		fail_msg("cannot start libvirtd");
	hv_run(&r, a2, 0, 0);
	assert_int_equal(r.status, 6);
	assert_string_equal(r.err, "hvtrace: libvirt domain 'no-such-domain': no such domain\n");
	hv_result_free(&r);
	hv_run(&r, a3, 0, 0);
	assert_int_equal(r.status, 6);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "/nonexistent/qmp.sock"));
	hv_result_free(&r);
}

static int teardown(void **state)
{
	(void)state;
	domain("stop", NULL);
	return 0;
}

int main(void)
{
	const char *dir = getenv("LINUX_GUEST_DIR") ? getenv("LINUX_GUEST_DIR") : "build/guest";
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_run_qemu_function_kaslr),
		cmocka_unit_test(test_run_qemu_graph_nokaslr),
		cmocka_unit_test(test_run_qemu_gdb_memory),
		cmocka_unit_test(test_linux_event_openat),
		cmocka_unit_test(test_linux_rprobe_stress),
		cmocka_unit_test(test_run_qemu_all_functions_stub),
		cmocka_unit_test(test_run_qemu_stub_overflow_counted),
		cmocka_unit_test_teardown(test_attach_libvirt, teardown),
		cmocka_unit_test_teardown(test_sigkill_leaves_guest_alive, teardown),
		cmocka_unit_test_teardown(test_sigkill_stub_leaves_guest_alive, teardown),
		cmocka_unit_test_teardown(test_sigkill_all_stub_guest_still_returns, teardown),
	};

	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", dir);
	snprintf(initrd, sizeof(initrd), "%s/initramfs.cpio.gz", dir);
	snprintf(sysmap, sizeof(sysmap), "%s/System.map", dir);
	if (system("command -v qemu-system-x86_64 >/dev/null") != 0) {
		printf("SKIPPED: Linux guest tests: qemu-system-x86_64 is not installed\n");
		return 0;
	}
	if (access(kernel, R_OK) || access(initrd, R_OK) || access(sysmap, R_OK)) {
		printf("SKIPPED: Linux guest tests: no %s (make guest)\n", kernel);
		return 0;
	}
	if (getenv("HVT_TEST_FILTER")) /* e.g. HVT_TEST_FILTER='test_sigkill*' while developing */
		cmocka_set_test_filter(getenv("HVT_TEST_FILTER"));
	return cmocka_run_group_tests_name("linux", tests, NULL, NULL);
}

/* Integration, issue 38's first slice: Debian's arm64 kernel (make guest-arm64,
 * build/guest/arm64-K/) booted under qemu-system-aarch64 (TCG, virt, -cpu max, 2 vCPUs) with QMP
 * and a gdbstub, to what the arm64 port will need from them: QMP's query-cpus-fast says aarch64;
 * the gdbstub's target description has org.gnu.gdb.aarch64.core (x0-x30, sp, pc, cpsr) and QEMU's
 * system registers (TTBR1_EL1, TCR_EL1, SP_EL0, TPIDR_EL1), read on each vCPU and checked against
 * the guest's own config (granule, VA bits) and RAM (the kernel's top-level table, walked one
 * level); then `hvtrace run --qemu --kernel` refuses the Image, raw and gzip'd, in one line (exit
 * 2); and the guest runs its workload to power-off, timed. Skipped (SKIPPED line) without the arm64
 * guest or qemu-system-aarch64. The guest is $HVT_ARM64_GUEST, else build/guest/arm64-<the first of
 * $HVT_ARM64_KERNELS, default 6.12>. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/qemu/qmp.h"
#include "host/vmm/gdbstub.h"
#include "tests/common/files.h"
#include "tests/common/hv_expect.h"
#include "tests/common/hv_run.h"
#include "tests/common/port.h"
#include "tests/common/skip.h"
#include "tests/common/trixie.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RAM_BASE 0x40000000ull /* virt's RAM */
#define RAM_MB	 4096 /* issue 38's "running 4 GiB VM": RAM up to 0x140000000, above 4 GiB */
#define RAM_MB_S "4096"
/* the bare guest's kernel keeps to this much (mem=): the 64 MiB above are where attach places
 * the stub (arm64 has no memmap=) */
#define KERNEL_MEM "4032M"
#define BOOT_S	 600 /* to the workload, and from there to power-off: TCG on a shared host */
/* the booted guest waits this long (hvt.wait) before its workload: time for the gdbstub, listing
 * and attach tests before test_attach_qmp; for test_attach_qmp alone (HVT_ARM64_QUICK) less */
#define ATTACH_WAIT	  "75"
#define ATTACH_WAIT_QUICK "40"
/* its workload then reads a tmpfs file this many times, each one dd's read(2): as many calls of
 * shmem_file_read_iter by dd, each returning the file's 16 bytes ("a line on tmpfs\n") */
#define TMPFS_READS "5"
#define TMPFS_LINE  "hvt-linux: tmpfs file read "

static char dir[256], image[300], initrd[300], config[300], qemu[256];
static char work[] = "/tmp/hvt-arm64-XXXXXX";
static char log_path[300], qmp_path[300];
/* the libvirt domain (test_libvirt_*): hvtrace-arm64[-$HVT_TEST_DOMAIN], its console log */
static char dom_name[96], dom_console[200];
static bool dom_started;
static pid_t qemu_pid = -1;
static int gdb_port;
static double t_start, t_workload, t_dom;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* $HVTRACE_QEMU_AARCH64 for hvtrace's run --qemu (test_run_graph), "" for none: $QEMU_AARCH64's
 * QEMU unless the caller named one; test_refused sets another for a while, then this again. */
static char hvtrace_qemu[256];

static void hvtrace_qemu_restore(void)
{
	if (*hvtrace_qemu)
		setenv("HVTRACE_QEMU_AARCH64", hvtrace_qemu, 1);
	else
		unsetenv("HVTRACE_QEMU_AARCH64");
}

/* qemu-system-aarch64 from $QEMU_AARCH64 (then hvtrace's too, unless $HVTRACE_QEMU_AARCH64 names
 * one) or $PATH into qemu[]. */
static bool find_qemu(void)
{
	const char *env = getenv("QEMU_AARCH64"), *path = getenv("PATH");
	const char *hv = getenv("HVTRACE_QEMU_AARCH64");

	snprintf(hvtrace_qemu, sizeof(hvtrace_qemu), "%s", hv && *hv ? hv : env ? env : "");
	hvtrace_qemu_restore();
	if (env && *env) {
		snprintf(qemu, sizeof(qemu), "%s", env);
		return access(qemu, X_OK) == 0;
	}
	for (path = path ? path : "/usr/bin:/bin"; *path;) {
		size_t n = strcspn(path, ":");

		snprintf(qemu, sizeof(qemu), "%.*s/qemu-system-aarch64", (int)n, path);
		if (n && access(qemu, X_OK) == 0)
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

/* The guest's folder into dir[]: $HVT_ARM64_GUEST, or build/guest/arm64-<first kernel>; false with
 * the reason in @why when there is none. */
static bool find_guest(char *why, size_t len)
{
	const char *env = getenv("HVT_ARM64_GUEST"), *ks = getenv("HVT_ARM64_KERNELS");
	char first[64] = "6.12";

	if (env && *env) {
		snprintf(dir, sizeof(dir), "%s", env);
	} else {
		if (ks && sscanf(ks, "%63s", first) != 1) {
			snprintf(why, len, "arm64 guest: HVT_ARM64_KERNELS is empty");
			return false;
		}
		snprintf(dir, sizeof(dir), "build/guest/arm64-%s", first);
	}
	snprintf(image, sizeof(image), "%s/Image", dir);
	snprintf(initrd, sizeof(initrd), "%s/initramfs.cpio.gz", dir);
	snprintf(config, sizeof(config), "%s/config", dir);
	for (const char *f = image; f; f = f == image ? initrd : f == initrd ? config : NULL)
		if (access(f, R_OK)) {
			snprintf(why, len, "arm64 guest: %s missing (make guest-arm64)", f);
			return false;
		}
	return true;
}

/* The value of CONFIG_@name in the guest's config ("y", "52", ...), or "" (malloc'd). */
static char *config_value(const char *name)
{
	return hv_sh("sed -n 's/^CONFIG_%s=//p' %s | tr -d '\\n'", name, config);
}

static void qemu_kill(void)
{
	if (qemu_pid > 0) {
		kill(qemu_pid, SIGKILL);
		waitpid(qemu_pid, NULL, 0);
		qemu_pid = -1;
	}
}

/* The libvirtd of the libvirt tests: the machine's (its qemu-system-aarch64, 7.2), or with
 * $HVT_ARM64_LIBVIRT_TRIXIE=1 under $QEMU_AARCH64 the trixie root's (Debian 13's libvirt with that
 * root's QEMU 11: tests/qemu/libvirt-trixie.sh), reached with `-c URI`. */
static char lv_uri[512], lv_root[256];
static int lv_state; /* 0 not asked yet, 1 the machine's, 2 the trixie root's, -1 none */

/* Starts the guest: console to log_path, QMP at qmp_path, a gdbstub on gdb_port. */
/* HVT_ARM64_QUICK=1: make test's quick pass (main) */
static bool quick_pass(void)
{
	const char *q = getenv("HVT_ARM64_QUICK");

	return q && !strcmp(q, "1");
}

static int setup(void **state)
{
	char serial[340], qmp[340], gdb[64];

	(void)state;
	if (!mkdtemp(work))
		return -1;
	snprintf(log_path, sizeof(log_path), "%s/console", work);
	snprintf(qmp_path, sizeof(qmp_path), "%s/qmp.sock", work);
	snprintf(serial, sizeof(serial), "file:%s", log_path);
	snprintf(qmp, sizeof(qmp), "unix:%s,server=on,wait=off", qmp_path);
	gdb_port = hv_free_port();
	snprintf(gdb, sizeof(gdb), "tcp:127.0.0.1:%d", gdb_port);
	t_start = now_s();
	qemu_pid = fork();
	if (qemu_pid < 0)
		return -1;
	if (qemu_pid == 0) {
		int nul = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(nul, 0);
		dup2(nul, 1);
		execl(qemu, "qemu-system-aarch64", "-M", "virt", "-cpu", "max", "-accel", "tcg",
		      "-smp", "2", "-m", RAM_MB_S, "-display", "none", "-nodefaults",
		      "-no-user-config", "-no-reboot", "-serial", serial, "-qmp", qmp, "-gdb", gdb,
		      "-kernel", image, "-initrd", initrd, "-append",
		      quick_pass() ? "console=ttyAMA0 panic=-1 hvt.yes_sec=2 hvt.wait=" ATTACH_WAIT_QUICK
				     " hvt.tmpfs=" TMPFS_READS " mem=" KERNEL_MEM
				   : "console=ttyAMA0 panic=-1 hvt.yes_sec=2 hvt.wait=" ATTACH_WAIT
				     " hvt.tmpfs=" TMPFS_READS " mem=" KERNEL_MEM,
		      (char *)NULL);
		_exit(127);
	}
	return 0;
}

static int teardown(void **state)
{
	char cmd[400];

	(void)state;
	qemu_kill();
	if (dom_started) {
		snprintf(cmd, sizeof(cmd), "tests/qemu/libvirt-domain.sh stop %s", dom_name);
		if (system(cmd) != 0)
			fprintf(stderr, "arm64: %s failed\n", cmd);
	}
	if (lv_state == 2 && system("tests/qemu/libvirt-trixie.sh stop") != 0)
		fprintf(stderr, "arm64: tests/qemu/libvirt-trixie.sh stop failed\n");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", work);
	return system(cmd) == 0 ? 0 : -1;
}

/* Waits (BOOT_S at most) for @text on the console, failing if QEMU ends first. */
static void wait_console(const char *text)
{
	while (now_s() - t_start < BOOT_S) {
		char *con = hv_read_file(log_path);
		bool seen = con && strstr(con, text);
		int st;

		free(con);
		if (seen)
			return;
		if (waitpid(qemu_pid, &st, WNOHANG) == qemu_pid) {
			qemu_pid = -1;
			fail_msg("qemu-system-aarch64 ended (status %d) before '%s' (console %s)",
				 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), text,
				 log_path);
		}
		sleep_ms(200);
	}
	fail_msg("no '%s' on the console within %d s", text, BOOT_S);
}

static void test_boot_to_init(void **state)
{
	(void)state;
	wait_console("hvt-linux: init up");
	t_workload = now_s();
	printf("arm64: %s booted to init in %.1f s\n", image, t_workload - t_start);
}

/* QMP: the machine's vCPUs are aarch64 ones, two of them. */
static void test_qmp_target(void **state)
{
	char err[256], reply[4096];
	struct qmp q;

	(void)state;
	assert_int_equal(qmp_connect(&q, qmp_path, err, sizeof(err)), 0);
	assert_int_equal(qmp_execute(&q, "{\"execute\":\"query-cpus-fast\"}", reply, sizeof(reply)),
			 0);
	qmp_close(&q);
	assert_int_equal(count_text(reply, "\"target\""), 2);
	assert_int_equal(count_text(reply, "\"target\": \"aarch64\""), 2);
	assert_int_equal(count_text(reply, "\"cpu-index\": 1"), 1);
}

/* The whole of the target-description annex @annex into @out (cap bytes). */
static void read_annex(struct gdb *g, const char *annex, char *out, size_t cap)
{
	size_t used = 0;
	char cmd[128];

	for (;;) {
		snprintf(cmd, sizeof(cmd), "qXfer:features:read:%s:%zx,ffb", annex, used);
		assert_int_equal(gdb_command(g, cmd), 0);
		assert_true(g->pkt[0] == 'm' || g->pkt[0] == 'l');
		assert_true(used + g->pkt_len - 1 < cap);
		memcpy(out + used, g->pkt + 1, g->pkt_len - 1);
		used += g->pkt_len - 1;
		out[used] = 0;
		if (g->pkt[0] == 'l')
			return;
	}
}

/* The regnum QEMU's system-register description gives @name, or -1. */
static int sys_regnum(const char *xml, const char *name)
{
	char pat[64];
	const char *p, *end;
	int n;

	snprintf(pat, sizeof(pat), "<reg name=\"%s\"", name);
	p = strstr(xml, pat);
	if (!p)
		return -1;
	end = strchr(p, '>');
	p = strstr(p, "regnum=\"");
	if (!p || !end || p > end || sscanf(p, "regnum=\"%d\"", &n) != 1)
		return -1;
	return n;
}

/* Register @regnum of the selected thread: `p`, 8 bytes little-endian (cpsr: 4). */
static uint64_t reg(struct gdb *g, int regnum)
{
	char cmd[16];
	uint64_t v = 0;
	size_t len;

	assert_true(regnum >= 0);
	snprintf(cmd, sizeof(cmd), "p%x", regnum);
	assert_int_equal(gdb_command(g, cmd), 0);
	len = strlen(g->pkt);
	assert_true(len == 8 || len == 16);
	for (size_t i = len; i >= 2; i -= 2) {
		unsigned b;

		assert_int_equal(sscanf(g->pkt + i - 2, "%2x", &b), 1);
		v = v << 8 | b;
	}
	return v;
}

/* Whether the guest kernel turned on stage-1 permission indirection (TCR2_EL1.PIE, FEAT_S1PIE:
 * QEMU 11's -cpu max has it, 7.2's not), as test_gdbstub read it: 1 on, 0 off or no TCR2_EL1 in
 * the gdbstub's description, -1 not read. hvtrace's stub blocks must then say `perm pie`. */
static int guest_pie = -1;

/* The gdbstub: aarch64's core registers and QEMU's system registers, their values on each vCPU. */
static void test_gdbstub(void **state)
{
	static char xml[256 << 10];
	static const char *const sysregs[] = {
	    "TTBR1_EL1", "TTBR0_EL1", "TCR_EL1",    "SP_EL0",	  "TPIDR_EL1",	     "MAIR_EL1",
	    "VBAR_EL1",	 "SCTLR_EL1", "CNTFRQ_EL0", "CNTVCT_EL0", "ID_AA64MMFR0_EL1",
	    "TCR2_EL1",	 "PIR_EL1"};
	int n_ttbr1, n_tcr, n_sp_el0, n_tpidr, n_cntfrq, n_tcr2, tids[8];
	unsigned nr, in_el1 = 0;
	int el1_user_sp = 0;
	uint64_t tpidr[2] = {0}, tcr = 0, ttbr1 = 0;
	char err[256], *va_bits = config_value("ARM64_VA_BITS"), *gran4k, *gran16k;
	struct gdb *g = calloc(1, sizeof(*g));
	struct gdb_stop st;

	(void)state;
	assert_non_null(g);
	assert_int_equal(gdb_connect(g, "127.0.0.1", gdb_port, err, sizeof(err)), 0);
	read_annex(g, "target.xml", xml, sizeof(xml));
	assert_non_null(strstr(xml, "<architecture>aarch64</architecture>"));
	assert_non_null(strstr(xml, "href=\"aarch64-core.xml\""));
	assert_non_null(strstr(xml, "href=\"system-registers.xml\""));

	read_annex(g, "aarch64-core.xml", xml, sizeof(xml));
	assert_non_null(strstr(xml, "<feature name=\"org.gnu.gdb.aarch64.core\">"));
	assert_int_equal(count_text(xml, "<reg name="), 34); /* x0-x30, sp, pc, cpsr */
	assert_non_null(strstr(xml, "<reg name=\"x30\" bitsize=\"64\"/>"));
	assert_true(strstr(xml, "<reg name=\"sp\"") < strstr(xml, "<reg name=\"pc\""));
	assert_true(strstr(xml, "<reg name=\"pc\"") <
		    strstr(xml, "<reg name=\"cpsr\" bitsize=\"32\""));

	read_annex(g, "system-registers.xml", xml, sizeof(xml));
	assert_non_null(strstr(xml, "<feature name=\"org.qemu.gdb.arm.sys.regs\">"));
	printf("arm64: gdbstub system registers: %ld;", count_text(xml, "<reg name="));
	for (size_t i = 0; i < sizeof(sysregs) / sizeof(sysregs[0]); i++)
		printf(" %s %s", sysregs[i], sys_regnum(xml, sysregs[i]) >= 0 ? "yes" : "no");
	printf("\n");
	n_ttbr1 = sys_regnum(xml, "TTBR1_EL1");
	n_tcr = sys_regnum(xml, "TCR_EL1");
	n_sp_el0 = sys_regnum(xml, "SP_EL0");
	n_tpidr = sys_regnum(xml, "TPIDR_EL1");
	n_cntfrq = sys_regnum(xml, "CNTFRQ_EL0");
	n_tcr2 = sys_regnum(xml, "TCR2_EL1");

	assert_int_equal(gdb_threads(g, tids, 8, &nr), 0);
	assert_int_equal(nr, 2);
	/* until a stop finds a vCPU in the kernel (both may be running `yes` at EL0) */
	for (int round = 0; round < 50 && !in_el1; round++) {
		if (round) {
			assert_int_equal(gdb_continue(g), 0);
			sleep_ms(20);
			assert_int_equal(gdb_interrupt(g, 5000, &st), 0);
		}
		for (unsigned i = 0; i < nr; i++) {
			uint64_t pc, cpsr, sp_el0;
			unsigned el;

			assert_int_equal(gdb_select_thread(g, tids[i]), 0);
			pc = reg(g, 32);
			cpsr = reg(g, 33);
			el = (cpsr >> 2) & 3;
			assert_true(el <= 1); /* no hypervisor in the guest */
			/* the kernel runs in TTBR1's half, user space in TTBR0's */
			assert_int_equal(pc >> 63, el);
			tpidr[i] = reg(g, n_tpidr);
			if (el == 1) {
				/* in the kernel SP_EL0 is `current`, a kernel address, but for the
				 * few instructions of an entry from EL0 and of the return there
				 * (kernel_entry, kernel_exit) that still hold the user's stack
				 * pointer: such a stop does not count, another is asked for */
				sp_el0 = reg(g, n_sp_el0);
				if (sp_el0 >> 63 == 0) {
					el1_user_sp++;
					continue;
				}
				tcr = reg(g, n_tcr);
				ttbr1 = reg(g, n_ttbr1);
				guest_pie = n_tcr2 >= 0 && (reg(g, n_tcr2) & 2);
				in_el1++;
			}
		}
	}
	if (el1_user_sp)
		printf("arm64: %d stop(s) at EL1 with the user's SP_EL0 (kernel entry or exit)\n",
		       el1_user_sp);
	assert_true(in_el1 > 0);
	printf("arm64: TCR2_EL1 %s, permission indirection %s\n", n_tcr2 >= 0 ? "read" : "absent",
	       guest_pie ? "on" : "off");
	/* each vCPU its own per-CPU area */
	assert_true(tpidr[0] != tpidr[1]);
	assert_true(reg(g, n_cntfrq) > 0);

	/* TCR_EL1: VA bits (T1SZ) and granule (TG1) as the guest's config built them */
	gran4k = config_value("ARM64_4K_PAGES");
	gran16k = config_value("ARM64_16K_PAGES");
	printf("arm64: TCR_EL1 %#" PRIx64 " (T1SZ %u, TG1 %u), TTBR1_EL1 %#" PRIx64
	       ", config VA_BITS %s\n",
	       tcr, (unsigned)(tcr >> 16) & 0x3f, (unsigned)(tcr >> 30) & 3, ttbr1, va_bits);
	assert_int_equal(64 - ((tcr >> 16) & 0x3f), strtoul(va_bits, NULL, 10));
	assert_int_equal((tcr >> 30) & 3, !strcmp(gran4k, "y") ? 2 : !strcmp(gran16k, "y") ? 1 : 3);

	/* TTBR1's table in guest RAM, with valid entries (the kernel's own mappings) */
	{
		uint64_t base = ttbr1 & 0x0000fffffffff000ull, table[512];
		int valid = 0;

		assert_true(base >= RAM_BASE && base < RAM_BASE + ((uint64_t)RAM_MB << 20));
		assert_int_equal(gdb_set_phys_mode(g, true), 0);
		assert_int_equal(gdb_read_mem(g, 0, base, table, sizeof(table)), 0);
		assert_int_equal(gdb_set_phys_mode(g, false), 0);
		for (int i = 0; i < 512; i++)
			valid += (table[i] & 3) == 3; /* table descriptors */
		assert_true(valid > 0);
	}
	assert_int_equal(gdb_detach(g), 0);
	free(g);
	free(va_bits);
	free(gran4k);
	free(gran16k);
}

/* hvtrace refuses the Image before it launches anything: one line, exit 2, raw and gzip'd. */
/* A QEMU of the other ISA, by its name, is one line before anything starts (exit 2): the x86 one
 * for this arm64 Image (raw and gzip'd); and hvtrace's own VMM, which runs x86_64 guests, says
 * where an arm64 kernel is traced. */
static void test_refused(void **state)
{
	char gz[320], want[900];
	const char *argv[] = {"run",  "--qemu", "--kernel", image, "--initrd",
			      initrd, "-l",	"vfs_read", NULL};
	const char *vmm[] = {"run", "--kernel", image, "-l", "vfs_read", NULL};
	struct hv_result r;

	(void)state;
	setenv("HVTRACE_QEMU_AARCH64", "/usr/bin/qemu-system-x86_64", 1);
	hv_run(&r, argv, 0, 0);
	snprintf(want, sizeof(want),
		 "hvtrace: --kernel %s is an arm64 kernel, and /usr/bin/qemu-system-x86_64 "
		 "(qemu-system-x86_64) runs other guests; set $HVTRACE_QEMU_AARCH64 to a "
		 "qemu-system-aarch64\n",
		 image);
	assert_string_equal(r.err, want);
	assert_int_equal(r.status, 2);
	hv_result_free(&r);

	/* the whole Image gzip'd (as Debian's arm64 vmlinuz was before 6.12): its head is inflated
	 */
	snprintf(gz, sizeof(gz), "%s/vmlinuz.gz", work);
	free(hv_sh("gzip -1 -c %s > %s", image, gz));
	argv[3] = gz;
	hv_run(&r, argv, 0, 0);
	assert_non_null(strstr(r.err, " is an arm64 kernel, and /usr/bin/qemu-system-x86_64 "));
	assert_int_equal(r.status, 2);
	hv_result_free(&r);
	hvtrace_qemu_restore();

	/* the reverse: an x86 bzImage (its setup header is all that is read) for the aarch64 QEMU */
	{
		char bz[340];
		uint8_t h[0x400] = {0};
		const char *x86[] = {"run", "--qemu", "--kernel", bz, "-l", "vfs_read", NULL};

		snprintf(bz, sizeof(bz), "%s/bzImage", work);
		memcpy(h + 0x202, "HdrS", 4);
		hv_write_file(bz, h, sizeof(h));
		setenv("HVTRACE_QEMU", "/usr/bin/qemu-system-aarch64", 1);
		hv_run(&r, x86, 0, 0);
		unsetenv("HVTRACE_QEMU");
		snprintf(want, sizeof(want),
			 "hvtrace: --kernel %s is an x86_64 kernel, and /usr/bin/qemu-system-aarch64 "
			 "(qemu-system-aarch64) runs other guests; set $HVTRACE_QEMU to a "
			 "qemu-system-x86_64\n",
			 bz);
		assert_string_equal(r.err, want);
		assert_int_equal(r.status, 2);
		hv_result_free(&r);
	}

	hv_run(&r, vmm, 0, 0);
	snprintf(want, sizeof(want),
		 "hvtrace: --kernel %s: an arm64 Linux Image: hvtrace's own VMM runs x86_64 guests; "
		 "trace arm64 guests under QEMU (run --qemu)\n",
		 image);
	assert_string_equal(r.err, want);
	assert_int_equal(r.status, 2);
	hv_result_free(&r);
}

/* Keeps a run's trace for whoever debugs a failure: /tmp/hvt-arm64[-$HVT_TEST_DOMAIN]-@what.txt
 * (each run of make test has a domain of its own). */
static void save_trace(const char *what, const char *trace)
{
	const char *env = getenv("HVT_TEST_DOMAIN");
	char path[200];

	snprintf(path, sizeof(path), "/tmp/hvt-arm64%s%s-%s.txt", env && *env ? "-" : "",
		 env && *env ? env : "", what);
	hv_write_file(path, trace, strlen(trace));
}

/* record --qemu on the arm64 Image (qemu-system-aarch64 -M virt launched for it), trap probes
 * under function_graph, dd's calls alone: on hvt.bm=7 hvt.tmpfs=5, each of dd's 12 reads is one
 * vfs_read, and each of the 5 of the tmpfs file holds shmem_file_read_iter right under it; the
 * BTF-typed -e on do_sys_openat2 names dd's 7 opens of binfmt_misc's status file. `hvtrace
 * report` prints that graph; the real trace-cmd reads the same counts from the trace.dat. */
static void test_run_graph(void **state)
{
	char dat[340], *tc;
	const char *argv[] = {"record",
			      "--qemu",
			      "--kernel",
			      image,
			      "--initrd",
			      initrd,
			      "--append",
			      "hvt.bm=7 hvt.tmpfs=5 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
			      "-p",
			      "function_graph",
			      "-l",
			      "vfs_read",
			      "-l",
			      "shmem_file_read_iter",
			      "--comm",
			      "dd",
			      "-e",
			      "do_sys_openat2(dfd, filename)",
			      "--probe",
			      "trap",
			      "--timeout",
			      "900",
			      "-o",
			      dat,
			      NULL};
	struct hv_result r;

	(void)state;
	snprintf(dat, sizeof(dat), "%s/graph.dat", work);
	hv_run(&r, argv, 0, 0);
	printf("arm64: record --qemu -p function_graph: status %d\n%s", r.status, r.err);
	assert_int_equal(r.status, 0);
	tc = hv_sh("trace-cmd report -i %s 2>&1", dat);
	assert_null(strstr(tc, "FAILED TO PARSE"));
	assert_non_null(strstr(tc, "cpus=2\n"));
	assert_int_equal(count_text(tc, ": funcgraph_entry: "), count_text(tc, "|  vfs_read() {\n") +
	    count_text(tc, "|  vfs_read();\n") + count_text(tc, "|  do_sys_openat2() {\n") +
	    count_text(tc, "|    shmem_file_read_iter();\n") +
	    count_text(tc, "|    shmem_file_read_iter() {\n"));
	assert_int_equal(count_text(tc, "vfs_read"), 7 + 5);
	assert_int_equal(count_text(tc, "|  vfs_read()"), 7 + 5);
	assert_int_equal(count_text(tc, "|    shmem_file_read_iter"), 5);
	assert_int_equal(count_text(tc, "shmem_file_read_iter"), 5);
	assert_int_equal(count_text(tc, ": do_sys_openat2__entry_0: ("), count_text(tc, "dfd=-100 "));
	assert_int_equal(count_text(tc, " dfd=-100 filename=\"/tmp/binfmt/status\"\n"), 7);
	free(tc);
	free(r.trace);
	r.trace = hv_sh("%s report -i %s", hv_binary(), dat);
	save_trace("graph", r.trace);
	assert_non_null(strstr(r.console, "hvt-linux: binfmt_misc status read 7 times"));
	assert_non_null(strstr(r.console, TMPFS_LINE "5 times"));
	assert_int_equal(count_text(r.trace, "vfs_read"), 7 + 5);
	/* a leaf (its return the next record of its CPU), or an entry and a return apart */
	assert_int_equal(count_text(r.trace, "|    shmem_file_read_iter()"), 5);
	assert_int_equal(count_text(r.trace, "shmem_file_read_iter"), 5);
	/* (a leaf when its return is the next record of its CPU, else an entry and a return) */
	assert_int_equal(count_text(r.trace, "|  vfs_read()"), 7 + 5);
	assert_int_equal(
	    count_text(r.trace, "/* do_sys_openat2: dfd=-100 filename=\"/tmp/binfmt/status\" */"), 7);
	hv_result_free(&r);
}

/* The trace of `-p function -l shmem_file_read_iter -r shmem_file_read_iter --comm dd` over the
 * guest's tmpfs reads, against the count its console @con says it made: each an entry from vfs_read
 * (through f_op->read_iter) and a return of the file's 16 bytes, by dd (SP_EL0's task). */
static void check_tmpfs_reads(const struct hv_result *r, const char *con)
{
	const char *p = strstr(con, TMPFS_LINE);
	long n;

	assert_non_null(p);
	n = strtol(p + strlen(TMPFS_LINE), NULL, 10);
	assert_int_equal(n, atoi(TMPFS_READS));
	assert_non_null(strstr(r->err, "from the guest's kallsyms (kernel "));
	assert_int_equal(count_text(r->trace, ": shmem_file_read_iter <-vfs_read\n"), n);
	assert_int_equal(count_text(r->trace, "<- shmem_file_read_iter) ret=16 duration="), n);
	/* the entry's line, and the return's, which names it twice (kretprobe's layout) */
	assert_int_equal(count_text(r->trace, "shmem_file_read_iter"), 3 * n);
	assert_int_equal(count_text(r->trace, "      dd-"), 2 * n);
	assert_int_equal(hv_stat(r->err, "kaslr-slide", "orphan-returns "), 0);
}

/* The stub blocks' permissions as the guest's kernel encodes them (guest_pie, learned here from
 * the gdbstub): `perm pie` with permission indirection on, else `perm ap`. */
static void check_stub_perm(const struct hv_result *r)
{
	if (guest_pie < 0)
		assert_non_null(strstr(r->err, " reserved perm "));
	else
		assert_non_null(strstr(r->err, guest_pie ? " reserved perm pie " : " reserved perm ap "));
}

/* The stub's end of an attach with --probe stub (--stats in @r->err): @probes stub probes, in
 * the RAM the guest's mem= keeps from its kernel, no record lost or forged, no exit for a probe. */
static void check_stub_attach(const struct hv_result *r, long probes)
{
	assert_int_equal(hv_stat(r->err, "stub probes", "stub probes "), probes);
	assert_int_equal(hv_stat(r->err, "stub probes", "lost "), 0);
	assert_int_equal(hv_stat(r->err, "stub probes", "guest-reported-lost "), 0);
	assert_int_equal(hv_stat(r->err, "stub probes", "rejected "), 0);
	assert_non_null(strstr(r->err, " reserved "));
	check_stub_perm(r);
	assert_int_equal(hv_stat(r->err, "kaslr-slide", "hits "), 0);
}

/* The stub's end of a run --qemu with --probe stub (--stats in @r->err): @probes stub probes
 * placed in RAM mem= kept from the kernel, mapped with no page both writable and executable (the
 * kernel's own check at boot walks them), every record drained, none lost, none forged. */
static void check_stub_run(const struct hv_result *r, long probes)
{
	assert_non_null(strstr(r->console, "Kernel command line: console=ttyAMA0 panic=-1 hvt."));
	assert_non_null(strstr(r->console, " hvt.yes_sec=1 mem="));
	assert_non_null(strstr(r->console, "Checked W+X mappings: passed"));
	assert_int_equal(hv_stat(r->err, "stub probes", "stub probes "), probes);
	assert_true(hv_stat(r->err, "stub probes", "records ") > 0);
	assert_int_equal(hv_stat(r->err, "stub probes", "lost "), 0);
	assert_int_equal(hv_stat(r->err, "stub probes", "guest-reported-lost "), 0);
	assert_int_equal(hv_stat(r->err, "stub probes", "rejected "), 0);
	assert_non_null(strstr(r->err, " reserved "));
	check_stub_perm(r);
	assert_non_null(strstr(r->err, "cpu-from mpidr"));
	/* exit-free: no gdbstub stop for a probe */
	assert_int_equal(hv_stat(r->err, "kaslr-slide", "hits "), 0);
}

/* run --qemu --probe stub (the exit-free stub, guest-stub/arm64): `-p function -l
 * shmem_file_read_iter -r shmem_file_read_iter --comm dd` over the workload's tmpfs reads, exactly
 * as many entries from vfs_read and returns of 16 bytes as the guest says it made, by dd. */
static void test_run_stub_returns(void **state)
{
	const char *argv[] = {"run",	 "--qemu",   "--kernel", image, "--initrd", initrd,
			      "--append", "hvt.bm=7 hvt.tmpfs=" TMPFS_READS " hvt.rounds=1 hvt.yes=1 "
					  "hvt.yes_sec=1",
			      "-p",	 "function", "-l", "shmem_file_read_iter", "-r",
			      "shmem_file_read_iter", "--comm", "dd", "--probe", "stub", "--stats",
			      "--timeout", "900", NULL};
	struct hv_result r;
	double t0 = now_s();

	(void)state;
	hv_run(&r, argv, 0, 0);
	printf("arm64: run --qemu --probe stub -r: status %d in %.1f s\n%s", r.status,
	       now_s() - t0, r.err);
	assert_int_equal(r.status, 0);
	check_tmpfs_reads(&r, r.console);
	check_stub_run(&r, 1);
	hv_result_free(&r);
}

/* run --qemu --probe stub under function_graph, dd's calls alone: on hvt.bm=7 hvt.tmpfs=5 each of
 * dd's 12 reads is one vfs_read, and each of the 5 of the tmpfs file holds shmem_file_read_iter
 * right under it, its return hooked through x30 before the function's paciasp signs it. */
static void test_run_stub_graph(void **state)
{
	const char *argv[] = {"run",	 "--qemu",   "--kernel", image, "--initrd", initrd,
			      "--append", "hvt.bm=7 hvt.tmpfs=5 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
			      "-p",	 "function_graph", "-l", "vfs_read", "-l",
			      "shmem_file_read_iter", "--comm", "dd", "--probe", "stub", "--stats",
			      "--timeout", "900", NULL};
	struct hv_result r;
	double t0 = now_s();

	(void)state;
	hv_run(&r, argv, 0, 0);
	printf("arm64: run --qemu --probe stub -p function_graph: status %d in %.1f s\n%s",
	       r.status, now_s() - t0, r.err);
	save_trace("stub-graph", r.trace);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.console, "hvt-linux: binfmt_misc status read 7 times"));
	assert_non_null(strstr(r.console, TMPFS_LINE "5 times"));
	/* a leaf (its return the next record of its CPU), or an entry and a return apart */
	assert_int_equal(count_text(r.trace, "vfs_read"), 7 + 5);
	assert_int_equal(count_text(r.trace, "|  vfs_read()"), 7 + 5);
	assert_int_equal(count_text(r.trace, "|    shmem_file_read_iter()"), 5);
	assert_int_equal(count_text(r.trace, "shmem_file_read_iter"), 5);
	/* each call's return: a leaf's line, or a closing brace */
	assert_int_equal(count_text(r.trace, "|  vfs_read();\n") + count_text(r.trace, "|  }\n"),
			 7 + 5);
	check_stub_run(&r, 2);
	hv_result_free(&r);
}

/* run --qemu --probe stub -p function_graph -g vfs_read (set_graph_function, decided in the
 * guest by the stub's root routine) with no -l: every function the guest's ftrace lists is
 * patched, but only what runs below a live vfs_read is traced: dd's 12 vfs_read from depth 0, the
 * file's read_iter that vfs_read calls through f_op (shmem_file_read_iter, 5 times, for the tmpfs
 * file) right under them, each with the calls it makes below it, and not one ksys_read (their
 * caller, outside the graph). */
static void test_run_stub_graph_root(void **state)
{
	const char *argv[] = {"run",	 "--qemu",   "--kernel", image, "--initrd", initrd,
			      "--append", "hvt.bm=7 hvt.tmpfs=5 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
			      "-p",	 "function_graph", "-g", "vfs_read", "--comm", "dd", "--probe",
			      "stub", "--stats", "--timeout", "900", NULL};
	struct hv_result r;
	double t0 = now_s();
	long sites;

	(void)state;
	hv_run(&r, argv, 0, 0);
	sites = hv_stat(r.err, "kaslr-slide", "sites ");
	printf("arm64: run --qemu --probe stub -g vfs_read on every function: status %d in %.1f s, "
	       "%ld sites\n%s",
	       r.status, now_s() - t0, sites, r.err);
	save_trace("stub-graph-root", r.trace);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.console, TMPFS_LINE "5 times"));
	assert_int_equal(count_text(r.trace, "|  vfs_read() {"), 7 + 5);
	assert_int_equal(count_text(r.trace, "|    shmem_file_read_iter() {"), 5);
	assert_int_equal(count_text(r.trace, "shmem_file_read_iter"), 5);
	assert_int_equal(count_text(r.trace, "ksys_read"), 0);
	assert_true(sites > 10000);
	check_stub_run(&r, sites);
	hv_result_free(&r);
}

/* The known callers of __schedule (kernel/sched/core.c, 6.1 to 7.3, voluntary, full and rt
 * preemption): the parent each entry through the detour must name (@ret false: "__schedule
 * <-NAME"), read by the stub's detour routine from the slot's push of x30, and where each return
 * goes back to (@ret true: "(NAME+0x"). */
static long schedule_callers_in(const char *trace, bool ret)
{
	static const char *const callers[] = {
	    "schedule",		 "schedule_idle",	     "__cond_resched",
	    "do_task_dead",	 "preempt_schedule_common", "preempt_schedule_irq",
	    "preempt_schedule", "preempt_schedule_notrace", "schedule_rtlock",
	};
	char line[64];
	long n = 0;

	for (size_t i = 0; i < sizeof(callers) / sizeof(callers[0]); i++) {
		snprintf(line, sizeof(line), ret ? "(%s+0x" : ": __schedule <-%s\n", callers[i]);
		n += count_text(trace, line);
	}
	return n;
}

static long schedule_callers(const char *trace)
{
	return schedule_callers_in(trace, false);
}

/* run --qemu --probe stub on __schedule, which has no patchable entry (paciasp first): its first
 * word gives way to a B into a detour slot, whose BL reaches the stub's detour routine (exit-free:
 * no gdbstub stop). dd's calls alone, with their returns (-r, hooked at [sp + 8] before the
 * displaced paciasp signs it): each of the workload's 12 dd processes reads once (vfs_read from
 * ksys_read, a patched fentry site beside the detour) and dies in exactly one __schedule called
 * by do_task_dead, which never returns; every other __schedule of dd's returns to its caller. So
 * entries = returns + 12, each entry's parent a caller of __schedule, each return to one. */
static void test_run_stub_detour(void **state)
{
	const char *argv[] = {"run",	 "--qemu",   "--kernel", image, "--initrd", initrd,
			      "--append", "hvt.bm=7 hvt.tmpfs=5 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
			      "-p",	 "function", "-l", "__schedule", "-r", "__schedule", "-l",
			      "vfs_read", "--comm", "dd", "--probe", "stub", "--stats",
			      "--timeout", "900", NULL};
	struct hv_result r;
	double t0 = now_s();
	long entries, returns;

	(void)state;
	hv_run(&r, argv, 0, 0);
	printf("arm64: run --qemu --probe stub -l __schedule (a detour): status %d in %.1f s\n%s",
	       r.status, now_s() - t0, r.err);
	save_trace("stub-detour", r.trace);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "hvtrace: 1 function without an fentry site probed at its "
				      "entry through a stub detour\n"));
	assert_non_null(strstr(r.console, TMPFS_LINE "5 times"));
	assert_int_equal(count_text(r.trace, ": vfs_read <-ksys_read\n"), 7 + 5);
	assert_int_equal(count_text(r.trace, ": __schedule <-do_task_dead\n"), 7 + 5);
	entries = count_text(r.trace, ": __schedule <-");
	returns = count_text(r.trace, " <- __schedule) duration=");
	printf("arm64: dd's __schedule: %ld entries, %ld returns\n", entries, returns);
	assert_int_equal(schedule_callers(r.trace), entries);
	assert_int_equal(returns, entries - (7 + 5));
	assert_int_equal(schedule_callers_in(r.trace, true), returns);
	/* every event dd's: its entries, returns and reads */
	assert_int_equal(count_text(r.trace, " dd-"), entries + returns + 7 + 5);
	check_stub_run(&r, 2);
	hv_result_free(&r);
}

/* run --qemu --probe stub on every function (-p function, no -l): a site on every function the
 * guest's own ftrace lists, exactly as many (the guest prints its available_filter_functions count,
 * hvt.nfuncs, after the workload; where that list holds sites with no symbol of their own, under
 * the name of one before them, as 6.1's does some 290 times, at least one site for each name it
 * lists and fewer than its count), and the guest boots, runs its workload and powers off with every
 * one patched (docs/arm64.md, What is left 4: a BL over a function's first NOP where no `mov x9,
 * x30` kept x30 took its kernel down); dd's calls alone written (--comm: the stub still runs in every
 * call of every task), none lost. */
static void test_run_stub_every_function(void **state)
{
	const char *argv[] = {"run",	  "--qemu",   "--kernel", image, "--initrd", initrd,
			      "--append", "hvt.nfuncs=1 hvt.bm=7 hvt.tmpfs=5 hvt.rounds=1 hvt.yes=1 "
					  "hvt.yes_sec=1",
			      "-p",	  "function", "--comm",	  "dd",	 "--probe",  "stub",
			      "--stats",  "--timeout", "900",	  NULL};
	static const char nfuncs[] = "hvt-linux: ftrace kernel functions ",
			  nnames[] = "hvt-linux: ftrace kernel function names ";
	struct hv_result r;
	double t0 = now_s();
	const char *p, *q;
	long sites, guest, names;

	(void)state;
	hv_run(&r, argv, 0, 0);
	sites = hv_stat(r.err, "kaslr-slide", "sites ");
	printf("arm64: run --qemu --probe stub on every function: status %d in %.1f s, %ld sites\n%s",
	       r.status, now_s() - t0, sites, r.err);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.console, "hvt-linux: workload done"));
	p = strstr(r.console, nfuncs);
	assert_non_null(p);
	guest = strtol(p + strlen(nfuncs), NULL, 10);
	q = strstr(r.console, nnames);
	assert_non_null(q);
	names = strtol(q + strlen(nnames), NULL, 10);
	printf("arm64: the guest's ftrace lists %ld functions of its kernel, %ld names\n", guest,
	       names);
	assert_true(guest > 10000);
	if (sites != guest) { /* sites without a symbol in the guest's list (6.1) */
		assert_true(sites >= names);
		assert_true(sites < guest);
	}
	check_stub_run(&r, sites);
	assert_null(strstr(r.console, "Oops"));
	assert_null(strstr(r.console, "WARNING"));
	assert_int_equal(count_text(r.trace, ": shmem_file_read_iter <-vfs_read\n"),
			 atoi(TMPFS_READS));
	assert_int_equal(count_text(r.trace, ": vfs_read <-ksys_read\n"), 12);
	hv_result_free(&r);
}

/* The hitcounts of a hist's lines whose key names @comm (common_pid.execname), summed. */
static long hist_comm_hits(const char *hist, const char *comm)
{
	char key[48];
	long sum = 0;

	snprintf(key, sizeof(key), "common_pid: %-16s[", comm);
	for (const char *p = hist ? strstr(hist, key) : NULL; p; p = strstr(p + 1, key)) {
		const char *eol = strchr(p, '\n'), *h = strstr(p, "hitcount:");

		if (h && (!eol || h < eol))
			sum += strtol(h + strlen("hitcount:"), NULL, 10);
	}
	return sum;
}

/* The function profiler and a hist trigger counted in the guest by the arm64 stub's counting
 * routines (`--profile -p nop -l '*' --probe stub`): no record at all, every function a counting
 * site (its return hooked for the durations), each CPU's section summing to the merged one,
 * vfs_read's Hit the hist's Totals (the same tables), dd's 12 reads exactly (7 of binfmt_misc's
 * status, 5 of the tmpfs file) in the hist keyed by task and log2 duration, and the tmpfs file's
 * read_iter timed. */
static void test_run_stub_profile(void **state)
{
	const char *argv[] = {"run",	 "--qemu",   "--kernel", image, "--initrd", initrd,
			      "--append", "hvt.bm=7 hvt.tmpfs=" TMPFS_READS " hvt.rounds=1 hvt.yes=1 "
					  "hvt.yes_sec=1",
			      "-p",	 "nop",	     "-l",	 "*",	"--profile", "--trigger",
			      "vfs_read:hist:keys=common_pid.execname,duration.log2", "--probe",
			      "stub", "--stats", "--timeout", "900", NULL};
	const char *tot, *tot_key = "Totals:\n    Hits: ";
	struct hv_result r;
	double t0 = now_s(), ns = 0;
	long sites, all, hits;

	(void)state;
	hv_run(&r, argv, 0, 0);
	sites = hv_stat(r.err, "kaslr-slide", "sites ");
	printf("arm64: run --qemu --probe stub --profile on every function: status %d in %.1f s, %ld "
	       "sites\n",
	       r.status, now_s() - t0, sites);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.console, TMPFS_LINE TMPFS_READS " times"));
	assert_non_null(strstr(r.console, "hvt-linux: binfmt_misc status read 7 times"));
	assert_non_null(r.profile);
	assert_non_null(r.hist);
	printf("%.*s...\n%s", (int)strcspn(r.profile, "\n") + 400, r.profile, r.hist);
	assert_int_equal(r.nr_lines, 0);
	assert_true(sites > 10000);
	assert_int_equal(hv_stat(r.err, "stub counting sites ", "stub counting sites "), sites);
	assert_int_equal(hv_stat(r.err, "stub probes", "records "), 0);
	assert_int_equal(hv_stat(r.err, "stub counting sites ", "agg-dropped "), 0);
	assert_int_equal(hv_stat(r.err, "stub counting sites ", "agg-rejected "), 0);
	assert_int_equal(hv_stat(r.err, "kaslr-slide", "hits "), 0);
	assert_non_null(strstr(r.profile, "trace_stat/function0:\n  Function                     "
					  "          Hit    Time            Avg             s^2\n"));
	all = hv_profile_total(r.profile, "(all CPUs):");
	assert_true(all > 100000);
	assert_int_equal(hv_profile_total(r.profile, "function0:") +
			     hv_profile_total(r.profile, "function1:"),
			 all);
	tot = strstr(r.hist, tot_key);
	assert_non_null(tot);
	hits = strtol(tot + strlen(tot_key), NULL, 10);
	assert_int_equal(hv_profile_hits(r.profile, "(all CPUs):", "vfs_read", NULL), hits);
	assert_int_equal(hist_comm_hits(r.hist, "dd"), 7 + 5);
	assert_true(hv_profile_hits(r.profile, "(all CPUs):", "shmem_file_read_iter", &ns) >=
		    atoi(TMPFS_READS));
	assert_true(ns > 0);
	hv_result_free(&r);
}

/* The same detour under function_graph: dd's 12 vfs_read, each with its return, and the calls of
 * __schedule, all closed by their returns but the 12 that never return (do_task_dead's). */
static void test_run_stub_detour_graph(void **state)
{
	const char *argv[] = {"run",	 "--qemu",   "--kernel", image, "--initrd", initrd,
			      "--append", "hvt.bm=7 hvt.tmpfs=5 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
			      "-p",	 "function_graph", "-l", "__schedule", "-l", "vfs_read",
			      "--comm", "dd", "--probe", "stub", "--stats", "--timeout", "900",
			      NULL};
	struct hv_result r;
	double t0 = now_s();
	long opened, leaves, reads_opened;

	(void)state;
	hv_run(&r, argv, 0, 0);
	printf("arm64: run --qemu --probe stub -p function_graph -l __schedule (a detour): status "
	       "%d in %.1f s\n%s",
	       r.status, now_s() - t0, r.err);
	save_trace("stub-detour-graph", r.trace);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "probed at its entry through a stub detour\n"));
	assert_non_null(strstr(r.console, TMPFS_LINE "5 times"));
	assert_int_equal(count_text(r.trace, "vfs_read"), 7 + 5);
	/* each a leaf, or opened when dd was preempted inside it (a __schedule under it: seen on
	 * 6.12 rt and under load) and closed */
	reads_opened = count_text(r.trace, "vfs_read() {\n");
	assert_int_equal(count_text(r.trace, "vfs_read();\n") + reads_opened, 7 + 5);
	opened = count_text(r.trace, "__schedule() {\n");
	leaves = count_text(r.trace, "__schedule();\n");
	printf("arm64: dd's __schedule: %ld opened, %ld leaves, %ld closed; %ld vfs_read opened\n",
	       opened, leaves, (long)count_text(r.trace, "}\n"), reads_opened);
	assert_int_equal(count_text(r.trace, "__schedule"), opened + leaves);
	/* every call closed but the 12 __schedule of do_task_dead, which never return */
	assert_int_equal(opened + reads_opened - count_text(r.trace, "}\n"), 7 + 5);
	check_stub_run(&r, 2);
	hv_result_free(&r);
}

/* attach --qmp to the running guest while it waits (hvt.wait), trap probes on
 * shmem_file_read_iter with its returns, dd's alone: the workload's tmpfs reads, each an entry
 * from vfs_read (through f_op->read_iter) and a return of 16 bytes, as many as the guest says it
 * made; the task names are the guest's (SP_EL0); then the guest runs on to its power-off
 * (test_power_off), which ends the attach. */
static void test_attach_qmp(void **state)
{
	const char *argv[] = {"attach", "--qmp", qmp_path, "-p", "function", "-l",
			      "shmem_file_read_iter", "-r", "shmem_file_read_iter", "--comm", "dd",
			      "--probe", "stub", "--duration", "300", "--stats", NULL};
	struct hv_result r;
	char *con;

	(void)state;
	hv_run(&r, argv, 0, 0);
	printf("arm64: attach --qmp: status %d, %ld lines\n%s", r.status, (long)count_lines(r.trace),
	       r.err);
	wait_console("hvt-linux: workload done");
	con = hv_slurp(log_path);
	check_tmpfs_reads(&r, con);
	check_stub_attach(&r, 1);
	free(con);
	hv_result_free(&r);
}

/* Whether the listing @list has the line @line (a function, with " [module]" for a module's). */
static bool listed(const char *list, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = list; (p = strstr(p, line)); p += n)
		if ((p == list || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

/* What list-functions of the running guest (@how: its pid, or its libvirt name) must show: the
 * guest's own available_filter_functions, one a line, from its kallsyms; vfs_read and
 * shmem_file_read_iter traceable, __schedule (notrace) not, binfmt_misc's functions tagged with
 * their module. */
static void check_listing(const struct hv_result *r, const char *how)
{
	printf("arm64: list-functions %s: status %d, %d functions\n%s", how, r->status,
	       count_lines(r->trace), r->err);
	assert_int_equal(r->status, 0);
	assert_non_null(strstr(r->err, " from the guest's kallsyms (kernel "));
	/* a kernel without KALLSYMS_ALL (6.1) has no `modules` symbol: its list is found through
	 * /proc/modules' code (vmi_linux_arm64_modules) */
	assert_null(strstr(r->err, "no `modules` symbol"));
	assert_non_null(strstr(r->err, "; modules: 1, with "));
	assert_true(count_lines(r->trace) > 10000);
	assert_true(listed(r->trace, "vfs_read"));
	assert_true(listed(r->trace, "shmem_file_read_iter"));
	assert_false(listed(r->trace, "__schedule"));
	assert_true(listed(r->trace, "bm_status_read [binfmt_misc]"));
	assert_false(listed(r->trace, "bm_status_read"));
	/* every line a function: a name, and " [module]" after it for a module's */
	assert_null(strstr(r->trace, "\n\n"));
	assert_int_equal(count_text(r->trace, " "), count_text(r->trace, " [binfmt_misc]\n"));
}

/* list-functions --pid of the bare QEMU while the guest waits. */
static void test_list_functions_pid(void **state)
{
	char pid[16];
	const char *argv[] = {"list-functions", "--pid", pid, NULL};
	struct hv_result r;
	double t0 = now_s();

	(void)state;
	snprintf(pid, sizeof(pid), "%d", (int)qemu_pid);
	hv_run(&r, argv, 0, 0);
	check_listing(&r, "--pid");
	printf("arm64: list-functions --pid in %.1f s\n", now_s() - t0);
	hv_result_free(&r);
}

#define TEXT_KEPT "hvtrace: --verify-text: kernel text unchanged ("

/* attach --pid (its QMP monitor found on its command line) while the guest waits: vfs_read for
 * two seconds, then a detach that leaves the kernel text byte-identical (trap probes write nothing
 * to the guest; --verify-text reads the text again after detach and compares); the guest still
 * waits, then runs its workload under test_attach_qmp. */
static void test_attach_pid(void **state)
{
	char pid[16];
	const char *argv[] = {"attach", "--pid", pid, "-p", "function_graph", "-l", "vfs_read",
			      "--probe", "stub", "--duration", "2", "--verify-text", "--stats",
			      NULL};
	struct hv_result r;
	double t0 = now_s();
	char *con;

	(void)state;
	snprintf(pid, sizeof(pid), "%d", (int)qemu_pid);
	hv_run(&r, argv, 0, 0);
	printf("arm64: attach --pid: status %d, %d lines in %.1f s\n%s", r.status,
	       count_lines(r.trace), now_s() - t0, r.err);
	assert_int_equal(r.status, 0);
	/* the BL at vfs_read's site put back, the stub's hooked returns all come back through it
	 * before it went (none left: no "left mapped" line) */
	assert_non_null(strstr(r.err, TEXT_KEPT));
	assert_null(strstr(r.err, "left mapped"));
	check_stub_attach(&r, 1);
	assert_int_equal(hv_stat(r.err, "kaslr-slide", "probes "), 1);
	assert_int_equal(hv_stat(r.err, "kaslr-slide", "orphan-returns "), 0);
	/* still before its workload: detached in time for test_attach_qmp */
	con = hv_slurp(log_path);
	assert_null(strstr(con, "hvt-linux: workload start"));
	free(con);
	assert_int_equal(waitpid(qemu_pid, NULL, WNOHANG), 0);
	hv_result_free(&r);
}

/* attach --pid while the guest waits, -p function on __schedule (no patchable entry: a stub
 * detour, exit-free) for two seconds: the idle tasks' and kworkers' calls, each naming a caller
 * of __schedule (the return address the detour routine read where the slot pushed it); then a
 * detach that puts the function's first word back (--verify-text: the whole text byte-identical)
 * and takes the stub away with it, the guest still waiting. */
static void test_attach_pid_detour(void **state)
{
	char pid[16];
	const char *argv[] = {"attach", "--pid", pid, "-p", "function", "-l", "__schedule",
			      "--probe", "stub", "--duration", "2", "--verify-text", "--stats",
			      NULL};
	struct hv_result r;
	double t0 = now_s();
	long n;
	char *con;

	(void)state;
	snprintf(pid, sizeof(pid), "%d", (int)qemu_pid);
	hv_run(&r, argv, 0, 0);
	n = count_text(r.trace, ": __schedule <-");
	printf("arm64: attach --pid -l __schedule (a detour): status %d, %ld calls in %.1f s\n%s",
	       r.status, n, now_s() - t0, r.err);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "hvtrace: 1 function without an fentry site probed at its "
				      "entry through a stub detour\n"));
	assert_non_null(strstr(r.err, TEXT_KEPT));
	assert_null(strstr(r.err, "left mapped"));
	check_stub_attach(&r, 1);
	assert_true(n > 0);
	assert_int_equal(schedule_callers(r.trace), n);
	assert_true(count_text(r.trace, ": __schedule <-schedule_idle\n") > 0);
	con = hv_slurp(log_path);
	assert_null(strstr(con, "hvt-linux: workload start"));
	free(con);
	assert_int_equal(waitpid(qemu_pid, NULL, WNOHANG), 0);
	hv_result_free(&r);
}

/* The libvirt domain (tests/qemu/libvirt-domain.sh, HVT_DOMAIN_ARCH=aarch64): qemu-system-aarch64
 * -M virt -cpu max, 4 GiB, 2 vCPUs, the same Image and initramfs, console to a file; it waits
 * (hvt.wait) for list-functions and attach by name, reads its tmpfs file, and runs on (hvt.yes_sec:
 * `yes > /dev/null`, its vfs_write calls) long enough for a detach after the reads and a SIGKILL'd
 * attach after that. */
#define DOM_WAIT    "30"
#define DOM_CMDLINE                                                                                \
	"panic=-1 hvt.wait=" DOM_WAIT " hvt.tmpfs=" TMPFS_READS " hvt.yes_sec=20 mem=" KERNEL_MEM

static char *dom_state(void)
{
	return hv_sh("tests/qemu/libvirt-domain.sh state %s", dom_name);
}

/* The domain's state once libvirt has caught up with QEMU's events: libvirtd learns of a resume
 * from QEMU's RESUME event, which a loaded host delivers late; "paused" is asked again for up to
 * 10 s (a VM left paused stays so). */
static char *dom_state_settled(void)
{
	char *st = dom_state();

	for (int i = 0; i < 50 && !strcmp(st, "paused\n"); i++) {
		free(st);
		sleep_ms(200);
		st = dom_state();
	}
	return st;
}

/* Whether the libvirt tests run in this run: once under the machine's QEMU (by default not again
 * under $QEMU_AARCH64's: CI's time), and under QEMU 11 by the trixie root's libvirtd when asked
 * (`make arm64-matrix`). */
static bool libvirt_wanted(void)
{
	const char *q = getenv("QEMU_AARCH64"), *t = getenv("HVT_ARM64_LIBVIRT_TRIXIE");

	if (!lv_state)
		lv_state = !q || !*q				    ? 1
			   : !t || strcmp(t, "1")		    ? -1
			   : hv_trixie_libvirt_up(lv_uri, sizeof(lv_uri), lv_root,
						  sizeof(lv_root)) ? 2
								    : -1;
	return lv_state > 0;
}

/* @argv ("attach" or "list-functions", then NAME ...) into @out (at most @max entries) with
 * `-c URI` after its first word where the trixie root's libvirtd runs the domain. */
static const char *const *lv_argv(const char *const *argv, const char **out, size_t max)
{
	size_t n = 0;

	if (lv_state != 2)
		return argv;
	out[n++] = argv[0];
	out[n++] = "-c";
	out[n++] = lv_uri;
	for (size_t i = 1; argv[i] && n + 1 < max; i++)
		out[n++] = argv[i];
	out[n] = NULL;
	return out;
}

static void test_libvirt_boot(void **state)
{
	if (!libvirt_wanted())
		skip();
	const char *env = getenv("HVT_TEST_DOMAIN");
	char cmd[1200];
	double t0 = now_s();

	(void)state;
	snprintf(dom_name, sizeof(dom_name), "hvtrace-arm64%s%s", env && *env ? "-" : "",
		 env && *env ? env : "");
	snprintf(dom_console, sizeof(dom_console), "/tmp/hvtrace-libvirt/%s/console.log",
		 dom_name);
	setenv("HVT_DOMAIN_ARCH", "aarch64", 1);
	setenv("HVT_DOMAIN_MEM_MB", RAM_MB_S, 1);
	snprintf(cmd, sizeof(cmd), "tests/qemu/libvirt-domain.sh start %s %s %s '%s' %s", dom_name,
		 image, initrd, DOM_CMDLINE, dom_console);
	dom_started = true;
	assert_int_equal(system(cmd), 0);
	hv_wait_for_text(dom_console, "hvt-linux: init up", 0);
	{
		char *con = hv_slurp(dom_console);

		assert_non_null(strstr(con, "hvt-linux: module binfmt_misc loaded"));
		assert_non_null(strstr(con, "hvt-linux: init up"));
		assert_null(strstr(con, "hvt-linux: workload start"));
		free(con);
	}
	printf("arm64: libvirt domain %s booted to init in %.1f s\n", dom_name, now_s() - t0);
	t_dom = now_s();
}

static void test_libvirt_list_functions(void **state)
{
	const char *argv[] = {"list-functions", dom_name, NULL}, *lv[40];
	struct hv_result r;

	(void)state;
	if (!libvirt_wanted())
		skip();
	hv_run(&r, lv_argv(argv, lv, 40), 0, 0);
	check_listing(&r, "NAME");
	hv_result_free(&r);
}

/* attach NAME, as test_attach_qmp: dd's tmpfs reads exactly, each return 16; SIGINT once the guest
 * says it made them, while it runs on: the detach leaves the kernel text as it was
 * (--verify-text), and the guest finishes its workload and powers off by itself
 * (test_libvirt_power_off). */
static void test_attach_libvirt(void **state)
{
	const char *argv[] = {"attach", dom_name, "-p", "function", "-l", "shmem_file_read_iter",
			      "-r", "shmem_file_read_iter", "--comm", "dd", "--probe", "stub",
			      "--verify-text", "--duration", "300", "--stats", NULL};
	const char *lv[40];
	struct hv_result r;
	char *con, *st;

	(void)state;
	if (!libvirt_wanted())
		skip();
	hv_run_signal_on_file(&r, lv_argv(argv, lv, 40), dom_console, TMPFS_LINE, 0.5, SIGINT);
	printf("arm64: attach NAME: status %d, %d lines, %.1f s after init\n%s", r.status,
	       count_lines(r.trace), now_s() - t_dom, r.err);
	con = hv_slurp(dom_console);
	/* detached before the guest's end */
	assert_null(strstr(con, "reboot: Power down"));
	st = dom_state_settled();
	assert_string_equal(st, "running\n");
	free(st);
	assert_int_equal(r.status, 0);
	/* stub probes: every site's word put back, the stub gone (no hooked return left out) */
	assert_non_null(strstr(r.err, TEXT_KEPT));
	assert_null(strstr(r.err, "left mapped"));
	check_tmpfs_reads(&r, con);
	check_stub_attach(&r, 1);
	free(con);
	hv_result_free(&r);
}

/* attach NAME again while `yes` runs (vfs_write after vfs_write, each with its return breakpoint),
 * hvtrace SIGKILL'd: its guardian removes every breakpoint and detaches; the guest runs on
 * (test_libvirt_power_off). */
static void test_libvirt_sigkill(void **state)
{
	const char *argv[] = {"attach", dom_name, "-p", "function_graph", "-l", "vfs_write",
			      "--probe", "trap", "--duration", "300", NULL};
	const char *lv[40];
	struct hv_result r;
	char *con, *st;

	(void)state;
	if (!libvirt_wanted())
		skip();
	/* killed 1 s after its first lines reached its output (not at a fixed time: a loaded host
	 * can take longer than that to attach) */
	hv_run_signal_on_trace(&r, lv_argv(argv, lv, 40), "vfs_write", 1, SIGKILL);
	con = hv_slurp(dom_console);
	printf("arm64: attach NAME, SIGKILL'd: status %d, %d lines, %.1f s after init\n%s",
	       r.status, count_lines(r.trace), now_s() - t_dom, r.err);
	assert_int_equal(r.status, 128 + SIGKILL);
	/* killed while it traced, the workload still running */
	assert_true(count_text(r.trace, "|  vfs_write() {\n") + count_text(r.trace, "vfs_write();\n") >
		    0);
	assert_null(strstr(con, "hvt-linux: workload done"));
	free(con);
	st = dom_state();
	assert_true(!strcmp(st, "running\n") || !strcmp(st, "paused\n"));
	free(st);
	hv_result_free(&r);
}

/* Untraced again, the domain's guest runs its workload to the end and powers off (libvirt's
 * on_poweroff destroy: the domain is gone). */
static void test_libvirt_power_off(void **state)
{
	char *con, *st = NULL;

	(void)state;
	if (!libvirt_wanted())
		skip();
	for (int i = 0; i < BOOT_S * 5; i++) {
		free(st);
		st = dom_state();
		if (!strcmp(st, "gone\n") || !strcmp(st, "shut off\n"))
			break;
		sleep_ms(200);
	}
	assert_true(!strcmp(st, "gone\n") || !strcmp(st, "shut off\n"));
	free(st);
	dom_started = false;
	con = hv_slurp(dom_console);
	assert_non_null(strstr(con, "hvt-linux: workload done"));
	assert_non_null(strstr(con, "reboot: Power down"));
	free(con);
	printf("arm64: libvirt domain: init to power-off %.1f s\n", now_s() - t_dom);
}

/* The VM running on if a failed test left it stopped (an assertion between a gdbstub stop and the
 * detach): QMP cont, which a running VM ignores; nothing when QEMU has already exited. */
static void qemu_resume(void)
{
	char err[256], reply[512];
	struct qmp q;

	if (qmp_connect(&q, qmp_path, err, sizeof(err)) == 0) {
		(void)qmp_execute(&q, "{\"execute\":\"cont\"}", reply, sizeof(reply));
		qmp_close(&q);
	}
}

/* The workload runs to its end and the guest powers off (PSCI SYSTEM_OFF): QEMU exits 0. */
static void test_power_off(void **state)
{
	char *con;
	int st = 0;

	(void)state;
	qemu_resume();
	while (now_s() - t_start < 2 * BOOT_S && waitpid(qemu_pid, &st, WNOHANG) == 0)
		sleep_ms(200);
	assert_true(WIFEXITED(st));
	qemu_pid = -1;
	assert_int_equal(WEXITSTATUS(st), 0);
	con = hv_slurp(log_path);
	assert_non_null(strstr(con, "hvt-linux: module binfmt_misc loaded"));
	assert_non_null(strstr(con, "hvt-linux: workload done"));
	assert_non_null(strstr(con, "reboot: Power down"));
	free(con);
	printf("arm64: boot to power-off %.1f s (workload start at %.1f s)\n", now_s() - t_start,
	       t_workload - t_start);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_boot_to_init), cmocka_unit_test(test_qmp_target),
	    cmocka_unit_test(test_gdbstub),
	    cmocka_unit_test(test_list_functions_pid),
	    cmocka_unit_test(test_attach_pid),
	    cmocka_unit_test(test_attach_pid_detour),
	    cmocka_unit_test(test_attach_qmp),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_power_off),
	    cmocka_unit_test(test_libvirt_boot),
	    cmocka_unit_test(test_libvirt_list_functions),
	    cmocka_unit_test(test_attach_libvirt),
	    cmocka_unit_test(test_libvirt_sigkill),
	    cmocka_unit_test(test_libvirt_power_off),
	    cmocka_unit_test(test_run_graph),
	    cmocka_unit_test(test_run_stub_returns),
	    cmocka_unit_test(test_run_stub_graph),
	    cmocka_unit_test(test_run_stub_graph_root),
	    cmocka_unit_test(test_run_stub_detour),
	    cmocka_unit_test(test_run_stub_detour_graph),
	    cmocka_unit_test(test_run_stub_every_function),
	    cmocka_unit_test(test_run_stub_profile),
	};
	/* HVT_ARM64_QUICK=1 (make test's pass over the other kernels of the matrix, issue 38): the
	 * running 4 GiB VM attached by its QMP socket (stub probes, -r, detached at its power-off),
	 * then the run --qemu tests with stub probes that cover the most in the fewest boots (-r's
	 * values; every function patched, -g following vfs_read's f_op): three boots */
	const struct CMUnitTest quick[] = {
	    cmocka_unit_test(test_boot_to_init),
	    cmocka_unit_test(test_attach_qmp),
	    cmocka_unit_test(test_power_off),
	    cmocka_unit_test(test_run_stub_returns),
	    cmocka_unit_test(test_run_stub_graph_root),
	};
	char why[400];

	if (!find_guest(why, sizeof(why)))
		hv_skip_binary("%s", why);
	if (!find_qemu())
		hv_skip_binary(
		    "arm64 guest: qemu-system-aarch64 not found (Debian's qemu-system-arm; "
		    "or set $QEMU_AARCH64)");
	/* one test alone (cmocka's name pattern), as HVT_TEST_FILTER picks test_linux's */
	if (getenv("HVT_TEST_FILTER") && *getenv("HVT_TEST_FILTER"))
		cmocka_set_test_filter(getenv("HVT_TEST_FILTER"));
	if (quick_pass())
		return cmocka_run_group_tests_name("arm64 quick", quick, setup, teardown);
	return cmocka_run_group_tests_name("arm64", tests, setup, teardown);
}

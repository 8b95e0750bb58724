/* Linux guest integration: Debian's cloud kernel with the test initramfs (make guest) under QEMU
 * TCG, launched by hvtrace (run --qemu) and attached to by libvirt domain name.
 *
 * Table-driven: each cmocka test is one entry of linux_tests[] (its hvtrace command lines and what
 * each run must show), and one runner, play_test(), plays them all. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/files.h"
#include "tests/common/hv_expect.h"
#include "tests/common/host_pair.h"
#include "tests/common/hv_run.h"
#include "tests/common/kernel_image.h"
#include "tests/common/trixie.h"
#include "tests/common/port.h"
#include "tests/common/shard.h"
#include "tests/common/skip.h"
#include "host/qemu/qmp.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <regex.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The libvirt domain the attach tests boot, and its console log: $HVT_TEST_DOMAIN (default
 * hvtrace-test), so that two checkouts can run their tests side by side. */
static char domain_name[64] = "hvtrace-test", console_log[128];
#define DOMAIN	domain_name
#define CONSOLE console_log

static char kernel[256], initrd[256], sysmap[256];
/* System.maps that must be refused: Debian's symbol-less one, and the real one with linux_banner moved */
static char nosyms_map[160], other_map[160];

/* ---- what a run must show -------------------------------------------------------------------- */

/* How a command line starts: `run --qemu` on the Linux guest with @append as its kernel command
 * line, `attach` to the libvirt domain, or only what the case lists (where KERNEL and SYSMAP stand
 * for the guest's paths). */
enum cmd { RUN_QEMU, ATTACH, RAW };

#define KERNEL "<kernel>"
#define SYSMAP "<system-map>"
#define INSIDE_OPENAT "<inside-openat>" /* -e do_sys_openat2+OFF(...), OFF from the kernel image */
/* learn_openat: OFF, where do_sys_openat2's first instruction ends, and the whole -e spec */
static unsigned openat_inside, openat_first_end;
static char inside_openat[160];
/* A bare QEMU's (linux_test.qemu): its pid, its QMP on TCP (address, and as -qmp takes it), a QMP
 * unix socket as -chardev takes it, and a gdbstub as -gdb takes it; the ports are free ones. */
#define QEMU_PID    "<qemu-pid>"
#define QMP_TCP	    "<qmp-tcp>"
#define QMP_TCP_ARG "<qmp-tcp-arg>"
#define CHARDEV_ARG "<chardev-arg>"
#define GDB_ARG	    "<gdb-arg>"
/* a second QMP monitor (unix socket, as -qmp takes it): the test's own, for linux_test.reset_after */
#define RESET_QMP_ARG "<reset-qmp-arg>"
#define SELF_PID    "<self-pid>" /* the test itself: a process that is no QEMU */
#define FAKE_MAP    "<fake-map>" /* a System.map whose banner no guest has */
#define NOSYMS_MAP "<nosyms-map>"
#define OTHER_MAP "<other-map>"
#define DOMAIN_ARG "<domain>"
/* the URI of the trixie root's libvirtd (linux_test.trixie_libvirt) */
#define TRIXIE_URI "<trixie-libvirt-uri>"
#define RECORD_DAT "<record-dat>" /* `record -o`: a trace.dat of this test process */
/* QEMU V as scripts/fetch-qemu.sh V puts it beside the machine's ($HVTRACE_CACHE/qemu/V, V one of
 * qemu_versions): its qemu-system-x86_64 (a test's binary), and "HVTRACE_QEMU=" that path (an
 * hv_case's env) */
#define QEMU_V(v)     "<qemu-" v ">"
#define QEMU_V_ENV(v) "<HVTRACE_QEMU=qemu-" v ">"

/* One hvtrace command line and what its run must show. */
struct hv_case {
	const char *label; /* names the run in failure messages */
	enum cmd cmd;
	const char *append;   /* RUN_QEMU: the guest kernel's command line */
	const char *args[16]; /* after what @cmd puts first */
	bool libvirtd;	      /* libvirt's daemons must run first */
	const char *env;      /* "NAME=VALUE" (or QEMU_V_ENV) in hvtrace's environment for this run */
	bool no_map;	      /* RUN_QEMU, ATTACH: without --system-map (symbols from kallsyms) */
	bool record;	      /* RUN_QEMU, ATTACH: `record` (trace.dat) instead of run / attach */
	struct hv_expect expect;
};

/* One cmocka test: its runs, in order. With @domain, the libvirt domain boots first with that
 * kernel command line, the runs attach to it while its workload runs, and it must then run to its
 * power-off, its console showing @console_after. With @kill, the first run gets that signal 6 s in
 * (negative: its whole process group, guardian included), and the next one starts right after.
 * After each run, QEMU listens on exactly the TCP ports it listened on before the first (the
 * gdbstub hvtrace started is closed, one QEMU had is not), unless the guardian was killed too.
 */
struct linux_test {
	const char *name;
	const char *domain;
	/* with @domain: a bare QEMU with these options boots (-M pc and -m 256 unless they say
	 * otherwise), not libvirt's */
	const char *qemu[16];
	const char *binary;  /* ... of this QEMU (QEMU_V: skipped when it is not fetched) */
	/* with @domain: the domain is booted by the libvirtd of the trixie root
	 * (tests/qemu/libvirt-trixie.sh: Debian 13's libvirt, its QEMU that root's), not the machine's */
	bool trixie_libvirt;
	const char *machine; /* the libvirt domain's machine type (default pc) ... */
	unsigned mem_mb;     /* ... and RAM (default 256 MiB) */
	int kill;
	/* seconds after the first run's start that @kill is sent (0: 6), time enough for its
	 * attach on a loaded host */
	unsigned kill_after;
	/* seconds after the first run's start that the test resets the guest (system_reset through
	 * its own monitor, RESET_QMP_ARG among @qemu); 0: none */
	unsigned reset_after;
	const char *console_after[2];
	/* with @domain: called with the guest's whole console once it powered off */
	void (*console_check)(const char *console);
	struct hv_case runs[5];
};

/* ---- helpers --------------------------------------------------------------------------------- */

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

static int domain(const char *cmd, const char *cmdline)
{
	char buf[2048];

	snprintf(buf, sizeof(buf), "tests/qemu/libvirt-domain.sh %s %s %s %s '%s' %s", cmd, DOMAIN,
		 kernel, initrd, cmdline ? cmdline : "", CONSOLE);
	return system(buf);
}

static bool domain_gone(void)
{
	char cmd[128], state[64] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "tests/qemu/libvirt-domain.sh state %s", DOMAIN);
	p = popen(cmd, "r");

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

/* ---- a bare QEMU, and what QEMU listens on --------------------------------------------------- */

static pid_t bare_pid = -1;
/* How the bare QEMU ended (waitpid status; -1: it has not, or was stopped by the test), and where
 * its stderr goes: both told when its guest did not end as it should. */
static int bare_status = -1;
static char bare_err[192], bare_log[192]; /* its log: vCPU resets (the registers before a triple
					    fault) and guest errors */
#define BARE_QEMU_ERR bare_err
#define BARE_QEMU_LOG bare_log
static char record_dat[128];
static char reset_qmp[128], reset_qmp_arg[160];
static char qmp_tcp[64], qmp_tcp_arg[96], chardev_arg[192], gdb_arg[32], qemu_pid[16], self_pid[16],
    fake_map[128];

/* The QEMUs of QEMU_V: each version's wrapper path and its HVTRACE_QEMU= setting, filled in at
 * start; arg() puts them where a case names them. */
static struct qemu_version {
	const char *version; /* as fetch-qemu.sh takes it */
	char bin[32], env[48];		/* QEMU_V(version), QEMU_V_ENV(version) */
	char path[256], path_env[280]; /* what they stand for */
} qemu_versions[] = {{.version = "10.0"}, {.version = "11"}};
/* The version of QEMU_V the running test boots (NULL: the machine's QEMU) */
static const char *test_qemu;

static const char *arg(const char *a);

/* Boots the Linux guest in a bare QEMU (@binary, NULL: qemu-system-x86_64) with @opts, its console
 * in CONSOLE, @cmdline appended. */
static int bare_start(const char *binary, const char *const *opts, const char *cmdline)
{
	char append[512], serial[160];
	/* clang-format off */
	const char *argv[48] = {binary ? arg(binary) : "qemu-system-x86_64", "-display", "none", "-nodefaults",
				"-no-user-config", "-cpu", "max", "-accel", "tcg",
				"-smp", "2", "-no-reboot", "-kernel", kernel,
				"-initrd", initrd, "-append", append, "-serial", serial,
				"-d", "cpu_reset,guest_errors", "-D", BARE_QEMU_LOG};
	/* clang-format on */
	size_t n = 24;
	bool machine = false, mem = false;

	snprintf(append, sizeof(append), "console=ttyS0 %s", cmdline);
	for (size_t i = 0; i < 16 && opts[i]; i++) {
		machine |= !strcmp(opts[i], "-M");
		mem |= !strcmp(opts[i], "-m");
		argv[n++] = arg(opts[i]);
	}
	if (!machine) {
		argv[n++] = "-M";
		argv[n++] = "pc";
	}
	if (!mem) {
		argv[n++] = "-m";
		argv[n++] = "256";
	}
	argv[n] = NULL;
	mkdir("/tmp/hvtrace-libvirt", 0755);
	snprintf(serial, sizeof(serial), "/tmp/hvtrace-libvirt/%s", DOMAIN);
	mkdir(serial, 0755);
	snprintf(bare_err, sizeof(bare_err), "%s/qemu.err", serial);
	snprintf(bare_log, sizeof(bare_log), "%s/qemu.log", serial);
	snprintf(serial, sizeof(serial), "file:%s", CONSOLE);
	unlink(CONSOLE);
	bare_status = -1;
	bare_pid = fork();
	if (bare_pid == 0) {
		int null = open("/dev/null", O_RDWR);
		int err = open(BARE_QEMU_ERR, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(null, 0);
		dup2(null, 1);
		dup2(err >= 0 ? err : null, 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	snprintf(qemu_pid, sizeof(qemu_pid), "%d", (int)bare_pid);
	return bare_pid > 0 ? 0 : -1;
}

static bool bare_gone(void)
{
	int status;

	if (bare_pid > 0 && waitpid(bare_pid, &status, WNOHANG) == bare_pid) {
		bare_pid = -1;
		bare_status = status;
	}
	return bare_pid <= 0;
}

/* On stderr: how the bare QEMU ended and what it printed there (a guest that ended without its
 * workload's last line: a triple fault, a QEMU abort, a signal). */
static void bare_tell_end(void)
{
	char cmd[512];

	if (bare_status == -1)
		return;
	if (WIFEXITED(bare_status))
		fprintf(stderr, "the bare QEMU exited with status %d\n", WEXITSTATUS(bare_status));
	else if (WIFSIGNALED(bare_status))
		fprintf(stderr, "the bare QEMU was killed by signal %d\n", WTERMSIG(bare_status));
	fflush(stderr);
	snprintf(cmd, sizeof(cmd), "tail -n 20 %s >&2; tail -n 30 %s >&2", BARE_QEMU_ERR, BARE_QEMU_LOG);
	if (system(cmd) < 0)
		perror("tail");
}

static void bare_stop(void)
{
	if (bare_pid > 0) {
		kill(bare_pid, SIGKILL);
		waitpid(bare_pid, NULL, 0);
	}
	bare_pid = -1;
}

/* The trixie root's libvirtd of a trixie_libvirt test: its URI, and the root its files are under ("" for
 * the machine's libvirtd) */
static char trixie_uri[384], libvirt_root[256];

/* The QEMU of the test: the bare one, or the libvirt domain's. */
static pid_t the_qemu(void)
{
	char path[512];
	FILE *f;
	int pid = -1;

	if (bare_pid > 0)
		return bare_pid;
	snprintf(path, sizeof(path), "%s/run/libvirt/qemu/%s.pid", libvirt_root, DOMAIN);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%d", &pid) != 1)
			pid = -1;
		fclose(f);
	}
	return pid;
}

/* The TCP ports process @pid listens on, ascending, as "1234 5678 " (its socket inodes in
 * /proc/PID/fd matched to the LISTEN lines of /proc/net/tcp and tcp6). */
static void listening_ports(pid_t pid, char *out, size_t len)
{
	static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	unsigned long inodes[1024];
	unsigned ports[64], nr_in = 0, nr = 0;
	char path[64], link[64], line[512];
	struct dirent *e;
	DIR *d;

	out[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	while (d && (e = readdir(d)) && nr_in < 1024) {
		char fd[320];
		ssize_t n;

		snprintf(fd, sizeof(fd), "%s/%s", path, e->d_name);
		n = readlink(fd, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			if (sscanf(link, "socket:[%lu]", &inodes[nr_in]) == 1)
				nr_in++;
		}
	}
	if (d)
		closedir(d);
	for (size_t t = 0; t < 2; t++) {
		FILE *f = fopen(tables[t], "r");
		unsigned port, st;
		unsigned long ino;

		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line,
				   " %*u: %*[0-9A-Fa-f]:%x %*s %x %*x:%*x %*x:%*x %*x %*u %*d %lu",
				   &port, &st, &ino) == 3 &&
			    st == 0x0A)
				for (unsigned i = 0; i < nr_in; i++)
					if (inodes[i] == ino && nr < 64)
						ports[nr++] = port;
		if (f)
			fclose(f);
	}
	for (unsigned i = 0; i < nr; i++) /* a few: insertion sort */
		for (unsigned k = i; k > 0 && ports[k - 1] > ports[k]; k--) {
			unsigned x = ports[k];

			ports[k] = ports[k - 1];
			ports[k - 1] = x;
		}
	for (unsigned i = 0; i < nr; i++)
		snprintf(out + strlen(out), len - strlen(out), "%u ", ports[i]);
}

/* After run @label: QEMU listens on the ports @before again within 15 s (a guardian may still be
 * at work). */
static void check_ports(const char *label, const char *before)
{
	char now[512] = "";
	pid_t pid = the_qemu();

	for (int i = 0; i < 150; i++) {
		if (bare_pid > 0 ? bare_gone() : kill(pid, 0) < 0)
			return; /* the guest powered off: nothing listens any more (a test whose
				   guardian closes the port keeps its guest alive longer) */
		listening_ports(pid, now, sizeof(now));
		if (!strcmp(now, before))
			return;
		sleep_ms(100);
	}
	fail_msg("%s: QEMU listens on TCP ports '%s' after the detach, '%s' before", label, now,
		 before);
}

/* -r vfs_write: every hooked entry got its return line or was handed back at the detach, and
 * nothing was missed (no maxactive to run out of). */
static void check_rprobe_balanced(const struct hv_result *r)
{
	const char *p = strstr(r->err, "\n  r_vfs_write_0 ");
	long hits, misses, lines;

	assert_non_null(p);
	assert_int_equal(sscanf(p + strlen("\n  r_vfs_write_0 "), " %ld %ld", &hits, &misses), 2);
	lines = count_text(r->trace, ": r_vfs_write: (");
	assert_true(hits > 100);
	assert_int_equal(lines + hv_restored_slots(r->err), hits);
	assert_int_equal(misses, 0);
}

/* -e 'vfs_read(*)': every vfs_read line has the four parameters of its BTF prototype, each printed
 * in its type: file (pointer, hex), buf (char *, a quoted string), count (size_t, unsigned
 * decimal), pos (pointer, hex). */
static void check_vfs_read_all_args(const struct hv_result *r)
{
	const char *p = r->trace;
	long n = 0;

	while ((p = strstr(p, "->vfs_read(")) != NULL) {
		unsigned long long file, count, pos;
		const char *q;
		int used = 0;

		p += strlen("->vfs_read(");
		assert_int_equal(sscanf(p, "file=0x%llx buf=\"%n", &file, &used), 1);
		assert_true(used > 0);
		q = strstr(p, "\" count=");
		assert_non_null(q);
		assert_true(q < strchr(p, '\n'));
		assert_int_equal(sscanf(q, "\" count=%llu pos=0x%llx)\n", &count, &pos), 2);
		assert_true(file >= 0xff00000000000000ull); /* a kernel pointer */
		n++;
	}
	assert_true(n > 10);
}


/* The workload's opens of /proc/version: one `cat` per round (hvt.rounds, 3). */
#define PROC_VERSION_OPENS 3

/* Debian 13's trace-cmd (3.3, tests/common/trixie.h) reads record_dat with `trace-cmd report @args` and
 * finds each of @texts as many times as Debian 12's did in @tc (3.1.6); skipped with one line where
 * there is no Debian 13 root. */
static void same_in_trace_cmd_3_3(const char *tc, const char *args, const char *const *texts)
{
	const char *root = hv_trixie_root();
	char *tc33;

	if (!root)
		return;
	tc33 = hv_trixie_trace_cmd(root, args, record_dat);
	for (size_t i = 0; texts[i]; i++)
		if (count_text(tc33, texts[i]) != count_text(tc, texts[i]))
			fail_msg("trace-cmd 3.3 finds \"%s\" %ld times, 3.1.6 %ld times: %.300s", texts[i],
				 count_text(tc33, texts[i]), count_text(tc, texts[i]), tc33);
	printf("trace-cmd 3.3 and 3.1.6 agree on %s (%s)\n", record_dat, args);
	free(tc33);
}

/* `record --qemu -e 'do_sys_openat2(dfd, filename)' -r filename_lookup`: the real trace-cmd reads the
 * trace.dat (the fprobe event of each open with its BTF-typed fields, the kretprobe of each lookup),
 * and `hvtrace report` prints the lines `run` prints (check_run_openat) for the same events. */
static void check_record_openat(const struct hv_result *r)
{
	char cmd[512], inside[64], inside_rep[128], *tc, *rep;
	long lookups_enoent;

	(void)r;
	snprintf(cmd, sizeof(cmd), "trace-cmd report -i %s 2>&1", record_dat);
	tc = hv_sh("%s", cmd);
	assert_non_null(strstr(tc, "cpus=2\n"));
	/* the event inside do_sys_openat2 (-e do_sys_openat2+OFF): kprobe's p_FUNC_OFF name, once
	 * per call, with the entry's values */
	snprintf(inside, sizeof(inside), ": p_do_sys_openat2_%u_0: (", openat_inside);
	assert_int_equal(count_text(tc, ": do_sys_openat2__entry_0: "), count_text(tc, inside));
	assert_int_equal(count_text(tc, ": do_sys_openat2__entry_0: ") + count_text(tc, inside),
			 count_text(tc, "dfd="));
	assert_int_equal(count_text(tc, " dfd=-100 filename=\"/proc/version\"\n"),
			 2 * PROC_VERSION_OPENS);
	lookups_enoent = count_text(tc, ") ret=-2\n");
	assert_true(lookups_enoent >= 3); /* /nonexistent/path, each round */
	snprintf(cmd, sizeof(cmd), "%s report -i %s", hv_binary(), record_dat);
	rep = hv_sh("%s", cmd);
	assert_non_null(strstr(rep, "# tracer: nop\n"));
	assert_int_equal(count_text(rep, "->do_sys_openat2(dfd=-100 filename=\"/proc/version\")\n"),
			 PROC_VERSION_OPENS);
	assert_int_equal(count_text(rep, "cat-"), count_text(tc, "cat-"));
	assert_int_equal(count_text(rep, "->do_sys_openat2("), count_text(tc, "do_sys_openat2__entry_0"));
	assert_int_equal(count_text(rep, "<- filename_lookup) ret=-2 duration="), lookups_enoent);
	snprintf(inside_rep, sizeof(inside_rep),
		 ": do_sys_openat2+0x%x(dfd=-100, filename=/proc/version)\n", openat_inside);
	assert_int_equal(count_text(rep, inside_rep), PROC_VERSION_OPENS);
	assert_int_equal(count_text(rep, ": r_filename_lookup: ("), count_text(tc, "r_filename_lookup_0:"));
	/* a member chain's field gets a name trace-cmd parses: the file each read read, the shell
	 * reading its script /init at least (busybox cat reads with sendfile, not vfs_read) */
	assert_null(strstr(tc, "FAILED TO PARSE"));
	assert_true(count_text(tc, " file_f_path_dentry_d_name_name=\"init\"\n") >= 1);
	assert_int_equal(count_text(rep, "->vfs_read(file_f_path_dentry_d_name_name=\"init\")\n"),
			 count_text(tc, " file_f_path_dentry_d_name_name=\"init\"\n"));
	same_in_trace_cmd_3_3(tc, "", (const char *const[]){"cpus=2\n", ": do_sys_openat2__entry_0: ",
		" dfd=-100 filename=\"/proc/version\"\n", ") ret=-2\n", "r_filename_lookup_0:", "cat-",
		NULL});
	free(tc);
	free(rep);
	unlink(record_dat);
}

/* record attach: the libvirt guest's function_graph under do_sys_openat2 as trace.dat. trace-cmd
 * sees every entry with its exit but for the calls still in flight at the detach (one nest per
 * vCPU at most, the returns handed back), and report prints as many calls as trace-cmd has. */
static void check_record_attach_graph(const struct hv_result *r)
{
	char cmd[512], *tc, *rep;
	long entries, exits;

	(void)r;
	snprintf(cmd, sizeof(cmd), "trace-cmd report -R -i %s 2>&1", record_dat);
	tc = hv_sh("%s", cmd);
	entries = count_text(tc, " funcgraph_entry: ");
	exits = count_text(tc, " funcgraph_exit: ");
	assert_true(count_text(tc, " func=do_sys_openat2 depth=0\n") > 0);
	assert_true(entries > 0);
	if (exits > entries || entries - exits > 2 * 64)
		fail_msg("%ld funcgraph entries, %ld exits", entries, exits);
	snprintf(cmd, sizeof(cmd), "%s report -i %s", hv_binary(), record_dat);
	rep = hv_sh("%s", cmd);
	assert_non_null(strstr(rep, "# tracer: function_graph\n"));
	assert_int_equal(count_text(rep, "|  do_sys_openat2() {\n"),
			 count_text(tc, " func=do_sys_openat2 depth=0\n"));
	same_in_trace_cmd_3_3(tc, "-R", (const char *const[]){" funcgraph_entry: ", " funcgraph_exit: ",
		" func=do_sys_openat2 ", NULL});
	free(tc);
	free(rep);
	unlink(record_dat);
}

/* ---- -e events outside function_graph's graph (issue 23) ------------------------------------- */

#define BM_LINE	     "hvt-linux: binfmt_misc status read "
#define STATUS_EVENT "/* vfs_read: file->f_path.dentry->d_name.name=\"status\" count=64 */\n"

/* The workload's reads of the binfmt_misc status file (hvt.bm), as its console line says. */
static long guest_bm_reads(const struct hv_result *r)
{
	const char *p = r->console ? strstr(r->console, BM_LINE) : NULL;

	if (!p)
		fail_msg("the guest's console has no \"%s N times\" line", BM_LINE);
	return strtol(p + strlen(BM_LINE), NULL, 10);
}

/* function_graph -g do_sys_openat2 --max-depth 2 -e 'vfs_read(name, count)': dd's reads of the
 * status file are not under do_sys_openat2, yet each is one comment line, as ftrace prints its
 * trace events whatever set_graph_function says; vfs_read itself is no line of the graph. */
static void check_graph_event_outside(const struct hv_result *r)
{
	long n = guest_bm_reads(r);

	assert_int_equal(n, 7);
	assert_int_equal(count_text(r->trace, STATUS_EVENT), n);
	assert_int_equal(count_text(r->trace, "vfs_read()"), 0);
	assert_true(count_text(r->trace, "|  do_sys_openat2() {\n") >= 2 * n);
}

/* The same with stub probes, --comm dd and -e 'vfs_read(count)' (registers alone: the stub records
 * it in the guest) as JSON Lines: dd's vfs_read events are its N reads of the status file, each
 * outside the graph (depth 0, from ksys_read). */
static void check_graph_event_outside_stub(const struct hv_result *r)
{
	long n = guest_bm_reads(r);

	assert_int_equal(n, 7);
	assert_int_equal(count_text(r->trace, "\"func\":\"vfs_read\""), n);
	assert_int_equal(count_text(r->trace, "\"comm\":\"dd\",\"pid\":"),
			 count_lines(r->trace) - 2); /* all but begin and end */
	assert_int_equal(count_text(r->trace, "\"func\":\"vfs_read\",\"parent\":\"ksys_read\","
					      "\"depth\":0,\"args\":{\"count\":64}}\n"),
			 n);
}

/* ---- record --host (issue 26) ---------------------------------------------------------------- */

/* Under TCG the guest's TSC is learnt as the host's plus an offset, from records read as soon as the
 * drain could (stub_drain.c learn_clock): converted times err late by the shortest wait of a record
 * for the drain, and by how far apart the host CPUs' TSCs and QEMU's own TSC bookkeeping drift
 * (seen on this host, a VM itself: up to 1.1 ms). A stub event may lie this far into a sleep of its
 * vCPU thread, and no further: a wrong vCPU map or time shift puts events seconds or whole
 * intervals off (a swapped map: 142 of 206 events inside sleeps). */
#define HOST_CLOCK_SLACK_US 2000

/* The hex value on the line that ends with @tag in `trace-cmd dump --options` output @dump. */
static unsigned long long dump_hex(const char *dump, const char *tag)
{
	const char *p = strstr(dump, tag), *line;

	if (!p)
		fail_msg("trace-cmd dump --options: no \"%s\" in:\n%.2000s", tag, dump);
	for (line = p; line > dump && line[-1] != '\n'; line--)
		;
	return strtoull(line, NULL, 16);
}

/* The hex value on the line after "[Option @name, " */
static unsigned long long dump_option_hex(const char *dump, const char *name)
{
	char marker[64];
	const char *p;

	snprintf(marker, sizeof(marker), "[Option %s, ", name);
	p = strstr(dump, marker);
	if (!p || !(p = strchr(p, '\n')))
		fail_msg("trace-cmd dump --options: no option %s in:\n%.2000s", name, dump);
	return strtoull(p + 1, NULL, 16);
}

/* Thread @pid, if it is one of the @nv vCPU threads @tids, is running: not asleep. */
static void awake(double *asleep, const int *tids, unsigned nv, int pid)
{
	for (unsigned v = 0; v < nv; v++)
		if (tids[v] == pid)
			asleep[v] = -1;
}

struct host_pair {
	long guest_lines, host_lines, switches, sleeps, late, dd_reads;
	double worst_us; /* the deepest a guest event lies in a sleep of its vCPU thread */
};

/* Reads the merged report @merged of a host file (lines labelled @host_label) and a guest file
 * (@guest_label): the time order, the vCPU threads' sleeps (a switch out in state S or D until
 * their next wakeup) from the host's sched_switch / sched_wakeup, and each guest event (CPU N: vCPU
 * N, thread @tids[N]) against them. */
static void read_host_pair(const char *merged, const char *host_label, const char *guest_label,
			   const int *tids, unsigned nv, struct host_pair *hp)
{
	regex_t sw, wk, rec;
	double asleep[8], last = 0;
	char *copy = strdup(merged), *save = NULL;

	assert_true(nv <= 8);
	for (unsigned i = 0; i < nv; i++)
		asleep[i] = -1;
	memset(hp, 0, sizeof(*hp));
	/* trace-cmd right-aligns the timestamp: "[000]   815.544075" on a host up for less than
	 * 10000 s, "[000] 12345.544075" after (a fresh CI machine once matched no line at all) */
	assert_int_equal(regcomp(&rec, "^ *([^ :]+): .*\\[([0-9]+)\\] +([^ ]+ +)?([0-9]+\\.[0-9]+): ",
				 REG_EXTENDED),
			 0);
	assert_int_equal(regcomp(&sw, "sched_switch: +.*:([0-9]+) \\[[0-9]+\\] ([A-Z+]+) ==> .*:([0-9]+) \\[",
				 REG_EXTENDED),
			 0);
	assert_int_equal(regcomp(&wk, "sched_wakeup: +.*:([0-9]+) \\[[0-9]+\\]", REG_EXTENDED), 0);
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		regmatch_t m[5];
		char label[256];
		double t;
		int cpu;

		if (regexec(&rec, l, 5, m, 0))
			continue;
		snprintf(label, sizeof(label), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), l + m[1].rm_so);
		cpu = atoi(l + m[2].rm_so);
		t = strtod(l + m[4].rm_so, NULL);
		if (t + 1e-9 < last)
			fail_msg("the merged report is out of time order at: %s", l);
		last = t;
		if (!strcmp(label, guest_label)) {
			hp->guest_lines++;
			hp->dd_reads += strstr(l, " dd-") && strstr(l, "function:") &&
					strstr(l, " vfs_read");
			if (cpu < 0 || (unsigned)cpu >= nv)
				fail_msg("a guest event of vCPU %d, the host file maps %u: %s", cpu, nv, l);
			if (asleep[cpu] >= 0 && (t - asleep[cpu]) * 1e6 > hp->worst_us)
				hp->worst_us = (t - asleep[cpu]) * 1e6;
			if (asleep[cpu] >= 0 && (t - asleep[cpu]) * 1e6 > HOST_CLOCK_SLACK_US &&
			    hp->late++ < 3)
				printf("--host: %.0f us into a sleep of its vCPU thread: %s\n",
				       (t - asleep[cpu]) * 1e6, l);
			continue;
		}
		if (strcmp(label, host_label))
			fail_msg("a line of neither file (%s, %s): %s", host_label, guest_label, l);
		hp->host_lines++;
		/* a vCPU thread that runs (the task of an event, switched in, woken) sleeps no more
		 * (the host may miss a switch in or a wakeup: any sign of running ends the sleep) */
		{
			const char *b = l + m[2].rm_so - 1, *d; /* the '[' of [CPU] */

			while (b > l && b[-1] == ' ')
				b--;
			for (d = b; d > l && d[-1] >= '0' && d[-1] <= '9'; d--)
				;
			if (d > l && d[-1] == '-' && d < b)
				awake(asleep, tids, nv, atoi(d));
		}
		if (!regexec(&sw, l, 4, m, 0)) {
			int prev = atoi(l + m[1].rm_so);
			char state = l[m[2].rm_so];

			hp->switches++;
			awake(asleep, tids, nv, atoi(l + m[3].rm_so));
			for (unsigned v = 0; v < nv; v++)
				if (tids[v] == prev && (state == 'S' || state == 'D')) {
					asleep[v] = t;
					hp->sleeps++;
				}
		} else if (!regexec(&wk, l, 2, m, 0)) {
			awake(asleep, tids, nv, atoi(l + m[1].rm_so));
		}
	}
	regfree(&rec);
	regfree(&sw);
	regfree(&wk);
	free(copy);
}

/* record --qemu --host --probe stub -l vfs_read -l do_sys_openat2 (hvt.bm=7): beside the guest's
 * trace.dat, the host's (-host before the extension), paired as trace-cmd's host-guest tracing pairs
 * them (the host's GUEST option names the guest's TRACEID and maps its 2 vCPUs to host threads; the
 * guest's TIME_SHIFT names the host's TRACEID); trace-cmd 3.1.6 and 3.3 each read the pair
 * interleaved in time order, every guest event there (the dd runs' 7 reads exactly) beside the
 * host's sched events of the vCPU threads, and (@stub) no stub event in a sleep of its vCPU thread
 * (past HOST_CLOCK_SLACK_US). */
static void check_record_host_of(bool stub)
{
	char host[160], *opt_h, *opt_g, *merged, *alone, label_h[160], label_g[160];
	const char *root = hv_trixie_root(), *slash;
	int tids[8];
	unsigned nv = 0;
	struct host_pair hp;
	long guest_records;

	snprintf(host, sizeof(host), "%.*s-host.dat", (int)(strlen(record_dat) - 4), record_dat);
	opt_h = hv_sh("trace-cmd dump --options -i %s 2>&1", host);
	opt_g = hv_sh("trace-cmd dump --options -i %s 2>&1", record_dat);
	assert_true(dump_hex(opt_h, " [trace id]") == dump_option_hex(opt_g, "TRACEID"));
	assert_true(dump_hex(opt_g, " [peer's trace id]") == dump_option_hex(opt_h, "TRACEID"));
	assert_non_null(strstr(opt_h, "[mono]"));
	nv = hv_guest_threads(opt_h, tids, 8);
	assert_int_equal(nv, 2);
	assert_true(tids[0] != tids[1]);
	merged = hv_sh("trace-cmd report -i %s -i %s 2>&1", host, record_dat);
	alone = hv_sh("trace-cmd report -i %s 2>&1", record_dat);
	guest_records = count_text(alone, "\n") - 1; /* less its cpus=2 line */
	slash = strrchr(host, '/');
	snprintf(label_h, sizeof(label_h), "%s", slash ? slash + 1 : host);
	slash = strrchr(record_dat, '/');
	snprintf(label_g, sizeof(label_g), "%s", slash ? slash + 1 : record_dat);
	if (!strstr(merged, label_g)) { /* a version that labels lines with the path as given */
		snprintf(label_h, sizeof(label_h), "%s", host);
		snprintf(label_g, sizeof(label_g), "%s", record_dat);
	}
	read_host_pair(merged, label_h, label_g, tids, nv, &hp);
	printf("--host: guest %ld events (%ld alone), host %ld (%ld sched_switch, %ld vCPU sleeps), "
	       "dd reads %ld, deepest into a vCPU sleep %.0f us\n",
	       hp.guest_lines, guest_records, hp.host_lines, hp.switches, hp.sleeps, hp.dd_reads,
	       hp.worst_us);
	if (hp.guest_lines != guest_records) /* what trace-cmd said instead, for the log */
		fail_msg("trace-cmd report -i %s -i %s: %ld guest lines, %ld alone; it printed: %.1500s",
			 host, record_dat, hp.guest_lines, guest_records, merged);
	assert_int_equal(hp.dd_reads, 7);
	assert_true(hp.switches > 0 && hp.sleeps > 0);
	if (stub) {
		char *exits;

		assert_int_equal(hp.late, 0);
		assert_true(count_text(merged, ": softirq_entry: ") > 0); /* --host-event */
		/* report --exits needs the calls' times: one line, exit 2 */
		exits = hv_sh("%s report --exits -i %s 2>&1; echo status $?", hv_binary(), record_dat);
		if (!strstr(exits, " holds no function_graph events: the calls' times come from them "
				   "(record -p function_graph --host)\nstatus 2\n"))
			fail_msg("report --exits on a function trace: %s", exits);
		free(exits);
	}
	if (root) {
		char *tc33 = hv_trixie_trace_cmd_pair(root, "", host, record_dat);
		char l_h[64], l_g[64];
		struct host_pair hp33;

		snprintf(l_h, sizeof(l_h), "hvt-trixie-%d-host.dat", (int)getpid());
		snprintf(l_g, sizeof(l_g), "hvt-trixie-%d.dat", (int)getpid());
		read_host_pair(tc33, l_h, l_g, tids, nv, &hp33);
		assert_int_equal(hp33.guest_lines, hp.guest_lines);
		assert_int_equal(hp33.host_lines, hp.host_lines);
		assert_int_equal(hp33.late, hp.late);
		printf("trace-cmd 3.3 reads the pair as 3.1.6 does\n");
		free(tc33);
	}
	free(opt_h);
	free(opt_g);
	free(merged);
	free(alone);
	unlink(host);
}

/* report --exits on a function_graph recording with --host: each function's calls, total time and
 * host time are what trace-cmd's raw view of the same pair gives (tests/common/host_pair.c), to the
 * nanosecond; no kvm_exit under TCG: 0 exits. */
static void check_report_exits(const struct hv_result *r)
{
	char host[160], label_h[170], *opt_h, *raw, *rep;
	const char *slash;
	int tids[8];
	struct hv_pair w;

	(void)r;
	snprintf(host, sizeof(host), "%.*s-host.dat", (int)(strlen(record_dat) - 4), record_dat);
	slash = strrchr(host, '/');
	snprintf(label_h, sizeof(label_h), "%s:", slash ? slash + 1 : host);
	opt_h = hv_sh("trace-cmd dump --options -i %s 2>&1", host);
	assert_int_equal(hv_guest_threads(opt_h, tids, 8), 2);
	raw = hv_sh("trace-cmd report -R -t -i %s -i %s 2>&1", host, record_dat);
	hv_pair_walk(raw, label_h, tids, 2, &w);
	rep = hv_sh("%s report --exits -i %s 2>&1", hv_binary(), record_dat);
	printf("%s", rep);
	assert_non_null(strstr(rep, "no kvm_exit in the host file"));
	assert_true(w.nfn >= 3 && w.exits_total == 0);
	hv_pair_check_exits(rep, &w);
	free(raw);
	free(rep);
	free(opt_h);
	unlink(host);
}

static void check_record_host(const struct hv_result *r)
{
	(void)r;
	check_record_host_of(true);
}

/* With trap probes an event is stamped when hvtrace handles the VM stop, while QEMU's vCPU thread
 * waits in the gdbstub (under TCG a thread that stops is not always switched out yet): the pairing,
 * the order and the counts as with stub probes, not the sleeps. */
static void check_record_host_trap(const struct hv_result *r)
{
	(void)r;
	check_record_host_of(false);
}

/* The same as check_graph_event_outside_stub with trap probes in a trace.dat: trace-cmd sees dd's
 * N kprobe events of vfs_read (its reads of the status file) and no graph entry of vfs_read, and
 * `hvtrace report` prints each as the comment line alone, as run prints it. (Not the typed
 * file->f_path... field: a trace.dat cannot hold a member chain yet, trace-cmd cannot parse it.) */
static void check_record_graph_event_outside(const struct hv_result *r)
{
	char cmd[512], *tc, *rep;
	long n = guest_bm_reads(r);

	assert_int_equal(n, 7);
	snprintf(cmd, sizeof(cmd), "trace-cmd report -i %s 2>&1", record_dat);
	tc = hv_sh("%s", cmd);
	assert_int_equal(count_text(tc, ": vfs_read__entry_0: "), n);
	assert_int_equal(count_text(tc, ") count=64\n"), n);
	assert_int_equal(count_text(tc, "vfs_read()"), 0); /* no funcgraph line of it */
	snprintf(cmd, sizeof(cmd), "%s report -i %s", hv_binary(), record_dat);
	rep = hv_sh("%s", cmd);
	assert_non_null(strstr(rep, "# tracer: function_graph\n"));
	assert_int_equal(count_text(rep, "|  /* vfs_read: count=64 */\n"), n);
	assert_int_equal(count_text(rep, "vfs_read"), n);
	free(tc);
	free(rep);
	unlink(record_dat);
}

/* ---- entry probes: functions without an fentry site (issue 25) ------------------------------- */

/* -p function_graph -l do_syscall_64 -l ksys_read --comm dd, trap probes: do_syscall_64 is noinstr
 * (no fentry site), probed at its first instruction, its return hooked as at an fentry site: each of
 * dd's N reads of the status file is one ksys_read nested in a do_syscall_64 call. */
static void check_entry_graph(const struct hv_result *r)
{
	long n = guest_bm_reads(r);

	assert_int_equal(n, 7);
	assert_int_equal(count_text(r->trace, "|    ksys_read();\n"), n);
	assert_int_equal(count_text(r->trace, "ksys_read"), n);
	assert_true(count_text(r->trace, "|  do_syscall_64() {\n") >= n);
}

/* --probe stub -l vfs_read -e 'do_syscall_64(nr)' --filter-event 'nr == 0' --comm dd: vfs_read by
 * the stub, do_syscall_64 (no fentry site) by a trap probe at its entry: dd's read syscalls are
 * exactly its N reads of the status file, each one vfs_read. */
static void check_entry_event(const struct hv_result *r)
{
	long n = guest_bm_reads(r);

	assert_int_equal(n, 7);
	/* dd's read syscalls, exactly: the event is the stub's, through a detour, stamped with its
	 * task in the guest as vfs_read's are (a trap probe's was stamped when hvtrace handled the
	 * stop, and once counted the shell's read just before its exec into dd) */
	assert_int_equal(count_text(r->trace, "->do_syscall_64(nr=0)\n"), n);
	assert_int_equal(count_text(r->trace, "do_syscall_64"),
			 count_text(r->trace, "->do_syscall_64(nr=0)\n"));
	assert_int_equal(count_text(r->trace, ": vfs_read <-ksys_read\n"), n);
	assert_int_equal(count_text(r->trace, "vfs_read"), n);
}

/* -p function_graph -l __schedule through a stub detour: the scheduler's calls and returns, paired:
 * an entry with its return on one line when nothing came between them, else the entry and its
 * return apart; at most as many returns as entries (a task asleep in it at the detach has its
 * entry alone). */
static void check_schedule_detour(const struct hv_result *r)
{
	long leaves = count_text(r->trace, " __schedule();\n");
	long entries = count_text(r->trace, " __schedule() {\n") + leaves;
	long returns = count_text(r->trace, " }\n") + leaves;

	assert_true(entries > 10);
	assert_true(returns > 10 && returns <= entries);
	/* every mention is one of the two forms (nothing else is probed) */
	assert_int_equal(count_text(r->trace, "__schedule"), entries);
	/* the detach looked on every task's kernel stack for one preempted inside the stub (the
	 * guest's init shell, its yes and kernel threads: dozens) before it unmapped it */
	assert_true(hv_stat(r->err, "stub probes ", "detach-scans ") >= 1);
	assert_true(hv_stat(r->err, "stub probes ", "detach-stacks ") > 20);
}

/* ---- -g through function pointers (issue 25) --------------------------------------------------- */

#define TMPFS_LINE "hvt-linux: tmpfs file read "

/* --probe stub -p function_graph -g vfs_read --comm dd on hvt.bm=7 hvt.tmpfs=5 (no -l): every
 * function carries a stub probe and the stub follows the graph in the guest, as set_graph_function
 * does: each of dd's 12 reads is one vfs_read graph, and each of the 5 of the tmpfs file holds
 * shmem_file_read_iter, called through f_op->read_iter, right under vfs_read. */
static void check_graph_through_pointers(const struct hv_result *r)
{
	const char *p = r->console ? strstr(r->console, TMPFS_LINE) : NULL;
	long n;

	assert_int_equal(guest_bm_reads(r), 7);
	assert_non_null(p);
	n = strtol(p + strlen(TMPFS_LINE), NULL, 10);
	assert_int_equal(n, 5);
	assert_int_equal(count_text(r->trace, "|  vfs_read() {\n"), 7 + n);
	assert_int_equal(count_text(r->trace, "|    shmem_file_read_iter() {\n"), n);
	assert_int_equal(count_text(r->trace, "shmem_file_read_iter"), n);
}

/* The same session as check_record_openat under `run`. */
static void check_run_openat(const struct hv_result *r)
{
	assert_int_equal(count_text(r->trace, "->do_sys_openat2(dfd=-100 filename=\"/proc/version\")\n"),
			 PROC_VERSION_OPENS);
	assert_true(count_text(r->trace, "<- filename_lookup) ret=-2 duration=") >= 3);
}

/* run --qemu --format jsonl with the events of check_run_openat: jq parses every line; each open of
 * /proc/version is an event whose args are the BTF-typed fields (dfd a number, filename a string),
 * by `cat`; the failed lookups are exits whose "ret" is -2. */
static void check_jsonl_openat(const struct hv_result *r)
{
	const char *path = "/tmp/json-test-linux.jsonl";
	FILE *f = fopen(path, "w");
	char *out;

	assert_non_null(f);
	assert_int_equal(fputs(r->trace, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	out = hv_sh("%s", "jq -c .type /tmp/json-test-linux.jsonl | wc -l");
	assert_int_equal(atol(out), count_lines(r->trace));
	free(out);
	out = hv_sh("%s", "jq -s -c '[(map(select(.type==\"event\" and .func==\"do_sys_openat2\" "
			     "and .args.dfd==-100 and .args.filename==\"/proc/version\")) | "
			     "map(.comm) | unique), (map(select(.type==\"event\" and "
			     ".args.filename==\"/proc/version\")) | length), .[-1].type]' "
			     "/tmp/json-test-linux.jsonl");
	assert_string_equal(out, "[[\"cat\"],3,\"end\"]\n");
	free(out);
	out = hv_sh("%s", "jq -s 'map(select(.type==\"exit\" and .func==\"filename_lookup\" and "
			     ".args.ret==-2 and .duration_ns>0)) | length' /tmp/json-test-linux.jsonl");
	assert_true(atol(out) >= 3);
	free(out);
	unlink(path);
}

/* Every trace line (not a # comment, nor a " => " frame of a stack trace) is of a task whose
 * TASK-PID field starts with @prefix; returns how many lines there are. */
static long assert_every_task(const char *trace, const char *prefix)
{
	long n = 0;

	for (const char *p = trace; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
		char task[64];

		if (*p == '#' || *p == '\n' || !strncmp(p, " => ", 4) || sscanf(p, " %63s", task) != 1)
			continue;
		if (strncmp(task, prefix, strlen(prefix)))
			fail_msg("a line of task %s (want %s...): %.80s", task, prefix, p);
		n++;
	}
	return n;
}

/* --comm cat -e do_sys_openat2: only cat's opens, each the workload's: one `cat /proc/version` and
 * one `cat /etc/motd` a round; /proc/cpuinfo is opened by head alone. */
static void check_comm_cat(const struct hv_result *r)
{
	long lines = assert_every_task(r->trace, "cat-");

	assert_int_equal(count_text(r->trace, "->do_sys_openat2(dfd=-100 filename=\"/proc/version\")\n"),
			 PROC_VERSION_OPENS);
	assert_int_equal(count_text(r->trace, "->do_sys_openat2(dfd=-100 filename=\"/etc/motd\")\n"),
			 PROC_VERSION_OPENS);
	assert_int_equal(count_text(r->trace, "/proc/cpuinfo"), 0);
	assert_int_equal(count_text(r->trace, "->do_sys_openat2("), lines);
	assert_true(hv_stat(r->err, "filtered", "filtered") > 0);
}

/* --filter-event on -e's BTF-typed fields: exactly the workload's opens of /proc/version. */
static void check_filter_event(const struct hv_result *r)
{
	long lines = assert_every_task(r->trace, "cat-");

	assert_int_equal(count_text(r->trace, "->do_sys_openat2(dfd=-100 filename=\"/proc/version\")\n"),
			 PROC_VERSION_OPENS);
	assert_int_equal(lines, PROC_VERSION_OPENS);
	assert_true(hv_stat(r->err, "filtered", "filtered") > 0);
}

/* --comm cat --trigger do_sys_openat2:stacktrace:1 on a kernel without frame pointers (ORC): one
 * <stack trace> block after cat's first open, starting with the function and the caller the
 * return address names, then the text addresses on the stack, among them the syscall path in order. */
static void check_stacktrace(const struct hv_result *r)
{
	static const char *const chain[] = {"\n => do_syscall_64+0x", "\n => entry_SYSCALL_64_after_hwframe+0x"};
	const char *p = strstr(r->trace, "<stack trace>\n");

	assert_int_equal(count_text(r->trace, "<stack trace>\n"), 1);
	assert_non_null(p);
	assert_true(p > strstr(r->trace, ": do_sys_openat2 <-__x64_sys_openat\n"));
	assert_true(!strncmp(strchr(p, '\n'), "\n => do_sys_openat2+0x0/0x", 26));
	p = strchr(p + 1, '\n') + 1;
	p = strchr(p, '\n');
	assert_true(!strncmp(p, "\n => __x64_sys_openat+0x", 24));
	for (size_t i = 0; i < 2; i++) {
		p = strstr(p, chain[i]);
		if (!p)
			fail_msg("no %s after the earlier frames:\n%s", chain[i] + 1, r->trace);
	}
	/* each round's two cats open one file each, and the block's own context line */
	assert_int_equal(assert_every_task(r->trace, "cat-"), 2 * PROC_VERSION_OPENS + 1);
}

/* --comm cat -e do_sys_openat2 --trigger do_sys_openat2:traceoff: cat's first open, nothing after
 * it on either vCPU. */
static void check_traceoff(const struct hv_result *r)
{
	assert_int_equal(count_text(r->trace, "->do_sys_openat2(dfd=-100 "), 1);
	assert_int_equal(assert_every_task(r->trace, "cat-"), 1);
}

/* -e func+OFFSET on do_sys_openat2, learned from the guest's kernel image (build/guest/vmlinuz, its
 * kallsyms): the instruction after its ENDBR64 (if any) and its fentry site, where the
 * argument registers still hold the call's arguments; and where its first instruction ends. */

static void learn_openat(void)
{
	struct kernel_image ki;
	long off;

	if (openat_inside)
		return;
	assert_int_equal(kernel_image_load(kernel, &ki), 0);
	off = kernel_image_past_fentry(&ki, "do_sys_openat2", &openat_first_end);
	free(ki.img);
	if (off < 0)
		fail_msg("do_sys_openat2 in %s: %s", kernel,
			 off == -ENOENT ? "not in its kallsyms" : "no fentry site after its start");
	openat_inside = (unsigned)off;
	snprintf(inside_openat, sizeof(inside_openat),
		 "do_sys_openat2+0x%x(s32 dfd=%%rdi, string filename=%%rsi)", openat_inside);
}

/* -e do_sys_openat2(...) and -e do_sys_openat2+OFF(...) with the same fields from the registers:
 * each call's entry event is followed, in its task, by the event inside it with the same values
 * (one per call, the instruction runs once), and by nothing else of the function before. */
static void check_openat_inside(const struct hv_result *r)
{
	char inside[64];
	long entries = 0;

	snprintf(inside, sizeof(inside), ": do_sys_openat2+0x%x(", openat_inside);
	for (const char *p = r->trace; (p = strstr(p, "->do_sys_openat2(")); p++) {
		const char *bol = p, *eol = strchr(p, '\n'), *q, *task_end;
		char want[320], line[512];
		size_t n;

		while (bol > r->trace && bol[-1] != '\n')
			bol--;
		task_end = strchr(bol, '[');
		assert_true(eol && task_end && task_end < eol);
		n = (size_t)(task_end - bol);
		/* "do_sys_openat2+0xN(" and the entry event's own fields, ")" included */
		snprintf(want, sizeof(want), "%s%.*s", inside + 2, (int)(eol - (p + 17)), p + 17);
		/* the next line of this task that names the function */
		line[0] = 0;
		for (q = eol + 1; *q;) {
			const char *e = strchr(q, '\n');
			size_t len = e ? (size_t)(e - q) : strlen(q);

			if (len > n && !strncmp(q, bol, n) && memmem(q, len, "do_sys_openat2", 14)) {
				snprintf(line, sizeof(line), "%.*s", (int)len, q);
				break;
			}
			q += len + (e != NULL);
		}
		if (!strstr(line, want))
			fail_msg("after '%.*s' its task's next line is '%s', not one with '%s'",
				 (int)(eol - bol), bol, line, want);
		entries++;
	}
	assert_true(entries > 2 * PROC_VERSION_OPENS);
	assert_int_equal(count_text(r->trace, inside), entries);
}

/* -e do_sys_openat2+1: inside its first instruction, refused with where that one ends. */
static void check_inside_refused(const struct hv_result *r)
{
	char want[160];

	snprintf(want, sizeof(want),
		 "hvtrace: -e do_sys_openat2+0x1: not an instruction's start (the instruction at "
		 "+0x0 ends at +0x%x)\n",
		 openat_first_end);
	if (!strstr(r->err, want))
		fail_msg("no '%s' in:\n%s", want, r->err);
}

/* The forks of scripts/guest-init.sh's shell (pid 1, traced from early boot, before /init runs)
 * with hvt.yes_sec=1 and the defaults: 9 $(arg ...) substitutions (hvt.share's the ninth), 3
 * mounts, mkdir, insmod, the binfmt_misc mount, sleep "$wait_sec", 3 rounds of files() (cat, cat, ls
 * and head for /etc/motd, /proc/cpuinfo and /sys/kernel: 6 each), 4 yes, sleep "$yes_sec", poweroff. */
#define INIT_FORKS (9 + 3 + 1 + 1 + 1 + 1 + 6 * PROC_VERSION_OPENS + 4 + 1 + 1)

/* -P 1 -l kernel_clone: the init shell's forks alone, every one of them. */
static void check_pid_init(const struct hv_result *r)
{
	long lines = assert_every_task(r->trace, "init-1");

	for (size_t i = 0; i < r->nr_lines; i++)
		assert_int_equal(r->lines[i].pid, 1);
	assert_int_equal((long)r->nr_lines, lines);
	assert_int_equal(lines, INIT_FORKS);
	assert_true(hv_stat(r->err, "filtered", "filtered") > 0);
}

/* -p function_graph -l kernel_clone -l ret_from_fork: ret_from_fork is asm, which a new task reaches
 * by its switch's RET, not by a CALL; its "return slot" is the new task's pt_regs. Its entries are
 * traced alone (one per new task that ran: each of the init shell's forks at least), never a
 * return hooked there (the kernel would return into the trampoline and die); kernel_clone, a C
 * function, keeps its returns. */
static void check_entry_only(const struct hv_result *r)
{
	long forks = count_text(r->trace, "kernel_clone();") + count_text(r->trace, "kernel_clone() {");
	long starts = count_text(r->trace, "  ret_from_fork(); /* entry only */\n");

	if (forks < INIT_FORKS || starts < INIT_FORKS || starts > forks)
		fail_msg("kernel_clone %ld, ret_from_fork %ld, the init shell's forks %d:\n%s", forks,
			 starts, INIT_FORKS, r->trace);
	assert_int_equal(count_text(r->trace, "ret_from_fork"), starts);
	assert_int_equal(hv_stat(r->err, "kaslr-slide ", "orphan-returns "), 0);
}

/* list-functions of the running guest: the first listing (from its kallsyms) is kept; the second
 * (from --system-map) must be the same, module functions ("name [module]") included. */
static char *kallsyms_listing;

/* The text symbols (t, T, w, W) of build/guest/System.map. */
static long map_functions(void)
{
	FILE *f = fopen(sysmap, "r");
	char line[600], type;
	long n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %c", &type) == 1 && strchr("tTwW", type))
			n++;
	fclose(f);
	return n;
}

static void keep_listing(const struct hv_result *r)
{
	const char *p = strstr(r->err, "hvtrace: symbols: ");
	long syms, funcs;

	/* as many functions from kallsyms as the System.map names */
	assert_non_null(p);
	assert_int_equal(sscanf(p, "hvtrace: symbols: %ld (%ld functions)", &syms, &funcs), 2);
	assert_int_equal(funcs, map_functions());
	assert_true(count_lines(r->trace) > 20000);
	assert_non_null(strstr(r->trace, "\nvfs_read\n"));
	assert_non_null(strstr(r->trace, "\nbm_status_read [binfmt_misc]\n"));
	free(kallsyms_listing);
	kallsyms_listing = strdup(r->trace);
}

/* list-functions --entry --system-map: the listing from kallsyms with the functions that have no
 * fentry site (entry probes, " (entry)") among them: without those lines, the same; notrace and
 * noinstr functions (__schedule, do_syscall_64) are there, padding (__pfx_) is not. */
static void same_listing_and_entries(const struct hv_result *r)
{
	char *fentry = strdup(r->trace), *o = fentry;
	const char *line = r->trace;

	assert_non_null(kallsyms_listing);
	assert_non_null(fentry);
	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);

		if (len < 9 || memcmp(line + len - 9, " (entry)\n", 9)) {
			memcpy(o, line, len);
			o += len;
		}
		line += len;
	}
	*o = 0;
	assert_string_equal(fentry, kallsyms_listing);
	free(fentry);
	assert_non_null(strstr(r->trace, "\n__schedule (entry)\n"));
	assert_non_null(strstr(r->trace, "\ndo_syscall_64 (entry)\n"));
	assert_null(strstr(r->trace, "__pfx_"));
	assert_true(count_text(r->trace, " (entry)\n") > 1000);
}

/* -l bm_status_read -e 'do_sys_openat2(dfd, filename)': exactly the hvt.bm=7 reads of the module's
 * status file, by dd, and the 7 opens of that file, their arguments typed from the guest's BTF. */
static void seven_bm_reads(const struct hv_result *r)
{
	size_t reads = 0;

	assert_int_equal(trace_count(r, "bm_status_read", -1), 7);
	for (size_t i = 0; i < r->nr_lines; i++)
		if (!strcmp(r->lines[i].func, "bm_status_read")) {
			assert_string_equal(r->lines[i].comm, "dd");
			reads++;
		}
	assert_int_equal(reads, 7);
	assert_int_equal(
	    count_text(r->trace, "->do_sys_openat2(dfd=-100 filename=\"/tmp/binfmt/status\")\n"), 7);
}

/* What every run on the test's QEMU_V (10.0, 11) shows on --stats: guest memory read through the
 * QEMU process (the map learned from its monitor: `info ramblock` with its HVA column,
 * query-memdev), QEMU's version, the test's, from its QMP greeting. */
static void qemu_v_memory(const struct hv_result *r)
{
	char want[64];

	assert_non_null(test_qemu);
	snprintf(want, sizeof(want), "hvtrace: stats: qemu %s.", test_qemu);
	assert_null(strstr(r->err, "goes through the gdbstub"));
	if (!strstr(r->err, want))
		fail_msg("no \"%s\" on stderr: not the QEMU %s of the test", want, test_qemu);
	assert_non_null(strstr(r->err, " guest-memory process regions "));
}

/* Trap probes, -e on do_sys_openat2 and vfs_read (DD_EVENTS) on a QEMU_V (hvt.bm=7): exactly the
 * guest's 7 dd runs, each an open of the status file and a read of 64 bytes from it, their
 * arguments typed from BTF, each line by dd. */
static void seven_dd_typed_qemu_v(const struct hv_result *r)
{
	static const char *const typed[] = {
	    "->do_sys_openat2(dfd=-100 filename=\"/tmp/binfmt/status\")\n",
	    "->vfs_read(file->f_path.dentry->d_name.name=\"status\" count=64)\n"};

	for (size_t k = 0; k < 2; k++) {
		long dd = 0;

		assert_int_equal(count_text(r->trace, typed[k]), 7);
		for (const char *l = r->trace; (l = strstr(l, typed[k])); l++) {
			const char *bol = l;

			while (bol > r->trace && bol[-1] != '\n')
				bol--;
			bol += strspn(bol, " ");
			dd += !strncmp(bol, "dd-", 3);
		}
		assert_int_equal(dd, 7);
	}
	qemu_v_memory(r);
}

/* Stub probes, -l vfs_read -l do_sys_openat2 on a QEMU_V (hvt.bm=7): exactly the guest's 7 dd
 * runs, each 2 opens and 1 read by dd (a pid above 1); no VM stop, nothing lost. */
static void seven_dd_stub_qemu_v(const struct hv_result *r)
{
	long reads = 0, opens = 0;

	for (size_t i = 0; i < r->nr_lines; i++) {
		if (strcmp(r->lines[i].comm, "dd"))
			continue;
		assert_true(r->lines[i].pid > 1);
		reads += !strcmp(r->lines[i].func, "vfs_read");
		opens += !strcmp(r->lines[i].func, "do_sys_openat2");
	}
	printf("qemu %s: dd vfs_read %ld do_sys_openat2 %ld, stub records %ld tasks-changed %ld\n",
	       test_qemu, reads, opens, hv_stat(r->err, "stub probes ", "records "),
	       hv_stat(r->err, "stub probes ", "tasks-changed "));
	assert_int_equal(reads, 7);
	assert_int_equal(opens, 14);
	assert_true(hv_stat(r->err, "stub probes ", "records ") >= 21);
	assert_int_equal(hv_stat(r->err, "stub probes ", "lost "), 0);
	assert_int_equal(hv_stat(r->err, "stub probes ", "guest-reported-lost "), 0);
	assert_int_equal(hv_stat(r->err, "kaslr-slide ", "stops "), 0);
	qemu_v_memory(r);
}

/* function_graph -g do_sys_openat2 --funcgraph-retval --comm dd on a QEMU_V (hvt.bm=7): exactly the 7
 * dd runs' 14 opens, each entry with its return, whose value is fd 3 (busybox dd opens if= and of= at
 * the lowest free fd, then moves each to 0 and 1). The detach comes while the guest's file workload
 * may still run (hvt.rounds=900 lasts about as long as --duration 40 on a loaded host): calls of
 * other tasks in flight then have their return slots handed back (restored-slots, printed), which
 * the guest's finishing its workload afterwards shows was right. */
static void seven_dd_graph_qemu_v(const struct hv_result *r)
{
	long entries = count_text(r->trace, "|  do_sys_openat2() {\n"),
	     exits = count_text(r->trace, "|  } /* do_sys_openat2 ret=");

	printf("qemu %s: dd do_sys_openat2 graphs %ld, returns %ld, restored-slots %ld\n", test_qemu,
	       entries, exits, hv_restored_slots(r->err));
	assert_int_equal(entries, 14);
	assert_int_equal(exits, 14);
	assert_int_equal(count_text(r->trace, "|  } /* do_sys_openat2 ret=0x3 */\n"), 14);
	qemu_v_memory(r);
}

/* KernelShark 2.4 (Debian 13's libkshark, hv_trixie_kernelshark) loads record_dat headless as its GUI
 * does and has every record trace-cmd 3.3 reports, in the same order, each with the same task, pid, CPU,
 * time, event and text (and so has trace-cmd 3.1.6 of the machine). They are exactly the guest's 7 dd
 * runs (hvt.bm=7, --comm dd): each a function record of vfs_read (from ksys_read) and 2 opens, the
 * records of do_sys_openat2's -e event with its typed arguments, one of them of the status file. */
static void same_in_kernelshark_2_4(const struct hv_result *r)
{
	static const char *const counted[] = {
	    ": function: vfs_read <-- ksys_read\n", ": do_sys_openat2__entry_0: (",
	    " dfd=-100 filename=\"/tmp/binfmt/status\"\n", " dfd=-100 filename=\"/dev/null\"\n"};
	static const long want[] = {7, 14, 7, 7};
	const char *root = hv_trixie_root();
	char *tc, *tc_records, *tc33, *tc33_records, *ks;
	long entries = -1;

	(void)r;
	tc = hv_sh("trace-cmd report -O parent -i %s 2>&1", record_dat);
	tc_records = hv_trace_cmd_records(tc);
	assert_int_equal(count_lines(tc_records), 21);
	assert_int_equal(count_text(tc_records, "\ndd-") + !strncmp(tc_records, "dd-", 3), 21);
	for (size_t i = 0; i < 4; i++)
		if (count_text(tc_records, counted[i]) != want[i])
			fail_msg("trace-cmd 3.1.6: \"%s\" %ld times, not %ld: %.2000s", counted[i],
				 count_text(tc_records, counted[i]), want[i], tc_records);
	if (!root)
		goto out;
	tc33 = hv_trixie_trace_cmd(root, "-O parent", record_dat);
	tc33_records = hv_trace_cmd_records(tc33);
	assert_string_equal(tc33_records, tc_records);
	ks = hv_trixie_kernelshark(root, record_dat);
	if (ks) {
		assert_int_equal(sscanf(ks, "entries=%ld\n", &entries), 1);
		assert_int_equal(entries, 21);
		/* the whole list, record by record */
		assert_string_equal(strchr(ks, '\n') + 1, tc33_records);
		printf("KernelShark 2.4 and trace-cmd 3.3 (and 3.1.6) agree on %s: %ld records\n",
		       record_dat, entries);
		free(ks);
	}
	free(tc33);
	free(tc33_records);
out:
	free(tc);
	free(tc_records);
	unlink(record_dat);
}

/* tests/qemu/boot-test.session's verdicts: the --summary counts are the trace's, the --junit report
 * is valid against tests/common/junit.xsd and junitparser reads two passes and the one failure. */
static void check_boot_verdicts(const struct hv_result *r)
{
	long reads = trace_count(r, "vfs_read", -1), opens = trace_count(r, "do_sys_openat2", -1);
	char want[1024], *got;

	assert_true(reads >= 10 && opens > 0);
	got = hv_command_output("jq -c '[.exit_status, .unmet, (.functions[] | select(.name == "
				"\"vfs_read\") | .calls), (.functions[] | select(.name == "
				"\"do_sys_openat2\") | .calls)]' /tmp/hvtrace-test-linux-summary.json");
	snprintf(want, sizeof(want), "[7,1,%ld,%ld]\n", reads, opens);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
	got = hv_command_output("xmllint --noout --schema tests/common/junit.xsd "
				"/tmp/hvtrace-test-linux-junit.xml 2>&1 && tests/common/junit_cases.py "
				"/tmp/hvtrace-test-linux-junit.xml");
	snprintf(want, sizeof(want),
		 "/tmp/hvtrace-test-linux-junit.xml validates\n"
		 "hvtrace|hvtrace.expect|--expect-call vfs_read>=10|passed\n"
		 "hvtrace|hvtrace.expect|--expect-call do_sys_openat2>0|passed\n"
		 "hvtrace|hvtrace.expect|--expect-no-call do_sys_openat2|failure|expect-no-call|the "
		 "guest called it %ld times\n",
		 opens);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
	unlink("/tmp/hvtrace-test-linux-summary.json");
	unlink("/tmp/hvtrace-test-linux-junit.xml");
}

/* hvt.bench=3: 3 rounds of the file workload, 2 opens of /etc/motd each, every one traced once
 * through a trap probe whose NOP5 hvtrace emulates (RIP + 5 while stopped; a wrong length or a
 * skipped instruction would lose or double events, or crash the guest). */
static void six_motd_opens(const struct hv_result *r)
{
	assert_int_equal(
	    count_text(r->trace, "->do_sys_openat2(dfd=-100 filename=\"/etc/motd\")\n"), 6);
}

static void nop5_emulated(const struct hv_result *r)
{
	six_motd_opens(r);
	assert_int_equal(hv_stat(r->err, "kaslr-slide ", "nop5-refused "), 0);
}

/* The same with the guest's own ftrace on do_sys_openat2 (hvt.ftrace): the guest turned the NOP5
 * under the trap probe into a CALL. hvtrace refuses to emulate a NOP5 that is not there and steps
 * the CALL instead: the guest's tracer sees the calls (had the CALL been skipped it would count
 * none), each of them a refused emulation, and every open is still traced exactly once. */
static void nop5_refused_under_guest_ftrace(const struct hv_result *r)
{
	const char *f = strstr(r->console, "hvt-linux: bench ftrace-events ");
	long events, refused = hv_stat(r->err, "kaslr-slide ", "nop5-refused ");

	six_motd_opens(r);
	assert_non_null(f);
	events = strtol(f + strlen("hvt-linux: bench ftrace-events "), NULL, 10);
	assert_true(events >= 6);
	assert_true(refused >= events);
}

/* Issue 36, the guest's own ftrace and hvtrace's stub probes on vfs_read (scripts/guest-init.sh
 * hvt.share): the number after @key in the @nth (from 0) console line that has it, or -1. */
static long share_number(const char *console, const char *key, int nth)
{
	const char *at = console;

	for (int i = 0; at && (at = strstr(at, key)); i++, at += strlen(key))
		if (i == nth)
			return strtol(at + strlen(key), NULL, 10);
	return -1;
}

/* dd's vfs_read lines in hvtrace's trace */
static long dd_reads(const struct hv_result *r)
{
	long n = 0;

	for (size_t i = 0; i < r->nr_lines; i++)
		n += !strcmp(r->lines[i].comm, "dd") && !strcmp(r->lines[i].func, "vfs_read");
	printf("dd vfs_read %ld; %s", n, strstr(r->err, "hvtrace: stats: shared-with-guest") ?: "");
	return n;
}

/* hvtrace first: its stub probe on vfs_read in before the guest's tracer comes and after it left,
 * so dd's 10 + 20 + 30 reads are all in hvtrace's trace (--comm dd), and so at its -e event at
 * vfs_read+9 (a stub detour); its fentry site was handed back to the guest's ftrace at its patcher
 * (yielded, shared), and the guest's CALL there ran under hvtrace's breakpoint for each of the 20
 * reads it traced too; the detour went back at the guest's kprobe patcher before its kprobe at
 * vfs_read+0xb, and stayed the guest's through hvtrace's detach. */
static void share_hvtrace_first(const struct hv_result *r)
{
	assert_int_equal(dd_reads(r), 60);
	assert_int_equal(count_text(r->trace, ": vfs_read+0x9()\n"), 60);
	assert_int_equal(hv_stat(r->err, "shared-with-guest ", "shared-with-guest "), 2);
	/* handed back at the guest's first update, the stub's CALL back once its hooks are off */
	assert_true(hv_stat(r->err, "shared-with-guest ", "yielded ") >= 2);
	assert_true(hv_stat(r->err, "shared-with-guest ", "returned ") >= 2);
	assert_int_equal(hv_stat(r->err, "shared-with-guest ", "patchers "), 3);
	assert_true(hv_stat(r->err, "shared-with-guest ", "patcher-stops ") >= 1);
	assert_true(hv_stat(r->err, "kaslr-slide ", "nop5-refused ") >= 20);
	assert_null(strstr(r->err, "must not be turned on"));
}

/* ... and the guest's side: its function tracer saw dd's 20 reads, its kprobe on vfs_write fired at
 * least for dd's 21 writes (20 bytes, then one write of its status lines to stderr; kprobe_profile
 * counts every task's), its kprobe at vfs_read+0xb dd's 30 reads, and 5 after hvtrace's detach, no
 * ftrace warning in its log, and after the detach a new filter (vfs_write) traces dd's 6 writes. */
static void share_hvtrace_first_guest(const char *console)
{
	printf("%s", strstr(console, "hvt-linux: share guest-reads") ?: "");
	assert_int_equal(share_number(console, "hvt-linux: share guest-reads ", 0), 20);
	assert_true(share_number(console, " kprobe-hits ", 0) >= 21);
	assert_int_equal(share_number(console, "hvt-linux: share kprobe-inside-reads ", 0), 30);
	assert_int_equal(share_number(console, "hvt-linux: share kprobe-inside-after ", 0), 5);
	assert_int_equal(share_number(console, "hvt-linux: share after-detach writes ", 0), 6);
	assert_int_equal(share_number(console, "hvt-linux: share ftrace-warnings ", 0), 0);
}

/* ---- hist triggers (issue 39): hvtrace's hist beside the guest's own ------------------------- */

#define HIST_READS 50 /* hvt.hist: dd's one-byte reads, each one vfs_read */

/* The hitcounts summed over the lines of task @pid (-1: the first line of @comm gives it) in a
 * hist text keyed by common_pid.execname first ("{ common_pid: dd              [       123]...
 * } hitcount:         50"), from @text up to @end (NULL: its end); *@pid gets the pid. */
static long hist_hits(const char *text, const char *end, const char *comm, long *pid)
{
	long sum = 0;

	for (const char *at = text; at && (at = strstr(at, "{ common_pid: ")) && (!end || at < end);
	     at++) {
		const char *name = at + strlen("{ common_pid: "), *br = strchr(name, '[');
		const char *hc = strstr(name, "} hitcount:");
		size_t len = strcspn(name, " [");
		long p;

		if (!br || !hc || len != strlen(comm) || strncmp(name, comm, len))
			continue;
		p = strtol(br + 1, NULL, 10);
		if (*pid < 0)
			*pid = p;
		if (p == *pid)
			sum += strtol(hc + strlen("} hitcount:"), NULL, 10);
	}
	return sum;
}

/* what hvtrace's hist said of dd: its pid and calls, for the guest's side to compare */
static long hist_hv_pid = -1, hist_hv_dd = -1;

/* hvtrace's first two hist sections (of @sections): dd's calls of vfs_read keyed by
 * common_pid.execname, and its log2 latency histogram (keyed by pid, duration.log2) summing to as
 * many returns. */
static void check_hist_sections(const struct hv_result *r, int sections)
{
	const char *second;
	long pid = -1, pid2, sum;

	printf("%s", r->hist ? r->hist : "(no hist file)\n");
	assert_non_null(r->hist);
	assert_int_equal(count_text(r->hist, "# event histogram\n"), sections);
	assert_non_null(strstr(r->hist, "# trigger info: hist:keys=common_pid.execname:vals=hitcount:"
					"sort=hitcount:size=2048 [active]\n"));
	second = strstr(r->hist, "# trigger info: hist:keys=common_pid.execname,duration.log2:");
	assert_non_null(second);
	assert_int_equal(count_text(r->hist, "\nTotals:\n    Hits: "), sections);
	hist_hv_dd = hist_hits(r->hist, second, "dd", &pid);
	hist_hv_pid = pid;
	assert_true(pid > 1);
	assert_int_equal(hist_hv_dd, HIST_READS);
	pid2 = pid;
	sum = hist_hits(second, strstr(second, "\nTotals:"), "dd", &pid2);
	assert_int_equal(sum, HIST_READS);
	assert_non_null(strstr(second, "duration: ~ 2^"));
}

/* -p nop (stub probes): the hists alone, no function line in the trace, counted by the stub in
 * the guest: no record at all, one counting site, its tables read back whole */
static void check_hist_nop(const struct hv_result *r)
{
	const char *mid = r->err ? strstr(r->err, "hvtrace: SIGUSR2: the hists so far (2, hits ") : NULL;
	long mid_hits, end_hits = 0;

	check_hist_sections(r, 2);
	/* the SIGUSR2 45 s in: both hists written then, with what the stub had counted by then (no
	 * more than at the end), into the .hist file the end wrote again */
	assert_non_null(mid);
	mid_hits = strtol(mid + strlen("hvtrace: SIGUSR2: the hists so far (2, hits "), NULL, 10);
	for (const char *at = r->hist; (at = strstr(at, "\nTotals:\n    Hits: ")); at++)
		end_hits += strtol(at + 19, NULL, 10);
	printf("hits at SIGUSR2: %ld, at the end: %ld\n", mid_hits, end_hits);
	assert_true(mid_hits > 0);
	assert_true(mid_hits <= end_hits);
	assert_non_null(strstr(mid, ".hist\n"));
	assert_int_equal(r->status, 0);
	assert_int_equal(r->nr_lines, 0);
	printf("stub records %ld\n", hv_stat(r->err, "stub probes ", "records "));
	assert_int_equal(hv_stat(r->err, "stub probes ", "stub probes "), 1);
	assert_int_equal(hv_stat(r->err, "stub probes ", "records "), 0);
	assert_int_equal(hv_stat(r->err, "stub counting sites ", "stub counting sites "), 1);
	assert_true(hv_stat(r->err, "stub counting sites ", "entries-read ") >= 2);
	assert_int_equal(hv_stat(r->err, "stub counting sites ", "agg-rejected "), 0);
	assert_int_equal(hv_stat(r->err, "stub counting sites ", "agg-dropped "), 0);
}

/* -p function (trap probes): dd's vfs_read lines in the plain function trace are as many as its
 * hitcount; the returns hooked for the duration hist alone print nothing */
static void check_hist_function(const struct hv_result *r)
{
	const char *third;
	long n = 0, all = 0, pid;

	check_hist_sections(r, 3);
	for (size_t i = 0; i < r->nr_lines; i++) {
		n += !strcmp(r->lines[i].comm, "dd") && r->lines[i].pid == hist_hv_pid &&
		     !strcmp(r->lines[i].func, "vfs_read");
		all += !strcmp(r->lines[i].func, "vfs_read");
	}
	printf("dd's vfs_read lines in the function trace: %ld (all tasks': %ld)\n", n, all);
	assert_int_equal(n, hist_hv_dd);
	/* the third, keyed by pid and stacktrace (the host's walk at each breakpoint): every task's
	 * hitcounts sum to every call in the trace; the kernel (ORC, no frame pointers) gives the
	 * frames the host can vouch for, vfs_read and its caller, so dd's 50 reads are one entry;
	 * no stack line in the trace */
	third = strstr(r->hist, "# trigger info: hist:keys=common_pid.execname,stacktrace:");
	assert_non_null(third);
	pid = hist_hv_pid;
	assert_int_equal(hist_hits(third, NULL, "dd", &pid), HIST_READS);
	assert_int_equal(strtol(strstr(third, "\nTotals:\n    Hits: ") + 19, NULL, 10), all);
	assert_int_equal(count_text(third, "], stacktrace:\n         vfs_read+0x0/0x"),
			 count_text(third, "], stacktrace:\n"));
	{
		char want[160];

		snprintf(want, sizeof(want), "[%10ld], stacktrace:\n         vfs_read+0x0/0x", pid);
		const char *dd = strstr(third, want);

		assert_non_null(dd);
		dd = strchr(dd + strlen(want), '\n');
		assert_non_null(dd);
		assert_memory_equal(dd, "\n         ksys_read+0x", 22);
		dd = strchr(dd + 1, '\n');
		assert_non_null(dd);
		assert_memory_equal(dd, "\n} hitcount:         50\n", 24);
	}
	assert_null(strstr(r->trace, "<stack trace>"));
	assert_null(strstr(r->trace, "r_vfs_read"));
	assert_null(strstr(r->trace, "<-vfs_read"));
}

/* the guest's own hist (its kprobe event on vfs_read, or ksys_read: hist:keys=common_pid.execname):
 * dd's pid and hitcount equal to hvtrace's */
static void check_hist_guest(const char *console)
{
	const char *begin = strstr(console, "hvt-linux: hist begin"), *end;
	long pid = share_number(console, "hvt-linux: hist dd pid ", 0), kpid = pid;

	assert_non_null(begin);
	end = strstr(begin, "hvt-linux: hist end");
	assert_non_null(end);
	printf("%.*s\n", (int)(end - begin), begin);
	assert_non_null(strstr(begin, "# trigger info: hist:keys=common_pid.execname:vals=hitcount:"
				      "sort=hitcount:size=2048 [active]"));
	assert_int_equal(hist_hits(begin, end, "dd", &kpid), HIST_READS);
	assert_int_equal(pid, hist_hv_pid);
	assert_int_equal(HIST_READS, hist_hv_dd);
}

/* ---- the function profiler (issue 39): counted in the guest ---------------------------------- */

/* --profile -p nop -l '*' --probe stub: every function counted in the guest, no record at all:
 * bm_status_read's Hit the 7 status reads of the workload (as many as the function trace of the
 * same workload has lines, test_attach_kallsyms_module), vfs_read's Hit the hist's Totals (the
 * same tables), each CPU's section summing to the merged one, and ftrace's columns. */
static void check_profile_stub(const struct hv_result *r)
{
	long hist_hits = -1, cpu0, cpu1, all;
	const char *tot = r->hist ? strstr(r->hist, "Totals:\n    Hits: ") : NULL;
	double ns = 0;

	assert_non_null(r->profile);
	printf("%.*s...\n", (int)strcspn(r->profile, "\n") + 400, r->profile);
	assert_int_equal(r->nr_lines, 0);
	assert_non_null(strstr(r->profile,
			       "trace_stat/function0:\n  Function                     "
			       "          Hit    Time            Avg             s^2\n"));
	assert_int_equal(hv_profile_hits(r->profile, "(all CPUs):", "bm_status_read", &ns), 7);
	assert_true(ns > 0);
	cpu0 = hv_profile_hits(r->profile, "function0:", "bm_status_read", NULL);
	cpu1 = hv_profile_hits(r->profile, "function1:", "bm_status_read", NULL);
	assert_int_equal((cpu0 > 0 ? cpu0 : 0) + (cpu1 > 0 ? cpu1 : 0), 7);
	all = hv_profile_total(r->profile, "(all CPUs):");
	printf("profile: %ld calls in all, CPU 0 %ld, CPU 1 %ld\n", all,
	       hv_profile_total(r->profile, "function0:"), hv_profile_total(r->profile, "function1:"));
	assert_true(all > 100000);
	assert_int_equal(
	    hv_profile_total(r->profile, "function0:") + hv_profile_total(r->profile, "function1:"), all);
	assert_non_null(tot);
	hist_hits = strtol(tot + strlen("Totals:\n    Hits: "), NULL, 10);
	assert_int_equal(hv_profile_hits(r->profile, "(all CPUs):", "vfs_read", NULL), hist_hits);
	printf("stub records %ld, counting sites %ld, entries read %ld\n",
	       hv_stat(r->err, "stub probes ", "records "),
	       hv_stat(r->err, "stub counting sites ", "stub counting sites "),
	       hv_stat(r->err, "stub counting sites ", "entries-read "));
	assert_int_equal(hv_stat(r->err, "stub probes ", "records "), 0);
	assert_true(hv_stat(r->err, "stub counting sites ", "stub counting sites ") > 10000);
	assert_int_equal(hv_stat(r->err, "stub counting sites ", "agg-rejected "), 0);
	assert_int_equal(hv_stat(r->err, "stub counting sites ", "agg-dropped "), 0);
	/* the SIGUSR2 dump 45 s in (the stub's tables read with the guest running), to the side files
	 * the end then rewrote */
	assert_non_null(r->err);
	assert_non_null(strstr(r->err, "hvtrace: SIGUSR2: the profile so far in "));
	assert_null(strstr(r->err, "SIGUSR2: the profile so far (the stub's tables could not be read)"));
	assert_non_null(strstr(r->err, "hvtrace: SIGUSR2: the hists so far (1, hits "));
}

/* --profile -p nop -l vfs_read with trap probes: nothing in the trace, vfs_read's calls and their
 * times in the profile from the records (its returns hooked for the profile alone), as many calls
 * as hvtrace's summary counts, no counting site */
static void check_profile_trap(const struct hv_result *r)
{
	long hits;
	double ns = 0;
	char line[64];

	assert_non_null(r->profile);
	printf("%s", r->profile);
	assert_int_equal(r->nr_lines, 0);
	hits = hv_profile_hits(r->profile, "(all CPUs):", "vfs_read", &ns);
	assert_true(hits > 0);
	assert_true(ns > 0);
	snprintf(line, sizeof(line), "\n  %-30s %10ld ", "vfs_read", hits);
	assert_non_null(strstr(r->err, line)); /* the summary's Hit */
	assert_int_equal(hv_stat(r->err, "stub counting sites ", "stub counting sites "), -1);
}

/* ---- the tests ------------------------------------------------------------------------------- */

#define WORKLOAD_DONE "hvt-linux: workload done"
#define POWER_DOWN    "reboot: Power down"
#define TEXT_KEPT     "--verify-text: kernel text unchanged"
#define NO_STOPS      " stops 0 hits 0 "

/* clang-format off */
static const struct linux_test linux_tests[] = {
    {
	.name = "test_bad_input",
	.runs = {
	    {
		.label = "run --qemu, no System.map",
		.cmd = RAW,
		.args = {"run", "--qemu", "--kernel", KERNEL, "--system-map", "/nonexistent/map"},
		.expect = {
		    .status = 2,
		    .err_is = "hvtrace: --system-map /nonexistent/map: No such file or directory\n",
		},
	    },
	    {
		/* a fresh machine has no libvirtd yet: start it so the lookup itself is what
		 * fails */
		.label = "attach, no such domain",
		.cmd = RAW,
		.args = {"attach", "no-such-domain", "--system-map", SYSMAP},
		.libvirtd = true,
		.expect = {
		    .status = 6,
		    .err_is = "hvtrace: libvirt domain 'no-such-domain': no such domain\n",
		},
	    },
	    {
		.label = "record --qemu --host-event of no such host event",
		.cmd = RAW,
		.args = {"record", "--qemu", "--kernel", KERNEL, "--host-event", "nosuch:event", "-o",
			 RECORD_DAT},
		.expect = {
		    .status = 2,
		    .err_is = "hvtrace: --host-event nosuch:event: the host's tracefs has no such "
			      "event\n",
		},
	    },
	    {
		.label = "attach, no QMP socket",
		.cmd = RAW,
		.args = {"attach", "--qmp", "/nonexistent/qmp.sock", "--system-map", SYSMAP},
		/* the path is bad input, named as such (issue 37): not "Connection refused" */
		.expect = {.status = 2,
			   .err_is = "hvtrace: qmp /nonexistent/qmp.sock: No such file or "
				     "directory\n"},
	    },
	},
    },
    {
	/* run --qemu, KASLR on (the default): the function tracer with the real comm of each
	 * event. */
	.name = "test_run_qemu_function_kaslr",
	.runs = {{
	    .label = "run --qemu -p function",
	    .cmd = RUN_QEMU,
	    .append = "hvt.yes_sec=1",
	    .args = {"-p", "function", "-l", "vfs_read", "-l", "do_sys_openat2", "--expect-call",
		     "vfs_read", "--expect-call", "do_sys_openat2", "--stats", "--timeout", "300"},
	    .expect = {
		.console = {WORKLOAD_DONE, POWER_DOWN},
		.err = {"kaslr-slide 0x"},
		.lines_over = 10,
		.only = {"vfs_read", "do_sys_openat2"},
		/* the workload's own processes, by name (busybox cat uses sendfile, not
		 * vfs_read) */
		.tasks = {{"do_sys_openat2", {"cat"}},
			  {"do_sys_openat2", {"head"}},
			  {"vfs_read", {"tail", "sed", "head"}}},
	    },
	}},
    },
    {
	/* No --system-map: the symbols from the guest's own kallsyms, with KASLR; the same function
	 * trace as with the map. */
	.name = "test_run_qemu_kallsyms",
	.runs = {{
	    .label = "run --qemu -p function, symbols from kallsyms",
	    .cmd = RUN_QEMU,
	    .no_map = true,
	    .append = "hvt.yes_sec=1",
	    .args = {"-p", "function", "-l", "vfs_read", "-l", "do_sys_openat2", "--expect-call",
		     "vfs_read", "--expect-call", "do_sys_openat2", "--stats", "--timeout", "300"},
	    .expect = {
		.console = {WORKLOAD_DONE, POWER_DOWN},
		.err = {"hvtrace: symbols: ", " from the guest's kallsyms (kernel 6.", "kaslr-slide 0x"},
		.lines_over = 10,
		.only = {"vfs_read", "do_sys_openat2"},
		.tasks = {{"do_sys_openat2", {"cat"}},
			  {"do_sys_openat2", {"head"}},
			  {"vfs_read", {"tail", "sed", "head"}}},
	    },
	}},
    },
    {
	/* System.maps that cannot be used, each refused with one line that says what to do:
	 * Debian's symbol-less one (at once), and a map of another kernel (once the kernel is up, its
	 * kallsyms tell). */
	.name = "test_system_map_errors",
	.runs = {
	    {
		.label = "run --qemu, Debian's symbol-less System.map",
		.cmd = RAW,
		.args = {"run", "--qemu", "--kernel", KERNEL, "--system-map", NOSYMS_MAP},
		.expect = {
		    .status = 2,
		    .err_lines = 1,
		    .err = {" holds no symbols (Debian puts the real System.map in the kernel's "
			    "-dbg package): omit --system-map to read the symbols from the guest's "
			    "kallsyms\n"},
		},
	    },
	    {
		.label = "run --qemu, the System.map of another kernel",
		.cmd = RUN_QEMU,
		.no_map = true,
		.append = "hvt.yes_sec=1",
		.args = {"--system-map", OTHER_MAP, "--timeout", "300"},
		.expect = {
		    .status = 2,
		    .err_lines = 1,
		    .err = {" is for another kernel: no \"Linux version\" at its linux_banner at any "
			    "KASLR slide (the guest runs 6.",
			    "); omit --system-map to read the symbols from the guest's kallsyms\n"},
		},
	    },
	},
    },
    {
	/* attach by libvirt name to a q35 domain of 4 GiB (2 GiB of its RAM above 4 GiB), no file
	 * from the guest: list-functions from its kallsyms (its module's functions included) is the
	 * list --system-map gives (and with --entry, the functions without an fentry site among them);
	 * a function of the module binfmt_misc is traced, exactly the 7
	 * status reads the guest makes, with the opens of that file as an -e event typed from BTF;
	 * then function_graph, return slots hooked above 4 GiB, each entry with its return. */
	.name = "test_attach_kallsyms_module",
	.domain = "hvt.rounds=800 hvt.yes_sec=2 hvt.bm=7 hvt.bm_wait=20",
	.machine = "q35",
	.mem_mb = 4096,
	.console_after = {"hvt-linux: binfmt_misc status read 7 times", WORKLOAD_DONE},
	.runs = {
	    {
		.label = "list-functions NAME",
		.cmd = RAW,
		.args = {"list-functions", DOMAIN_ARG},
		.expect = {
		    .err = {" from the guest's kallsyms (kernel 6.", "; modules: 1, with "},
		    .check = keep_listing,
		},
	    },
	    {
		.label = "list-functions NAME --system-map --entry",
		.cmd = RAW,
		.args = {"list-functions", DOMAIN_ARG, "--system-map", SYSMAP, "--entry"},
		.expect = {.err = {" from System.map "}, .check = same_listing_and_entries},
	    },
	    {
		.label = "attach -l bm_status_read",
		.cmd = ATTACH,
		.no_map = true,
		.args = {"-p", "function", "-l", "bm_status_read", "-e",
			 "do_sys_openat2(dfd, filename)", "--duration", "30", "--verify-text"},
		.expect = {.err = {TEXT_KEPT}, .check = seven_bm_reads},
	    },
	    {
		.label = "attach -p function_graph (q35, 4 GiB)",
		.cmd = ATTACH,
		.no_map = true,
		.args = {"-p", "function_graph", "-g", "do_sys_openat2", "--duration", "6",
			 "--verify-text", "--profile", "--stats"},
		.expect = {
		    .err = {TEXT_KEPT},
		    .above_4g = true,
		    .profile = true,
		    .trace = {"|  do_sys_openat2() {\n"},
		},
	    },
	    {
		.label = "record attach -p function_graph",
		.cmd = ATTACH,
		.record = true,
		.no_map = true,
		.args = {"-o", RECORD_DAT, "-p", "function_graph", "-g", "do_sys_openat2",
			 "--duration", "6", "--verify-text"},
		.expect = {.err = {TEXT_KEPT}, .check = check_record_attach_graph},
	    },
	},
    },
    {
	/* -p function_graph -g do_sys_openat2 with an -e event on vfs_read, which runs outside that
	 * graph (issue 23): trap probes as text, stub probes as JSON Lines, and record + report. */
	.name = "test_run_qemu_graph_event_outside",
	.runs = {
	    {
		.label = "run --qemu --probe trap -p function_graph -g -e",
		.cmd = RUN_QEMU,
		.append = "hvt.bm=7 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
		.args = {"--probe", "trap", "-p", "function_graph", "-g", "do_sys_openat2",
			 "--max-depth", "2", "-e",
			 "vfs_read(file->f_path.dentry->d_name.name, count)", "--timeout", "300"},
		.expect = {.console = {WORKLOAD_DONE, POWER_DOWN},
			   .check = check_graph_event_outside},
	    },
	    {
		.label = "run --qemu --probe stub -p function_graph -g -e --format jsonl",
		.cmd = RUN_QEMU,
		.append = "hvt.bm=7 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
		.args = {"--probe", "stub", "-p", "function_graph", "-g", "do_sys_openat2", "--comm",
			 "dd", "-e", "vfs_read(count)", "--format", "jsonl", "--timeout", "300"},
		.expect = {.console = {WORKLOAD_DONE, POWER_DOWN},
			   .check = check_graph_event_outside_stub},
	    },
	    {
		.label = "record --qemu -p function_graph -g -e",
		.cmd = RUN_QEMU,
		.record = true,
		.append = "hvt.bm=7 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
		.args = {"-o", RECORD_DAT, "--probe", "trap", "-p", "function_graph", "-g",
			 "do_sys_openat2", "--comm", "dd", "-e", "vfs_read(count)", "--timeout",
			 "300"},
		.expect = {.console = {WORKLOAD_DONE, POWER_DOWN},
			   .check = check_record_graph_event_outside},
	    },
	},
    },
    {
	/* record --host: the host's sched events of the vCPU threads beside the guest's trace.dat,
	 * paired for trace-cmd's host-guest reading (issue 26) */
	.name = "test_record_qemu_host",
	.runs = {
	    {
		.label = "record --qemu --host --probe stub",
		.cmd = RUN_QEMU,
		.record = true,
		.append = "hvt.bm=7 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
		.args = {"-o", RECORD_DAT, "--host", "--host-event", "irq:softirq_entry", "--probe",
			 "stub", "-l", "vfs_read", "-l", "do_sys_openat2", "--timeout", "300"},
		.expect = {.console = {WORKLOAD_DONE, POWER_DOWN},
			   .err = {"hvtrace: the host's side: "},
			   .check = check_record_host},
	    },
	    {
		.label = "record --qemu --host --probe trap",
		.cmd = RUN_QEMU,
		.record = true,
		.append = "hvt.bm=7 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
		.args = {"-o", RECORD_DAT, "--host", "--probe", "trap", "-l", "vfs_read", "-l",
			 "do_sys_openat2", "--timeout", "300"},
		.expect = {.console = {WORKLOAD_DONE, POWER_DOWN},
			   .err = {"hvtrace: the host's side: "},
			   .check = check_record_host_trap},
	    },
	    {
		.label = "record --qemu --host -p function_graph, report --exits",
		.cmd = RUN_QEMU,
		.record = true,
		.append = "hvt.bm=7 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
		.args = {"-o", RECORD_DAT, "--host", "--probe", "stub", "-p", "function_graph", "-l",
			 "vfs_read", "-l", "ksys_read", "-l", "do_sys_openat2", "--timeout", "300"},
		.expect = {.console = {WORKLOAD_DONE, POWER_DOWN},
			   .err = {"hvtrace: the host's side: "},
			   .check = check_report_exits},
	    },
	},
    },
    {
	/* A launched guest that resets where it would power off (QEMU runs with -no-reboot, so it
	 * exits 0 either way): QMP's SHUTDOWN reason tells the two apart, and a reset is a guest
	 * fault (exit 3, one line), never a clean end. */
	.name = "test_run_qemu_guest_reset",
	.runs = {
	    {
		.label = "run --qemu, the guest reboots at the end",
		.cmd = RUN_QEMU,
		.append = "hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1 hvt.end=reboot",
		.args = {"--probe", "stub", "-l", "vfs_read", "--timeout", "300"},
		.expect = {.status = 3,
			   .console = {WORKLOAD_DONE, "reboot: Restarting system"},
			   .err = {"hvtrace: the guest reset itself instead of powering off (a "
				   "triple fault, or a reboot; see the console)\n"},
			   .lines_over = 10},
	    },
	},
    },
    {
	/* Functions without an fentry site (notrace, noinstr) probed at their first instruction,
	 * which then runs in place (issue 25): the scheduler, a graph through the syscall entry, an
	 * -e event beside stub probes; the kernel text byte-identical after detach. */
	.name = "test_run_qemu_entry_probes",
	.runs = {
	    {
		.label = "run --qemu -l __schedule --duration 3",
		.cmd = RUN_QEMU,
		.append = "hvt.bm=1 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
		.args = {"--probe", "trap", "-l", "__schedule", "--verify-text", "--duration", "3",
			 "--timeout", "300"},
		.expect = {.console = {WORKLOAD_DONE, POWER_DOWN},
			   .only = {"__schedule"},
			   .lines_over = 0},
	    },
	    {
		.label = "run --qemu --probe trap -p function_graph -l do_syscall_64 -l ksys_read",
		.cmd = RUN_QEMU,
		.append = "hvt.bm=7 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
		.args = {"--probe", "trap", "-p", "function_graph", "-l", "do_syscall_64", "-l",
			 "ksys_read", "--comm", "dd", "--timeout", "300"},
		.expect = {.console = {WORKLOAD_DONE, POWER_DOWN}, .check = check_entry_graph},
	    },
	    {
		.label = "run --qemu --probe stub -l vfs_read -e 'do_syscall_64(nr)'",
		.cmd = RUN_QEMU,
		.append = "hvt.bm=7 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
		.args = {"--probe", "stub", "-p", "function", "-l", "vfs_read", "-e",
			 "do_syscall_64(nr)", "--filter-event", "do_syscall_64: nr == 0", "--comm",
			 "dd", "--verify-text", "--stats", "--timeout", "300"},
		/* the kernel's own W+X check, late in boot with the stub and its detour mapped:
		 * no page of theirs both writable and executable */
		.expect = {.console = {"x86/mm: Checked W+X mappings: passed, no W+X pages found",
				       WORKLOAD_DONE, POWER_DOWN},
			   .err = {"hvtrace: 1 function without an fentry site probed at its entry "
				   "through a stub detour\n",
				   " stops 0 hits 0 ", " lost 0 "},
			   .check = check_entry_event},
	    },
	    {
		/* the scheduler through a detour, its returns hooked (tasks sleep inside it), and
		 * the detach while the guest runs (its `yes` outlives --duration, so the text is
		 * verified on a live guest): every hooked return handed back, the text as it was */
		.label = "run --qemu --probe stub -p function_graph -l __schedule --duration 3",
		.cmd = RUN_QEMU,
		.append = "hvt.bm=1 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=8",
		.args = {"--probe", "stub", "-p", "function_graph", "-l", "__schedule",
			 "--verify-text", "--stats", "--duration", "3", "--timeout", "300"},
		.expect = {.console = {WORKLOAD_DONE, POWER_DOWN},
			   .err = {"hvtrace: 1 function without an fentry site probed at its entry "
				   "through a stub detour\n",
				   " stops 0 hits 0 ", " lost 0 ", "kernel text unchanged where"},
			   .check = check_schedule_detour},
	    },
	},
    },
    {
	/* An entry probe on asm code (not a C function in the guest's BTF) under function_graph
	 * traces its entries alone; -r on one is refused (issue 25). */
	.name = "test_run_qemu_entry_only",
	.runs = {
	    {
		.label = "run --qemu --probe trap -p function_graph -l kernel_clone -l ret_from_fork",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"--probe", "trap", "-p", "function_graph", "-l", "kernel_clone", "-l",
			 "ret_from_fork", "--stats", "--timeout", "300"},
		.expect = {.console = {WORKLOAD_DONE, POWER_DOWN},
			   .err = {"hvtrace: ret_from_fork: not a C function in the guest's BTF: its "
				   "entries are traced, not its returns (it may be entered without a "
				   "CALL)\n"},
			   .check = check_entry_only},
	    },
	    {
		.label = "run --qemu -r ret_from_fork",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"--probe", "trap", "-r", "ret_from_fork", "--timeout", "300"},
		.expect = {.status = 2,
			   .err = {"hvtrace: -r ret_from_fork: not a C function in the guest's BTF, "
				   "so its return cannot be hooked (it may be entered without a "
				   "CALL)\n"}},
	    },
	},
    },
    {
	/* -g as set_graph_function: with stub probes the graph follows calls through function
	 * pointers (issue 25); with trap probes one line says how far it reaches. */
	.name = "test_run_qemu_graph_function_pointers",
	.runs = {
	    {
		.label = "run --qemu --probe stub -p function_graph -g vfs_read",
		.cmd = RUN_QEMU,
		.append = "hvt.bm=7 hvt.tmpfs=5 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
		.args = {"--probe", "stub", "-p", "function_graph", "-g", "vfs_read",
			 "--comm", "dd", "--stats", "--timeout", "300"},
		.expect = {.console = {WORKLOAD_DONE, POWER_DOWN},
			   .err = {" lost 0 "},
			   .check = check_graph_through_pointers},
	    },
	    {
		.label = "run --qemu --probe trap -p function_graph -g vfs_read --max-depth 2",
		.cmd = RUN_QEMU,
		.append = "hvt.bm=1 hvt.tmpfs=1 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
		.args = {"--probe", "trap", "-p", "function_graph", "-g", "vfs_read", "--max-depth",
			 "2", "--comm", "dd", "--timeout", "300"},
		.expect = {.console = {WORKLOAD_DONE, POWER_DOWN},
			   .err = {"hvtrace: -g with trap probes: the graph holds what its "
				   "functions reach by direct calls, 1 deep, not calls through "
				   "function pointers (--probe stub follows every call)\n"},
			   .trace = {"|  vfs_read() {\n"}},
	    },
	},
    },
    {
	/* run --qemu, nokaslr: function_graph under do_sys_openat2; every entry has its return. */
	.name = "test_run_qemu_graph_nokaslr",
	.runs = {{
	    .label = "run --qemu -p function_graph",
	    .cmd = RUN_QEMU,
	    .append = "nokaslr hvt.yes_sec=1",
	    .args = {"-p", "function_graph", "-g", "do_sys_openat2", "--funcgraph-retval",
		     "--profile", "--stats", "--timeout", "300"},
	    .expect = {
		.console = {WORKLOAD_DONE},
		.err = {"kaslr-slide 0x0 "},
		.none_in_flight = true, /* the guest powered off: nothing in flight */
		.profile = true,
		.profile_min = 6,
		.nest = {"|  do_sys_openat2() {\n", "|  } /* do_sys_openat2 ret=", 5},
		.trace = {"|    do_filp_open() {\n"},
	    },
	}},
    },
    {
	/* --verify-text on a kernel traced from early boot, detached while it runs: the kernel
	 * patches its own text meanwhile (alternatives, return thunks), which is reported, not
	 * blamed; every byte hvtrace patched is as it was. */
	.name = "test_run_qemu_verify_text",
	.runs = {{
	    .label = "run --qemu --verify-text --duration",
	    .cmd = RUN_QEMU,
	    .append = "hvt.yes_sec=1",
	    .args = {"-p", "function_graph", "-g", "do_sys_openat2", "--verify-text", "--duration",
		     "5", "--timeout", "300"},
	    .expect = {
		.console = {WORKLOAD_DONE, POWER_DOWN},
		.err = {TEXT_KEPT},
	    },
	}},
    },
    {
	/* Guest memory through the gdbstub's physical mode instead of /proc/PID/mem: same
	 * result. */
	.name = "test_run_qemu_gdb_memory",
	.runs = {{
	    .label = "run --qemu --gdb-memory",
	    .cmd = RUN_QEMU,
	    .append = "hvt.yes_sec=1",
	    .args = {"--gdb-memory", "-l", "vfs_read", "--expect-call", "vfs_read", "--timeout",
		     "300"},
	    .expect = {
		.lines_over = 10,
		.tasks = {{"vfs_read", {"tail", "sed", "tr"}}},
	    },
	}},
    },
    {
	/* -e with a string argument: the paths the guest's init and its workload open. */
	.name = "test_linux_event_openat",
	.runs = {
	    {
		.label = "run --qemu -e, -e do_sys_openat2+OFF",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"-e", "do_sys_openat2(int dfd, string filename)", "-e", INSIDE_OPENAT,
			 "--timeout", "300"},
		.expect = {
		    .counts = {{"->do_sys_openat2(dfd=-100, filename=/etc/motd)\n", 2},
			       {"->do_sys_openat2(dfd=-100, filename=/proc/version)\n", 2}},
		    .trace = {"             cat-"},
		    .check = check_openat_inside,
		},
	    },
	    {
		/* an offset inside an instruction: refused before anything is patched */
		.label = "run --qemu -e do_sys_openat2+1",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"-e", "do_sys_openat2+1(u64 a=%rdi)", "--timeout", "300"},
		.expect = {.status = 2, .err_lines = 0, .check = check_inside_refused},
	    },
	},
    },
    {
	/* -P and --comm (trace-cmd's task filter) on the guest's tasks: only that task's events;
	 * --filter-event on an -e event's fields. */
	.name = "test_linux_task_filter",
	.runs = {
	    {
		.label = "run --qemu --comm cat -e",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"--comm", "cat", "-e", "do_sys_openat2(dfd, filename)", "--stats",
			 "--timeout", "300"},
		.expect = {.check = check_comm_cat},
	    },
	    {
		.label = "run --qemu -P 1 -l kernel_clone",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"-P", "1", "-l", "kernel_clone", "--stats", "--timeout", "300"},
		.expect = {.check = check_pid_init},
	    },
	    {
		.label = "run --qemu -e --filter-event",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"-e", "do_sys_openat2(dfd, filename)", "--filter-event",
			 "do_sys_openat2: dfd == -100 && filename ~ \"/proc/v*\"", "--stats",
			 "--timeout", "300"},
		.expect = {.check = check_filter_event},
	    },
	},
    },
    {
	/* --trigger on the Linux guest: stacktrace through the text scan (no frame pointers), and
	 * traceoff. */
	.name = "test_linux_trigger",
	.runs = {
	    {
		.label = "run --qemu --trigger stacktrace",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"-l", "do_sys_openat2", "--comm", "cat", "--trigger",
			 "do_sys_openat2:stacktrace:1", "--timeout", "300"},
		.expect = {.check = check_stacktrace},
	    },
	    {
		.label = "run --qemu --trigger traceoff",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"-e", "do_sys_openat2(dfd, filename)", "--comm", "cat", "--trigger",
			 "do_sys_openat2:traceoff", "--timeout", "300"},
		.expect = {.check = check_traceoff},
	    },
	},
    },
    {
	/* Arguments typed from the guest's BTF: by name alone (dfd, filename: int and const char *),
	 * struct members through pointers (file->f_path.dentry->d_name.name), every argument (*), a return in its type (int: a negative errno for the workload's
	 * /nonexistent/path), and a name BTF does not know refused before any probe. */
	.name = "test_linux_event_btf",
	.runs = {
	    {
		.label = "run --qemu -e by name",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"-e", "do_sys_openat2(dfd, filename)", "-e",
			 "vfs_read(file->f_path.dentry->d_name.name, count)", "--timeout", "300"},
		.expect = {
		    .counts = {{"->do_sys_openat2(dfd=-100 filename=\"/etc/motd\")\n", 2},
			       /* head -c 64 /etc/motd: the data, then the end of the file */
			       {"->vfs_read(file->f_path.dentry->d_name.name=\"motd\" count=4096)\n",
				2}},
		    .trace = {"->do_sys_openat2(dfd=-100 filename=\"/proc/version\")\n",
			      "             cat-"},
		},
	    },
	    {
		.label = "run --qemu -e (*) -r",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"-e", "vfs_read(*)", "-r", "filename_lookup", "--timeout", "300"},
		.expect = {
		    .check = check_vfs_read_all_args,
		    .counts = {{"<- filename_lookup) ret=-2 duration=", 2},
			       {"<- filename_lookup) ret=0 duration=", 2}},
		},
	    },
	    {
		.label = "run --qemu -e, no such parameter",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"-e", "do_sys_openat2(dfd, fname)", "--timeout", "300"},
		.expect = {
		    .status = 2,
		    /* the symbols line, then the one error line */
		    .err_lines = 2,
		    .err = {"hvtrace: symbols: ",
			    "\nhvtrace: -e: do_sys_openat2 has no parameter 'fname' (its "
			    "parameters: dfd, filename, how)\n"},
		},
	    },
	},
    },
    {
	/* record --qemu: trace.dat for trace-cmd (fprobe and kretprobe events from BTF-typed specs),
	 * and report prints what run prints for the same guest. */
	.name = "test_linux_record",
	.runs = {
	    {
		.label = "record --qemu -e -r",
		.cmd = RUN_QEMU,
		.record = true,
		.append = "hvt.yes_sec=1",
		.args = {"-o", RECORD_DAT, "-e", "do_sys_openat2(dfd, filename)", "-r",
			 "filename_lookup", "-e", "vfs_read(file->f_path.dentry->d_name.name)",
			 "-e", INSIDE_OPENAT, "--timeout", "300"},
		.expect = {.console = {WORKLOAD_DONE, POWER_DOWN}, .check = check_record_openat},
	    },
	    {
		.label = "run --qemu -e -r",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"-e", "do_sys_openat2(dfd, filename)", "-r", "filename_lookup", "--timeout",
			 "300"},
		.expect = {.check = check_run_openat},
	    },
	},
    },
    {
	/* Seed 001's stress: 32 concurrent `yes > /dev/null`, a return probe on vfs_write for 15 s,
	 * then a detach while they still run: every hooked entry got its return line or was handed
	 * back at the detach, and nothing was missed (no maxactive to run out of). */
	.name = "test_linux_rprobe_stress",
	.runs = {{
	    .label = "run --qemu -r",
	    .cmd = RUN_QEMU,
	    .append = "hvt.yes=32 hvt.yes_sec=12 hvt.rounds=1",
	    .args = {"-r", "vfs_write(long ret)", "--profile", "--stats", "--duration", "15",
		     "--timeout", "400"},
	    .expect = {
		.check = check_rprobe_balanced,
		/* a VM stop per hit: how many fit in 15 s is the host's load's to say (make test runs
		 * two guests side by side); 20 show the writers ran under the probe */
		.counts = {{"             yes-", 20}},
	    },
	}},
    },
    {
	/* The same stress with --probe stub: the typed return of vfs_write (RAX alone) runs in the
	 * stub, so the VM never stops for it, and the same balance holds with nothing lost. */
	.name = "test_linux_rprobe_stress_stub",
	.runs = {{
	    .label = "run --qemu --probe stub -r",
	    .cmd = RUN_QEMU,
	    .append = "hvt.yes=32 hvt.yes_sec=12 hvt.rounds=1",
	    .args = {"--probe", "stub", "-r", "vfs_write(long ret)", "--profile", "--stats",
		     "--duration", "15", "--timeout", "400"},
	    .expect = {
		.check = check_rprobe_balanced,
		.counts = {{"             yes-", 100}},
		.stub = {{"stub probes ", 0}, {"records ", 200}},
		.err = {NO_STOPS, " lost 0 guest-reported-lost 0 rejected 0 "},
	    },
	}},
    },
    {
	/* Every traceable function of the kernel (tens of thousands of sites) with stub probes: no
	 * VM stop at all, the workload runs to completion, nothing is lost, and the guest powers
	 * off normally. The trace itself goes to /dev/null (millions of lines); --expect-call
	 * checks it saw the workload. */
	.name = "test_run_qemu_all_functions_stub",
	.runs = {{
	    .label = "run --qemu --probe stub",
	    .cmd = RUN_QEMU,
	    .append = "hvt.yes_sec=1",
	    .args = {"-p", "function", "--probe", "stub", "--stats", "--expect-call",
		     "do_sys_openat2", "--expect-call", "vfs_read", "-o", "/dev/null", "--timeout",
		     "600"},
	    .expect = {
		.console = {WORKLOAD_DONE, POWER_DOWN},
		/* bursts may outrun the guest's small rings on a busy host: counted, never
		 * silent */
		.stub = {{"stub probes ", 20000}, {"records ", 1000000}, {"lost ", -1}},
		/* the CPU number from RDTSCP: Linux set IA32_TSC_AUX (-cpu max has RDTSCP) */
		.err = {NO_STOPS, " cpu-from rdtscp "},
	    },
	}},
    },
    {
	/* Trap probes under QEMU emulate the NOP5 at a function entry only where the guest's bytes
	 * are still a NOP5: exact counts with the emulation, and the same with the guest's own ftrace
	 * having put a CALL there (the emulation refused, the CALL stepped). */
	.name = "test_run_qemu_trap_nop5_checked",
	.runs = {
	    {
		.label = "run --qemu --probe trap -e",
		.cmd = RUN_QEMU,
		.append = "hvt.bench=3",
		.args = {"--probe", "trap", "-e", "do_sys_openat2(dfd, filename)", "--stats",
			 "--timeout", "300"},
		.expect = {.check = nop5_emulated},
	    },
	    {
		.label = "run --qemu --probe trap -e, guest ftrace on the same function",
		.cmd = RUN_QEMU,
		.append = "hvt.bench=3 hvt.ftrace=do_sys_openat2",
		.args = {"--probe", "trap", "-e", "do_sys_openat2(dfd, filename)", "--stats",
			 "--timeout", "300"},
		.expect = {.check = nop5_refused_under_guest_ftrace},
	    },
	},
    },
    {
	/* Guest rings too small for the event rate (--buffer-size-kb 8: 128 records per CPU) and
	 * --no-backpressure (lose events rather than hold the vCPUs): events the stub had no room
	 * for are counted, reported as misses, and the guest is unharmed. */
	.name = "test_run_qemu_stub_overflow_counted",
	.runs = {{
	    .label = "run --qemu --probe stub --buffer-size-kb 8 --no-backpressure",
	    .cmd = RUN_QEMU,
	    .append = "hvt.yes_sec=1",
	    .args = {"-p", "function", "--probe", "stub", "--stats", "--profile",
		     "--buffer-size-kb", "8", "--no-backpressure", "-o", "/dev/null", "--timeout",
		     "600"},
	    .expect = {
		.console = {POWER_DOWN},
		.err = {" ring 128/cpu ", "events missed: the stub's guest rings were full",
			" backpressure off pauses 0 paused-us 0 guest-waits 0 wait-timeouts 0 tasks-changed "},
		.stub = {{"guest-reported-lost ", 0}, {"records ", 100000}},
	    },
	}},
    },
    {
	/* Rings sized by need: run --qemu reserves RAM for the stub (memmap=), the kernel's E820
	 * table shows it reserved, and the default rings (4096 KiB per CPU, above ftrace's 1408) lie
	 * there: a busy workload (every vfs, slab, lock and page function, 2 s of the yes stress:
	 * about a million events) loses nothing. --buffer-size-kb 16384 gets 16 MiB per CPU. Rings
	 * asked for that RAM cannot hold (2 x 64 MiB in --mem 128) are one error line naming the
	 * size, where, and why not reserved RAM. */
	.name = "test_run_qemu_stub_rings_by_need",
	.runs = {
	    {
		.label = "run --qemu --probe stub, default rings",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=2",
		.args = {"-p", "function", "--probe", "stub", "--stats", "-l", "vfs_*", "-l",
			 "kmem_cache_*", "-l", "*_lock*", "-l", "*page*", "-o", "/dev/null"},
		.expect = {
		    .console = {WORKLOAD_DONE, POWER_DOWN},
		    .err = {" lost 0 guest-reported-lost 0 rejected 0 ring 65536/cpu region 8208 KiB "
			    "reserved host-ring-stalls 0 ",
			    NO_STOPS},
		    .stub = {{"records ", 500000}},
		},
	    },
	    {
		.label = "run --qemu --probe stub --buffer-size-kb 16384",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"-p", "function", "--probe", "stub", "--stats", "-l", "vfs_*",
			 "--buffer-size-kb", "16384", "-o", "/dev/null", "--timeout", "600"},
		.expect = {
		    .console = {WORKLOAD_DONE, POWER_DOWN},
		    .err = {" lost 0 guest-reported-lost 0 rejected 0 ring 262144/cpu region 32784 "
			    "KiB reserved "},
		    .stub = {{"records ", 1000}},
		},
	    },
	    {
		.label = "run --qemu --probe stub --mem 128 --buffer-size-kb 65536",
		.cmd = RUN_QEMU,
		.append = "hvt.yes_sec=1",
		.args = {"-p", "function", "--probe", "stub", "--stats", "-l", "vfs_*", "--mem",
			 "128", "--buffer-size-kb", "65536", "-o", "/dev/null"},
		.expect = {
		    .status = 6,
		    .err = {"\nhvtrace: stub probes: rings of 65536 KiB per CPU (131088 KiB for 2 CPUs "
			    "with the stub) cannot be placed: ",
			    " KiB free at guest-physical 0x",
			    " (low memory: 135168 KiB do not fit between the kernel and the initrd in "
			    "128 MiB of RAM)\n"},
		},
	    },
	},
    },
    {
	/* No event lost at the default buffers (issue 13): every traceable function of the guest
	 * (35,000 stub probes), its whole session from attach to power-off (~8 M records in ~15 s
	 * under TCG), as text. The drain sleeps at most 2 ms, and when the writer falls behind
	 * (host rings full) the VM is held until the guest rings are drained (backpressure, the
	 * default): exactly 0 lost, host or guest, and no trap stop. Then the same, the trace as
	 * trace.dat (`record`). */
	.name = "test_run_qemu_stub_lossless",
	.runs = {
	    {
		.label = "run --qemu --probe stub -p function, every function, default buffers",
		.cmd = RUN_QEMU,
		.append = "hvt.rounds=3", /* the default workload, as make bench's */
		.args = {"-p", "function", "--probe", "stub", "--stats", "-o", "/dev/null",
			 "--timeout", "600"},
		.expect = {
		    .console = {WORKLOAD_DONE, POWER_DOWN},
		    .err = {" lost 0 guest-reported-lost 0 rejected 0 ring 65536/cpu ",
			    " backpressure on pauses ", NO_STOPS},
		    .stub = {{"stub probes ", 30000}, {"records ", 4000000}},
		},
	    },
	    {
		.label = "record --qemu --probe stub -p function, every function, default buffers",
		.cmd = RUN_QEMU,
		.append = "hvt.rounds=3", /* the default workload, as make bench's */
		.record = true,
		.args = {"-o", RECORD_DAT, "-p", "function", "--probe", "stub", "--stats",
			 "--timeout", "600"},
		.expect = {
		    .console = {WORKLOAD_DONE, POWER_DOWN},
		    .err = {" lost 0 guest-reported-lost 0 rejected 0 ring 65536/cpu ",
			    " backpressure on pauses ", NO_STOPS},
		    .stub = {{"stub probes ", 30000}, {"records ", 4000000}},
		},
	    },
	},
    },
    {
	/* Where the stub's small guest rings overflowed, the trace says so as the kernel does: its
	 * "CPU:N [LOST M EVENTS]" lines add up to what --stats counts lost (issue 12). */
	.name = "test_run_qemu_stub_lost_marked",
	.runs = {{
	    .label = "run --qemu --probe stub --buffer-size-kb 4 -l '*serial*' -l 'uart_*' "
		     "--no-backpressure",
	    .cmd = RUN_QEMU,
	    .append = "hvt.yes_sec=1",
	    .args = {"-p", "function", "--probe", "stub", "--stats", "--buffer-size-kb", "4", "-l",
		     "*serial*", "-l", "uart_*", "--no-backpressure", "--timeout", "300"},
	    .expect = {
		.console = {POWER_DOWN},
		.stub = {{"guest-reported-lost ", 0}, {"records ", 1000}},
		.counts = {{"\nCPU:0 [LOST ", 0}},
		.lost_marked = true,
	    },
	}},
    },
    {
	/* run --qemu on q35 with 4 GiB: 2 GiB of RAM below 4 GiB, 2 GiB above it (qemu_mem.h), where
	 * most kernel stacks live: return slots hooked above 4 GiB, each entry with its exact return,
	 * and the guest runs its workload to its power-off. */
	.name = "test_run_qemu_q35_4g",
	.runs = {{
	    .label = "run --qemu --machine q35 --mem 4096 -p function_graph",
	    .cmd = RUN_QEMU,
	    .append = "hvt.yes_sec=1",
	    .args = {"--machine", "q35", "--mem", "4096", "-p", "function_graph", "-g",
		     "do_sys_openat2", "--funcgraph-retval", "--profile", "--stats", "--timeout",
		     "300"},
	    .expect = {
		.console = {WORKLOAD_DONE, POWER_DOWN},
		.none_in_flight = true,
		.above_4g = true,
		.profile = true,
		.profile_min = 6,
		.nest = {"|  do_sys_openat2() {\n", "|  } /* do_sys_openat2 ret=", 5},
	    },
	}},
    },
#define ATTACH_QMP_GRAPH(what)                                                                    \
	{                                                                                         \
	    .label = "attach --qmp (" what ", function_graph)",                                   \
	    .cmd = RAW,                                                                           \
	    .args = {"attach", "--qmp", QMP_TCP, "-p", "function_graph", "-g", "do_sys_openat2",   \
		     "--duration", "8", "--verify-text", "--profile", "--stats"},                 \
	    .expect = {                                                                           \
		.err = {TEXT_KEPT, " from the guest's kallsyms (kernel 6."},                      \
		.above_4g = true,                                                                 \
		.profile = true,                                                                  \
		.trace = {"|  do_sys_openat2() {\n"},                                             \
	    },                                                                                    \
	}
    {
	/* attach by QMP socket to a QEMU launched with -M q35 -m 4096 */
	.name = "test_attach_qmp_q35_4g",
	.domain = "hvt.rounds=250 hvt.yes_sec=2",
	.qemu = {"-qmp", QMP_TCP_ARG, "-M", "q35", "-m", "4096"},
	.console_after = {WORKLOAD_DONE, POWER_DOWN},
	.runs = {ATTACH_QMP_GRAPH("q35, 4 GiB")},
    },
#define DD_GRAPH "-p", "function_graph", "-g", "do_sys_openat2", "--funcgraph-retval", "--comm", "dd"
#define DD_EVENTS                                                                                 \
	"-e", "do_sys_openat2(dfd, filename)", "-e", "vfs_read(file->f_path.dentry->d_name.name, count)"
/* QEMU V of QEMU_V (scripts/fetch-qemu.sh V; test names say NV: 10, 11), q35 with 4 GiB, no
 * System.map, a boot of its own: attach by QMP with @probe probes and @events (vfs_read and
 * do_sys_openat2) across the guest's 7 dd runs (20 s after the workload starts), the duration's end
 * stopping the VM by the gdbstub's 0x03 (issue 24); guest memory through the QEMU process, the map
 * from that QEMU's monitor (`info ramblock` with its HVA column, query-memdev); kernel text
 * unchanged after the detach, and the guest finishes its workload after it. */
#define QEMU_V_ATTACH(nv, v, what, probe, events, verdict)                                        \
	QEMU_V_ATTACH_BY(nv, v, what, "--qmp", QMP_TCP, probe, verdict, events)
/* The same attached to by @by (--qmp, --pid) @where, the events last (a list of arguments) */
#define QEMU_V_ATTACH_BY(nv, v, what, by, where, probe, verdict, ...)                             \
	{                                                                                         \
	    .name = "test_qemu" nv "_attach_" what,                                               \
	    .domain = "hvt.rounds=900 hvt.bm=7 hvt.bm_wait=20",                                   \
	    .qemu = {"-qmp", QMP_TCP_ARG, "-M", "q35", "-m", "4096"},                             \
	    .binary = QEMU_V(v),                                                                  \
	    .console_after = {"hvt-linux: binfmt_misc status read 7 times", WORKLOAD_DONE},        \
	    .runs = {{                                                                            \
		.label = "attach " by " (QEMU " v ", q35, 4 GiB, " what ", " probe " probes)",    \
		.cmd = RAW,                                                                       \
		.args = {"attach", by, where, "--probe", probe, __VA_ARGS__, "--duration", "40",  \
			 "--verify-text", "--stats"},                                             \
		.expect = {                                                                       \
		    .err = {TEXT_KEPT, " from the guest's kallsyms (kernel 6."},                  \
		    .check = verdict,                                                             \
		},                                                                                \
	    }},                                                                                   \
	}
#define DD_FUNCTIONS "-p", "function", "-l", "vfs_read", "-l", "do_sys_openat2"
/* The cases every QEMU_V runs: trap probes with -e events typed from BTF; stub probes with the
 * function tracer; run --qemu with $HVTRACE_QEMU naming it, the guest booting in it (q35, 4 GiB),
 * stub probes from the first instruction on, the same exact counts */
#define QEMU_V_CASES(nv, v)                                                                       \
	QEMU_V_ATTACH(nv, v, "trap", "trap", DD_EVENTS, seven_dd_typed_qemu_v),                   \
	QEMU_V_ATTACH(nv, v, "stub", "stub", DD_FUNCTIONS, seven_dd_stub_qemu_v),                 \
	{                                                                                         \
	    .name = "test_qemu" nv "_run",                                                        \
	    .binary = QEMU_V(v),                                                                  \
	    .runs = {{                                                                            \
		.label = "run --qemu, HVTRACE_QEMU=QEMU " v ", stub probes",                      \
		.cmd = RUN_QEMU,                                                                  \
		.env = QEMU_V_ENV(v),                                                             \
		.no_map = true,                                                                   \
		.append = "hvt.bm=7 hvt.rounds=1 hvt.yes_sec=1",                                  \
		.args = {"--machine", "q35", "--mem", "4096", "--probe", "stub", DD_FUNCTIONS,    \
			 "--stats", "--timeout", "300"},                                          \
		.expect = {                                                                       \
		    .console = {"hvt-linux: binfmt_misc status read 7 times", POWER_DOWN},        \
		    .check = seven_dd_stub_qemu_v,                                                \
		},                                                                                \
	    }},                                                                                   \
	}
    QEMU_V_CASES("10", "10.0"),
    QEMU_V_CASES("11", "11"),
    /* function_graph on QEMU 11 (stub probes): dd's opens, each entry with its return */
    QEMU_V_ATTACH("11", "11", "graph", "stub", DD_GRAPH, seven_dd_graph_qemu_v),
    /* attach --pid (issue 24): the QMP monitor found on the command line of QEMU 10.0, and of
     * QEMU 11 (run by the trixie root's dynamic loader: its command line starts with ld.so's),
     * the socket's peer proved to be that process */
    QEMU_V_ATTACH_BY("10", "10.0", "pid", "--pid", QEMU_PID, "stub", seven_dd_stub_qemu_v,
		     DD_FUNCTIONS),
    QEMU_V_ATTACH_BY("11", "11", "pid_graph", "--pid", QEMU_PID, "stub", seven_dd_graph_qemu_v,
		     DD_GRAPH),
    {
	/* record --qemu (issue 24): KernelShark 2.4 of Debian 13 reads the trace.dat as trace-cmd 3.3
	 * and 3.1.6 do, record by record, with the exact counts of the guest's dd runs */
	.name = "test_kernelshark_2_4_record",
	.runs = {{
	    .label = "record --qemu -p function -e --comm dd",
	    .cmd = RUN_QEMU,
	    .record = true,
	    .append = "hvt.bm=7 hvt.rounds=1 hvt.yes=1 hvt.yes_sec=1",
	    .args = {"-o", RECORD_DAT, DD_FUNCTIONS, "-e", "do_sys_openat2(dfd, filename)", "--comm",
		     "dd", "--timeout", "300"},
	    .expect = {.console = {"hvt-linux: binfmt_misc status read 7 times", POWER_DOWN},
		       .check = same_in_kernelshark_2_4},
	}},
    },
    {
	/* attach -c URI NAME (issue 24) to a domain of Debian 13's libvirt (trixie's 11.x; 12.x of
	 * trixie-backports where the root has that installed), run chrooted in the trixie root
	 * (tests/qemu/libvirt-trixie.sh) with that root's QEMU 11: hvtrace's
	 * libvirt 9 client library, the QEMU found by the domain's -uuid, its monitor through libvirt;
	 * q35 with 4 GiB, stub probes, the exact counts of the QEMU_V cases */
	.name = "test_qemu11_attach_libvirt_trixie",
	.domain = "hvt.rounds=900 hvt.bm=7 hvt.bm_wait=20",
	.trixie_libvirt = true,
	.binary = QEMU_V("11"), /* not launched: says the root has QEMU 11, names the version */
	.machine = "q35",
	.mem_mb = 4096,
	.console_after = {"hvt-linux: binfmt_misc status read 7 times", WORKLOAD_DONE},
	.runs = {{
	    .label = "attach -c URI NAME (libvirt of Debian 13, QEMU 11, q35, 4 GiB, stub probes)",
	    .cmd = RAW,
	    .args = {"attach", "-c", TRIXIE_URI, DOMAIN_ARG, "--probe", "stub", DD_FUNCTIONS,
		     "--duration", "40", "--verify-text", "--stats"},
	    .expect = {
		.err = {TEXT_KEPT, " from the guest's kallsyms (kernel 6."},
		.check = seven_dd_stub_qemu_v,
	    },
	}},
    },
    {
	/* two NUMA nodes of 2 GiB each: two anonymous mappings of the same size in QEMU, told
	 * apart by content. Node 1, all above 4 GiB, has both CPUs: they take their stacks from it;
	 * node 0 (below 4 GiB) holds the kernel image. */
	.name = "test_attach_qmp_numa",
	.domain = "hvt.rounds=250 hvt.yes_sec=2",
	.qemu = {"-qmp", QMP_TCP_ARG, "-M", "q35", "-m", "4096", "-object", "memory-backend-ram,id=m0,size=2G",
		      "-object", "memory-backend-ram,id=m1,size=2G", "-numa", "node,memdev=m0",
		      "-numa", "node,memdev=m1,cpus=0-1"},
	.console_after = {WORKLOAD_DONE, POWER_DOWN},
	.runs = {ATTACH_QMP_GRAPH("NUMA, 2 nodes")},
    },
    {
	/* issue 39: a hist trigger on vfs_read keyed by common_pid.execname, hvtrace's (trap
	 * probes, with the function tracer: dd's hitcount equal to its lines) beside the guest's own
	 * (a kprobe event's hist trigger), and a log2 histogram of vfs_read's durations (returns
	 * hooked for it alone, printing nothing) */
	.name = "test_hist_trap",
	.domain = "hvt.hist=50 hvt.hist_wait=25 hvt.hist_after=90",
	.qemu = {"-qmp", QMP_TCP_ARG},
	.console_after = {"hvt-linux: hist end", WORKLOAD_DONE},
	.console_check = check_hist_guest,
	.runs = {{
	    .label = "attach --qmp -p function -l vfs_read, three hist triggers",
	    .cmd = RAW,
	    .args = {"attach", "--qmp", QMP_TCP, "-p", "function", "-l", "vfs_read", "--trigger",
		     "vfs_read:hist:keys=common_pid.execname", "--trigger",
		     "vfs_read:hist:keys=common_pid.execname,duration.log2", "--trigger",
		     "vfs_read:hist:keys=common_pid.execname,stacktrace", "--duration", "60"},
	    .expect = {.check = check_hist_function},
	}},
    },
    {
	/* ... with stub probes and -p nop: the hists alone, no line in the trace. The guest's
	 * kprobe event is on ksys_read (dd's reads, one vfs_read each): one on vfs_read would hold
	 * its fentry site for the guest's ftrace, and hvtrace's probe there would be a trap probe */
	.name = "test_hist_stub",
	.domain = "hvt.hist=50 hvt.hist_wait=25 hvt.hist_after=90 hvt.hist_func=ksys_read",
	.qemu = {"-qmp", QMP_TCP_ARG},
	/* SIGUSR2 45 s in: the hists so far written (the stub's tables read while the guest
	 * runs), and the run goes on to its end */
	.kill = SIGUSR2,
	.kill_after = 45,
	.console_after = {"hvt-linux: hist end", WORKLOAD_DONE},
	.console_check = check_hist_guest,
	.runs = {{
	    .label = "attach --qmp --probe stub -p nop -l vfs_read, two hist triggers",
	    .cmd = RAW,
	    .args = {"attach", "--qmp", QMP_TCP, "--probe", "stub", "-p", "nop", "-l", "vfs_read",
		     "--trigger", "vfs_read:hist:keys=common_pid.execname", "--trigger",
		     "vfs_read:hist:keys=common_pid.execname,duration.log2", "--duration", "60",
		     "--stats"},
	    .expect = {.check = check_hist_nop},
	}},
    },
    {
	/* issue 39: the function profiler on every function with stub probes and -p nop: counted in
	 * the guest, the binfmt_misc workload's 7 status reads exact */
	.name = "test_profile_stub",
	.domain = "hvt.rounds=800 hvt.yes_sec=2 hvt.bm=7 hvt.bm_wait=60 memmap=16M$0xd000000",
	.qemu = {"-qmp", QMP_TCP_ARG},
	/* SIGUSR2 45 s in: the profile and the hist so far written, the run going on to its end */
	.kill = SIGUSR2,
	.kill_after = 45,
	.console_after = {"hvt-linux: binfmt_misc status read 7 times", WORKLOAD_DONE},
	.runs = {
	    {
		.label = "attach --qmp --probe stub -p nop -l '*' --profile",
		.cmd = RAW,
		.args = {"attach", "--qmp", QMP_TCP, "--probe", "stub", "-p", "nop", "-l", "*",
			 "--profile", "--trigger", "vfs_read:hist:keys=common_pid.execname",
			 "--duration", "90", "--stats"},
		.expect = {.check = check_profile_stub},
	    },
	    {
		/* trap probes: the host counts, from records the trace leaves out */
		.label = "attach --qmp --probe trap -p nop -l vfs_read --profile",
		.cmd = RAW,
		.args = {"attach", "--qmp", QMP_TCP, "--probe", "trap", "-p", "nop", "-l",
			 "vfs_read", "--profile", "--duration", "15", "--stats"},
		.expect = {.check = check_profile_trap},
	    },
	},
    },
    {
	/* issue 36: hvtrace first (stub probes on vfs_read), then the guest's own function tracer on
	 * vfs_read and a kprobe event on vfs_write, then off; hvtrace detaches and the guest's ftrace
	 * takes a new filter */
	.name = "test_share_hvtrace_first",
	/* each vfs_read under the guest's tracer is a VM stop and a step: its phase takes tens of
	 * seconds under TCG, all inside hvtrace's 120 s; the guest's new filter comes 100 s later */
	.domain = "hvt.share=hvt hvt.share_wait=25 hvt.share_after=100 hvt.share_kprobe=0xb",
	.qemu = {"-qmp", QMP_TCP_ARG},
	.console_after = {"hvt-linux: share after-detach writes ", WORKLOAD_DONE},
	.console_check = share_hvtrace_first_guest,
	.runs = {{
	    .label = "attach --qmp --probe stub -l vfs_read, then the guest's ftrace",
	    .cmd = RAW,
	    .args = {"attach", "--qmp", QMP_TCP, "--probe", "stub", "-p", "function", "-l", "vfs_read",
		     "-e", "vfs_read+9()", "--comm", "dd", "--duration", "120", "--stats"},
	    .expect = {.check = share_hvtrace_first},
	}},
    },
    {
	/* the guest resets while attached with stub probes (system_reset through a second monitor,
	 * QEMU told to reboot, not to end): QMP's RESET event ends the trace at once, exit 3 with one
	 * line; nothing is written back into the new boot (its text and stacks are not the ones
	 * hvtrace changed), which runs its workload to the end and powers off */
	.name = "test_attach_qmp_guest_reset",
	.domain = "hvt.rounds=200 hvt.yes_sec=20", /* the reset comes during the 20 s of yes */
	.qemu = {"-qmp", QMP_TCP_ARG, "-qmp", RESET_QMP_ARG, "-action", "reboot=reset"},
	.reset_after = 8,
	.console_after = {WORKLOAD_DONE, POWER_DOWN},
	.runs = {{
	    .label = "attach --qmp --probe stub, the guest reset 8 s in",
	    .cmd = RAW,
	    .args = {"attach", "--qmp", QMP_TCP, "--probe", "stub", "-p", "function", "-l", "vfs_read",
		     "-l", "do_sys_openat2", "--duration", "120"},
	    .expect = {
		.status = 3,
		.err = {"hvtrace: the guest reset while traced (host-qmp-system-reset): the "
			"traced kernel is gone; breakpoints dropped, nothing written into the new "
			"boot\n"},
		.lines_over = 10,
	    },
	}},
    },
    {
	/* guest RAM in a memfd */
	.name = "test_attach_qmp_memfd",
	.domain = "hvt.rounds=250 hvt.yes_sec=2",
	.qemu = {"-qmp", QMP_TCP_ARG, "-M", "q35,memory-backend=m0", "-m", "4096", "-object",
		      "memory-backend-memfd,id=m0,size=4G"},
	.console_after = {WORKLOAD_DONE, POWER_DOWN},
	.runs = {ATTACH_QMP_GRAPH("memfd")},
    },
    {
	/* guest RAM in a file (a deleted temporary file in /dev/shm) */
	.name = "test_attach_qmp_file",
	.domain = "hvt.rounds=250 hvt.yes_sec=2",
	.qemu = {"-qmp", QMP_TCP_ARG, "-M", "q35,memory-backend=m0", "-m", "4096", "-object",
		      "memory-backend-file,id=m0,size=4G,mem-path=/dev/shm,share=on"},
	.console_after = {WORKLOAD_DONE, POWER_DOWN},
	.runs = {ATTACH_QMP_GRAPH("file")},
    },
    {
	/* attach by libvirt domain name (the URI by -c, then by $LIBVIRT_DEFAULT_URI, then the
	 * default), three times, while the guest runs its workload: the
	 * function tracer, function_graph, then every function with stub probes (patched and
	 * unpatched with the VM stopped, the stub's memory mapped and handed back); each detach
	 * leaves the kernel text as it was; untraced again, the guest finishes its workload and
	 * powers off by itself. */
	.name = "test_attach_libvirt",
	.domain = "hvt.rounds=250 hvt.yes_sec=2",
	.console_after = {WORKLOAD_DONE, POWER_DOWN},
	.runs = {
	    {
		.label = "attach -c qemu:///system (function)",
		.cmd = ATTACH,
		.args = {"-c", "qemu:///system", "-p", "function", "-l", "vfs_read", "--duration", "4",
			 "--verify-text"},
		.expect = {
		    .err = {TEXT_KEPT},
		    .tasks = {{"vfs_read", {"tail", "sed", "tr", "head"}}},
		},
	    },
	    {
		.label = "attach, LIBVIRT_DEFAULT_URI=qemu:///system (function_graph)",
		.cmd = ATTACH,
		.env = "LIBVIRT_DEFAULT_URI=qemu:///system",
		.args = {"-p", "function_graph", "-g", "do_sys_openat2", "--duration", "4",
			 "--verify-text", "--profile", "--stats"},
		.expect = {
		    .err = {TEXT_KEPT},
		    .profile = true,
		    .trace = {"|  do_sys_openat2() {\n"},
		},
	    },
	    {
		.label = "attach (stub probes)",
		.cmd = ATTACH,
		.args = {"-p", "function", "--probe", "stub", "-o", "/dev/null", "--duration", "4",
			 "--verify-text", "--stats"},
		.expect = {
		    .err = {TEXT_KEPT, NO_STOPS},
		    .stub = {{"stub probes ", 20000}, {"records ", 10000}},
		},
	    },
	},
    },
    {
	/* SIGKILL while hvtrace has the guest patched (return slots rewritten too): hvtrace's
	 * guardian restores everything and detaches (QEMU 7.2 would otherwise keep the VM
	 * stopped), and the guest runs on to its power-off. */
	.name = "test_sigkill_leaves_guest_alive",
	.domain = "hvt.rounds=30 hvt.yes_sec=20", /* alive while its ports are checked */
	.kill = SIGKILL,
	.console_after = {WORKLOAD_DONE},
	.runs = {{
	    .label = "attach, killed",
	    .cmd = ATTACH,
	    .args = {"-p", "function_graph", "-g", "do_sys_openat2"},
	    .expect = {.status = 128 + SIGKILL},
	}},
    },
    {
	/* The same with stub probes: the guardian puts every CALL back, hands back the return slots
	 * from the guest-memory shadow stacks, and unmaps the stub. */
	.name = "test_sigkill_stub_leaves_guest_alive",
	.domain = "hvt.rounds=400 hvt.yes_sec=10", /* busy at 6 s */
	.kill = SIGKILL,
	.console_after = {WORKLOAD_DONE},
	.runs = {{
	    .label = "attach --probe stub, killed",
	    .cmd = ATTACH,
	    .args = {"-p", "function_graph", "--probe", "stub", "-l", "vfs_*", "-l", "ksys_*",
		     "-l", "*_sys_*"},
	    .expect = {.status = 128 + SIGKILL},
	}},
    },
    {
	/* SIGINT while every function of a busy guest is stub-probed, the VM perhaps held for the
	 * drain (backpressure): as for any attach, the signal is the normal end (status 0): hvtrace
	 * drains everything (nothing lost), restores the kernel text and lets the VM go; the guest
	 * runs on to the end of its workload. */
	.name = "test_sigint_stub_backpressure_leaves_guest_running",
	.domain = "hvt.rounds=1500 hvt.yes_sec=10", /* busy at 20 s */
	.kill = SIGINT,
	.kill_after = 20, /* attached by then (every function: ~3 s unloaded, 8+ s seen on CI) */
	.console_after = {WORKLOAD_DONE},
	.runs = {{
	    .label = "attach --probe stub -p function (every function), SIGINT",
	    .cmd = ATTACH,
	    .args = {"-p", "function", "--probe", "stub", "-o", "/dev/null", "--stats",
		     "--verify-text"},
	    .expect = {.err = {TEXT_KEPT, " lost 0 guest-reported-lost 0 rejected 0 ",
			       " backpressure on pauses "}},
	}},
    },
    {
	/* SIGINT in the middle of a stub attach (test hook: once 2000 CALLs are written), while
	 * QEMU's gdbstub writes the next one: hvtrace stops, and every CALL it wrote is put back,
	 * that one included (it was left patched, unknown to hvtrace); the guest runs on. */
	.name = "test_sigint_during_stub_attach_restores_text",
	.domain = "hvt.rounds=250 hvt.yes_sec=2",
	.console_after = {WORKLOAD_DONE},
	.runs = {{
	    .label = "attach --probe stub -p function, SIGINT after 2000 CALLs",
	    .cmd = ATTACH,
	    .env = "HVTRACE_TEST_SIGINT_AT_TEXT_WRITE=2000",
	    .args = {"-p", "function", "--probe", "stub", "-o", "/dev/null", "--verify-text"},
	    .expect = {.status = 128 + SIGINT,
		       .err = {"hvtrace: stopped while attaching", TEXT_KEPT}},
	}},
    },
    {
	/* hvtrace and its guardian both killed: nobody restores anything, yet the guest, its sites
	 * calling the stub and return slots pointing into it, runs its workload to the end: the
	 * stub needs no host (its rings just fill up), and the return routine finds every saved
	 * return address in guest memory. */
	.name = "test_sigkill_all_stub_guest_still_returns",
	.domain = "hvt.rounds=400 hvt.yes_sec=10",
	.kill = -SIGKILL,
	.console_after = {WORKLOAD_DONE},
	.runs = {
	    {
		.label = "attach --probe stub, killed with its guardian",
		.cmd = ATTACH,
		.args = {"-p", "function_graph", "--probe", "stub", "-l", "vfs_*", "-l", "ksys_*",
			 "-l", "*_sys_*"},
		.expect = {.status = 128 + SIGKILL},
	    },
	    {
		/* a new session must not overwrite the orphaned stub the guest still runs
		 * through */
		.label = "attach --probe stub again",
		.cmd = ATTACH,
		.args = {"-p", "function", "--probe", "stub", "-l", "vfs_read"},
		.expect = {
		    .status = 2,
		    .err = {"--probe stub: the stub of an earlier hvtrace is still live"},
		},
	    },
	},
    },
    {
	/* Targets that are not there: libvirt's test driver (its URI by $LIBVIRT_DEFAULT_URI, then
	 * by -c over a bogus $LIBVIRT_DEFAULT_URI) has a running domain "test" whose UUID no process
	 * here has; a --pid that is no QEMU. */
	.name = "test_attach_bad_target",
	.runs = {
	    {
		.label = "attach test, LIBVIRT_DEFAULT_URI=test:///default",
		.cmd = RAW,
		.env = "LIBVIRT_DEFAULT_URI=test:///default",
		.args = {"attach", "test", "--system-map", SYSMAP},
		.expect = {
		    .status = 6,
		    .err_is = "hvtrace: libvirt domain 'test' (test:///default): no process on this "
			      "host has -uuid 6695eb01-f6a4-8304-79aa-97f2502e193f (hvtrace must run "
			      "on the VM's host)\n",
		},
	    },
	    {
		.label = "attach -c test:///default test, LIBVIRT_DEFAULT_URI=bogus:///x",
		.cmd = RAW,
		.env = "LIBVIRT_DEFAULT_URI=bogus:///x",
		.args = {"attach", "-c", "test:///default", "test", "--system-map", SYSMAP},
		.expect = {
		    .status = 6,
		    .err_is = "hvtrace: libvirt domain 'test' (test:///default): no process on this "
			      "host has -uuid 6695eb01-f6a4-8304-79aa-97f2502e193f (hvtrace must run "
			      "on the VM's host)\n",
		},
	    },
	    {
		.label = "attach --pid (not a QEMU)",
		.cmd = RAW,
		.args = {"attach", "--pid", SELF_PID, "--system-map", SYSMAP},
		/* the kernel says what it runs, not its command line (issue 37): bad input */
		.expect = {
		    .status = 2,
		    .err_lines = 1,
		    .err = {" is not a QEMU (it runs /",
			    "/test_linux), and not a KVM VMM: no anon_inode:kvm-vm among its "},
		},
	    },
	},
    },
    {
	/* A bare QEMU with two QMP monitors: -mon + -chardev on a unix socket, and -qmp on TCP.
	 * Attached by --qmp tcp:, then by --pid (the first QMP monitor of its command line, the
	 * -mon one); each detach closes the gdbstub hvtrace started, leaves QEMU's own QMP port
	 * listening, the text as it was, and the guest finishes its workload. */
	.name = "test_attach_bare_qmp",
	.domain = "hvt.rounds=600 hvt.yes_sec=2",
	.qemu = {"-chardev", CHARDEV_ARG, "-mon", "chardev=hvtmon,mode=control", "-qmp",
		 QMP_TCP_ARG},
	.console_after = {WORKLOAD_DONE, POWER_DOWN},
	.runs = {
	    {
		.label = "attach --qmp tcp:",
		.cmd = RAW,
		.args = {"attach", "--qmp", QMP_TCP, "--system-map", SYSMAP, "-p", "function", "-l",
			 "vfs_read", "--duration", "4", "--verify-text"},
		.expect = {
		    .err = {TEXT_KEPT},
		    .tasks = {{"vfs_read", {"tail", "sed", "tr", "head"}}},
		},
	    },
	    {
		.label = "attach --pid (-mon chardev)",
		.cmd = RAW,
		.args = {"attach", "--pid", QEMU_PID, "--system-map", SYSMAP, "-p",
			 "function_graph", "-g", "do_sys_openat2", "--duration", "4",
			 "--verify-text"},
		.expect = {
		    .err = {TEXT_KEPT},
		    .trace = {"|  do_sys_openat2() {\n"},
		},
	    },
	},
    },
    {
	/* SIGKILL of an attach by --qmp tcp: the guardian restores the guest, then connects to
	 * QEMU's QMP port itself (the dead process's connection goes with it) and closes the
	 * gdbstub hvtrace started. */
	.name = "test_sigkill_bare_qmp_tcp",
	.domain = "hvt.rounds=30 hvt.yes_sec=20", /* alive while its ports are checked */
	.qemu = {"-qmp", QMP_TCP_ARG},
	.kill = SIGKILL,
	.console_after = {WORKLOAD_DONE},
	.runs = {{
	    .label = "attach --qmp tcp:, killed",
	    .cmd = RAW,
	    .args = {"attach", "--qmp", QMP_TCP, "--system-map", SYSMAP, "-p", "function_graph",
		     "-g", "do_sys_openat2"},
	    .expect = {.status = 128 + SIGKILL},
	}},
    },
    {
	/* An attach that ends on an error path after it started the gdbstub: its System.map names a
	 * banner the guest does not have (the guest's kallsyms tell it is another kernel), refused
	 * with one line; the gdbstub is closed all the same. */
	.name = "test_attach_error_closes_gdbstub",
	.domain = "hvt.rounds=3 hvt.yes_sec=30",
	.qemu = {"-qmp", QMP_TCP_ARG},
	.console_after = {WORKLOAD_DONE, POWER_DOWN},
	.runs = {{
	    .label = "attach --qmp tcp:, a System.map of another kernel",
	    .cmd = RAW,
	    .args = {"attach", "--qmp", QMP_TCP, "--system-map", FAKE_MAP, "-l", "vfs_read"},
	    .expect = {.status = 2,
		       .err_lines = 1,
		       .err = {" is for another kernel: no \"Linux version\" at its linux_banner"}},
	}},
    },
    {
	/* A bare QEMU with QMP and its own gdbstub (-gdb tcp::PORT, on the wildcard address): the
	 * attach reuses that gdbstub (QEMU 7.2 cannot open a second), and leaves it listening. */
	.name = "test_attach_bare_qmp_own_gdbstub",
	.domain = "hvt.rounds=250 hvt.yes_sec=2",
	.qemu = {"-qmp", QMP_TCP_ARG, "-gdb", GDB_ARG},
	.console_after = {WORKLOAD_DONE, POWER_DOWN},
	.runs = {{
	    .label = "attach --qmp tcp: (QEMU's gdbstub)",
	    .cmd = RAW,
	    .args = {"attach", "--qmp", QMP_TCP, "--system-map", SYSMAP, "-p", "function", "-l",
		     "vfs_read", "--duration", "4", "--verify-text"},
	    .expect = {
		.err = {TEXT_KEPT},
		.tasks = {{"vfs_read", {"tail", "sed", "tr", "head"}}},
	    },
	}},
    },
    {
	/* run --qemu from a session file holding boot-test verdicts (issue 15): exit 7 for the one
	 * that cannot be met, the same verdicts in --summary and --junit. */
	.name = "test_run_qemu_session_verdicts",
	.runs = {{
	    .label = "run --qemu --session boot-test.session",
	    .cmd = RUN_QEMU,
	    .append = "hvt.yes_sec=1",
	    .args = {"--session", "tests/qemu/boot-test.session"},
	    .expect = {
		.status = 7,
		.console = {WORKLOAD_DONE, POWER_DOWN},
		.err = {"hvtrace: --expect-no-call do_sys_openat2: the guest called it "},
		.only = {"vfs_read", "do_sys_openat2"},
		.check = check_boot_verdicts,
	    },
	}},
    },
    {
	/* attach to a guest whose own command line reserved RAM (memmap=12M$0xe000000): the stub
	 * takes that range instead of low memory (RAM in the firmware's E820 table, reserved in the
	 * kernel's), with the default rings, and the guest runs on after the detach. */
	.name = "test_attach_stub_in_guest_reserved_ram",
	.domain = "hvt.rounds=250 hvt.yes_sec=2 memmap=12M$0xe000000",
	.qemu = {"-qmp", QMP_TCP_ARG, "-gdb", GDB_ARG},
	.console_after = {WORKLOAD_DONE, POWER_DOWN},
	.runs = {{
	    .label = "attach --probe stub (memmap= in the guest)",
	    .cmd = RAW,
	    .args = {"attach", "--qmp", QMP_TCP, "--system-map", SYSMAP, "-p", "function", "-l",
		     "vfs_read", "--probe", "stub", "--stats", "--duration", "4"},
	    .expect = {
		.err = {" ring 65536/cpu region 8208 KiB reserved ", " lost 0 guest-reported-lost 0 "},
		.tasks = {{"vfs_read", {"tail", "sed", "tr", "head"}}},
	    },
	}},
    },
    {
	/* A bare QEMU with a gdbstub (-gdb tcp::PORT) and no monitor at all: --pid reuses the
	 * gdbstub, guest memory goes through it, and it still listens after the detach. */
	.name = "test_attach_bare_gdbstub_only",
	.domain = "hvt.rounds=250 hvt.yes_sec=2",
	.qemu = {"-gdb", GDB_ARG},
	.console_after = {WORKLOAD_DONE, POWER_DOWN},
	.runs = {{
	    .label = "attach --pid (-gdb only)",
	    .cmd = RAW,
	    .args = {"attach", "--pid", QEMU_PID, "--system-map", SYSMAP, "-p", "function", "-l",
		     "vfs_read", "--duration", "4", "--verify-text"},
	    .expect = {
		.err = {": no QMP monitor; its gdbstub (tcp:127.0.0.1:",
			"is used as found, guest memory through it (physical mode)\n", TEXT_KEPT},
		.tasks = {{"vfs_read", {"tail", "sed", "tr", "head"}}},
	    },
	}},
    },
    {
	/* run --qemu --format jsonl (issue 15): the BTF-typed -e fields and -r values as JSON args,
	 * every line parsed by jq. */
	.name = "test_run_qemu_jsonl",
	.runs = {{
	    .label = "run --qemu --format jsonl -e -r",
	    .cmd = RUN_QEMU,
	    .append = "hvt.yes_sec=1",
	    .args = {"--format", "jsonl", "-e", "do_sys_openat2(dfd, filename)", "-r",
		     "filename_lookup", "--timeout", "300"},
	    .expect = {.console = {WORKLOAD_DONE, POWER_DOWN}, .check = check_jsonl_openat},
	}},
    },
};
/* clang-format on */

/* ---- the runner ------------------------------------------------------------------------------ */

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char *arg(const char *a)
{
	if (!strcmp(a, KERNEL))
		return kernel;
	if (!strcmp(a, SYSMAP))
		return sysmap;
	if (!strcmp(a, INSIDE_OPENAT)) {
		learn_openat();
		return inside_openat;
	}
	if (!strcmp(a, QEMU_PID))
		return qemu_pid;
	if (!strcmp(a, QMP_TCP))
		return qmp_tcp;
	if (!strcmp(a, QMP_TCP_ARG))
		return qmp_tcp_arg;
	if (!strcmp(a, CHARDEV_ARG))
		return chardev_arg;
	if (!strcmp(a, GDB_ARG))
		return gdb_arg;
	if (!strcmp(a, RESET_QMP_ARG))
		return reset_qmp_arg;
	if (!strcmp(a, SELF_PID))
		return self_pid;
	if (!strcmp(a, FAKE_MAP))
		return fake_map;
	if (!strcmp(a, NOSYMS_MAP))
		return nosyms_map;
	if (!strcmp(a, OTHER_MAP))
		return other_map;
	if (!strcmp(a, DOMAIN_ARG))
		return DOMAIN;
	if (!strcmp(a, RECORD_DAT))
		return record_dat;
	if (!strcmp(a, TRIXIE_URI))
		return trixie_uri;
	for (size_t i = 0; i < ARRAY_LEN(qemu_versions); i++) {
		if (!strcmp(a, qemu_versions[i].bin))
			return qemu_versions[i].path;
		if (!strcmp(a, qemu_versions[i].env))
			return qemu_versions[i].path_env;
	}
	return a;
}

/* Runs @c's command line, with @sig after @signal_after seconds if that is > 0. */
static void run_case(const struct hv_case *c, struct hv_result *r, double signal_after, int sig)
{
	const char *argv[32];
	size_t n = 0;

	if (c->cmd == RUN_QEMU) {
		const char *head[] = {c->record ? "record" : "run", "--qemu", "--kernel", kernel,
				      "--initrd",
				      initrd,	  "--append", c->append, "--system-map", sysmap};

		for (size_t i = 0; i < ARRAY_LEN(head) - (c->no_map ? 2 : 0); i++)
			argv[n++] = head[i];
	} else if (c->cmd == ATTACH) {
		if (c->record)
			argv[n++] = "record";
		argv[n++] = "attach";
		argv[n++] = DOMAIN;
		if (!c->no_map) {
			argv[n++] = "--system-map";
			argv[n++] = sysmap;
		}
	}
	for (size_t i = 0; i < ARRAY_LEN(c->args) && c->args[i]; i++)
		argv[n++] = arg(c->args[i]);
	argv[n] = NULL;
	hv_run(r, argv, signal_after, sig);
}

/* The test's guest: a bare QEMU (with linux_test.qemu) or the libvirt domain. */
static int guest_start(const struct linux_test *t)
{
	char mem[16];

	if (t->qemu[0])
		return bare_start(t->binary, t->qemu, t->domain);
	snprintf(mem, sizeof(mem), "%u", t->mem_mb ? t->mem_mb : 256);
	setenv("HVT_DOMAIN_MACHINE", t->machine ? t->machine : "pc", 1);
	setenv("HVT_DOMAIN_MEM_MB", mem, 1);
	return domain("start", t->domain);
}

static void guest_stop(const struct linux_test *t)
{
	if (t->qemu[0])
		bare_stop();
	else
		domain("stop", NULL);
}

static bool guest_gone(const struct linux_test *t)
{
	return t->qemu[0] ? bare_gone() : domain_gone();
}

/* @c's expectations of @r; a wrong status stops the test's guest first. */
static void check_expect(const struct linux_test *t, const struct hv_case *c,
			 const struct hv_result *r)
{
	if (r->status != c->expect.status && t->domain)
		guest_stop(t);
	hv_expect_check(c->label, &c->expect, r);
}

/* Starts the trixie root's libvirtd: its URI in trixie_uri and $HVT_LIBVIRT_URI, its root in
 * libvirt_root (hv_trixie_libvirt_up). */
static bool trixie_libvirt_up(void)
{
	return hv_trixie_libvirt_up(trixie_uri, sizeof(trixie_uri), libvirt_root,
				    sizeof(libvirt_root));
}

/* In a child: after @after seconds, resets the bare QEMU's guest through the test's own QMP
 * monitor (reset_qmp), as a user or a watchdog would while hvtrace traces it. Returns the child. */
static pid_t reset_later(unsigned after)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct qmp q;
		char err[256];

		sleep(after);
		if (qmp_connect(&q, reset_qmp, err, sizeof(err)) < 0 ||
		    qmp_execute(&q, "{\"execute\":\"system_reset\"}", NULL, 0) < 0) {
			fprintf(stderr, "system_reset through %s failed: %s\n", reset_qmp,
				q.why[0] ? q.why : err);
			_exit(1);
		}
		qmp_close(&q);
		_exit(0);
	}
	return pid;
}

/* stderr of the last hvtrace run of a test, shown if its guest does not power off after it */
static char last_err[16384];

/* Seconds on the monotonic clock. */
static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void play_test(void **state)
{
	const struct linux_test *t = *state;
	char ports[512] = "";
	double t0 = mono_s();

	test_qemu = NULL;
	for (size_t i = 0; t->binary && i < ARRAY_LEN(qemu_versions); i++)
		if (!strcmp(t->binary, qemu_versions[i].bin))
			test_qemu = qemu_versions[i].version;
	if (t->binary && access(arg(t->binary), X_OK)) {
		printf("SKIPPED: %s: no %s (scripts/fetch-qemu.sh %s, or make qemu-versions)\n",
		       t->name, arg(t->binary), test_qemu ? test_qemu : "VERSION");
		skip();
	}
	if (t->trixie_libvirt && !trixie_libvirt_up())
		skip();

	if (t->domain) {
		if (guest_start(t))
			fail_msg("cannot start the guest's QEMU");
		if (!wait_console("hvt-linux: workload start", 300)) {
			guest_stop(t);
			fail_msg("the guest did not reach its workload");
		}
		listening_ports(the_qemu(), ports, sizeof(ports));
	}
	for (size_t i = 0; i < ARRAY_LEN(t->runs) && t->runs[i].label; i++) {
		const struct hv_case *c = &t->runs[i];
		bool killed = i == 0 && t->kill;
		struct hv_result r;

		if (c->libvirtd && system("tests/qemu/libvirt-domain.sh daemons") != 0)
			fail_msg("cannot start libvirtd");
		pid_t resetter = i == 0 && t->reset_after ? reset_later(t->reset_after) : -1;
		int reset_status = 0;

		if (c->env)
			putenv((char *)arg(c->env));
		run_case(c, &r, killed ? (t->kill_after ? t->kill_after : 6) : 0,
			 killed ? t->kill : 0);
		if (resetter > 0 && (waitpid(resetter, &reset_status, 0) != resetter ||
				     !WIFEXITED(reset_status) || WEXITSTATUS(reset_status)))
			fail_msg("%s: the test could not reset the guest", c->label);
		if (c->env) {
			char name[64];

			snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg(c->env), "="),
				 arg(c->env));
			unsetenv(name);
		}
		if (getenv("HVT_TEST_SAVE")) { /* a directory: each run's trace and stderr, to debug */
			char path[512];
			FILE *f;

			snprintf(path, sizeof(path), "%s/%s.%zu.trace", getenv("HVT_TEST_SAVE"), t->name, i);
			if ((f = fopen(path, "w"))) {
				fputs(r.trace ? r.trace : "", f);
				fclose(f);
			}
			snprintf(path, sizeof(path), "%s/%s.%zu.err", getenv("HVT_TEST_SAVE"), t->name, i);
			if ((f = fopen(path, "w"))) {
				fputs(r.err ? r.err : "", f);
				fclose(f);
			}
		}
		check_expect(t, c, &r);
		snprintf(last_err, sizeof(last_err), "%s", r.err ? r.err : "");
		hv_result_free(&r);
		if (t->domain && t->kill >= 0)
			check_ports(c->label, ports);
	}
	if (!t->domain)
		return;
	for (int i = 0; i < 1800 && !guest_gone(t); i++)
		sleep_ms(100);
	if (!guest_gone(t)) {
		char cmd[256];

		guest_stop(t);
		/* what the runs said, then what the guest said last (an oops, a hang): next to the
		 * failure, where the end of a CI log shows it */
		fprintf(stderr, "last run's stderr:\n%s\n", last_err);
		fflush(stderr);
		snprintf(cmd, sizeof(cmd), "tail -n 40 %s >&2", CONSOLE);
		if (system(cmd) < 0)
			perror("tail");
		fail_msg("the guest did not power off after %s",
			 t->kill ? "hvtrace was killed" : "the detach");
	}
	for (size_t i = 0; i < ARRAY_LEN(t->console_after) && t->console_after[i]; i++)
		if (!file_has(CONSOLE, t->console_after[i])) {
			char cmd[256];

			snprintf(cmd, sizeof(cmd), "tail -n 40 %s >&2", CONSOLE);
			if (system(cmd) < 0)
				perror("tail");
			fprintf(stderr, "last run's stderr:\n%s\n", last_err);
			if (t->qemu[0])
				bare_tell_end();
			fail_msg("no \"%s\" on the guest's console after the detach",
				 t->console_after[i]);
		}
	if (t->console_check) {
		char *c = hv_slurp(CONSOLE);

		t->console_check(c);
		free(c);
	}
	/* where the time goes (make test's shards are every other test of this table) */
	printf("test_linux: %s took %.0f s\n", t->name, mono_s() - t0);
}

static int teardown(void **state)
{
	const struct linux_test *t = *state;

	domain("stop", NULL);
	bare_stop();
	if (t->trixie_libvirt && trixie_uri[0]) {
		if (system("tests/qemu/libvirt-trixie.sh stop") != 0)
			printf("tests/qemu/libvirt-trixie.sh stop failed\n");
		unsetenv("HVT_LIBVIRT_URI");
		trixie_uri[0] = libvirt_root[0] = 0;
	}
	return 0;
}

/* Debian's symbol-less System.map, and the real one with linux_banner 4 KiB further on (where no
 * "Linux version" is at any KASLR slide). */
static int write_bad_maps(void)
{
	FILE *in, *out;
	char line[512];
	int moved = 0;

	snprintf(nosyms_map, sizeof(nosyms_map), "/tmp/hvtrace-test-%s-stub.map", domain_name);
	snprintf(other_map, sizeof(other_map), "/tmp/hvtrace-test-%s-other.map", domain_name);
	out = fopen(nosyms_map, "w");
	if (!out)
		return -1;
	fputs("ffffffffffffffff B The real System.map is in the linux-image-6.1.0-57-cloud-amd64-dbg "
	      "package\n",
	      out);
	fclose(out);
	in = fopen(sysmap, "r");
	out = fopen(other_map, "w");
	if (!in || !out) {
		if (in)
			fclose(in);
		if (out)
			fclose(out);
		return -1;
	}
	while (fgets(line, sizeof(line), in)) {
		unsigned long long a;

		if (strstr(line, " D linux_banner\n") && sscanf(line, "%llx", &a) == 1) {
			fprintf(out, "%016llx D linux_banner\n", a + 0x1000);
			moved++;
		} else {
			fputs(line, out);
		}
	}
	fclose(in);
	fclose(out);
	return moved == 1 ? 0 : -1;
}

int main(void)
{
	const char *dir = getenv("LINUX_GUEST_DIR") ? getenv("LINUX_GUEST_DIR") : "build/guest";
	struct CMUnitTest tests[ARRAY_LEN(linux_tests)];
	size_t ntests = 0;

	/* $HVT_TEST_SHARD=K/N: every Nth test (make test runs two shards side by side, each with its
	 * own $HVT_TEST_DOMAIN) */
	for (size_t i = 0; i < ARRAY_LEN(linux_tests); i++)
		if (hv_shard_keeps(i))
			tests[ntests++] = (struct CMUnitTest){
			    .name = linux_tests[i].name,
			    .test_func = play_test,
			    .teardown_func = linux_tests[i].domain ? teardown : NULL,
			    .initial_state = (void *)&linux_tests[i],
			};
	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", dir);
	snprintf(initrd, sizeof(initrd), "%s/initramfs.cpio.gz", dir);
	snprintf(sysmap, sizeof(sysmap), "%s/System.map", dir);
	if (system("command -v qemu-system-x86_64 >/dev/null") != 0)
		hv_skip_binary("Linux guest tests: qemu-system-x86_64 is not installed");
	if (access(kernel, R_OK) || access(initrd, R_OK) || access(sysmap, R_OK))
		hv_skip_binary("Linux guest tests: no %s (make guest)", kernel);
	if (getenv("HVT_TEST_DOMAIN"))
		snprintf(domain_name, sizeof(domain_name), "%s", getenv("HVT_TEST_DOMAIN"));
	snprintf(console_log, sizeof(console_log), "/tmp/hvtrace-libvirt/%s/console.log", domain_name);
	snprintf(qmp_tcp, sizeof(qmp_tcp), "tcp:127.0.0.1:%d", hv_free_port());
	snprintf(qmp_tcp_arg, sizeof(qmp_tcp_arg), "%s,server=on,wait=off", qmp_tcp);
	snprintf(chardev_arg, sizeof(chardev_arg),
		 "socket,id=hvtmon,path=/tmp/hvtrace-%s-mon.sock,server=on,wait=off", domain_name);
	snprintf(gdb_arg, sizeof(gdb_arg), "tcp::%d", hv_free_port());
	snprintf(reset_qmp, sizeof(reset_qmp), "/tmp/hvtrace-%s-reset.qmp", domain_name);
	snprintf(reset_qmp_arg, sizeof(reset_qmp_arg), "unix:%s,server=on,wait=off", reset_qmp);
	snprintf(self_pid, sizeof(self_pid), "%d", (int)getpid());
	snprintf(record_dat, sizeof(record_dat), "/tmp/hvt-record-%d.dat", (int)getpid());
	snprintf(fake_map, sizeof(fake_map), "/tmp/hvtrace-%s-fake.map", domain_name);
	for (size_t i = 0; i < ARRAY_LEN(qemu_versions); i++) {
		struct qemu_version *q = &qemu_versions[i];

		snprintf(q->bin, sizeof(q->bin), QEMU_V("%s"), q->version);
		snprintf(q->env, sizeof(q->env), QEMU_V_ENV("%s"), q->version);
		snprintf(q->path, sizeof(q->path), "%s/qemu/%s/qemu-system-x86_64",
			 getenv("HVTRACE_CACHE") ? getenv("HVTRACE_CACHE") : "/var/cache/hvtrace",
			 q->version);
		snprintf(q->path_env, sizeof(q->path_env), "HVTRACE_QEMU=%s", q->path);
	}
	{
		FILE *f = fopen(fake_map, "w");

		if (!f)
			return 1;
		fputs("ffffffff81000000 T _stext\nffffffff81000100 T vfs_read\n"
		      "ffffffff81200000 T _etext\nffffffff82000000 D linux_banner\n",
		      f);
		fclose(f);
	}
	if (write_bad_maps() < 0) {
		printf("cannot write the System.maps of test_system_map_errors in /tmp\n");
		return 1;
	}
	/* $HVT_TEST_FILTER: only the tests whose names match this glob (cmocka's test filter), e.g.
	 * HVT_TEST_FILTER='test_sigkill*' while developing */
	if (getenv("HVT_TEST_FILTER"))
		cmocka_set_test_filter(getenv("HVT_TEST_FILTER"));
	return _cmocka_run_group_tests("linux", tests, ntests, NULL, NULL);
}

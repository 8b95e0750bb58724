/* Integration: host/qemu/gdbstub and host/qemu/qmp against a real qemu-system-x86_64 (TCG, 2 vCPUs,
 * no disk, started paused with -S at the reset vector). QMP starts the gdbstub; the client lists
 * vCPUs, reads and writes registers and memory, runs a 4-byte real-mode loop it writes at 0x7c00
 * under a Z0 breakpoint, interrupts, detaches, re-attaches to the running VM, and sees QEMU exit.
 * Skipped (hv_skip_binary) when QEMU is not installed. QEMU is killed on every failure path. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/hv_run.h"
#include "tests/common/port.h"
#include "tests/common/skip.h"
#include "host/vmm/gdbstub.h"
#include "host/qemu/qmp.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Real-mode loop at 0x7c00: inc ax; inc bx; jmp 0x7c00. */
#define LOOP_AT 0x7c00
static const uint8_t loop_code[] = {0x40, 0x43, 0xeb, 0xfc};

struct vmq {
	pid_t pid;
	char sock[108];
	char log[108];
	struct qmp qmp;
	struct gdb *gdb;
	int port;
};

static struct vmq vmq = {.pid = -1};
static char qemu_path[256];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* $QEMU, else qemu-system-x86_64 on $PATH. */
static bool find_qemu(void)
{
	const char *env = getenv("QEMU"), *path = getenv("PATH");

	if (env && *env) {
		snprintf(qemu_path, sizeof(qemu_path), "%s", env);
		return access(qemu_path, X_OK) == 0;
	}
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);

		snprintf(qemu_path, sizeof(qemu_path), "%.*s/qemu-system-x86_64", (int)n, path);
		if (n && access(qemu_path, X_OK) == 0)
			return true;
		path += n + (colon ? 1 : 0);
	}
	return false;
}

static void qemu_kill(void)
{
	if (vmq.pid > 0) {
		kill(vmq.pid, SIGKILL);
		waitpid(vmq.pid, NULL, 0);
		vmq.pid = -1;
	}
	if (vmq.sock[0])
		unlink(vmq.sock);
}

/* Waits up to @ms for QEMU to exit; its wait status, or -1 (still running). */
static int qemu_wait(int ms)
{
	for (int i = 0; i <= ms / 10; i++) {
		int status;
		pid_t r = waitpid(vmq.pid, &status, WNOHANG);

		if (r == vmq.pid) {
			vmq.pid = -1;
			return status;
		}
		sleep_ms(10);
	}
	return -1;
}

/* Starts QEMU paused and connects QMP (state: vmq.pid, vmq.qmp). */
static int setup(void **state)
{
	char qmparg[160], err[256];
	pid_t parent = getpid();
	double t0;
	int rc = -1;

	(void)state;
	memset(&vmq, 0, sizeof(vmq));
	vmq.pid = -1;
	vmq.qmp.fd = -1;
	snprintf(vmq.sock, sizeof(vmq.sock), "/tmp/hvt-qemu-gdb-%d.sock", (int)parent);
	snprintf(vmq.log, sizeof(vmq.log), "/tmp/hvt-qemu-gdb-%d.log", (int)parent);
	snprintf(qmparg, sizeof(qmparg), "unix:%s,server=on,wait=off", vmq.sock);
	unlink(vmq.sock);
	vmq.pid = fork();
	if (vmq.pid < 0)
		return -1;
	if (vmq.pid == 0) {
		int nul = open("/dev/null", O_RDWR),
		    log = open(vmq.log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* no stray QEMU if the test dies */
		if (getppid() != parent)
			_exit(127);
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(log >= 0 ? log : nul, 2);
		execl(qemu_path, "qemu-system-x86_64", "-accel", "tcg", "-cpu", "qemu64",
		      "-display", "none", "-nodefaults", "-no-user-config", "-S", "-qmp", qmparg,
		      "-smp", "2", "-m", "64", (char *)NULL);
		_exit(127);
	}
	t0 = now_s();
	while (now_s() - t0 < 20) {
		rc = qmp_connect(&vmq.qmp, vmq.sock, err, sizeof(err));
		if (rc == 0 || (rc != -ENOENT && rc != -ECONNREFUSED))
			break;
		if (waitpid(vmq.pid, NULL, WNOHANG) == vmq.pid) {
			vmq.pid = -1;
			break;
		}
		sleep_ms(20);
	}
	if (rc) {
		fprintf(stderr, "qemu did not come up: %s (log %s)\n", err, vmq.log);
		qemu_kill();
		return -1;
	}
	vmq.gdb = calloc(1, sizeof(*vmq.gdb));
	vmq.gdb->fd = -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (vmq.gdb) {
		gdb_close(vmq.gdb);
		free(vmq.gdb);
		vmq.gdb = NULL;
	}
	qmp_close(&vmq.qmp);
	qemu_kill();
	unlink(vmq.log);
	return 0;
}

static void status_is(const char *want, bool want_running)
{
	char status[32];
	bool running;

	assert_int_equal(qmp_query_status(&vmq.qmp, &running, status, sizeof(status)), 0);
	assert_string_equal(status, want);
	assert_int_equal(running, want_running);
}

/* Starts the gdbstub on a free port through QMP and connects the client. */
static void attach(void)
{
	char dev[64], msg[160], err[256], want[160];
	int rc;

	vmq.port = hv_free_port();
	snprintf(dev, sizeof(dev), "tcp:127.0.0.1:%d", vmq.port);
	assert_int_equal(qmp_gdbserver(&vmq.qmp, dev, msg, sizeof(msg)), 0);
	snprintf(want, sizeof(want), "Waiting for gdb connection on device '%s'", dev);
	assert_string_equal(msg, want);
	rc = gdb_connect(vmq.gdb, "127.0.0.1", vmq.port, err, sizeof(err));
	if (rc)
		fail_msg("gdb_connect: %s", err);
}

static void load_loop(void)
{
	struct gdb *g = vmq.gdb;
	uint8_t back[sizeof(loop_code)];
	struct gdb_regs r;

	assert_int_equal(gdb_set_phys_mode(g, true), 0);
	assert_int_equal(gdb_write_mem(g, 0, LOOP_AT, loop_code, sizeof(loop_code)), 0);
	assert_int_equal(gdb_read_mem(g, 0, LOOP_AT, back, sizeof(back)), 0);
	assert_memory_equal(back, loop_code, sizeof(loop_code));
	assert_int_equal(gdb_set_phys_mode(g, false), 0);
	/* Real mode: a selector write reloads the base (selector << 4). */
	assert_int_equal(gdb_write_reg(g, 1, X86_GDB_CS, 0), 0);
	assert_int_equal(gdb_write_reg(g, 1, X86_GDB_RIP, LOOP_AT), 0);
	assert_int_equal(gdb_write_reg(g, 1, X86_GDB_RAX, 0), 0);
	assert_int_equal(gdb_write_reg(g, 1, X86_GDB_RBX, 0), 0);
	assert_int_equal(gdb_read_regs(g, 1, &r), 0);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CS)], 0);
	assert_int_equal(r.gp.r[X86_RIP], LOOP_AT);
	assert_int_equal(r.gp.r[X86_RAX], 0);
	assert_int_equal(r.gp.r[X86_RBX], 0);
}

/* ---- tests ----------------------------------------------------------------------------------- */

static void test_reset_state(void **state)
{
	struct gdb *g = vmq.gdb;
	char dev[64], msg[200], want[200];
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int busy, tids[8], major, minor, micro;
	unsigned nr;
	struct gdb_regs r;

	(void)state;
	/* The greeting's version, e.g. "7.2.22" (what the figures in these tests were taken on). */
	assert_int_equal(sscanf(vmq.qmp.version, "%d.%d.%d", &major, &minor, &micro), 3);
	assert_true(major >= 7 && minor >= 0 && micro >= 0);
	status_is("prelaunch", false);

	/* A port somebody else listens on: QEMU says so in HMP text. */
	busy = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(busy, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(busy, 1), 0);
	{
		socklen_t len = sizeof(sa);

		assert_int_equal(getsockname(busy, (struct sockaddr *)&sa, &len), 0);
	}
	snprintf(dev, sizeof(dev), "tcp:127.0.0.1:%d", ntohs(sa.sin_port));
	assert_int_equal(qmp_gdbserver(&vmq.qmp, dev, msg, sizeof(msg)), -EIO);
	snprintf(want, sizeof(want),
		 "Failed to find an available port: Address already in use; "
		 "Could not open gdbserver on device '%s'",
		 dev);
	assert_string_equal(msg, want);
	close(busy);

	attach();
	assert_int_equal(g->packet_size, 4096);
	if (major == 7)
		assert_true(g->ack); /* QEMU 7.2 answers QStartNoAckMode with an empty packet */
	assert_true(g->vcont);
	assert_int_equal(g->last_stop.kind, GDB_STOP_SIGNAL);
	assert_int_equal(g->last_stop.code, 5);
	assert_int_equal(g->last_stop.thread, 1);
	status_is("prelaunch", false);

	assert_int_equal(gdb_threads(g, tids, 8, &nr), 0);
	assert_int_equal(nr, 2);
	assert_int_equal(tids[0], 1);
	assert_int_equal(tids[1], 2);
	assert_int_equal(gdb_threads(g, tids, 1, &nr), -ENOSPC);

	for (int t = 1; t <= 2; t++) {
		assert_int_equal(gdb_read_regs(g, t, &r), 0);
		assert_int_equal(r.gp.r[X86_RIP],
				 0xfff0); /* CS base 0xffff0000: linear 0xfffffff0 */
		assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CS)], 0xf000);
		assert_int_equal(r.gp.r[X86_RDX],
				 0x60fb1); /* qemu64: family 15 model 107 stepping 1 */
		assert_int_equal(r.gp.r[X86_RAX], 0);
		assert_int_equal(r.gp.r[X86_RSP], 0);
		assert_int_equal(r.gp.r[X86_RFLAGS], 2);
		assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_SS)], 0);
		assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR0)], 0x60000010);
		assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR3)], 0);
		assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR4)], 0);
		assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_EFER)], 0);
		assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_GS_BASE)], 0);
		assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_K_GS_BASE)], 0);
	}
	/* The raw reply: 66 registers, 608 bytes. */
	assert_int_equal(gdb_select_thread(g, 1), 0);
	assert_int_equal(gdb_command(g, "g"), 0);
	assert_int_equal(g->pkt_len, 1216);
	/* fctrl (x87 control word) 0x37f right after the 8 x87 registers, mxcsr 0x1f80 last. */
	assert_memory_equal(g->pkt + 2 * (236 + 80), "7f030000", 8);
	assert_memory_equal(g->pkt + 1216 - 8, "801f0000", 8);
}

static void test_registers(void **state)
{
	struct gdb *g = vmq.gdb;
	struct gdb_regs r;

	(void)state;
	attach();
	assert_int_equal(gdb_write_reg(g, 1, X86_GDB_RBX, 0x11223344), 0);
	assert_int_equal(g->p_state, 1); /* P works once target.xml was read */
	/* Outside 64-bit code QEMU keeps only the low 32 bits, and r8-r15 are not there at all. */
	assert_int_equal(gdb_write_reg(g, 1, X86_GDB_RAX, 0x1122334455667788ull), 0);
	assert_int_equal(gdb_write_reg(g, 1, X86_GDB_R8, 5), 0);
	assert_int_equal(gdb_write_reg(g, 1, X86_GDB_CR3, 0x5000), 0);
	assert_int_equal(gdb_read_regs(g, 1, &r), 0);
	assert_int_equal(r.gp.r[X86_RBX], 0x11223344);
	assert_int_equal(r.gp.r[X86_RAX], 0x55667788);
	assert_int_equal(r.gp.r[X86_R8], 0);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR3)], 0x5000);
	assert_int_equal(r.gp.r[X86_RIP], 0xfff0);

	/* The G path, on the other vCPU: only that vCPU changes. */
	g->p_state = 0;
	assert_int_equal(gdb_write_reg(g, 2, X86_GDB_RCX, 0xcafe), 0);
	assert_int_equal(gdb_write_reg(g, 2, X86_GDB_RSP, 0x7000), 0);
	assert_int_equal(gdb_read_regs(g, 2, &r), 0);
	assert_int_equal(r.gp.r[X86_RCX], 0xcafe);
	assert_int_equal(r.gp.r[X86_RSP], 0x7000);
	assert_int_equal(r.gp.r[X86_RIP], 0xfff0);
	assert_int_equal(r.gp.r[X86_RBX], 0);
	assert_int_equal(gdb_read_regs(g, 1, &r), 0);
	assert_int_equal(r.gp.r[X86_RCX], 0);
	assert_int_equal(r.gp.r[X86_RSP], 0);
	assert_int_equal(r.gp.r[X86_RBX], 0x11223344);
}

static void test_memory(void **state)
{
	static const uint8_t reset_jump[] = {0xea, 0x5b, 0xe0, 0x00, 0xf0}; /* jmp f000:e05b */
	struct gdb *g = vmq.gdb;
	uint8_t buf[16], virt[16], *big, *back;
	const size_t big_len = 5000;

	(void)state;
	attach();
	assert_int_equal(gdb_set_phys_mode(g, true), 0);
	assert_int_equal(gdb_command(g, "qqemu.PhyMemMode"), 0);
	assert_string_equal(g->pkt, "1");
	assert_int_equal(gdb_read_mem(g, 1, 0xffff0, buf, sizeof(buf)), 0);
	assert_memory_equal(buf, reset_jump, sizeof(reset_jump));
	assert_memory_equal(buf + 5, "06/23/99", 8); /* the BIOS date */
	/* The same ROM at the top of 4 GiB, where the CPU fetches its first instruction. */
	assert_int_equal(gdb_read_mem(g, 1, 0xfffffff0, virt, sizeof(virt)), 0);
	assert_memory_equal(virt, buf, sizeof(buf));

	assert_int_equal(gdb_write_mem(g, 0, 0x1000, "\xde\xad\xbe\xef", 4), 0);
	assert_int_equal(gdb_read_mem(g, 0, 0xffe, buf, 8), 0);
	assert_memory_equal(buf, "\x00\x00\xde\xad\xbe\xef\x00\x00", 8);

	/* Larger than a packet both ways (2044-byte reads, 2024-byte writes). */
	big = malloc(big_len);
	back = malloc(big_len);
	for (size_t i = 0; i < big_len; i++)
		big[i] = (uint8_t)(i * 7 + 3);
	assert_int_equal(gdb_write_mem(g, 0, 0x10000, big, big_len), 0);
	memset(back, 0, big_len);
	assert_int_equal(gdb_read_mem(g, 0, 0x10000, back, big_len), 0);
	assert_memory_equal(back, big, big_len);
	free(big);
	free(back);

	/* Virtual addresses: paging is off, so linear == physical. */
	assert_int_equal(gdb_set_phys_mode(g, false), 0);
	assert_int_equal(gdb_command(g, "qqemu.PhyMemMode"), 0);
	assert_string_equal(g->pkt, "0");
	assert_int_equal(gdb_read_mem(g, 1, 0x1000, virt, 4), 0);
	assert_memory_equal(virt, "\xde\xad\xbe\xef", 4);
	/* A non-canonical address is refused: E14 (QEMU's decimal EFAULT). */
	assert_int_equal(gdb_read_mem(g, 1, 0xffff800000000000ull - 0x10000, buf, 4), -EFAULT);
	assert_int_equal(g->last_error, 0x14);
}

static void test_breakpoint_step_continue(void **state)
{
	struct gdb *g = vmq.gdb;
	struct gdb_stop st;
	struct gdb_regs r;
	const int n = 500;
	double t0, step_rate, skip_rate, pipe_rate;

	(void)state;
	attach();
	load_loop();

	/* One step: inc ax. */
	assert_int_equal(gdb_step(g, 1, &st), 0);
	assert_int_equal(st.kind, GDB_STOP_SIGNAL);
	assert_int_equal(st.code, 5);
	assert_int_equal(st.thread, 1);
	assert_int_equal(gdb_read_regs(g, 1, &r), 0);
	assert_int_equal(r.gp.r[X86_RIP], LOOP_AT + 1);
	assert_int_equal(r.gp.r[X86_RAX], 1);
	assert_int_equal(r.gp.r[X86_RBX], 0);

	assert_int_equal(gdb_insert_bp(g, LOOP_AT + 1), 0);
	/* Continuing from the breakpoint's own address hits it again at once: nothing ran. */
	assert_int_equal(gdb_continue(g), 0);
	assert_int_equal(gdb_wait_stop(g, 5000, &st), 0);
	assert_int_equal(st.code, 5);
	assert_int_equal(st.thread, 1);
	status_is("debug", false);
	assert_int_equal(gdb_read_regs(g, 1, &r), 0);
	assert_int_equal(r.gp.r[X86_RIP], LOOP_AT + 1);
	assert_int_equal(r.gp.r[X86_RAX], 1);
	assert_int_equal(r.gp.r[X86_RBX], 0);

	/* Step over the breakpoint (a step ignores it), continue, hit it again: one loop per hit.
	 */
	t0 = now_s();
	for (int i = 1; i <= n; i++) {
		assert_int_equal(gdb_step(g, 1, &st), 0);
		assert_int_equal(gdb_continue(g), 0);
		assert_int_equal(gdb_wait_stop(g, 5000, &st), 0);
		assert_int_equal(st.code, 5);
		assert_int_equal(st.thread, 1);
	}
	step_rate = n / (now_s() - t0);
	assert_int_equal(gdb_read_regs(g, 1, &r), 0);
	assert_int_equal(r.gp.r[X86_RIP], LOOP_AT + 1);
	assert_int_equal(r.gp.r[X86_RAX], 1 + n);
	assert_int_equal(r.gp.r[X86_RBX], n);

	/* Emulate instead of stepping (what the tracer does for a NOP5): move RIP past it. */
	t0 = now_s();
	for (int i = 1; i <= n; i++) {
		assert_int_equal(gdb_write_reg(g, 1, X86_GDB_RIP, LOOP_AT + 2), 0);
		assert_int_equal(gdb_continue(g), 0);
		assert_int_equal(gdb_wait_stop(g, 5000, &st), 0);
		assert_int_equal(st.thread, 1);
	}
	skip_rate = n / (now_s() - t0);
	assert_int_equal(gdb_read_regs(g, 1, &r), 0);
	assert_int_equal(r.gp.r[X86_RIP], LOOP_AT + 1);
	assert_int_equal(r.gp.r[X86_RAX], 1 + 2 * n);
	assert_int_equal(r.gp.r[X86_RBX], n);

	/* A debug stop makes the vCPU that stopped QEMU's register thread, whatever Hg said before:
	 * `g` with no Hg reads vCPU 1 (vCPU 2 still sits at the reset vector). */
	assert_int_equal(gdb_write_reg(g, 1, X86_GDB_RIP, LOOP_AT + 2), 0);
	assert_int_equal(gdb_select_thread(g, 2), 0);
	assert_int_equal(gdb_continue(g), 0);
	assert_int_equal(gdb_wait_stop(g, 5000, &st), 0);
	assert_int_equal(st.thread, 1);
	assert_int_equal(g->cur_thread, 1);
	assert_int_equal(gdb_command(g, "g"), 0);
	assert_int_equal(gdb_packet_decode_regs(&x86_gdb_layout, g->pkt, g->pkt_len, &r), 0);
	assert_int_equal(r.gp.r[X86_RIP], LOOP_AT + 1);
	assert_int_equal(r.gp.r[X86_RAX], 2 + 2 * n);

	/* The same, P and vCont;c in one segment, P's reply read after the continue went out. */
	t0 = now_s();
	for (int i = 1; i <= n; i++) {
		assert_int_equal(gdb_write_pc_continue(g, 1, LOOP_AT + 2), 0);
		assert_true(g->running);
		assert_int_equal(gdb_wait_stop(g, 5000, &st), 0);
		assert_int_equal(st.thread, 1);
	}
	pipe_rate = n / (now_s() - t0);
	assert_int_equal(gdb_read_regs(g, 1, &r), 0);
	assert_int_equal(r.gp.r[X86_RIP], LOOP_AT + 1);
	assert_int_equal(r.gp.r[X86_RAX], 2 + 3 * n);
	assert_int_equal(r.gp.r[X86_RBX], n);

	assert_int_equal(gdb_remove_bp(g, LOOP_AT + 1), 0);
	assert_int_equal(gdb_remove_bp(g, LOOP_AT + 1), -EIO);
	assert_int_equal(g->last_error, 0x22); /* QEMU's decimal EINVAL */
	printf("hvtrace: gdbstub TCG breakpoint hits: %.0f/s (step + continue), %.0f/s (P rip + "
	       "continue), %.0f/s (P rip with the continue)\n",
	       step_rate, skip_rate, pipe_rate);
}

static void test_continue_interrupt(void **state)
{
	struct gdb *g = vmq.gdb;
	struct gdb_stop st;
	struct gdb_regs r;
	uint16_t ax, bx;
	double t0, cycles, reads;
	const int n = 500;

	(void)state;
	attach();
	load_loop();
	assert_int_equal(gdb_continue(g), 0);
	assert_int_equal(gdb_wait_stop(g, 30, &st), -ETIMEDOUT); /* no breakpoint: it keeps going */
	assert_int_equal(gdb_command(g, "?"), -EBUSY);
	sleep_ms(20);
	assert_int_equal(gdb_interrupt(g, 5000, &st), 0);
	assert_int_equal(st.kind, GDB_STOP_SIGNAL);
	assert_int_equal(st.code, 2);
	assert_int_equal(st.thread, 1);
	status_is("paused", false);
	assert_int_equal(gdb_read_regs(g, 1, &r), 0);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CS)], 0);
	ax = (uint16_t)r.gp.r[X86_RAX];
	bx = (uint16_t)r.gp.r[X86_RBX];
	/* inc ax; inc bx; jmp: ax leads bx by one between the two incs. */
	if (r.gp.r[X86_RIP] == LOOP_AT)
		assert_int_equal(ax, bx);
	else if (r.gp.r[X86_RIP] == LOOP_AT + 1 || r.gp.r[X86_RIP] == LOOP_AT + 2)
		assert_int_equal(ax, (uint16_t)(bx + 1));
	else
		fail_msg("rip %#llx outside the loop", (unsigned long long)r.gp.r[X86_RIP]);
	assert_true(r.gp.r[X86_RAX] >> 16 == 0 && (ax != 0 || bx != 0));

	t0 = now_s();
	for (int i = 0; i < n; i++) {
		assert_int_equal(gdb_continue(g), 0);
		assert_int_equal(gdb_interrupt(g, 5000, &st), 0);
		assert_int_equal(st.code, 2);
	}
	cycles = n / (now_s() - t0);
	t0 = now_s();
	for (int i = 0; i < 4 * n; i++)
		assert_int_equal(gdb_read_regs(g, 1, &r), 0);
	reads = 4 * n / (now_s() - t0);
	printf("hvtrace: gdbstub TCG continue+interrupt: %.0f/s; register reads (g): %.0f/s\n",
	       cycles, reads);
}

/* Detach resumes the VM; a second debugger attaching stops it (QEMU sends an unasked T02, which the
 * client skips); QEMU quitting while the VM runs under the debugger reports W00. */
static void test_detach_reattach_quit(void **state)
{
	struct gdb *g = vmq.gdb;
	struct gdb_stop st;
	struct gdb_regs r;
	char err[256], reply[64];
	int status;

	(void)state;
	attach();
	load_loop();
	assert_int_equal(gdb_insert_bp(g, 0x12345), 0); /* QEMU drops it on D */
	assert_int_equal(gdb_detach(g), 0);
	assert_int_equal(g->fd, -1);
	status_is("running", true);

	qmp_clear_events(&vmq.qmp);
	assert_int_equal(gdb_connect(g, "127.0.0.1", vmq.port, err, sizeof(err)), 0);
	status_is("paused", false);
	assert_int_equal(vmq.qmp.events & QMP_EV_STOP, QMP_EV_STOP);
	/* Had the unasked T02 been taken for qSupported's answer, PacketSize would be the default.
	 */
	assert_int_equal(g->packet_size, 4096);
	assert_true(g->vcont);
	assert_int_equal(g->last_stop.code, 5); /* QEMU answers `?` with T05 whatever stopped it */
	assert_int_equal(g->last_stop.thread, 1);
	assert_int_equal(gdb_read_regs(g, 1, &r), 0);
	assert_true(r.gp.r[X86_RIP] >= LOOP_AT && r.gp.r[X86_RIP] <= LOOP_AT + 2);
	assert_int_equal(gdb_remove_bp(g, 0x12345), -EIO); /* gone with the first connection */

	assert_int_equal(gdb_continue(g), 0);
	assert_int_equal(qmp_execute(&vmq.qmp, "{\"execute\":\"quit\"}", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "{}");
	assert_int_equal(vmq.qmp.events & QMP_EV_SHUTDOWN, QMP_EV_SHUTDOWN);
	assert_int_equal(gdb_wait_stop(g, 5000, &st), 0);
	assert_int_equal(st.kind, GDB_STOP_EXITED);
	assert_int_equal(st.code, 0);
	assert_true(g->gone);
	status = qemu_wait(5000);
	assert_true(status >= 0 && WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_reset_state, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_registers, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_memory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_breakpoint_step_continue, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_continue_interrupt, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_detach_reattach_quit, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	if (!find_qemu())
		hv_skip_binary("QEMU gdbstub integration: qemu-system-x86_64 not found (set $QEMU)");
	return cmocka_run_group_tests_name("qemu_gdbstub", tests, NULL, NULL);
}

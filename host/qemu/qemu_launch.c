#include "host/qemu/qemu_launch.h"
#include "vmi/vmi_kimage.h"
#include "host/vmm/tcp.h"
#include "host/sink/out_fail.h"
#include "host/trace/clock.h"
#include "vmi/vmi_file.h"
#include "host/util/peer_text.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PANIC_TEXT "Kernel panic - not syncing"

/* QEMU's name for the system emulator of @isa's guests. */
static const char *qemu_isa_name(const struct arch *isa)
{
	return isa == arch_get(ARCH_ARM64) ? "aarch64" : "x86_64";
}

const char *qemu_launch_binary(const struct arch *isa)
{
	bool arm64 = isa == arch_get(ARCH_ARM64);
	const char *env = getenv(arm64 ? "HVTRACE_QEMU_AARCH64" : "HVTRACE_QEMU");

	return env && *env ? env : arm64 ? "qemu-system-aarch64" : "qemu-system-x86_64";
}

bool qemu_launch_other_isa(const char *binary, const struct arch *isa, char *other, size_t len)
{
	const char *base = strrchr(binary, '/'), *want = qemu_isa_name(isa);

	base = base ? base + 1 : binary;
	if (strncmp(base, "qemu-system-", 12) || !strncmp(base + 12, want, strlen(want)))
		return false;
	snprintf(other, len, "%s", base);
	return true;
}

int qemu_launch_argv(const struct qemu_launch_cfg *cfg, const char **argv, int max, char *buf,
		     size_t buflen)
{
	int n = 0;
	size_t used = 0;

#define ARG(s)                                                                                     \
	do {                                                                                       \
		if (n + 2 > max)                                                                   \
			return -E2BIG;                                                             \
		argv[n++] = (s);                                                                   \
	} while (0)
#define FMT(...)                                                                                   \
	({                                                                                         \
		char *_p = buf + used;                                                             \
		int _k = snprintf(_p, buflen - used, __VA_ARGS__);                                 \
		if (_k < 0 || (size_t)_k >= buflen - used)                                         \
			return -E2BIG;                                                             \
		used += (size_t)_k + 1;                                                            \
		_p;                                                                                \
	})
	bool arm64 = cfg->isa == arch_get(ARCH_ARM64), kvm = cfg->accel && !strcmp(cfg->accel, "kvm");
	const char *console = arm64 ? "ttyAMA0" : "ttyS0";

	ARG(cfg->binary ? cfg->binary : qemu_launch_binary(cfg->isa));
	ARG("-accel");
	ARG(kvm ? "kvm" : "tcg,thread=multi");
	ARG("-M");
	ARG(cfg->machine ? cfg->machine : arm64 ? "virt" : "pc");
	/* -cpu max under KVM in the nested lane hangs or panics L1 (measured: host boots the test
	 * kernel to power-off in 48 s where max never gets past SMP bring-up); host is KVM's own.
	 * arm64 under TCG: max signs return addresses with QARMA5, which TCG emulates slowly; QEMU's
	 * own algorithm (pauth-impdef) took 40% off the boot (docs/arm64.md) */
	ARG("-cpu");
	ARG(kvm ? "host" : arm64 ? "max,pauth-impdef=on" : "max");
	ARG("-smp");
	ARG(FMT("%u", cfg->smp ? cfg->smp : 2));
	ARG("-m");
	ARG(FMT("%u", cfg->mem_mb ? cfg->mem_mb : 256));
	ARG("-display");
	ARG("none");
	ARG("-nodefaults");
	ARG("-no-user-config");
	ARG("-no-reboot");
	if (cfg->no_shutdown)
		ARG("-no-shutdown");
	ARG("-serial");
	ARG("stdio");
	ARG("-monitor");
	ARG("none");
	ARG("-qmp");
	ARG(FMT("unix:%s,server=on,wait=off", cfg->qmp_path));
	ARG("-kernel");
	ARG(cfg->kernel);
	if (cfg->initrd) {
		ARG("-initrd");
		ARG(cfg->initrd);
	}
	ARG("-append");
	if (cfg->reserve_size && arm64) /* no memmap= on arm64: the kernel keeps to RAM below; */
		ARG(FMT("console=%s panic=-1%s%s mem=%lluK", console, /* last: the kernel's */
			cfg->append ? " " : "", cfg->append ? cfg->append : "",
			(unsigned long long)(cfg->reserve_gpa - QEMU_VIRT_RAM_BASE) >> 10));
	else if (cfg->reserve_size)
		ARG(FMT("console=%s panic=-1 memmap=%lluK$0x%llx%s%s", console,
			(unsigned long long)cfg->reserve_size >> 10,
			(unsigned long long)cfg->reserve_gpa, cfg->append ? " " : "",
			cfg->append ? cfg->append : ""));
	else
		ARG(FMT("console=%s panic=-1%s%s", console, cfg->append ? " " : "",
			cfg->append ? cfg->append : ""));
	argv[n] = NULL;
	return n;
#undef ARG
#undef FMT
}

#define MIB		 (1ull << 20)
#define ACPI_ROOM	 0x28000ull /* QEMU keeps this below the top of low RAM for ACPI */
#define KERNEL_LOAD	 (16 * MIB) /* LOAD_PHYSICAL_ADDR: the kernel without KASLR */
#define BZ_MAGIC_OFF	 0x202	    /* "HdrS" */
#define BZ_VERSION_OFF	 0x206
#define BZ_INIT_SIZE_OFF 0x260 /* u32, boot protocol 2.10 and later */

uint64_t qemu_launch_block_span(const struct qemu_launch_cfg *cfg)
{
	struct vmi_kimage k;
	char why[128];

	if (cfg->isa != arch_get(ARCH_ARM64) || !cfg->kernel ||
	    vmi_kimage_read(cfg->kernel, &k, why, sizeof(why)) < 0 ||
	    k.kind != VMI_KIMAGE_ARM64_IMAGE || !k.page_shift)
		return 2 * MIB;
	/* a level-2 entry maps what a table of 2^(shift - 3) entries of pages maps */
	return 1ull << (k.page_shift + k.page_shift - 3);
}

int qemu_launch_reserve(const struct qemu_launch_cfg *cfg, uint64_t size, uint64_t *gpa, char *why,
			size_t whylen)
{
	uint64_t ram = (uint64_t)(cfg->mem_mb ? cfg->mem_mb : 256) * MIB, low, top, floor;
	uint8_t h[BZ_INIT_SIZE_OFF + 4];
	uint16_t version;
	uint32_t init_size;
	struct stat st;
	int fd;

	if (cfg->isa == arch_get(ARCH_ARM64)) {
		/* virt: RAM from QEMU_VIRT_RAM_BASE, the DTB, the kernel and the initrd at its start;
		 * the stub's range at its top, the kernel told (mem=) to keep below it */
		if (cfg->machine && strcmp(cfg->machine, "virt")) {
			msg_fmt(why, whylen, "hvtrace knows the RAM of -M virt only, not of -M %s",
				cfg->machine);
			return -ENOTSUP;
		}
		uint64_t span = qemu_launch_block_span(cfg);

		if (size % span || size + 64 * MIB > ram) {
			msg_fmt(why, whylen, "%llu KiB do not fit beside the kernel in %llu MiB of RAM",
				(unsigned long long)size >> 10, (unsigned long long)ram >> 20);
			return -ENOSPC;
		}
		*gpa = (QEMU_VIRT_RAM_BASE + ram - size) & ~(span - 1);
		return 0;
	}
	/* pc splits RAM at 3.5 GiB and q35 at 2.75 GiB; under either split only 2 GiB are sure */
	low = ram >= 0xb0000000ull ? 0x80000000ull : ram;
	fd = vmi_file_open("--kernel", cfg->kernel, 0, NULL, why, whylen); /* never blocks */
	if (fd < 0 || pread(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		if (fd >= 0)
			close(fd);
		msg_fmt(why, whylen, "cannot read the kernel's boot header");
		return -EIO;
	}
	close(fd);
	memcpy(&version, h + BZ_VERSION_OFF, 2);
	memcpy(&init_size, h + BZ_INIT_SIZE_OFF, 4);
	if (memcmp(h + BZ_MAGIC_OFF, "HdrS", 4) || version < 0x20a) {
		msg_fmt(why, whylen, "the kernel is no bzImage of boot protocol 2.10 or later");
		return -ENOEXEC;
	}
	top = low - ACPI_ROOM;
	if (cfg->initrd) {
		if (stat(cfg->initrd, &st) < 0 || (uint64_t)st.st_size >= top) {
			msg_fmt(why, whylen, "cannot size the initrd");
			return -EIO;
		}
		top -= ((uint64_t)st.st_size + 4095) & ~4095ull;
	}
	floor = KERNEL_LOAD + (((uint64_t)init_size + 2 * MIB - 1) & ~(2 * MIB - 1));
	if (size % (2 * MIB) || top < floor + 2 * MIB + size) {
		msg_fmt(why, whylen,
			"%llu KiB do not fit between the kernel and the initrd in %llu "
			"MiB of RAM",
			(unsigned long long)size >> 10, (unsigned long long)ram >> 20);
		return -ENOSPC;
	}
	*gpa = (top - 2 * MIB - size) & ~(2 * MIB - 1);
	return 0;
}

/* Writes one console line; the first failure is kept in p->console_err and ends the run
 * (out_fail_raise), later lines are dropped. */
static void console_line(struct qemu_proc *p, const char *line)
{
	errno = 0;
	if (!p->console_err && (fputs(line, p->console) < 0 || fflush(p->console))) {
		p->console_err = errno ? errno : EIO;
		out_fail_raise(); /* the run ends, as for the trace */
	}
}

/* Forwards the serial console line by line and watches for a panic. */
static void *console_thread(void *arg)
{
	struct qemu_proc *p = arg;
	char buf[4096], line[1024];
	size_t len = 0;
	ssize_t n;

	while ((n = read(p->console_fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\r')
				continue;
			line[len++] = buf[i];
			if (buf[i] == '\n' || len == sizeof(line) - 1) {
				line[len] = 0;
				if (strstr(line, PANIC_TEXT))
					atomic_store(&p->panic, true);
				console_line(p, line);
				len = 0;
			}
		}
	}
	if (len) {
		line[len] = 0;
		console_line(p, line);
	}
	return NULL;
}

static void read_err(struct qemu_proc *p)
{
	size_t used = strlen(p->err_text);
	ssize_t n;

	while (used + 1 < sizeof(p->err_text) &&
	       (n = read(p->err_fd, p->err_text + used, sizeof(p->err_text) - 1 - used)) > 0)
		used += (size_t)n;
	p->err_text[used] = 0;
	for (char *c = p->err_text; *c; c++)
		if (*c == '\n' && c[1] == 0)
			*c = 0;
}

/* A private directory for QEMU's run-time sockets (mkdtemp: mode 0700, a name no one else has)
 * under $TMPDIR or /tmp, with the QMP socket's path in it. 0, or -errno with @err. */
static int make_run_dir(struct qemu_proc *p, char *err, size_t errlen)
{
	const char *tmp = getenv("TMPDIR");

	/* a socket's path has room for 107 bytes: a longer $TMPDIR is not used */
	if (!tmp || !*tmp || strlen(tmp) + sizeof("/hvtrace-XXXXXX/qmp.sock") > sizeof(p->qmp_path))
		tmp = "/tmp";
	snprintf(p->run_dir, sizeof(p->run_dir), "%s/hvtrace-XXXXXX", tmp);
	if (!mkdtemp(p->run_dir)) {
		int e = errno;

		msg_fmt(err, errlen, "a directory for QEMU's sockets in %s: %s", tmp, strerror(e));
		p->run_dir[0] = 0;
		return -e;
	}
	snprintf(p->qmp_path, sizeof(p->qmp_path), "%s/qmp.sock", p->run_dir);
	return 0;
}

void qemu_proc_remove_run_dir(struct qemu_proc *p)
{
	if (!p->run_dir[0])
		return;
	unlink(p->qmp_path);
	if (rmdir(p->run_dir) < 0)
		fprintf(stderr, "hvtrace: %s: %s\n", p->run_dir, strerror(errno));
	p->run_dir[0] = 0;
}

int qemu_launch(const struct qemu_launch_cfg *cfg_in, struct qemu_proc *p, char *err, size_t errlen)
{
	struct qemu_launch_cfg cfg_own = *cfg_in;
	const struct qemu_launch_cfg *cfg = &cfg_own;
	const char *argv[64];
	char buf[4096];
	int out[2], errp[2], n, ret;
	struct stat st;

	memset(p, 0, sizeof(*p));
	p->pid = -1;
	p->console = cfg->console;
	if (cfg->qmp_path) {
		if (snprintf(p->qmp_path, sizeof(p->qmp_path), "%s", cfg->qmp_path) >=
		    (int)sizeof(p->qmp_path)) {
			msg_fmt(err, errlen, "QMP socket %s: the name is too long", cfg->qmp_path);
			return -ENAMETOOLONG;
		}
	} else {
		ret = make_run_dir(p, err, errlen);
		if (ret < 0)
			return ret;
	}
	cfg_own.qmp_path = p->qmp_path;
	n = qemu_launch_argv(cfg, argv, 64, buf, sizeof(buf));
	if (n < 0) {
		qemu_proc_remove_run_dir(p);
		msg_fmt(err, errlen, "QEMU command line too long");
		return n;
	}
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		ret = -errno;
		qemu_proc_remove_run_dir(p);
		msg_fmt(err, errlen, "pipe: %s", strerror(-ret));
		return ret;
	}
	if (cfg_in->qmp_path)
		unlink(cfg->qmp_path);
	p->pid = fork();
	if (p->pid < 0) {
		ret = -errno;
		qemu_proc_remove_run_dir(p);
		msg_fmt(err, errlen, "fork: %s", strerror(-ret));
		return ret;
	}
	if (p->pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* a Ctrl-C for hvtrace must not kill the guest before hvtrace has detached */
		setpgid(0, 0);
		if (cfg->nice && nice(cfg->nice) == -1 && errno)
			dprintf(2, "hvtrace: cannot renice QEMU: %s\n", strerror(errno));
		dup2(null, 0);
		dup2(out[1], 1);
		dup2(errp[1], 2);
		execvp(argv[0], (char *const *)argv);
		dprintf(2, "%s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	close(out[1]);
	close(errp[1]);
	p->console_fd = out[0];
	p->err_fd = errp[0];
	fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
	if (pthread_create(&p->console_thread, NULL, console_thread, p) == 0)
		p->console_running = true;
	for (int i = 0; i < 1000; i++) {
		int status;

		if (stat(cfg->qmp_path, &st) == 0 && S_ISSOCK(st.st_mode))
			return 0;
		if (tcp_interrupted()) {
			msg_fmt(err, errlen, "stopped while QEMU was starting");
			qemu_proc_kill(p);
			return -EINTR;
		}
		if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
			p->pid = -1;
			usleep(20000);
			read_err(p);
			char text[sizeof(p->err_text)];

			qemu_proc_remove_run_dir(p);
			msg_fmt(err, errlen, "QEMU failed: %s",
				p->err_text[0] ? peer_str(p->err_text, text, sizeof(text))
					       : "exited at once");
			return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? -ENOENT : -EIO;
		}
		usleep(10000);
	}
	msg_fmt(err, errlen, "QEMU did not open its QMP socket %s within 10 s", cfg->qmp_path);
	qemu_proc_kill(p);
	return -ETIMEDOUT;
}

static void reaped(struct qemu_proc *p)
{
	p->pid = -1;
	qemu_proc_remove_run_dir(p);
	if (p->console_running) {
		pthread_join(p->console_thread, NULL);
		p->console_running = false;
	}
	read_err(p);
	close(p->console_fd);
	close(p->err_fd);
}

int qemu_proc_wait(struct qemu_proc *p, int timeout_ms)
{
	int64_t t0;
	int status;

	if (p->pid < 0)
		return -ECHILD;
	t0 = clock_now_ms();
	for (;;) {
		pid_t r = waitpid(p->pid, &status, WNOHANG);

		if (r == p->pid) {
			reaped(p);
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
		if (clock_now_ms() - t0 >= timeout_ms)
			return -ETIMEDOUT;
		usleep(5000);
	}
}

void qemu_proc_kill(struct qemu_proc *p)
{
	int status;

	if (p->pid < 0)
		return;
	kill(p->pid, SIGKILL);
	waitpid(p->pid, &status, 0);
	reaped(p);
}

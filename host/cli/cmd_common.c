#include "host/cli/cmd_common.h"
#include "host/cli/progress.h"
#include "host/kvm/kvm_int3_probe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <sys/signalfd.h>

void cmd_error(const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	int n;

	fflush(stdout);
	progress_hold(); /* the progress line, if one shows, makes room */
	va_start(ap, fmt);
	n = vsnprintf(line + 9, sizeof(line) - 10, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(line) - 10) {
		/* one write: the writer thread's output on a shared terminal cannot split the line */
		memcpy(line, "hvtrace: ", 9);
		line[9 + n] = '\n';
		fwrite(line, 1, 9 + (size_t)n + 1, stderr);
	} else { /* longer than a line buffer: in pieces */
		fputs("hvtrace: ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	progress_release();
}

FILE *cmd_open_out(const char *path, const char *flag)
{
	FILE *f;

	if (!path)
		return stdout;
	f = fopen(path, "w");
	if (!f)
		cmd_error("%s %s: %s", flag, path, strerror(errno));
	return f;
}

int cmd_finish_out(FILE *f, const char *path, const char *flag, int werr)
{
	int e = werr;

	errno = 0;
	if ((f == stdout ? fflush(f) : fclose(f)) && !e)
		e = errno ? errno : EIO;
	if (!e)
		return 0;
	if (path)
		cmd_error("%s %s: %s", flag, path, strerror(e));
	else
		cmd_error("stdout: %s", strerror(e));
	return -e;
}

int cmd_block_signals(sigset_t *old)
{
	sigset_t sigs;
	int fd;

	signal(SIGINT, SIG_DFL);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, old);
	fd = signalfd(-1, &sigs, SFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int cmd_probe_mode(const struct session *s, const struct target *tgt,
		   const struct vmi_task_layout *task, const char *target_why, bool no_trap,
		   bool *stub, char *err, size_t errlen)
{
	const char *why = !tgt->ops->stub_map ? "this target cannot place the stub"
			  : target_why ? target_why
			  : !task->has_cpu_gs && !task->cpu_aux_mask && !task->cpu_apic_id
			      ? "the guest's CPU has no RDTSCP with IA32_TSC_AUX set, its CPUID does not "
				"give each vCPU's index, and the guest does not say where its CPU "
				"number is (hvtrace_cpu_gs)"
					      : NULL;

	*stub = false;
	if (s->probe == PROBE_TRAP)
		return 0;
	if (why && no_trap) {
		snprintf(err, errlen,
			 "trap probes: INT3 in a guest does not exit on this host's KVM, and stub "
			 "probes cannot work: %s",
			 why);
		return -ENOTSUP;
	}
	if (why && s->probe == PROBE_STUB) {
		snprintf(err, errlen, "--probe stub: %s", why);
		return -ENOTSUP;
	}
	*stub = !why;
	return 0;
}

int cmd_check_int3(const struct session *s, bool qemu, bool *no_trap, char *err, size_t errlen)
{
	const struct kvm_int3_check *c = kvm_int3_check();
	char why[256];

	*no_trap = !kvm_int3_exits(c->verdict, qemu);
	if (!*no_trap)
		return 0;
	kvm_int3_why(c, qemu, why, sizeof(why));
	if (s->probe == PROBE_TRAP) {
		snprintf(err, errlen,
			 "trap probes: INT3 in a guest does not exit on this host's KVM (%s); use "
			 "--probe stub",
			 why);
		return -ENOTSUP;
	}
	if (s->probe == PROBE_AUTO)
		fprintf(stderr,
			"hvtrace: --probe auto: stub probes for every site: INT3 in a guest does not "
			"exit on this host's KVM (%s)\n",
			why);
	return 0;
}

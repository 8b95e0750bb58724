#include "host/cli/cmd_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <sys/signalfd.h>

void cmd_error(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("hvtrace: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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
		   const struct vmi_task_layout *task, const char *target_why, bool *stub, char *err,
		   size_t errlen)
{
	const char *why = !tgt->ops->stub_map ? "this target cannot place the stub"
			  : target_why ? target_why
			  : !task->has_cpu_gs ? "the guest does not say where its CPU number is"
					      : NULL;

	*stub = false;
	if (s->probe == PROBE_TRAP)
		return 0;
	if (why && s->probe == PROBE_STUB) {
		snprintf(err, errlen, "--probe stub: %s", why);
		return -ENOTSUP;
	}
	*stub = !why;
	return 0;
}

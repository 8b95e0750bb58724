#include "host/session/cmd_out.h"
#include "host/session/progress.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void cmd_error(const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	size_t n;

	fflush(stdout);
	progress_hold(); /* the progress line, if one shows, makes room */
	va_start(ap, fmt);
	/* a value too long for the line is shortened, never the reason (msg_vfmt) */
	n = msg_vfmt(line + 9, sizeof(line) - 10, fmt, ap);
	va_end(ap);
	/* one write: the writer thread's output on a shared terminal cannot split the line */
	memcpy(line, "hvtrace: ", 9);
	line[9 + n] = '\n';
	fwrite(line, 1, 9 + n + 1, stderr);
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

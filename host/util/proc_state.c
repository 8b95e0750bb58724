#include "host/util/proc_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* What follows the last ')' of /proc/PID[/task/TID]/stat and its space, into @buf: *@after. */
static int read_stat(pid_t pid, pid_t tid, char *buf, size_t len, const char **after)
{
	char path[80];
	const char *p;
	ssize_t n;
	int fd;

	if (tid > 0)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* "PID (COMM) STATE PPID PGRP SESSION TTY TPGID FLAGS ...": within the first 512 bytes
	 * (COMM is short) */
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -ENODATA;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2] || p[2] == ' ')
		return -EBADMSG;
	*after = p + 2;
	return 0;
}

int proc_state(pid_t pid, pid_t tid, char *state)
{
	char buf[512];
	const char *p;
	int ret;

	*state = 0;
	if ((ret = read_stat(pid, tid, buf, sizeof(buf), &p)) < 0)
		return ret;
	*state = p[0];
	return 0;
}

int proc_flags(pid_t pid, pid_t tid, unsigned long *flags)
{
	char buf[512], st;
	const char *p;
	int ret;

	*flags = 0;
	if ((ret = read_stat(pid, tid, buf, sizeof(buf), &p)) < 0)
		return ret;
	return sscanf(p, "%c %*d %*d %*d %*d %*d %lu", &st, flags) == 2 ? 0 : -EBADMSG;
}

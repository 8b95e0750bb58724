#include "host/util/proc_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int proc_state(pid_t pid, pid_t tid, char *state)
{
	char path[80], buf[512];
	const char *p;
	ssize_t n;
	int fd;

	*state = 0;
	if (tid > 0)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* "PID (COMM) STATE ...": the state is within the first 512 bytes (COMM is short) */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ENODATA;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2] || p[2] == ' ')
		return -EBADMSG;
	*state = p[2];
	return 0;
}

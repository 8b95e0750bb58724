#include "host/vmm/guardian.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#define GOODBYE 'q'

int guardian_start(struct guardian *g, void (*takeover)(void *ctx), void *ctx)
{
	int p[2];
	char c;

	g->pid = -1;
	g->fd = -1;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	g->pid = fork();
	if (g->pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (g->pid == 0) {
		ssize_t n;

		close(p[1]);
		do
			n = read(p[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n == 0)
			takeover(ctx); /* EOF without a goodbye: the parent is gone */
		_exit(0);
	}
	close(p[0]);
	g->fd = p[1];
	return 0;
}

void guardian_stop(struct guardian *g)
{
	char c = GOODBYE;
	int status;

	if (g->pid <= 0)
		return;
	if (write(g->fd, &c, 1) != 1) {
		/* the guardian is gone already */
	}
	close(g->fd);
	waitpid(g->pid, &status, 0);
	g->pid = -1;
	g->fd = -1;
}

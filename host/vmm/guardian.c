#include "host/vmm/guardian.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GOODBYE	     'q'
#define GONE_WAIT_MS 2000

/* The parent's files close before the kernel drops its ptrace links (exit_files, then exit_notify's
 * exit_ptrace): a takeover that seized the VMM's threads at the pipe's EOF would find them traced
 * still, by the dying parent. They are dropped before its children are handed to a reaper, so the
 * takeover waits for that (getppid changes), at most GONE_WAIT_MS. */
static void wait_gone(pid_t parent)
{
	struct timespec ms = {0, 1000000};

	for (int i = 0; i < GONE_WAIT_MS && getppid() == parent; i++)
		nanosleep(&ms, NULL);
}

int guardian_start(struct guardian *g, void (*takeover)(void *ctx), void *ctx)
{
	pid_t parent = getpid();
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
		if (n == 0) { /* EOF without a goodbye: the parent is dying */
			wait_gone(parent);
			takeover(ctx);
		}
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

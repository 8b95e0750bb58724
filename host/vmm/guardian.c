#include "host/vmm/guardian.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
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

/* The shared word saying which generation of guardian is in charge: NULL where it cannot be
 * mapped (then a guardian does not look). */
static unsigned *shared_generation(void)
{
	void *m = mmap(NULL, sizeof(unsigned), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		       -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

/* Tells the guardian goodbye and reaps it (the shared word stays). */
static void goodbye(struct guardian *g)
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

/* Forks a guardian of generation @gen watching a new pipe; in the child, @other_fd (another
 * guardian's write end, or -1) is closed so that guardian still sees its parent's death. The
 * child's pid, or -errno; *@fd is the pipe's write end. */
static pid_t fork_guardian(struct guardian *g, unsigned gen, int other_fd, int *fd,
			   void (*takeover)(void *ctx), void *ctx)
{
	pid_t parent = getpid(), pid;
	int p[2];
	char c;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		ssize_t n;

		close(p[1]);
		if (other_fd >= 0)
			close(other_fd);
		do
			n = read(p[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n == 0) { /* EOF without a goodbye: the parent is dying */
			wait_gone(parent);
			/* the parent is gone: the generation in charge is final */
			if (!g->current || __atomic_load_n(g->current, __ATOMIC_SEQ_CST) == gen)
				takeover(ctx);
		}
		_exit(0);
	}
	close(p[0]);
	*fd = p[1];
	return pid;
}

int guardian_start(struct guardian *g, void (*takeover)(void *ctx), void *ctx)
{
	pid_t pid;

	g->pid = -1;
	g->fd = -1;
	g->gen = 0;
	g->current = shared_generation();
	pid = fork_guardian(g, g->gen, -1, &g->fd, takeover, ctx);
	if (pid < 0) {
		if (g->current)
			munmap(g->current, sizeof(unsigned));
		g->current = NULL;
		return (int)pid;
	}
	g->pid = pid;
	return 0;
}

int guardian_handover(struct guardian *g, void (*takeover)(void *ctx), void *ctx)
{
	struct guardian old = *g;
	unsigned gen = g->gen + 1;
	pid_t pid;
	int fd;

	if (g->pid <= 0 || !g->current) {
		guardian_stop(g);
		return guardian_start(g, takeover, ctx);
	}
	pid = fork_guardian(g, gen, old.fd, &fd, takeover, ctx);
	if (pid < 0)
		return (int)pid;
	__atomic_store_n(g->current, gen, __ATOMIC_SEQ_CST); /* the new one in charge */
	goodbye(&old);
	g->pid = pid;
	g->fd = fd;
	g->gen = gen;
	return 0;
}

void guardian_stop(struct guardian *g)
{
	if (g->pid <= 0)
		return;
	goodbye(g);
	if (g->current)
		munmap(g->current, sizeof(unsigned));
	g->current = NULL;
}

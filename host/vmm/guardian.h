/* A guardian process for backends whose guest outlives hvtrace (QEMU): forked while tracing, it waits
 * on a pipe; if hvtrace dies without saying goodbye (SIGKILL, crash), it runs the takeover (restore the
 * guest, detach) itself. QEMU 7.2 neither removes gdbstub breakpoints nor resumes the VM when the gdb
 * connection just drops. */
#ifndef HVT_GUARDIAN_H
#define HVT_GUARDIAN_H

#include <sys/types.h>

struct guardian {
	pid_t pid; /* -1: none */
	int fd;	   /* write end of the pipe; closing it without a goodbye means "hvtrace died" */
	unsigned gen;	   /* this guardian's generation (guardian_handover) */
	unsigned *current; /* shared with the guardians: the generation in charge (NULL: any) */
};

/* Forks the guardian. In the child, @takeover(@ctx) runs (with the parent's memory as at the
 * fork, and its descriptors) only if the parent dies first, once the kernel has dropped the
 * parent's ptrace links (up to 2 s after its death); then the child exits. 0 or -errno. */
int guardian_start(struct guardian *g, void (*takeover)(void *ctx), void *ctx);

/* Hands the watch from the running guardian to a new one forked now (whose memory knows what the
 * parent learned since: a tracer), with no moment when none watches: the new one is forked first,
 * and takes charge (the shared generation) before the old one is told goodbye and reaped; if the
 * parent dies in between, exactly one of them runs its takeover. Without a running guardian, the
 * same as guardian_start. 0 or -errno (the old guardian then keeps watching). */
int guardian_handover(struct guardian *g, void (*takeover)(void *ctx), void *ctx);

/* The normal end: the guardian exits without doing anything; reaps it. Idempotent. */
void guardian_stop(struct guardian *g);

#endif

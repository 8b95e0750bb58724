/* What a backend (the embedded VMM's ELF guest or bzImage, QEMU launched or attached) does for the
 * one run driver (host/cli/driver.c): the driver opens the outputs, owns the pipeline and the
 * signalfd, prints each step's error line, finishes the pipeline and closes the outputs; the
 * backend boots or joins its guest, learns it, builds and starts the pipeline over it, runs it to
 * the end and says how it ended. All calls on the main thread, in the order of the ops below. */
#ifndef HVT_BACKEND_H
#define HVT_BACKEND_H

#include "host/session/pipeline.h"
#include "host/session/session.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* prepare's "the command is complete, nothing to run" (list-functions of a running VM): status 0 */
#define BACKEND_DONE (-1)

/* What the driver lends every backend. */
struct backend_env {
	const struct session *s;
	struct pipeline *p; /* selected by the backend (pipeline_select), finished by the driver */
	/* Before any trap probe on KVM (@qemu: QEMU's KVM): whether INT3 exits in a guest on this
	 * host (cmd_check_int3's contract). */
	int (*check_int3)(const struct session *s, bool qemu, bool *no_trap, char *err,
			  size_t errlen);
};

struct backend_ops {
	/* Before the signals are blocked and the outputs opened: the guest's files read, the host
	 * checked, the sites chosen where they are known already. 0, or an exit status with @err.
	 */
	int (*open)(void *b, char *err, size_t errlen);
	/* Boots, launches or attaches; learns the guest (target, sites, task layout, symbols, BTF);
	 * builds and starts the pipeline (probes in). @sfd: the signalfd. 0, BACKEND_DONE, or an
	 * exit status with @err. */
	int (*prepare)(void *b, int sfd, FILE *out, FILE *con, char *err, size_t errlen);
	/* The guest runs (vCPUs started, or it continues). 0, or an exit status with @err. */
	int (*start)(void *b, char *err, size_t errlen);
	/* Waits for the end (the guest's, a signal on @sfd, --timeout; --duration detaches on the
	 * way), calls pipeline_run_ended where the backend does, detaches or drains, and returns
	 * the exit status with its one line on stderr (the end status). */
	int (*wait)(void *b, int sfd);
	/* After any step (a failed one too): whatever is still patched is restored and the guest
	 * let go; returns @status, or what a failed check at detach makes of it. */
	int (*detach)(void *b, int status);
	/* --stats, the backend's part (pipeline_finish's backend_stats; @b is the ctx). */
	void (*stats)(void *b, const struct pipeline *p);
	/* Without a pipeline (nothing was selected): the backend's --stats, if any. */
	void (*stats_alone)(void *b);
	/* Frees everything; returns the console's write error (errno, 0 none). */
	int (*close)(void *b);
};

/* One backend: its ops and its state (owned, freed by close). */
struct backend {
	const struct backend_ops *ops;
	void *ctx;
};

#endif

/* The commands: `hvtrace run` (boot a guest in the embedded VMM and trace it) and `list-functions`. */
#ifndef HVT_RUN_H
#define HVT_RUN_H

#include "host/session/pipeline.h"
#include "host/session/session.h"
#include "host/kvm/vm.h"

/* Runs @s to the end. Errors are printed as one "hvtrace: ..." line on stderr. Returns the exit status
 * (exitcode.h). Main thread; installs its own signal handling. */
int cmd_run(const struct session *s);

/* Prints the traceable functions of @s->guest, one per line in address order. Returns the exit status. */
int cmd_list_functions(const struct session *s);

/* Waits for @vm to end, a signal on @sfd, or the absolute time @deadline (0: none). Returns 0 (the VM
 * ended), the signal number, or -1 (deadline). Main thread. */
int run_wait_for_end(struct vm *vm, int sfd, double deadline);

/* The embedded VMM's supervision, shared with `run --kernel`: waits until @vm ends, a signal on @sfd or
 * --timeout; --duration detaches @p (NULL: nothing to detach) on the way and lets the guest go on
 * untraced; with stub backpressure the vCPUs are held while the drain asks for it. Returns 0 (the
 * VM ended), the signal number, or -1 (--timeout). Main thread. */
int run_supervise(struct vm *vm, struct pipeline *p, int sfd, const struct session *s);

/* The exit status for how @vm ended (@sig as run_supervise returned it), with its one line on stderr
 * where it is not a success. */
int run_end_status(const struct vm *vm, int sig, const struct session *s);

/* --stats, the VM's part: each vCPU's exits by reason and port, and the VM's pauses. Main thread,
 * vCPUs stopped. */
void run_print_vm_stats(const struct vm *vm);

/* --stats of the embedded VMM (pipeline_finish's backend_stats; @ctx is the struct vm): the tracer's
 * totals, per vCPU its exits, breakpoint hits, ring stalls and translations, then the stub's lines. */
void run_print_stats(void *ctx, const struct pipeline *p);

#endif

/* The embedded VMM's run, shared by its two backends (the ELF guest, the bzImage): supervision
 * until the end, the end status, --stats. Main thread. */
#ifndef HVT_KVM_RUN_H
#define HVT_KVM_RUN_H

#include "host/kvm/vm.h"
#include "host/session/backend.h"
#include "host/session/pipeline.h"
#include "host/session/session.h"

/* What both embedded-VMM backends hold: the first member of each one's state, so that the ops
 * below serve both (their ctx is that state). */
struct kvm_run_state {
	struct backend_env env;
	struct vm vm;
	bool vm_made;  /* vm_create succeeded */
	bool detached; /* the wait detached or drained the pipeline already */
};

/* backend_ops.start: the vCPUs run. EXIT_HOST_ERROR with @err if they cannot. */
int kvm_run_start(void *ctx, char *err, size_t errlen);

/* backend_ops.detach: the pipeline detached unless the wait did, the vCPUs joined. */
int kvm_run_detach(void *ctx, int status);

/* backend_ops.stats: kvm_run_print_stats of the VM. */
void kvm_run_stats(void *ctx, const struct pipeline *p);

/* backend_ops.stats_alone: kvm_run_print_vm_stats, if the VM was made. */
void kvm_run_stats_alone(void *ctx);

/* For backend_ops.close: destroys the VM if it was made; returns its console's write error. */
int kvm_run_close_vm(struct kvm_run_state *k);

/* Waits for @vm to end, a signal on @sfd, or the absolute time @deadline (0: none). Returns 0 (the
 * VM ended), the signal number, or -1 (deadline). */
int kvm_run_wait_for_end(struct vm *vm, int sfd, double deadline);

/* Waits until @vm ends, a signal on @sfd or --timeout; --duration detaches @p (NULL: nothing to
 * detach) on the way and lets the guest go on untraced; with stub backpressure the vCPUs are held
 * while the drain asks for it. Returns 0 (the VM ended), the signal number, or -1 (--timeout). */
int kvm_run_supervise(struct vm *vm, struct pipeline *p, int sfd, const struct session *s);

/* The exit status for how @vm ended (@sig as kvm_run_supervise returned it), with its one line on
 * stderr where it is not a success. */
int kvm_run_end_status(const struct vm *vm, int sig, const struct session *s);

/* --stats, the VM's part: each vCPU's exits by reason and port, and the VM's pauses. vCPUs
 * stopped. */
void kvm_run_print_vm_stats(const struct vm *vm);

/* --stats of the embedded VMM for @vm: the tracer's totals, per vCPU its exits, breakpoint hits,
 * ring stalls and translations, then the stub's lines. */
void kvm_run_print_stats(const struct vm *vm, const struct pipeline *p);

#endif

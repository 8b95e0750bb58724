/* The embedded VMM's run, shared by its two backends (the ELF guest, the bzImage): one backend_ops
 * table for both (kvm_run_new) with what differs behind struct kvm_guest_ops, supervision until the
 * end, the end status, --stats. Main thread. */
#ifndef HVT_KVM_RUN_H
#define HVT_KVM_RUN_H

#include "host/kvm/vm.h"
#include "host/session/backend.h"
#include "host/session/pipeline.h"
#include "host/session/session.h"

/* What differs between the two guests of the embedded VMM. Each op takes the guest's state, whose
 * first member is its struct kvm_run_state. */
struct kvm_guest_ops {
	/* backend_ops.open: the guest's files read, the sites selected where known. 0, or an exit
	 * status with @err. */
	int (*open)(void *ctx, char *err, size_t errlen);
	/* backend_ops.prepare: the VM made (vm_made), the guest loaded, the pipeline built and
	 * started where there is one. 0, or an exit status with @err. */
	int (*prepare)(void *ctx, FILE *out, FILE *con, char *err, size_t errlen);
	/* The run ended (a selected pipeline, the vCPUs not joined yet): the probes out, or the
	 * pipeline drained where the guest is gone. */
	void (*ran)(void *ctx);
	/* backend_ops.close, the guest's part: after the VM is destroyed, before the state is
	 * freed. */
	void (*close)(void *ctx);
};

/* What both embedded-VMM backends hold: the first member of each one's state, so that the ops of
 * kvm_run_new serve both (their ctx is that state). */
struct kvm_run_state {
	struct backend_env env;
	const struct kvm_guest_ops *guest;
	struct vm vm;
	bool vm_made;  /* vm_create succeeded */
	bool detached; /* the wait detached or drained the pipeline already */
};

/* @b: the embedded-VMM backend for @env's session over @guest, its state (@size bytes, a struct
 * whose first member is the struct kvm_run_state) allocated zeroed; ops->close frees it. The ops:
 * @guest's open and prepare; the vCPUs started; the wait (kvm_run_supervise, the end status said as
 * soon as it is known, @guest's ran, the vCPUs joined); the pipeline detached unless the wait did;
 * --stats; the VM destroyed and @guest's close. 0 or -ENOMEM. */
int kvm_run_new(struct backend *b, const struct backend_env *env, const struct kvm_guest_ops *guest,
		size_t size);

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

/* Entry probes in the embedded VMM's Linux guest (run --kernel): a function the session names exactly (or --entry's globs match)
 * that has no fentry site among @sites of @funcs is refused with one line in @err saying that its
 * INT3 cannot run an instruction in place and that QEMU can. 0, or an exit status. */
int kvm_run_refuse_entry_probes(const struct session *s, struct vmi_sites *sites,
				const struct vmi_symtab *funcs, char *err, size_t errlen);

#endif

/* backend_qemu.c's run state, shared with qemu_run_end.c (how the run ends). Private to those
 * two files. */
#ifndef HVT_BACKEND_QEMU_INT_H
#define HVT_BACKEND_QEMU_INT_H

#include "host/vmm/guardian.h"
#include "host/qemu/qemu_attach.h"
#include "host/qemu/qemu_stub_place.h"
#include "host/qemu/target_qemu_run.h"
#include "host/session/backend.h"
#include "host/session/entry_sites.h"
#include "host/session/pipeline.h"
#include "host/session/sched_boost.h"
#include "host/session/session.h"
#include "host/session/text_verify.h"
#include "vmi/vmi_linux.h"
#include "vmi/vmi_sites.h"

#include <stdbool.h>
#include <stdio.h>

struct linux_run {
	struct backend_env env;
	const struct session *s;
	struct pipeline *p; /* env.p */
	struct vmi_linux l;
	size_t nr_patchers; /* the guest's text patchers hvtrace stops at (share_with_patchers) */
	bool has_patcher[2]; /* [vmi_patcher.detours]: one of that kind was found */
	struct vmi_sites sites;
	struct inside_sites inside; /* of -e func+OFFSET events */
	FILE *out, *con;
	int sfd;
	struct qemu_conn qc; /* QEMU, its monitor and gdbstub */
	struct target_qemu tq;
	bool have_tq;
	struct guardian guard;	 /* restores and detaches the guest if hvtrace dies */
	struct text_verify text; /* --verify-text: the kernel text just before the first patch */
	bool text_changed;
	bool restore_failed; /* the detach could not put every probe or return slot back */
	/* how the run ends */
	double start, detach_at, timeout_at;
	int sig;
	bool timed_out, detached;
	/* QMP said the guest reset while traced: the kernel hvtrace patched is gone, and what it
	 * would restore would land in the new boot's memory */
	bool guest_reset;
	bool no_trap; /* QEMU uses KVM, and INT3 does not exit on it (cmd_check_int3) */
	const struct arch *isa; /* run --qemu: the kernel image's ISA (NULL: attach, learned later) */
	struct qemu_stub_place stub; /* where the stub lives */
	struct sched_boost boost;    /* stub probes: hvtrace's weight raised */
};

/* Whether a signal came (taken from the signalfd once, kept in r->sig). */
bool qemu_run_signalled(struct linux_run *r);

/* The guardian's takeover after hvtrace died (@ctx: the struct linux_run): stops the VM, restores
 * the guest as the detach does, detaches. In the guardian process. */
void qemu_run_guardian_takeover(void *ctx);

/* Removes every probe, restores every return slot, and lets the VM go (gdbstub detach).
 * Idempotent. */
void qemu_run_detach(struct linux_run *r);

/* After the traced part (@how target_qemu_run ended): what happened to the guest decides the exit
 * status; the detach, a reset guest's abandon, QEMU's end waited for when launched. */
int qemu_run_finish(struct linux_run *r, enum qemu_run_end how);

#endif

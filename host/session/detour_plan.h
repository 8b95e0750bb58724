/* Stub probes at function entries without an fentry site: which of them can take a detour (stub.h)
 * instead of staying trap probes, decided from the function's own bytes before anything is
 * patched. */
#ifndef HVT_DETOUR_PLAN_H
#define HVT_DETOUR_PLAN_H

#include "host/session/session.h"
#include "host/trace/tracer.h"
#include "vmi/vmi_read.h"
#include "vmi/vmi_symtab.h"

#include <stdio.h>

/* Functions larger than this are not scanned whole, so never detoured. */
#define DETOUR_FUNC_MAX (64u << 10)

/* For each entry probe of @t (its function in @funcs, sorted; for one inside a function, an -e
 * FUNC+OFFSET, the function that holds it, the detour displacing what starts there), reads the
 * function through
 * @read/@ctx and plans a detour (tracer_set_detour) when the bytes a JMP rel32 displaces can run
 * elsewhere (the arch's reloc_plan), hold nothing a kernel rewrites or fixes up by address
 * (reloc_kernel_safe), can run with interrupts off between the stub and the way back
 * (reloc_detour_check), no branch of the function lands inside them (reloc_scan_body),
 * and the function is neither in the kernel's entry text (__entry_text_start.._end, where %gs
 * may still be the user's: the stub reads the CPU's task through it) nor in its init text
 * (_sinittext.._einittext, freed after boot: its memory may be anything now); @no_user: the guest
 * runs no user code and frees no text (the freestanding guest), so it has neither. Each one refused
 * stays a trap probe, with one line on @note saying why when @s names it exactly, and one line
 * counting the others (selected by a glob with --entry). Returns how many were planned, or
 * -ENOMEM. Main thread, before tracer_attach. */
long detour_plan(struct tracer *t, const struct session *s, const struct vmi_symtab *funcs,
		 vmi_read_fn read, void *ctx, bool no_user, FILE *note);

#endif

/* What a backend tells the pipeline about its guest (pipeline_build), on its own so that the
 * probe set-up (probe_setup.c) reads it too. */
#ifndef HVT_PIPELINE_GUEST_H
#define HVT_PIPELINE_GUEST_H

#include "host/trace/target.h"
#include "vmi/vmi_btf.h"
#include "vmi/vmi_read.h"
#include "vmi/vmi_symtab.h"
#include "vmi/vmi_task.h"

#include <stdbool.h>

/* What the backend knows of its guest. Everything borrowed; it outlives the pipeline. */
struct pipeline_guest {
	struct target *tgt;		    /* trampoline and stack_shift already set */
	const struct vmi_task_layout *task; /* where the current task is */
	const struct vmi_symtab *funcs;	    /* for naming addresses in the output */
	bool stub;			    /* stub probes wherever they can do the job (--probe) */
	bool backpressure; /* stub probes: the caller holds the vCPUs while stub_drain_holding says
			    * so (its run loop polls it) */
	bool no_trap; /* INT3 does not exit on this host (cmd_check_int3): no trap probe at all */
	const char *no_trampoline; /* the reason when the target has no return trampoline */
	const struct vmi_btf *btf; /* the guest's BTF, for -e / -r typed by name (NULL: none) */
	/* without BTF: the guest's C functions from its DWARF (vmi_dwarf.h), whose returns entry
	 * probes may hook (NULL: none known) */
	const struct vmi_symtab *c_funcs;
	/* kernel text as the guest runs it, read before the probes go in (stub detours are planned
	 * from it); NULL: no function without an fentry site gets a detour */
	vmi_read_fn text_read;
	void *text_ctx;
	bool no_user; /* the guest runs no user code and frees no text (detour_plan) */
};

#endif

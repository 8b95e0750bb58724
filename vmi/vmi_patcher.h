/* A function of the guest's where it is about to check and rewrite text hvtrace may have patched:
 * learned by an OS's VMI (vmi_linux_text_patchers), stopped at by the tracer (tracer_set_patchers).
 */
#ifndef HVT_VMI_PATCHER_H
#define HVT_VMI_PATCHER_H

#include <stdbool.h>
#include <stdint.h>

struct vmi_patcher {
	uint64_t addr; /* runtime address */
	bool detours;  /* it may write over any instruction (kprobes): entry detours go back to it;
			* else it rewrites fentry call sites (ftrace) */
};

#endif

/* Return-site breakpoints: how trap probes hook returns on an ISA whose return address is in a
 * register at entry (arm64's x30), with the guest left untouched. Instead of a return address
 * rewritten to a trampoline (which arm64's pointer authentication signs into the frame, where the
 * host could not put the real one back), a breakpoint goes at the return address itself, shared
 * by every hooked call that returns there (counted), and comes out with the last. Needs a target
 * that runs the instruction under a breakpoint in place (bp_in_place: QEMU's gdbstub). Main
 * thread: the hit callbacks of an all-stop target and attach/detach. */
#ifndef HVT_RET_SITES_H
#define HVT_RET_SITES_H

#include "host/trace/target.h"

#include <stdbool.h>
#include <stdint.h>

#define RET_SITES_MAX 4096 /* return addresses with hooked calls in flight at once */

struct ret_site {
	uint64_t addr, gpa;
	uint32_t refs;
	uint8_t orig;
};

struct ret_sites {
	struct ret_site v[RET_SITES_MAX];
	unsigned nr;
	unsigned long long full; /* hooks refused: every slot in use */
};

/* One more hooked call returns to @addr (resolved through vCPU @cpu): the breakpoint goes in with
 * the first. 0, -ENOSPC (RET_SITES_MAX in use), or the target's -errno (nothing changed). */
int ret_sites_hook(struct ret_sites *rs, struct target *tgt, unsigned cpu, uint64_t addr);

/* Whether @addr holds a return-site breakpoint. */
bool ret_sites_has(const struct ret_sites *rs, uint64_t addr);

/* One hooked call fewer returns to @addr: the breakpoint comes out with the last. */
void ret_sites_unref(struct ret_sites *rs, struct target *tgt, uint64_t addr);

/* Every breakpoint out (detach). */
void ret_sites_remove_all(struct ret_sites *rs, struct target *tgt);

#endif

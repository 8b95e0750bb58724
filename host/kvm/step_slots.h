/* Trap probes at a function's first instruction in the embedded VMM (entry probes: no fentry NOP5
 * under the INT3, an instruction to run). KVM cannot step one instruction of a vCPU while the
 * others run through the same bytes, so the instruction runs out of line, as kprobes run theirs: a
 * copy of it (relocated by the arch's reloc_emit: RIP-relative operands and branches re-aimed)
 * followed by a JMP back to the next instruction, in a slot of VMM memory the guest is never told
 * about. A hit resumes the vCPU at its slot. The slots are written before the vCPUs first run and
 * never change or go away while the VM lives, so a context interrupted inside one, or one a vCPU
 * reaches after the probes are gone, always finds the same bytes. */
#ifndef HVT_STEP_SLOTS_H
#define HVT_STEP_SLOTS_H

#include "vmi/vmi_read.h"
#include "vmi/vmi_sites.h"
#include "vmi/vmi_symtab.h"

#include <stdint.h>
#include <stdio.h>

struct session;

#define STEP_SLOT_SIZE 32 /* a relocated instruction (at most 22 bytes) and its JMP back (5) */

struct step_slot {
	uint64_t addr; /* the entry site (its INT3) */
	uint64_t slot; /* guest address of its copy */
};

/* One slot per entry site, sorted by site address; read-only once written (any thread). */
struct step_slots {
	struct step_slot *v;
	size_t nr;
};

/* Drops from @sites every entry site (vmi_site.entry) a breakpoint cannot serve exactly: its first
 * instruction cannot run out of line (x86_reloc_plan refuses it: a CALL through a register, an
 * instruction that traps or is privileged, ...), or its function branches back to it (a
 * breakpoint there would count the jump as a call). The function's bytes (@funcs gives where it
 * ends; at most 64 KiB are scanned) are read through @read/@ctx. A function the session names
 * exactly is refused with one line in @err naming it and the instruction; the others (selected
 * by a glob) are dropped, counted in one line on @note. Returns how many were dropped, -ENOMEM, or
 * -EOPNOTSUPP/-EILSEQ/-EFAULT with @err. Main thread, before the sites are selected. */
long step_slots_check(const struct session *s, struct vmi_sites *sites,
		      const struct vmi_symtab *funcs, vmi_read_fn read, void *ctx, FILE *note,
		      char *err, size_t errlen);

/* The entry sites of @sites (-e FUNC+OFFSET's inside sites included): how many slots
 * step_slots_write needs. Pure. */
size_t step_slots_count(const struct vmi_sites *sites);

/* Writes the copy of every entry site of @sites (inside sites included) (their bytes read through @read/@ctx, as checked
 * by step_slots_check) into @area (host memory the guest sees at @area_gva, room for @cap slots),
 * and fills @ss (the caller frees it with step_slots_free). 0, -ENOMEM, -ENOSPC, or
 * -ERANGE/-EOPNOTSUPP/-EFAULT with one line in @err naming the function (a slot out of rel32 reach
 * of what the instruction addresses). Main thread, before the vCPUs run. */
int step_slots_write(struct step_slots *ss, const struct vmi_sites *sites, uint8_t *area,
		     uint64_t area_gva, size_t cap, vmi_read_fn read, void *ctx, char *err,
		     size_t errlen);

/* The slot of the entry site at @addr, 0 if there is none. O(log n), no allocation: the hit path.
 * Any thread. */
uint64_t step_slots_find(const struct step_slots *ss, uint64_t addr);

void step_slots_free(struct step_slots *ss);

#endif

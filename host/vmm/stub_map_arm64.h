/* Stub probes' memory in an arm64 guest kernel (the VMM-agnostic half of it, beside stub_map.c's
 * x86): RAM the kernel keeps out of use (arm64 has no memmap=: run --qemu boots the kernel with
 * mem= below the VM's RAM and offers the range above), mapped by level-2 block descriptors (2 MiB
 * with 4 KiB pages, 32 MiB with 16 KiB, 512 MiB with 64 KiB) in the kernel's own tables (TTBR1_EL1) at addresses within BL reach (+-128 MiB)
 * of the traced code, in level-2 tables that exist and entries that are 0: no page-table page of
 * hvtrace's in the guest, nothing a kernel walker could follow into memory it does not map. Every
 * descriptor written and the memory's bytes are kept in the struct stub_map and put back by
 * stub_map_unmap. The guest's tables are a peer's: every entry read is bounded. */
#ifndef HVT_STUB_MAP_ARM64_H
#define HVT_STUB_MAP_ARM64_H

#include "host/vmm/stub_map.h"

/* What the guest's kernel enabled that the stub's descriptors and code must follow, learned from
 * its system registers (read once through the VMM, each with whether it could be read). */
struct stub_map_arm64_regs {
	uint64_t tcr2, pir, pire0, gcscr, mmfr3;
	bool has_tcr2, has_pir, has_pire0, has_gcscr, has_mmfr3;
};

/* How the stub's two blocks give their permissions: classic AP/PXN/UXN, or (pie) the PIR_EL1
 * indices of EL1 read-write and of EL1 read-execute, neither reachable from EL0. */
struct stub_map_arm64_perm {
	bool pie;
	unsigned data_pi, code_pi;
};

/* From @r: *@p, or -ENOTSUP with one line in @err naming what the stub cannot follow (permission
 * indirection whose registers cannot be read or that offer no such index, 128-bit descriptors,
 * a guarded control stack at EL1). Pure. */
int stub_map_arm64_perm(const struct stub_map_arm64_regs *r, struct stub_map_arm64_perm *p,
			char *err, size_t errlen);

/* Maps at least @min, at most @want bytes of the reserved range s->resv_gpa/resv_size (aligned to
 * a level-2 block of @mode) into the kernel tables at @ttbr walked as @mode (arch arm64's walk
 * mode), the first block executable with the stub's code at its end (STUB_CODE_DELTA below the
 * region: out->code_gva), within BL reach of every address in [@lo, @hi]; the leaf descriptor that
 * maps @lo gives the memory attributes, @perm the permission encoding. Only the bytes the stub
 * writes (its code, the region's blocks) are kept for stub_map_unmap. 0 with *@out filled, or
 * -ENOTSUP (no reserved range, an unknown walk), -EINVAL (a range not block-aligned), -ENOSPC,
 * -ENOMEM or -EFAULT with one line in @err; on failure the guest is as it was. */
int stub_map_arm64_map(struct stub_map *q, const struct stub_map_mem *mem, uint64_t ttbr,
		       unsigned mode, const struct stub_map_arm64_perm *perm, uint64_t lo,
		       uint64_t hi, uint64_t min, uint64_t want, struct target_region *out,
		       char *err, size_t errlen);

#endif

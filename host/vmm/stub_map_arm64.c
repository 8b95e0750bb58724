/* Stub probes' memory in an arm64 guest kernel: reserved RAM mapped by level-2 blocks near the
 * traced code, and put back as it was (by stub_map_unmap). */
#include "host/vmm/stub_map_arm64.h"
#include "arch/arch.h"
#include "guest-stub/stub_abi.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdlib.h>

#define PAGE 4096ull

static int read_pte(void *ctx, uint64_t gpa, uint64_t *pte)
{
	const struct stub_map_mem *mem = ctx;

	return mem->read(mem->ctx, gpa, pte, 8);
}

/* Whether a BL at any address of [@lo, @hi] reaches every address of the stub's code when the
 * first of its blocks (@span bytes) is mapped at @va: the code sits at the block's end,
 * STUB_CODE_DELTA below the region that follows (stub_abi.h). */
static bool bl_reaches(uint64_t va, uint64_t span, uint64_t lo, uint64_t hi)
{
	int64_t reach = (int64_t)ARM64_BRANCH_REACH;
	uint64_t code = va + span - STUB_CODE_DELTA;

	return (int64_t)(code + STUB_CODE_SIZE - lo) <= reach && (int64_t)(code - hi) >= -reach;
}

/* Whether the level-2 descriptor for @va exists in a table the kernel has and is 0 (nothing mapped,
 * no table below); its guest-physical address in *@at. */
static bool slot_free(const struct stub_map_mem *mem, uint64_t ttbr, unsigned mode, uint64_t va,
		      uint64_t *at)
{
	uint64_t d = 1;
	int level;

	return arm64_walk_to(read_pte, (void *)mem, ttbr, mode, va, 2, at, &level) == 0 &&
	       level == 2 && read_pte((void *)mem, *at, &d) == 0 && d == 0;
}

/* The first run of @n free level-2 slots from @from on, stepping @step (+-span), whose first slot
 * a BL from [@lo, @hi] reaches: its start in *@va. */
static bool free_run(const struct stub_map_mem *mem, uint64_t ttbr, unsigned mode, uint64_t span,
		     uint64_t from, int64_t step, uint64_t lo, uint64_t hi, unsigned n,
		     uint64_t *va)
{
	for (uint64_t v = from; bl_reaches(v, span, lo, hi); v += (uint64_t)step) {
		uint64_t at;
		unsigned k;

		for (k = 0; k < n && slot_free(mem, ttbr, mode, v + k * span, &at); k++)
			;
		if (k == n) {
			*va = v;
			return true;
		}
	}
	return false;
}

#define MMFR3_S1PIE(v) (((v) >> 8) & 0xf)
#define GCSCR_PCRSEL   1ull

int stub_map_arm64_perm(const struct stub_map_arm64_regs *r, struct stub_map_arm64_perm *p,
			char *err, size_t errlen)
{
	int data, code;

	*p = (struct stub_map_arm64_perm){0};
	/* a CPU that says it has permission indirection, and the kernel's switch for it unread */
	if (!r->has_tcr2) {
		if (r->has_mmfr3 && MMFR3_S1PIE(r->mmfr3)) {
			msg_fmt(err, errlen,
				"stub probes: the guest's CPU has stage-1 permission indirection "
				"(FEAT_S1PIE) and its TCR2_EL1 cannot be read through the gdbstub "
				"(use --probe trap)");
			return -ENOTSUP;
		}
	} else if (r->tcr2 & ARM64_TCR2_D128) {
		msg_fmt(err, errlen,
			"stub probes: the guest kernel uses 128-bit page-table descriptors "
			"(TCR2_EL1.D128) (use --probe trap)");
		return -ENOTSUP;
	} else if (r->tcr2 & ARM64_TCR2_PIE) {
		if (!r->has_pir || !r->has_pire0) {
			msg_fmt(
			    err, errlen,
			    "stub probes: the guest kernel uses stage-1 permission indirection "
			    "(TCR2_EL1.PIE) and its PIR_EL1/PIRE0_EL1 cannot be read through the "
			    "gdbstub (use --probe trap)");
			return -ENOTSUP;
		}
		data = arm64_pie_index(r->pir, r->pire0, ARM64_PIE_RW);
		code = arm64_pie_index(r->pir, r->pire0, ARM64_PIE_RX);
		if (data < 0 || code < 0) {
			msg_fmt(err, errlen,
				"stub probes: the guest kernel's permission indirection (PIR_EL1 "
				"0x%016llx, PIRE0_EL1 0x%016llx) has no index for kernel-only %s "
				"(use --probe trap)",
				(unsigned long long)r->pir, (unsigned long long)r->pire0,
				data < 0 ? "read-write data" : "read-execute code");
			return -ENOTSUP;
		}
		*p = (struct stub_map_arm64_perm){
		    .pie = true, .data_pi = (unsigned)data, .code_pi = (unsigned)code};
	}
	/* hooked returns land in the stub, not where the caller's BL pushed: a kernel's own GCS
	 * would fault on them */
	if (r->has_gcscr && (r->gcscr & GCSCR_PCRSEL)) {
		msg_fmt(err, errlen,
			"stub probes: the guest kernel runs with a guarded control stack "
			"(GCSCR_EL1.PCRSEL, FEAT_GCS), which the stub's return hooks would break "
			"(use --probe trap)");
		return -ENOTSUP;
	}
	return 0;
}

/* The stub's block descriptor for @pa: arm64_block_desc's, its permission bits as @perm encodes
 * them (with indirection: read-write or read-execute by index, kernel-only). AP[2] stays as
 * arm64_block_desc sets it (the code's 1, the data's 0): with indirection it is the dirty state
 * (0: writes allowed), and the kernel's own W+X check reads it as read-only still. */
static uint64_t block_desc(const struct stub_map_arm64_perm *perm, uint64_t leaf, int level,
			   unsigned mode, uint64_t pa, bool exec)
{
	uint64_t d = arm64_block_desc(leaf, level, mode, pa, exec);

	if (d && perm->pie)
		d = arm64_desc_set_pi(d, exec ? perm->code_pi : perm->data_pi);
	return d;
}

int stub_map_arm64_map(struct stub_map *q, const struct stub_map_mem *mem, uint64_t ttbr,
		       unsigned mode, const struct stub_map_arm64_perm *perm, uint64_t lo,
		       uint64_t hi, uint64_t min, uint64_t want, struct target_region *out,
		       char *err, size_t errlen)
{
	uint64_t span = arm64_level2_span(mode), size, va = 0, leaf_at, leaf = 0, up, down;
	unsigned n;
	int level, ret;

	if (!q->resv_size) {
		msg_fmt(
		    err, errlen,
		    "stub probes: no RAM kept out of the arm64 kernel's use is known (run --qemu "
		    "boots it with mem= below the VM's RAM)");
		return -ENOTSUP;
	}
	if (span < STUB_CODE_DELTA) {
		msg_fmt(err, errlen, "stub probes: the kernel's page-table walk (TCR_EL1) is unknown");
		return -ENOTSUP;
	}
	if ((q->resv_gpa | q->resv_size) & (span - 1)) {
		msg_fmt(err, errlen,
			"stub probes: reserved RAM 0x%llx+0x%llx is not aligned to the %llu MiB "
			"blocks of the kernel's %u KiB pages",
			(unsigned long long)q->resv_gpa, (unsigned long long)q->resv_size,
			(unsigned long long)span >> 20, 1u << (ARM64_MODE_GSHIFT(mode) - 10));
		return -EINVAL;
	}
	size = q->resv_size < want ? q->resv_size : (want + PAGE - 1) & ~(PAGE - 1);
	if (size < min) {
		msg_fmt(
		    err, errlen,
		    "stub probes: %llu KiB kept out of the kernel's use at guest-physical 0x%llx",
		    (unsigned long long)q->resv_size >> 10, (unsigned long long)q->resv_gpa);
		return -ENOSPC;
	}
	if (q->resv_size < span + size) { /* the code's block below the region */
		size = q->resv_size > span ? (q->resv_size - span) & ~(PAGE - 1) : 0;
		if (size < min) {
			msg_fmt(
			    err, errlen,
			    "stub probes: %llu KiB kept out of the kernel's use at guest-physical "
			    "0x%llx",
			    (unsigned long long)q->resv_size >> 10,
			    (unsigned long long)q->resv_gpa);
			return -ENOSPC;
		}
	}
	n = 1 + (unsigned)((size + span - 1) / span);
	/* the kernel text's own leaf: its memory attributes for ours */
	if (arm64_walk_to(read_pte, (void *)mem, ttbr, mode, lo, 3, &leaf_at, &level) < 0 ||
	    read_pte((void *)mem, leaf_at, &leaf) < 0 ||
	    !block_desc(perm, leaf, level, mode, q->resv_gpa, true)) {
		msg_fmt(err, errlen,
			"stub probes: the kernel's page tables do not map its text at 0x%llx",
			(unsigned long long)lo);
		return -EFAULT;
	}
	/* free slots after the traced code first, else before it */
	up = (hi + span) & ~(span - 1);
	down = (lo & ~(span - 1)) - span;
	if (!free_run(mem, ttbr, mode, span, up, (int64_t)span, lo, hi, n, &va) &&
	    !free_run(mem, ttbr, mode, span, down, -(int64_t)span, lo, hi, n, &va)) {
		msg_fmt(
		    err, errlen,
		    "stub probes: no %u free %llu MiB kernel address slots within BL reach "
		    "(128 MiB) of the traced code",
		    n, (unsigned long long)span >> 20);
		return -ENOSPC;
	}
	/* what the stub writes: its code at the end of the first block, the region's blocks */
	q->saved_len = STUB_CODE_DELTA + (uint64_t)(n - 1) * span;
	q->saved_gpa = q->resv_gpa + span - STUB_CODE_DELTA;
	q->saved = malloc(q->saved_len);
	q->pde_gpa = calloc(n, sizeof(*q->pde_gpa));
	q->pde_old = calloc(n, sizeof(*q->pde_old));
	if (!q->saved || !q->pde_gpa || !q->pde_old) {
		msg_fmt(err, errlen, "stub probes: out of memory keeping %llu KiB of guest memory",
			(unsigned long long)q->saved_len >> 10);
		ret = -ENOMEM;
		goto fail;
	}
	if (mem->read(mem->ctx, q->saved_gpa, q->saved, q->saved_len) < 0) {
		msg_fmt(err, errlen, "stub probes: cannot read guest memory at 0x%llx",
			(unsigned long long)q->saved_gpa);
		ret = -EFAULT;
		goto fail;
	}
	for (q->nr_pde = 0; q->nr_pde < n; q->nr_pde++) {
		uint64_t at,
		    d = block_desc(perm, leaf, level, mode,
				   q->resv_gpa + (uint64_t)q->nr_pde * span, q->nr_pde == 0);

		/* each looked at again: a table the walk found must still be there */
		if (!slot_free(mem, ttbr, mode, va + (uint64_t)q->nr_pde * span, &at) ||
		    mem->write(mem->ctx, at, &d, 8) < 0) {
			msg_fmt(err, errlen, "stub probes: cannot write the guest's page tables");
			ret = -EFAULT;
			goto fail;
		}
		q->pde_gpa[q->nr_pde] = at;
		q->pde_old[q->nr_pde] = 0;
	}
	/* the code's block first (read-only, executable; the code at its end, STUB_CODE_DELTA below
	 * the region, where the stub looks for its header), the region's after it (writable, never
	 * executable) */
	*out = (struct target_region){.gva = va + span,
				      .gpa = q->resv_gpa + span,
				      .size = size,
				      .code_gva = va + span - STUB_CODE_DELTA,
				      .code_gpa = q->resv_gpa + span - STUB_CODE_DELTA,
				      .text_guarded = arm64_desc_guarded(leaf),
				      .perm = perm->pie ? "pie" : "ap",
				      .where = "reserved"};
	return 0;
fail:
	stub_map_unmap(q, mem);
	return ret;
}

/* Stub probes' memory in a guest kernel hvtrace attached to: free guest memory mapped executable in
 * the kernel's page tables near the traced code, and put back as it was. */
#include "host/vmm/stub_map.h"
#include "host/vmm/stub_pt.h"
#include "arch/arch.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define PMD_SPAN (2ull << 20)

#define IMAGE_MAP_BASE 0xffffffff80000000ull /* __START_KERNEL_map: the kernel image's 1 GiB */
#define MODULES_VADDR  0xffffffffc0000000ull /* ends here */

static int read_pte(void *ctx, uint64_t gpa, uint64_t *pte)
{
	const struct stub_map_mem *mem = ctx;

	return mem->read(mem->ctx, gpa, pte, 8);
}

static int mem_read(const struct stub_map_mem *mem, uint64_t gpa, void *buf, size_t len)
{
	return mem->read(mem->ctx, gpa, buf, len);
}

static int mem_write(const struct stub_map_mem *mem, uint64_t gpa, const void *buf, size_t len)
{
	return mem->write(mem->ctx, gpa, buf, len);
}

/* Whether @a and @b are less than 2 GiB apart (a CALL rel32 reaches). */
static bool within_2g(uint64_t a, uint64_t b)
{
	return (a > b ? a - b : b - a) < (2ull << 30);
}

/* The first run of @npde 2 MiB slots in [@from, @to) whose page-directory entries (in the kernel's
 * page tables, @kcr3) are not present; its start in *@va. Returns the run's length: @npde when
 * found. An entry that cannot be read counts as present. */
static unsigned free_pde_run(const struct stub_map_mem *mem, uint64_t kcr3, bool kla57,
			     uint64_t from, uint64_t to, unsigned npde, uint64_t *va)
{
	uint64_t v, pde_gpa, pde = 0;
	unsigned run = 0;

	for (v = from; run < npde && v >= from && v + PMD_SPAN <= to; v += PMD_SPAN) {
		if (x86_pde_addr(read_pte, (void *)mem, kcr3, kla57, v, &pde_gpa) < 0 ||
		    mem_read(mem, pde_gpa, &pde, 8) < 0 || (pde & X86_PTE_P)) {
			run = 0;
			continue;
		}
		run++;
	}
	*va = v - (uint64_t)run * PMD_SPAN;
	return run;
}

/* The stub's page-table page is the first page of the free low memory, which the kernel maps
 * (its own page-table walkers, such as the W^X check at boot, read it through the direct map); its
 * pages follow it there, or are the reserved RAM range, which the kernel does not map: there the
 * first 2 MiB are mapped through that page-table page (the code page read-only) and the rest by 2
 * MiB pages, so no page-table page lies in memory the kernel cannot read. They are mapped at
 * the area's va or the first run of free 2 MiB slots after it in the kernel image's space:
 * page-directory entries are the only change to the guest's page tables. The guest bytes of the
 * memory used and the entries as they were are kept and put back by stub_map_unmap. */
int stub_map_map(struct stub_map *q, const struct stub_map_mem *mem, const char *low_why,
		 stub_map_kernel_pt_fn kernel_pt, void *ctx, uint64_t lo, uint64_t hi, uint64_t min,
		 uint64_t want, struct target_region *out, char *err, size_t errlen)
{
	uint64_t pt = q->phys_lo, base, size, va, kcr3, pde = 0, ptes[512] = {0};
	unsigned npde, run;
	bool wrote = false, kla57;
	int ret;

	if (!q->va) {
		msg_fmt(err, errlen, "stub probes: no free guest memory known for the stub");
		return -ENOTSUP;
	}
	if ((q->resv_gpa | q->resv_size) & (PMD_SPAN - 1)) {
		msg_fmt(err, errlen, "stub probes: reserved RAM 0x%llx+0x%llx is not 2 MiB aligned",
			(unsigned long long)q->resv_gpa, (unsigned long long)q->resv_size);
		return -EINVAL;
	}
	base = stub_map_gpa(q);
	if (q->resv_size)
		size = q->resv_size;
	else
		size = q->phys_hi - pt > X86_PAGE_SIZE
			   ? (q->phys_hi - pt - X86_PAGE_SIZE) & ~(X86_PAGE_SIZE - 1)
			   : 0;
	if (!q->resv_size && size > 511 * X86_PAGE_SIZE)
		size = 511 * X86_PAGE_SIZE;
	if (size > want)
		size = (want + X86_PAGE_SIZE - 1) & ~(X86_PAGE_SIZE - 1);
	if (size < min || q->phys_hi - pt < X86_PAGE_SIZE) {
		msg_fmt(err, errlen, "stub probes: %llu KiB free at guest-physical 0x%llx (%s%s%s)",
			(unsigned long long)size >> 10, (unsigned long long)base,
			q->resv_size ? "the RAM range the kernel reserved" : "low memory",
			!q->resv_size && low_why && *low_why ? ": " : "",
			!q->resv_size && low_why ? low_why : "");
		return -ENOSPC;
	}
	npde = (unsigned)((size + PMD_SPAN - 1) / PMD_SPAN);
	ret = kernel_pt(ctx, &kcr3, &kla57);
	if (ret < 0)
		return ret;
	/* npde free slots in a row, within reach of the traced code: after the image, else (a large
	 * KASLR slide leaves little room before the modules) below it, where the kernel cleared the
	 * image mapping's entries (cleanup_highmap) */
	run = free_pde_run(mem, kcr3, kla57, q->va, MODULES_VADDR, npde, &va);
	if (run < npde && q->va > IMAGE_MAP_BASE)
		run = free_pde_run(mem, kcr3, kla57, IMAGE_MAP_BASE, q->va, npde, &va);
	if (run < npde || !within_2g(va + X86_PAGE_SIZE, lo) || !within_2g(va, hi)) {
		msg_fmt(err, errlen,
			"stub probes: no %u free 2 MiB kernel address slots in the image's 1 GiB "
			"within 2 GiB of the traced code",
			npde);
		return -ENOSPC;
	}
	q->saved_len = size;
	q->saved_gpa = base;
	q->saved = malloc(size);
	q->pde_gpa = calloc(npde, sizeof(*q->pde_gpa));
	q->pde_old = calloc(npde, sizeof(*q->pde_old));
	if (!q->saved || !q->pde_gpa || !q->pde_old) {
		msg_fmt(err, errlen, "stub probes: out of memory keeping %llu KiB of guest memory",
			(unsigned long long)size >> 10);
		ret = -ENOMEM;
		goto fail;
	}
	if (mem_read(mem, base, q->saved, size) < 0 ||
	    mem_read(mem, pt, q->saved_pt, X86_PAGE_SIZE) < 0) {
		msg_fmt(err, errlen, "stub probes: cannot read guest memory at 0x%llx",
			(unsigned long long)base);
		ret = -EFAULT;
		goto fail;
	}
	for (unsigned i = 0; i < npde; i++)
		if (x86_pde_addr(read_pte, (void *)mem, kcr3, kla57, va + i * PMD_SPAN,
				 &q->pde_gpa[i]) < 0 ||
		    mem_read(mem, q->pde_gpa[i], &q->pde_old[i], 8) < 0) {
			msg_fmt(err, errlen, "stub probes: cannot read the guest's page tables");
			ret = -EFAULT;
			goto fail;
		}
	stub_pt_fill(ptes, base, size / X86_PAGE_SIZE, 0, 0, false);
	wrote = true;
	q->saved_pt_gpa = pt;
	if (mem_write(mem, pt, ptes, sizeof(ptes)) < 0) {
		msg_fmt(err, errlen, "stub probes: cannot write the guest's page tables");
		ret = -EFAULT;
		goto fail;
	}
	for (q->nr_pde = 0; q->nr_pde < npde; q->nr_pde++) {
		/* past the first 2 MiB (reserved RAM only, 2 MiB aligned): 2 MiB pages */
		pde = q->nr_pde ? stub_pt_large_entry(base + (uint64_t)q->nr_pde * PMD_SPAN, false)
				: stub_pt_table_entry(pt);
		if (mem_write(mem, q->pde_gpa[q->nr_pde], &pde, 8) < 0) {
			msg_fmt(err, errlen, "stub probes: cannot write the guest's page tables");
			ret = -EFAULT;
			goto fail;
		}
	}
	*out = (struct target_region){.gva = va,
				      .gpa = base,
				      .size = size,
				      .where = q->resv_size ? "reserved" : "low-memory"};
	return 0;
fail:
	if (!wrote) { /* nothing changed: nothing to put back */
		free(q->saved);
		q->saved = NULL;
		q->saved_pt_gpa = 0;
	}
	stub_map_unmap(q, mem);
	return ret;
}

int stub_map_protect(struct stub_map *q, const struct stub_map_mem *mem, uint64_t exec_off,
		     uint64_t exec_len)
{
	uint64_t ptes[STUB_PT_ENTRIES];

	if (!q->saved_pt_gpa || !q->nr_pde)
		return -EINVAL;
	stub_pt_fill(ptes, q->saved_gpa, q->saved_len / X86_PAGE_SIZE, exec_off, exec_len, true);
	if (mem_write(mem, q->saved_pt_gpa, ptes, sizeof(ptes)) < 0)
		return -EFAULT;
	for (unsigned k = 1; k < q->nr_pde; k++) {
		bool exec = stub_pt_meets(exec_off, exec_len, (uint64_t)k * PMD_SPAN,
					  (uint64_t)(k + 1) * PMD_SPAN);
		uint64_t pde = stub_pt_large_entry(q->saved_gpa + (uint64_t)k * PMD_SPAN, !exec);

		if (mem_write(mem, q->pde_gpa[k], &pde, 8) < 0)
			return -EFAULT;
	}
	return 0;
}

void stub_map_unmap(struct stub_map *q, const struct stub_map_mem *mem)
{
	for (unsigned i = 0; i < q->nr_pde; i++)
		mem_write(mem, q->pde_gpa[i], &q->pde_old[i], 8);
	q->nr_pde = 0;
	free(q->pde_gpa);
	free(q->pde_old);
	q->pde_gpa = q->pde_old = NULL;
	if (q->saved_pt_gpa)
		mem_write(mem, q->saved_pt_gpa, q->saved_pt, X86_PAGE_SIZE);
	q->saved_pt_gpa = 0;
	if (q->saved)
		mem_write(mem, q->saved_gpa, q->saved, q->saved_len);
	free(q->saved);
	q->saved = NULL;
}

void stub_map_set_area(struct stub_map *q, uint64_t phys_lo, uint64_t phys_hi, uint64_t va,
		       uint64_t resv_gpa, uint64_t resv_size)
{
	q->phys_lo = phys_lo;
	q->phys_hi = phys_hi;
	q->va = va;
	q->resv_gpa = resv_gpa;
	q->resv_size = resv_size;
}

uint64_t stub_map_reserve(uint64_t region)
{
	return (region + PMD_SPAN - 1) & ~(PMD_SPAN - 1);
}

uint64_t stub_map_gpa(const struct stub_map *q)
{
	/* in low memory its first page is the page table that maps the rest */
	if (!q->va)
		return 0;
	return q->resv_size ? q->resv_gpa : q->phys_lo + X86_PAGE_SIZE;
}

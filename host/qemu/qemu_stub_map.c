/* Stub probes' memory in a QEMU guest: free guest memory mapped executable in the kernel's page
 * tables near the traced code, and put back as it was. */
#include "host/qemu/qemu_stub_map.h"
#include "arch/arch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define PMD_SPAN  (2ull << 20)
#define PDE_FLAGS (X86_PTE_P | X86_PTE_RW | (1ull << 5) /* A */)
#define PDE_LARGE (1ull << 7 /* PS */ | 1ull << 6 /* D */)
#define PTE_CODE  (X86_PTE_P | (1ull << 5))
#define PTE_DATA  (X86_PTE_P | X86_PTE_RW | (1ull << 5) | (1ull << 6) /* D */)

#define IMAGE_MAP_BASE 0xffffffff80000000ull /* __START_KERNEL_map: the kernel image's 1 GiB */
#define MODULES_VADDR  0xffffffffc0000000ull /* ends here */

static int read_pte(void *ctx, uint64_t gpa, uint64_t *pte)
{
	return qemu_mem_read(ctx, gpa, pte, 8);
}

/* Whether @a and @b are less than 2 GiB apart (a CALL rel32 reaches). */
static bool within_2g(uint64_t a, uint64_t b)
{
	return (a > b ? a - b : b - a) < (2ull << 30);
}

/* The first run of @npde 2 MiB slots in [@from, @to) whose page-directory entries (in the kernel's
 * page tables, @kcr3) are not present; its start in *@va. Returns the run's length: @npde when
 * found. An entry that cannot be read counts as present. */
static unsigned free_pde_run(const struct qemu_mem *mem, uint64_t kcr3, bool kla57, uint64_t from,
			     uint64_t to, unsigned npde, uint64_t *va)
{
	uint64_t v, pde_gpa, pde = 0;
	unsigned run = 0;

	for (v = from; run < npde && v >= from && v + PMD_SPAN <= to; v += PMD_SPAN) {
		if (x86_pde_addr(read_pte, (void *)mem, kcr3, kla57, v, &pde_gpa) < 0 ||
		    qemu_mem_read(mem, pde_gpa, &pde, 8) < 0 || (pde & X86_PTE_P)) {
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
 * memory used and the entries as they were are kept and put back by qemu_stub_unmap. */
int qemu_stub_map(struct qemu_stub *q, const struct qemu_mem *mem, const char *low_why,
		  qemu_stub_kernel_pt_fn kernel_pt, void *ctx, uint64_t lo, uint64_t hi,
		  uint64_t min, uint64_t want, struct target_region *out, char *err, size_t errlen)
{
	uint64_t pt = q->phys_lo, base, size, va, kcr3, pde = 0, ptes[512] = {0};
	unsigned npde, run;
	bool wrote = false, kla57;
	int ret;

	if (!q->va || mem->fd < 0) {
		snprintf(err, errlen, "stub probes: %s",
			 mem->fd < 0 ? "guest memory must be readable through the QEMU process "
				       "(not --gdb-memory)"
				     : "no free guest memory known for the stub");
		return -ENOTSUP;
	}
	if ((q->resv_gpa | q->resv_size) & (PMD_SPAN - 1)) {
		snprintf(err, errlen,
			 "stub probes: reserved RAM 0x%llx+0x%llx is not 2 MiB aligned",
			 (unsigned long long)q->resv_gpa, (unsigned long long)q->resv_size);
		return -EINVAL;
	}
	base = qemu_stub_gpa(q);
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
		snprintf(err, errlen,
			 "stub probes: %llu KiB free at guest-physical 0x%llx (%s%s%s)",
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
		snprintf(err, errlen,
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
		snprintf(err, errlen, "stub probes: out of memory keeping %llu KiB of guest memory",
			 (unsigned long long)size >> 10);
		ret = -ENOMEM;
		goto fail;
	}
	if (qemu_mem_read(mem, base, q->saved, size) < 0 ||
	    qemu_mem_read(mem, pt, q->saved_pt, X86_PAGE_SIZE) < 0) {
		snprintf(err, errlen, "stub probes: cannot read guest memory at 0x%llx",
			 (unsigned long long)base);
		ret = -EFAULT;
		goto fail;
	}
	for (unsigned i = 0; i < npde; i++)
		if (x86_pde_addr(read_pte, (void *)mem, kcr3, kla57, va + i * PMD_SPAN,
				 &q->pde_gpa[i]) < 0 ||
		    qemu_mem_read(mem, q->pde_gpa[i], &q->pde_old[i], 8) < 0) {
			snprintf(err, errlen, "stub probes: cannot read the guest's page tables");
			ret = -EFAULT;
			goto fail;
		}
	for (uint64_t i = 0; i < size / X86_PAGE_SIZE && i < 512; i++)
		ptes[i] = (base + i * X86_PAGE_SIZE) | (i ? PTE_DATA : PTE_CODE);
	wrote = true;
	q->saved_pt_gpa = pt;
	if (qemu_mem_write(mem, pt, ptes, sizeof(ptes)) < 0) {
		snprintf(err, errlen, "stub probes: cannot write the guest's page tables");
		ret = -EFAULT;
		goto fail;
	}
	for (q->nr_pde = 0; q->nr_pde < npde; q->nr_pde++) {
		/* past the first 2 MiB (reserved RAM only, 2 MiB aligned): 2 MiB pages */
		pde = q->nr_pde ? (base + (uint64_t)q->nr_pde * PMD_SPAN) | PDE_FLAGS | PDE_LARGE
				: pt | PDE_FLAGS;
		if (qemu_mem_write(mem, q->pde_gpa[q->nr_pde], &pde, 8) < 0) {
			snprintf(err, errlen, "stub probes: cannot write the guest's page tables");
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
	qemu_stub_unmap(q, mem);
	return ret;
}

/* Whether [@off, @off + @len) meets [@lo, @hi). */
static bool meets(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi)
{
	return len && off < hi && off + len > lo;
}

int qemu_stub_protect(struct qemu_stub *q, const struct qemu_mem *mem, uint64_t exec_off,
		      uint64_t exec_len)
{
	uint64_t ptes[512] = {0}, n = q->saved_len / X86_PAGE_SIZE;

	if (!q->saved_pt_gpa || !q->nr_pde)
		return -EINVAL;
	if (n > 512)
		n = 512;
	for (uint64_t i = 0; i < n; i++) {
		bool exec = !i || meets(exec_off, exec_len, i * X86_PAGE_SIZE,
					(i + 1) * X86_PAGE_SIZE);

		ptes[i] = (q->saved_gpa + i * X86_PAGE_SIZE) | (exec ? PTE_CODE : PTE_DATA | X86_PTE_NX);
	}
	if (qemu_mem_write(mem, q->saved_pt_gpa, ptes, sizeof(ptes)) < 0)
		return -EFAULT;
	for (unsigned k = 1; k < q->nr_pde; k++) {
		uint64_t pde = (q->saved_gpa + (uint64_t)k * PMD_SPAN) | PDE_FLAGS | PDE_LARGE;

		if (!meets(exec_off, exec_len, (uint64_t)k * PMD_SPAN, (uint64_t)(k + 1) * PMD_SPAN))
			pde |= X86_PTE_NX;
		if (qemu_mem_write(mem, q->pde_gpa[k], &pde, 8) < 0)
			return -EFAULT;
	}
	return 0;
}

void qemu_stub_unmap(struct qemu_stub *q, const struct qemu_mem *mem)
{
	for (unsigned i = 0; i < q->nr_pde; i++)
		qemu_mem_write(mem, q->pde_gpa[i], &q->pde_old[i], 8);
	q->nr_pde = 0;
	free(q->pde_gpa);
	free(q->pde_old);
	q->pde_gpa = q->pde_old = NULL;
	if (q->saved_pt_gpa)
		qemu_mem_write(mem, q->saved_pt_gpa, q->saved_pt, X86_PAGE_SIZE);
	q->saved_pt_gpa = 0;
	if (q->saved)
		qemu_mem_write(mem, q->saved_gpa, q->saved, q->saved_len);
	free(q->saved);
	q->saved = NULL;
}

void qemu_stub_set_area(struct qemu_stub *q, uint64_t phys_lo, uint64_t phys_hi, uint64_t va,
			uint64_t resv_gpa, uint64_t resv_size)
{
	q->phys_lo = phys_lo;
	q->phys_hi = phys_hi;
	q->va = va;
	q->resv_gpa = resv_gpa;
	q->resv_size = resv_size;
}

uint64_t qemu_stub_reserve(uint64_t region)
{
	return (region + PMD_SPAN - 1) & ~(PMD_SPAN - 1);
}

uint64_t qemu_stub_gpa(const struct qemu_stub *q)
{
	/* in low memory its first page is the page table that maps the rest */
	if (!q->va)
		return 0;
	return q->resv_size ? q->resv_gpa : q->phys_lo + X86_PAGE_SIZE;
}

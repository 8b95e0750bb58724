#include "arch/arch_tlb.h"

#include <errno.h>

void arch_tlb_invalidate(struct arch_tlb *tlb)
{
	tlb->gen++;
}

int arch_tlb_translate(struct arch_tlb *tlb, uint64_t cr3, uint64_t gva, arch_gva_fn walk,
		       void *ctx, uint64_t *gpa)
{
	uint64_t vpage = gva & ~(ARCH_TLB_PAGE - 1);
	struct arch_tlb_entry *e = &tlb->e[(vpage >> 12) % ARCH_TLB_ENTRIES];
	int ret;

	if (e->gen == tlb->gen + 1 && e->vpage == vpage && e->cr3 == cr3) {
		tlb->hits++;
		*gpa = e->ppage | (gva & (ARCH_TLB_PAGE - 1));
		return 0;
	}
	tlb->walks++;
	ret = walk(ctx, gva, gpa);
	if (ret < 0)
		return ret;
	*e = (struct arch_tlb_entry){
	    .cr3 = cr3, .vpage = vpage, .ppage = *gpa & ~(ARCH_TLB_PAGE - 1), .gen = tlb->gen + 1};
	return 0;
}

int arch_copy_virt(uint64_t gva, void *buf, size_t len, bool write, arch_gva_fn translate,
		   arch_gpa_copy_fn copy, void *ctx)
{
	uint8_t *b = buf;

	while (len) {
		uint64_t gpa;
		size_t chunk = ARCH_TLB_PAGE - (gva & (ARCH_TLB_PAGE - 1));
		int ret;

		if (chunk > len)
			chunk = len;
		if (translate(ctx, gva, &gpa) < 0)
			return -EFAULT;
		ret = copy(ctx, gpa, b, chunk, write);
		if (ret < 0)
			return ret;
		gva += chunk;
		b += chunk;
		len -= chunk;
	}
	return 0;
}

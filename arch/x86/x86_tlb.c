#include "arch/x86/x86_tlb.h"
#include "arch/x86/x86_longmode.h"

#include <errno.h>

void x86_tlb_invalidate(struct x86_tlb *tlb)
{
	tlb->gen++;
}

int x86_tlb_translate(struct x86_tlb *tlb, uint64_t cr3, uint64_t gva, x86_gva_fn walk, void *ctx,
		      uint64_t *gpa)
{
	uint64_t vpage = gva & ~(X86_PAGE_SIZE - 1);
	struct x86_tlb_entry *e = &tlb->e[(vpage >> 12) % X86_TLB_ENTRIES];
	int ret;

	if (e->gen == tlb->gen + 1 && e->vpage == vpage && e->cr3 == cr3) {
		tlb->hits++;
		*gpa = e->ppage | (gva & (X86_PAGE_SIZE - 1));
		return 0;
	}
	tlb->walks++;
	ret = walk(ctx, gva, gpa);
	if (ret < 0)
		return ret;
	*e = (struct x86_tlb_entry){
	    .cr3 = cr3, .vpage = vpage, .ppage = *gpa & ~(X86_PAGE_SIZE - 1), .gen = tlb->gen + 1};
	return 0;
}

int x86_copy_virt(uint64_t gva, void *buf, size_t len, bool write, x86_gva_fn translate,
		  x86_gpa_copy_fn copy, void *ctx)
{
	uint8_t *b = buf;

	while (len) {
		uint64_t gpa;
		size_t chunk = X86_PAGE_SIZE - (gva & (X86_PAGE_SIZE - 1));
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

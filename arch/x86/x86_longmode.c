#include "arch/x86/x86_longmode.h"

#include <string.h>

uint64_t x86_build_identity_map(void *tables, uint64_t tables_gpa, unsigned gib)
{
	uint64_t *pml4 = tables;
	uint64_t *pdpt = pml4 + 512;
	uint64_t *pd = pdpt + 512;

	memset(tables, 0, X86_IDMAP_PAGES(gib) * X86_PAGE_SIZE);
	pml4[0] = (tables_gpa + X86_PAGE_SIZE) | X86_PTE_P | X86_PTE_RW;
	for (unsigned g = 0; g < gib; g++) {
		pdpt[g] = (tables_gpa + (2 + g) * X86_PAGE_SIZE) | X86_PTE_P | X86_PTE_RW;
		for (unsigned i = 0; i < 512; i++)
			pd[g * 512 + i] = ((uint64_t)g << 30 | (uint64_t)i << 21) | X86_PTE_P |
					  X86_PTE_RW | X86_PTE_PS;
	}
	return tables_gpa;
}

void x86_build_gdt(void *gdt)
{
	uint64_t *e = gdt;

	e[0] = 0;
	/* present, DPL0, code, execute/read, accessed, L=1 */
	e[1] = 0x00209b0000000000ull;
	/* present, DPL0, data, read/write, accessed, limit 4 GiB, D/B=1, G=1 */
	e[2] = 0x00cf93000000ffffull;
}

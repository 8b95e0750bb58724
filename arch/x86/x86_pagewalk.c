#include "arch/x86/x86_pagewalk.h"
#include "arch/x86/x86_longmode.h"

#include <errno.h>

int x86_translate(x86_read_pte_fn read, void *ctx, uint64_t cr3, bool la57, uint64_t gva,
		  uint64_t *gpa)
{
	int levels = la57 ? 5 : 4;
	uint64_t table = cr3 & X86_PTE_ADDR;

	for (int level = levels; level >= 1; level--) {
		unsigned shift = 12 + 9 * (level - 1);
		uint64_t pte;

		if (read(ctx, table + ((gva >> shift) & 511) * 8, &pte) < 0)
			return -EFAULT;
		if (!(pte & X86_PTE_P))
			return -EFAULT;
		/* large page at PDPT (1 GiB) or PD (2 MiB) level */
		if (level == 1 || ((level == 2 || level == 3) && (pte & X86_PTE_PS))) {
			uint64_t mask = (1ull << shift) - 1;

			*gpa = ((pte & X86_PTE_ADDR) & ~mask) | (gva & mask);
			return 0;
		}
		table = pte & X86_PTE_ADDR;
	}
	return -EFAULT;
}

int x86_pde_addr(x86_read_pte_fn read, void *ctx, uint64_t cr3, bool la57, uint64_t gva,
		 uint64_t *pde_gpa)
{
	uint64_t table = cr3 & X86_PTE_ADDR;

	for (int level = la57 ? 5 : 4; level >= 3; level--) {
		unsigned shift = 12 + 9 * (level - 1);
		uint64_t pte;

		if (read(ctx, table + ((gva >> shift) & 511) * 8, &pte) < 0 || !(pte & X86_PTE_P) ||
		    (level == 3 && (pte & X86_PTE_PS)))
			return -EFAULT;
		table = pte & X86_PTE_ADDR;
	}
	*pde_gpa = table + ((gva >> 21) & 511) * 8;
	return 0;
}

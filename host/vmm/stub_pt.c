/* The page-table entries of stub probes' memory in a guest kernel's page tables. */
#include "host/vmm/stub_pt.h"
#include "arch/arch.h"
#include "guest-stub/stub_abi.h"

#include <string.h>

#define PTE_A	  (1ull << 5)
#define PTE_D	  (1ull << 6)
#define PTE_CODE  (X86_PTE_P | PTE_A)
#define PTE_DATA  (X86_PTE_P | X86_PTE_RW | PTE_A | PTE_D)
#define PTE_TABLE (X86_PTE_P | X86_PTE_RW | PTE_A)

uint64_t stub_pt_table_entry(uint64_t gpa)
{
	return gpa | PTE_TABLE;
}

uint64_t stub_pt_large_entry(uint64_t gpa, bool nx)
{
	return gpa | PTE_DATA | X86_PTE_PS | (nx ? X86_PTE_NX : 0);
}

bool stub_pt_meets(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi)
{
	return len && off < hi && off + len > lo;
}

void stub_pt_fill(uint64_t pt[STUB_PT_ENTRIES], uint64_t gpa, uint64_t npages, uint64_t exec_off,
		  uint64_t exec_len, bool nx)
{
	memset(pt, 0, STUB_PT_ENTRIES * sizeof(*pt));
	for (uint64_t i = 0; i < npages && i < STUB_PT_ENTRIES; i++) {
		bool exec = i < STUB_CODE_SIZE / X86_PAGE_SIZE || stub_pt_meets(exec_off, exec_len, i * X86_PAGE_SIZE,
						(i + 1) * X86_PAGE_SIZE);

		pt[i] = (gpa + i * X86_PAGE_SIZE) |
			(exec ? PTE_CODE : PTE_DATA | (nx ? X86_PTE_NX : 0));
	}
}

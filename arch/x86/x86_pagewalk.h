/* Guest page-table walk (4- and 5-level paging, 1 GiB and 2 MiB pages), independent of how memory is read. */
#ifndef HVT_X86_PAGEWALK_H
#define HVT_X86_PAGEWALK_H

#include <stdbool.h>
#include <stdint.h>

/* Reads the 8-byte page-table entry at guest-physical @gpa; returns 0 or a negative errno. */
typedef int (*x86_read_pte_fn)(void *ctx, uint64_t gpa, uint64_t *pte);

/* Translates guest-virtual @gva under @cr3 into *@gpa, 5-level if @la57. Returns 0, -EFAULT when a level
 * is not present (or reading a table fails). Any thread; only calls @read. */
int x86_translate(x86_read_pte_fn read, void *ctx, uint64_t cr3, bool la57, uint64_t gva,
		  uint64_t *gpa);

/* Guest-physical address of the page-directory entry (level 2) for @gva under @cr3, for mapping a new
 * page table there: every level above must be present and not a 1 GiB page. 0 or -EFAULT. Any thread. */
int x86_pde_addr(x86_read_pte_fn read, void *ctx, uint64_t cr3, bool la57, uint64_t gva,
		 uint64_t *pde_gpa);

#endif

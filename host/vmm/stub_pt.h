/* The page-table entries that map stub probes' memory into a guest kernel's page tables, the same
 * for every backend whatever the place it chose: a page table whose first pages (the stub's code,
 * STUB_CODE_SIZE) are read-only and executable and whose other pages are writable data, 2 MiB pages of data past it,
 * and the entry that points at a page table. Pure; x86-64 4-level or 5-level paging. */
#ifndef HVT_STUB_PT_H
#define HVT_STUB_PT_H

#include <stdbool.h>
#include <stdint.h>

#define STUB_PT_ENTRIES 512 /* entries of one page table */

/* An entry pointing at the page table (or page directory) at guest-physical @gpa: present,
 * writable, accessed (the leaves decide). */
uint64_t stub_pt_table_entry(uint64_t gpa);

/* A 2 MiB page of data at guest-physical @gpa (2 MiB aligned): present, writable, accessed, dirty;
 * not executable with @nx (a guest that uses NX: the caller knows). */
uint64_t stub_pt_large_entry(uint64_t gpa, bool nx);

/* Fills page table @pt: its first @npages entries (at most STUB_PT_ENTRIES) map the pages from
 * guest-physical @gpa on, the others are 0. The code's pages (STUB_CODE_SIZE) and each page meeting [@exec_off,
 * +@exec_len) are read-only and executable; every other page is writable data, not executable with
 * @nx. */
void stub_pt_fill(uint64_t pt[STUB_PT_ENTRIES], uint64_t gpa, uint64_t npages, uint64_t exec_off,
		  uint64_t exec_len, bool nx);

/* Whether [@off, @off + @len) meets [@lo, @hi). */
bool stub_pt_meets(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi);

#endif

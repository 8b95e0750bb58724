/* Long-mode constants and the tables a VMM builds to enter 64-bit mode directly. */
#ifndef HVT_X86_LONGMODE_H
#define HVT_X86_LONGMODE_H

#include <stdint.h>

/* The upper half of the canonical address space (bit 63 set), where a kernel lives with 4-level
 * and 5-level paging alike. */
#define X86_UPPER_HALF 0x8000000000000000ull

#define X86_CR0_PE (1ull << 0)
#define X86_CR0_MP (1ull << 1)
#define X86_CR0_ET (1ull << 4)
#define X86_CR0_NE (1ull << 5)
#define X86_CR0_WP (1ull << 16)
#define X86_CR0_PG (1ull << 31)

#define X86_CR4_PAE (1ull << 5)
#define X86_CR4_OSFXSR (1ull << 9)
#define X86_CR4_OSXMMEXCPT (1ull << 10)
#define X86_CR4_LA57 (1ull << 12)

#define X86_EFER_SCE (1ull << 0)
#define X86_EFER_LME (1ull << 8)
#define X86_EFER_LMA (1ull << 10)
#define X86_EFER_NXE (1ull << 11)

#define X86_PTE_P (1ull << 0)
#define X86_PTE_RW (1ull << 1)
#define X86_PTE_US (1ull << 2)
#define X86_PTE_PS (1ull << 7)
#define X86_PTE_NX (1ull << 63)
#define X86_PTE_ADDR 0x000ffffffffff000ull

#define X86_PAGE_SIZE 4096ull

/* GDT selectors of the flat long-mode GDT built by x86_build_gdt. */
#define X86_SEL_CODE64 0x08
#define X86_SEL_DATA 0x10
#define X86_GDT_ENTRIES 3

/* Number of 4 KiB pages x86_build_identity_map needs: PML4, PDPT, one PD per GiB. */
#define X86_IDMAP_PAGES(gib) (2 + (gib))

/* Writes page tables identity-mapping the first @gib GiB with 2 MiB pages into @tables (host memory of
 * X86_IDMAP_PAGES(gib) pages that the guest sees at guest-physical @tables_gpa). Returns the CR3 value. */
uint64_t x86_build_identity_map(void *tables, uint64_t tables_gpa, unsigned gib);

/* Writes the flat GDT (null, 64-bit code, data) into @gdt (X86_GDT_ENTRIES * 8 bytes). */
void x86_build_gdt(void *gdt);

#endif

/* A small guest translation cache (guest-virtual page -> guest-physical page under one page-table
 * root, x86: CR3) and the page-by-page copy of guest-virtual memory, independent of how page
 * tables and memory are read. */
#ifndef HVT_ARCH_TLB_H
#define HVT_ARCH_TLB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARCH_TLB_ENTRIES 8
/* The granule cached and copied: the smallest page of every ISA hvtrace knows (a larger page
 * maps its 4 KiB parts linearly, so caching those is exact). */
#define ARCH_TLB_PAGE 4096ull

/* A cached translation: valid while gen is the cache's gen + 1 (so a zeroed cache holds none). */
struct arch_tlb_entry {
	uint64_t cr3, vpage, ppage, gen;
};

/* Zeroed, it is empty. Belongs to one thread at a time (a vCPU's own, or the one holding the
 * stopped target). */
struct arch_tlb {
	uint64_t gen; /* arch_tlb_invalidate bumps it: older entries are stale */
	struct arch_tlb_entry e[ARCH_TLB_ENTRIES];
	uint64_t hits, walks; /* translations answered from the cache / by @walk (--stats) */
};

/* Translates guest-virtual @gva into *@gpa (a page walk, or a cached one). 0 or a negative errno.
 */
typedef int (*arch_gva_fn)(void *ctx, uint64_t gva, uint64_t *gpa);

/* Copies @len bytes at guest-physical @gpa into @buf, or from @buf into guest memory if @write. 0
 * or a negative errno. */
typedef int (*arch_gpa_copy_fn)(void *ctx, uint64_t gpa, void *buf, size_t len, bool write);

/* Forgets every entry of @tlb (the guest may have changed its page tables); the counters stay. The
 * owner's thread. */
void arch_tlb_invalidate(struct arch_tlb *tlb);

/* *@gpa for @gva under @cr3: from @tlb (counted in hits), else through @walk(@ctx) (counted in
 * walks), whose answer is then cached. Returns 0 or @walk's error (nothing cached). The owner's
 * thread; calls only @walk. */
int arch_tlb_translate(struct arch_tlb *tlb, uint64_t cr3, uint64_t gva, arch_gva_fn walk,
		       void *ctx, uint64_t *gpa);

/* Copies guest-virtual [@gva, @gva+@len) into @buf (from @buf if @write) one page at a time, each
 * page translated through @translate and then copied through @copy, both called with @ctx. Returns
 * 0, -EFAULT when a page does not translate, or @copy's error; it stops there (earlier pages are
 * copied). Any thread the callbacks allow. */
int arch_copy_virt(uint64_t gva, void *buf, size_t len, bool write, arch_gva_fn translate,
		   arch_gpa_copy_fn copy, void *ctx);

#endif

/* Stub probes' memory in a guest kernel that hvtrace did not boot (a VMM it attached to): free
 * guest memory (low memory the kernel never uses, or RAM it reserved) mapped executable in the
 * kernel's page tables within 2 GiB of the traced code, by page-directory entries only, and
 * everything it changed put back by stub_map_unmap. Guest memory is reached only through a struct
 * stub_map_mem (the VMM process's memory, for QEMU). The guest's page tables are a peer's: every
 * entry read is bounded. One struct stub_map per target; the thread that pauses the VM, while it is
 * stopped. */
#ifndef HVT_STUB_MAP_H
#define HVT_STUB_MAP_H

#include "host/trace/target.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Guest-physical memory as the mapper reads and writes it: 0, or a negative errno (-EFAULT). */
struct stub_map_mem {
	int (*read)(void *ctx, uint64_t gpa, void *buf, size_t len);
	int (*write)(void *ctx, uint64_t gpa, const void *buf, size_t len);
	void *ctx;
};

/* Where the stub may live (stub_map_set_area), and what stub_map_map changed. */
struct stub_map {
	uint64_t phys_lo, phys_hi, va;
	uint64_t resv_gpa, resv_size; /* nonzero: the stub's pages are this RAM range the kernel
				       * reserved (2 MiB aligned); only the page table is low */
	uint64_t *pde_gpa,
	    *pde_old; /* the page-directory entries stub_map_map filled, as they were */
	unsigned nr_pde;
	uint8_t *saved;		/* the guest bytes the stub's memory held before; owned */
	uint8_t saved_pt[4096]; /* and its page-table page at saved_pt_gpa (0: none) */
	uint64_t saved_pt_gpa;
	uint64_t saved_gpa, saved_len;
};

/* The kernel's page-table root and whether it is 5-level, asked of the target once a map is
 * possible (the target keeps them for its own kernel reads). 0 or -errno. */
typedef int (*stub_map_kernel_pt_fn)(void *ctx, uint64_t *cr3, bool *la57);

/* Offers guest-physical [@phys_lo, @phys_hi) of low memory and kernel address @va (0: no area);
 * with @resv_size the pages are [@resv_gpa, +@resv_size) and only the page-table page is low. */
void stub_map_set_area(struct stub_map *s, uint64_t phys_lo, uint64_t phys_hi, uint64_t va,
		       uint64_t resv_gpa, uint64_t resv_size);

/* Maps at least @min, at most @want bytes of the area at kernel addresses within 2 GiB of [@lo,
 * @hi], through @mem; @low_why (may be NULL) says in a refusal why low memory is used. Returns 0
 * with *@out filled, or -ENOTSUP, -EINVAL, -ENOSPC, -ENOMEM, -EFAULT or @kernel_pt's error with a
 * reason in @err; on failure the guest is as it was. */
int stub_map_map(struct stub_map *s, const struct stub_map_mem *mem, const char *low_why,
		 stub_map_kernel_pt_fn kernel_pt, void *ctx, uint64_t lo, uint64_t hi, uint64_t min,
		 uint64_t want, struct target_region *out, char *err, size_t errlen);

/* Puts back the page-directory entries, the page-table page and the guest bytes stub_map_map
 * changed, and frees what it kept. Idempotent. */
void stub_map_unmap(struct stub_map *s, const struct stub_map_mem *mem);

/* After stub_map_map, in a guest that uses NX (the caller knows): the code page and the pages
 * holding [@exec_off, +@exec_len) read-only and executable, every other page writable and not
 * executable (a 2 MiB page meeting that range stays executable). 0, -EINVAL (nothing mapped), or
 * -EFAULT (a page table could not be written: part of it may be done; stub_map_unmap puts it all
 * back). */
int stub_map_protect(struct stub_map *s, const struct stub_map_mem *mem, uint64_t exec_off,
		     uint64_t exec_len);

/* Bytes of guest RAM (a multiple of 2 MiB) to reserve for a stub region of @region bytes. Pure. */
uint64_t stub_map_reserve(uint64_t region);

/* Where stub_map_map would place the region (guest-physical), 0 without an area. */
uint64_t stub_map_gpa(const struct stub_map *s);

#endif

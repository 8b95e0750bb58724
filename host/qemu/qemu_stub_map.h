/* Stub probes' memory in a QEMU guest, through the QEMU process's view of guest RAM: free guest
 * memory (low memory the kernel never uses, or RAM it reserved) mapped executable in the kernel's
 * page tables within 2 GiB of the traced code, by page-directory entries only, and everything it
 * changed put back by qemu_stub_unmap. The guest's page tables are a peer's: every entry read is
 * bounded. One struct qemu_stub per target; the thread that pauses the VM, while it is stopped. */
#ifndef HVT_QEMU_STUB_MAP_H
#define HVT_QEMU_STUB_MAP_H

#include "host/vmm/proc_mem.h"
#include "host/trace/target.h"

#include <stdbool.h>
#include <stdint.h>

/* Where the stub may live (qemu_stub_set_area), and what qemu_stub_map changed. */
struct qemu_stub {
	uint64_t phys_lo, phys_hi, va;
	uint64_t resv_gpa, resv_size; /* nonzero: the stub's pages are this RAM range the kernel
				       * reserved (2 MiB aligned); only the page table is low */
	uint64_t *pde_gpa, *pde_old;  /* the page-directory entries stub_map filled, as they were */
	unsigned nr_pde;
	uint8_t *saved;		/* the guest bytes the stub's memory held before; owned */
	uint8_t saved_pt[4096]; /* and its page-table page at saved_pt_gpa (0: none) */
	uint64_t saved_pt_gpa;
	uint64_t saved_gpa, saved_len;
};

/* The kernel's page-table root and whether it is 5-level, asked of the target once a map is
 * possible (the target keeps them for its own kernel reads). 0 or -errno. */
typedef int (*qemu_stub_kernel_pt_fn)(void *ctx, uint64_t *cr3, bool *la57);

/* Offers guest-physical [@phys_lo, @phys_hi) of low memory and kernel address @va (0: no area);
 * with @resv_size the pages are [@resv_gpa, +@resv_size) and only the page-table page is low. */
void qemu_stub_set_area(struct qemu_stub *s, uint64_t phys_lo, uint64_t phys_hi, uint64_t va,
			uint64_t resv_gpa, uint64_t resv_size);

/* Maps at least @min, at most @want bytes of the area at kernel addresses within 2 GiB of [@lo,
 * @hi], through @mem (which must be open); @low_why (may be NULL) says in a refusal why low memory
 * is used. Returns 0 with *@out filled, or -ENOTSUP, -EINVAL, -ENOSPC, -ENOMEM, -EFAULT or
 * @kernel_pt's error with a reason in @err; on failure the guest is as it was. */
int qemu_stub_map(struct qemu_stub *s, const struct proc_mem *mem, const char *low_why,
		  qemu_stub_kernel_pt_fn kernel_pt, void *ctx, uint64_t lo, uint64_t hi,
		  uint64_t min, uint64_t want, struct target_region *out, char *err, size_t errlen);

/* Puts back the page-directory entries, the page-table page and the guest bytes qemu_stub_map
 * changed, and frees what it kept. Idempotent. */
void qemu_stub_unmap(struct qemu_stub *s, const struct proc_mem *mem);

/* After qemu_stub_map, in a guest that uses NX (the caller knows): the code page and the pages
 * holding [@exec_off, +@exec_len) read-only and executable, every other page writable and not
 * executable (a 2 MiB page meeting that range stays executable). 0, -EINVAL (nothing mapped), or
 * -EFAULT (a page table could not be written: part of it may be done; qemu_stub_unmap puts it all
 * back). */
int qemu_stub_protect(struct qemu_stub *s, const struct proc_mem *mem, uint64_t exec_off,
		      uint64_t exec_len);

/* Bytes of guest RAM (a multiple of 2 MiB) to reserve for a stub region of @region bytes. Pure. */
uint64_t qemu_stub_reserve(uint64_t region);

/* Where qemu_stub_map would place the region (guest-physical), 0 without an area. */
uint64_t qemu_stub_gpa(const struct qemu_stub *s);

#endif

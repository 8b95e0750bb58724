/* Which guest-physical range each of a foreign VMM's RAM mappings holds, proved from the guest
 * itself (issue 41): a first map that puts one candidate mapping at guest-physical 0 (no more than
 * the 4 GiB below the PCI hole) is kept only if the kernel's page-table root a vCPU's CR3 names
 * lies in it and looks like one (vmmpid_ram_pml4_plausible), and the caller then finds the kernel
 * through it (its kallsyms, linux_banner); the kernel's own E820 table then says where the rest of
 * the mapping's bytes are (above 4 GiB), and whether another candidate holds that part
 * (vmmpid_ram_layout). Every value here is the guest's or the VMM's: bounded. Pure; any thread. */
#ifndef HVT_VMMPID_RAM_H
#define HVT_VMMPID_RAM_H

#include "host/vmm/kvm_proc.h"
#include "host/vmm/proc_mem.h"
#include "vmi/vmi_read.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VMMPID_RAM_LOW_MAX (1ull << 32) /* guest-physical RAM below the 4 GiB boundary at most */
#define VMMPID_CR3_ADDR	   0x000ffffffffff000ull /* CR3's table address bits (no PCID, no flags) */

/* Whether the 512 entries @pml4 (a 4-level root, or a 5-level one: the same shape) look like a
 * Linux kernel's page-table root in a guest whose RAM ends at guest-physical @limit: no entry with
 * PS set, at least one present entry in the kernel half (256..511), and every present kernel-half
 * entry's table below @limit. Pure. */
bool vmmpid_ram_pml4_plausible(const uint64_t pml4[512], uint64_t limit);

/* The bootstrap map with candidate @c at guest-physical 0: [0, min(len, VMMPID_RAM_LOW_MAX)) at
 * c->hva, in @out (one region). Pure. */
void vmmpid_ram_boot_map(const struct kvm_proc_ram *c, struct proc_mem_region *out);

/* The VMM's own memory at its address @hva: 0 or -EFAULT (proc_mem_host_read). */
typedef int (*vmmpid_host_read_fn)(void *ctx, uint64_t hva, void *buf, size_t len);

/* Finds the guest's kernel through @read (kernel-half guest-virtual reads through one hypothesis:
 * vmi_linux_find_symbols in the backend). 0, or a negative errno with why in @why. */
typedef int (*vmmpid_find_kernel_fn)(void *ctx, vmi_read_fn read, void *rctx, char *why,
				     size_t whylen);

/* What a vCPU's system registers say of its paging (KVM_GET_SREGS). */
struct vmmpid_ram_cpu {
	uint64_t cr3, cr4, efer;
};

/* The proof: candidate @cand holds guest-physical 0 (vmmpid_ram_boot_map), and the kernel was
 * found through page-table root @root (paging mode @mode: 1 for 5-level) that vCPU @cpu's CR3
 * names. */
struct vmmpid_ram_proof {
	unsigned cand, cpu, mode;
	uint64_t root;
};

/* For each candidate of @cand[@nr] (in order) and each distinct root of the vCPUs @cpu[@nr_cpus]
 * in long mode: the root read through the candidate's boot map (@host_read), checked by
 * vmmpid_ram_pml4_plausible, then the kernel looked for by @find through a reader that walks the
 * guest's page tables (x86_64, 4 or 5 levels; the kernel half of a PTI pair) with every table and
 * byte read through that boot map alone. 0 with *@out at the first that finds it; else -ENOENT
 * with one line in @err saying what was missing for the last candidate tried. Every guest value
 * bounded; allocates nothing. Any thread. */
int vmmpid_ram_prove(const struct kvm_proc_ram *cand, unsigned nr, const struct vmmpid_ram_cpu *cpu,
		     unsigned nr_cpus, vmmpid_host_read_fn host_read, void *hctx,
		     vmmpid_find_kernel_fn find, void *fctx, struct vmmpid_ram_proof *out,
		     char *err, size_t errlen);

/* The whole map, from the kernel's E820 table @e820 (@len bytes: a u32 count, then 20-byte {addr,
 * size, type} entries; vmi_linux_e820_read's image) and the candidates @cand[@nr], of which
 * @cand[@boot] was proved to hold guest-physical 0 (vmmpid_ram_boot_map): the guest's RAM above 4
 * GiB (E820 RAM, ACPI or NVS entries there) is either the rest of @cand[@boot] after its part
 * below 4 GiB (one mapping for all RAM, as QEMU's pc.ram), or another candidate of exactly that
 * size (a VMM with a mapping per range, as Firecracker). @out[PROC_MEM_MAX_REGIONS], *@nr_out
 * regions sorted by gpa. 0, or -EINVAL with one line in @err naming what does not fit (the low
 * part would end below the E820's RAM there, or above 4 GiB; no candidate holds the high part).
 * Pure. */
int vmmpid_ram_layout(const uint8_t *e820, size_t len, const struct kvm_proc_ram *cand, unsigned nr,
		      unsigned boot, struct proc_mem_region *out, unsigned *nr_out, char *err,
		      size_t errlen);

#endif

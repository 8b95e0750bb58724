/* The target interface on the embedded VMM: memory through the host mapping of guest RAM and the
 * vCPUs' page tables, breakpoints as verified INT3 writes, pause as kicking every vCPU thread. */
#ifndef HVT_TARGET_KVM_H
#define HVT_TARGET_KVM_H

#include "host/kvm/vm.h"
#include "host/trace/target.h"

/* Makes @t a view of @vm (borrowed; must outlive @t). */
void target_kvm_init(struct target *t, struct vm *vm);

/* The same for a Linux guest of a linux_pc VM, loaded at its link address: the kernel image's 1 GiB
 * read linearly (guest-physical = virtual - 0xffffffff80000000, right from before the first
 * instruction), the rest through the kernel's own top-level page table once
 * target_kvm_linux_tables gave it; the stub in a memslot above RAM, mapped through
 * level3_kernel_pgt at the top of [-3 GiB, -2 GiB), put back by stub_unmap. No breakpoints: INT3 is
 * the guest's own here. Main thread. */
void target_kvm_linux_init(struct target *t, struct vm *vm);

/* Where the kernel's page tables are (symbol addresses): @init_top_pgt (swapper_pg_dir, the master
 * of the kernel half of every address space) and @level3_kernel_pgt (the table the stub is mapped
 * through). 0, or -EINVAL when either is outside the kernel image or guest RAM. Main thread,
 * before the stub is placed. */
int target_kvm_linux_tables(struct target *t, uint64_t init_top_pgt, uint64_t level3_kernel_pgt);

#endif

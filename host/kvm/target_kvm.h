/* The target interface on the embedded VMM: memory through the host mapping of guest RAM and the
 * vCPUs' page tables, breakpoints as verified INT3 writes, pause as kicking every vCPU thread. */
#ifndef HVT_TARGET_KVM_H
#define HVT_TARGET_KVM_H

#include "host/kvm/vm.h"
#include "host/trace/target.h"

/* Makes @t a view of @vm (borrowed; must outlive @t). */
void target_kvm_init(struct target *t, struct vm *vm);

/* The same for a Linux guest of a linux_pc VM: kernel memory through the kernel page tables
 * captured when the stub is mapped (vCPU 0's before that), and the stub in a memslot above RAM mapped
 * by 2 MiB page-directory entries at @stub_va (a free 2 MiB-aligned kernel-image address past _end:
 * vmi_linux_stub_area), put back by stub_unmap. No breakpoints: INT3 is the guest's own here. */
void target_kvm_linux_init(struct target *t, struct vm *vm, uint64_t stub_va);

#endif

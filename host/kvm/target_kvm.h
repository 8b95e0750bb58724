/* The target interface on the embedded VMM: memory through the host mapping of guest RAM and the
 * vCPUs' page tables, breakpoints as verified INT3 writes, pause as kicking every vCPU thread. */
#ifndef HVT_TARGET_KVM_H
#define HVT_TARGET_KVM_H

#include "host/kvm/vm.h"
#include "host/trace/target.h"

/* Makes @t a view of @vm (borrowed; must outlive @t). */
void target_kvm_init(struct target *t, struct vm *vm);

#endif

/* Any KVM VMM by pid, with nothing asked of the VMM (issue 41): `list-functions --pid PID` (and
 * `--vmm generic`) finds the VM from the VMM's /proc, reads the vCPUs' registers by ioctls injected
 * into its own thread, proves which of its mappings holds which guest RAM by walking the guest's
 * page tables to its kernel, and reads the kernel's functions through /proc/PID/mem. */
#ifndef HVT_BACKEND_VMMPID_H
#define HVT_BACKEND_VMMPID_H

#include "host/session/backend.h"

/* @b: the backend for @env's session (its state allocated; ops->close frees it). 0 or -ENOMEM. */
int backend_vmmpid_new(struct backend *b, const struct backend_env *env);

#endif

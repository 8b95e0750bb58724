/* `hvtrace run --kernel bzImage`: boot a Linux kernel in the embedded VMM (host/kvm/linux_vm.h) and
 * trace it with stub probes. */
#ifndef HVT_KVM_LINUX_RUN_H
#define HVT_KVM_LINUX_RUN_H

#include "host/session/session.h"

/* Runs @s (s->kernel set, not --qemu) to its end: power-off, reboot, panic, signal, --timeout.
 * Returns the exit status (exitcode.h); errors are one "hvtrace: ..." line. Main thread. */
int cmd_run_kernel(const struct session *s);

#endif

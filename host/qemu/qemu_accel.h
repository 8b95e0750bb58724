/* Whether a running QEMU uses KVM: its human monitor's `info kvm`, else its command line. The
 * answer decides whether trap probes (gdbstub breakpoints, which under KVM need KVM_EXIT_DEBUG)
 * must be checked against the host's KVM first. */
#ifndef HVT_QEMU_ACCEL_H
#define HVT_QEMU_ACCEL_H

#include "host/qemu/qemu_attach.h"

#include <stddef.h>

/* What HMP `info kvm` printed (@out, @len bytes, NUL not needed): 1 for "kvm support: enabled",
 * 0 for "disabled" or "not compiled", -1 when it says neither. Pure. */
int qemu_accel_info_kvm(const char *out, size_t len);

/* Whether the command line @buf (@len bytes of NUL-separated arguments, as /proc/PID/cmdline)
 * asks for KVM: -enable-kvm, -accel kvm[,...], -machine/-M/-accel ...accel=kvm[:...]. 1 or 0. Pure.
 */
int qemu_accel_cmdline_kvm(const char *buf, size_t len);

/* 1 if the QEMU of @c uses KVM, 0 if not, -errno when neither its monitor nor /proc/PID/cmdline
 * tells. Main thread. */
int qemu_uses_kvm(struct qemu_conn *c);

#endif

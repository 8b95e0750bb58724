/* A Linux guest under QEMU as a backend of the run driver: `run --qemu` launches it, `attach` joins
 * a running one (libvirt, QMP, pid), `list-functions` of a running VM reads its functions. */
#ifndef HVT_BACKEND_QEMU_H
#define HVT_BACKEND_QEMU_H

#include "host/session/backend.h"

/* @b: the backend for @env's session (its state allocated; ops->close frees it). 0 or -ENOMEM. */
int backend_qemu_new(struct backend *b, const struct backend_env *env);

#endif

/* A Linux bzImage in the embedded VMM as a backend of the run driver (`hvtrace run --kernel FILE`):
 * traced from its first traced function on (boot tracing; real KVM). */
#ifndef HVT_BACKEND_LINUX_H
#define HVT_BACKEND_LINUX_H

#include "host/session/backend.h"

/* @b: the backend for @env's session (its state allocated; ops->close frees it). 0 or -ENOMEM. */
int backend_linux_new(struct backend *b, const struct backend_env *env);

#endif

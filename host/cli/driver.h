/* The one run driver: every backend (host/session/backend.h) run through the same steps. */
#ifndef HVT_DRIVER_H
#define HVT_DRIVER_H

#include "host/session/backend.h"
#include "host/session/session.h"

/* Makes the backend @b for @env (its state owned by @b until ops->close). 0 or -errno. */
typedef int (*driver_backend_new)(struct backend *b, const struct backend_env *env);

/* Runs @s to the end over the backend @make makes: opens the outputs once, blocks the signals (a
 * signalfd), lets the backend prepare, start and wait, finishes the pipeline (--stats, --profile,
 * --expect-*, --summary, --junit) and closes everything. Errors are one "hvtrace: ..." line on
 * stderr. Returns the exit status (exitcode.h). Main thread. */
int driver_run(const struct session *s, driver_backend_new make);

#endif

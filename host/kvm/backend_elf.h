/* The embedded VMM's freestanding ELF guest as a backend of the run driver (`hvtrace run
 * GUEST.elf`), and its list-functions. */
#ifndef HVT_BACKEND_ELF_H
#define HVT_BACKEND_ELF_H

#include "host/session/backend.h"

/* @b: the backend for @env's session (its state allocated; ops->close frees it). 0 or -ENOMEM. */
int backend_elf_new(struct backend *b, const struct backend_env *env);

/* Prints the traceable functions of @s->guest, one per line in address order. Returns the exit
 * status; errors as one "hvtrace: ..." line on stderr. */
int backend_elf_list_functions(const struct session *s);

#endif

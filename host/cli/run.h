/* The commands: `hvtrace run` (boot a guest in the embedded VMM and trace it) and `list-functions`. */
#ifndef HVT_RUN_H
#define HVT_RUN_H

#include "host/cli/session.h"

/* Runs @s to the end. Errors are printed as one "hvtrace: ..." line on stderr. Returns the exit status
 * (exitcode.h). Main thread; installs its own signal handling. */
int cmd_run(const struct session *s);

/* Prints the traceable functions of @s->guest, one per line in address order. Returns the exit status. */
int cmd_list_functions(const struct session *s);

#endif

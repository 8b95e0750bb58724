/* `hvtrace run --qemu` and `hvtrace attach`: trace the Linux kernel of a QEMU VM through the gdbstub. */
#ifndef HVT_LINUX_RUN_H
#define HVT_LINUX_RUN_H

#include "host/session/session.h"

/* Runs the session to its end (guest power-off, signal, --duration, --timeout) and returns the exit
 * status (exitcode.h). Errors are one "hvtrace: ..." line on stderr. Main thread. */
int cmd_linux(const struct session *s);

#endif

/* Every input file a parsed command names, checked before anything starts: the guest ELF,
 * --kernel, --initrd, --system-map, report's -i and --host-input. Each must be a regular file
 * (checked without blocking: a FIFO is refused, never waited on) that can be opened for reading. */
#ifndef HVT_INPUT_CHECK_H
#define HVT_INPUT_CHECK_H

#include "host/session/session.h"

#include <stddef.h>

/* Checks the input files of @s (vmi_file_open on each, closed again). 0, or a negative errno
 * with one line in @err naming the option and the file ("--initrd /tmp/f: not a regular file (a
 * FIFO)"). Main thread, after session_parse_args, before any backend opens. */
int input_check(const struct session *s, char *err, size_t errlen);

#endif

/* Every file a session writes (-o, --console, --summary, --junit, record --host's file, report's
 * stdout) and reads (the guest, --kernel, --initrd, --system-map, -i, --host-input, --session
 * files), checked as a whole before anything starts: no output may be another output or an input,
 * --trigger snapshot needs a regular -o to copy, and every output must be creatable. */
#ifndef HVT_OUT_PATHS_H
#define HVT_OUT_PATHS_H

#include "host/session/session.h"

#include <stddef.h>

/* Checks @s's outputs and inputs, touching no file (nothing created or truncated): two outputs, or
 * an output and an input, that resolve to the same file (device and inode of what exists; the real
 * parent directory and name of what does not yet), where that would lose data (character devices
 * such as /dev/null may be shared, and so may stdout by -o and --console left to it); a snapshot
 * trigger beside an -o that is not a regular file; an output that could not be opened for writing
 * (no such directory, no permission, a directory). 0, or -EINVAL with one line in @err naming the
 * option(s) and path(s). Main thread, before the guest is read or /dev/kvm opened. */
int out_paths_check(const struct session *s, char *err, size_t errlen);

#endif

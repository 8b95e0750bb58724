/* The command line into a session model: `hvtrace CMD [options] ARGS`, --session files expanded. */
#ifndef HVT_SESSION_ARGS_H
#define HVT_SESSION_ARGS_H

#include "host/session/session.h"

#include <stddef.h>

/* Parses `hvtrace CMD [options] ARGS` into @s. Returns 0, or -EINVAL with one line in @err naming
 * the option or argument at fault ("FILE:LINE: ..." for a line of a session file). Strings in @s
 * point into
 * @argv or into @s->words. Touches no file but the session files of --session (read once). */
int session_parse_args(struct session *s, int argc, char **argv, char *err, size_t errlen);

/* Usage text for --help (usage.c). */
extern const char session_usage[];

#endif

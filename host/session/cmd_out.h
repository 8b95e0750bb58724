/* What every command writes besides the trace: error lines on stderr, and the output files it opens
 * and closes (-o, --console, --summary, ...). */
#ifndef HVT_CMD_OUT_H
#define HVT_CMD_OUT_H

#include <stdio.h>

/* Prints "hvtrace: <message>" as one line on stderr (stdout flushed first). */
void cmd_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* @path opened for writing, or stdout when NULL; NULL (after cmd_error naming @flag) on failure. */
FILE *cmd_open_out(const char *path, const char *flag);

/* Closes @f from cmd_open_out (stdout is flushed, not closed). @werr: errno of an earlier failed
 * write to @f (0 none). On any failure prints one line naming @flag and @path ("stdout" when
 * @path is NULL) and returns -errno; else 0. Main thread. */
int cmd_finish_out(FILE *f, const char *path, const char *flag, int werr);

#endif

/* Per-command help (`hvtrace CMD --help`, `hvtrace help CMD`): the lines of session_usage that concern
 * one command, so every option is described once. */
#ifndef HVT_HELP_H
#define HVT_HELP_H

#include <stdbool.h>
#include <stdio.h>

/* Whether @cmd is a command with its own help (run, attach, record, report, list-functions). */
bool help_known(const char *cmd);

/* Writes the help of @cmd to @out: the lines of @usage (session_usage: synopses, a blank line, then
 * headed sections of option entries, then a closing note) that concern @cmd; NULL or unknown @cmd: all
 * of @usage. Returns 0 or -errno of a failed write. */
int help_print(FILE *out, const char *usage, const char *cmd);

#endif

/* The tools of Debian 13 the tests run on hvtrace's output (trace-cmd 3.3), from the trixie root that
 * scripts/trixie-chroot.sh makes (`make trixie-tools`, part of `make test`). */
#ifndef HVT_TESTS_TRIXIE_H
#define HVT_TESTS_TRIXIE_H

/* The root: $HVT_TRIXIE_ROOT, or /var/cache/hvtrace/trixie (or $HVTRACE_CACHE/trixie); NULL when it
 * holds no trace-cmd, after one line on stdout saying so ("SKIPPED: trace-cmd of Debian 13: ..."). */
const char *hv_trixie_root(void);

/* `trace-cmd report ARGS -i FILE` by Debian 13's trace-cmd in @root: FILE is copied into the root's
 * /tmp first. Returns its stdout and stderr (malloc'd), or fails the test. */
char *hv_trixie_trace_cmd(const char *root, const char *args, const char *file);

#endif

/* The tools of Debian 13 the tests run on hvtrace's output (trace-cmd 3.3, KernelShark 2.4's library), from
 * the trixie root that scripts/trixie-chroot.sh makes (`make trixie-tools`, part of `make test`). */
#ifndef HVT_TESTS_TRIXIE_H
#define HVT_TESTS_TRIXIE_H

#include <stdbool.h>
#include <stddef.h>

/* The root: $HVT_TRIXIE_ROOT, or /var/cache/hvtrace/trixie (or $HVTRACE_CACHE/trixie); NULL when it
 * holds no trace-cmd, after one line on stdout saying so ("SKIPPED: trace-cmd of Debian 13: ..."). */
const char *hv_trixie_root(void);

/* `trace-cmd report ARGS -i FILE` by Debian 13's trace-cmd in @root: FILE is copied into the root's
 * /tmp first. Returns its stdout and stderr (malloc'd), or fails the test. */
char *hv_trixie_trace_cmd(const char *root, const char *args, const char *file);

/* The same for a host-guest pair: `trace-cmd report ARGS -i HOST -i GUEST`, the copies named
 * hvt-trixie-PID-host.dat and hvt-trixie-PID.dat (the labels of their lines). */
char *hv_trixie_trace_cmd_pair(const char *root, const char *args, const char *host,
			       const char *guest);

/* KernelShark 2.4 of @root loads FILE headless: tests/viewer/kshark-load.c, built in the root against
 * its libkshark (Debian 13's libkshark-dev), run there on a copy of FILE. Returns its stdout (malloc'd):
 * "entries=N", then each entry as trace-cmd report prints a record less its latency flags (the form of
 * hv_trace_cmd_records). NULL, after one line on stdout ("SKIPPED: KernelShark 2.4: ..."), when the
 * root has no libkshark or no C compiler; fails the test when the program does not build or run. */
char *hv_trixie_kernelshark(const char *root, const char *file);

/* The records of `trace-cmd report` output @report (its record lines, "TASK-PID [CPU] FLAGS TIME:
 * EVENT: INFO" padded with spaces, FLAGS in 3.3's only) in kshark-load's form: "TASK-PID [CPU] TIME:
 * EVENT: INFO", the flags dropped, no padding; its other lines (cpus=N) left out. KernelShark prints a
 * function's parent: `trace-cmd report -O parent` does too. malloc'd; a record line out of that
 * shape fails the test. */
char *hv_trace_cmd_records(const char *report);

/* Starts the trixie root's libvirtd (Debian 13's libvirt with that root's QEMUs, 11 of
 * trixie-backports: tests/qemu/libvirt-trixie.sh daemons): its URI into @uri and
 * $HVT_LIBVIRT_URI (tests/qemu/libvirt-domain.sh's), the root its files are under into @root.
 * false, after the script's one line ("SKIPPED: ...") on stdout, when it cannot run. */
bool hv_trixie_libvirt_up(char *uri, size_t urilen, char *root, size_t rootlen);

#endif

/* What a running QEMU's command line (/proc/PID/cmdline) says about how to reach it: its QMP
 * monitor
 * (-qmp, -qmp-pretty, or -mon chardev=ID,mode=control with -chardev socket,id=ID,...), its gdbstub
 * (-s, -gdb tcp:...) and its -uuid. The command line is untrusted input (any process can write its
 * own): every length is bounded, every value checked, and what cannot be used is said in one line.
 */
#ifndef HVT_QEMU_CMDLINE_H
#define HVT_QEMU_CMDLINE_H

#include <stddef.h>
#include <sys/types.h>

#define QEMU_CMDLINE_MAX (1 << 20) /* bytes of /proc/PID/cmdline read */
#define QEMU_ADDR_MAX	 128	   /* "unix:PATH" (sun_path is 108) or "tcp:HOST:PORT" */

struct qemu_cmdline {
	/* the first usable QMP monitor: "unix:PATH" or "tcp:HOST:PORT", "" none */
	char qmp[QEMU_ADDR_MAX];
	/* the gdbstub QEMU listens on (-s, -gdb tcp:[HOST]:PORT): "" and 0 when none */
	char gdb_host[64];
	int gdb_port;
	char uuid[40]; /* -uuid, "" none */
	/* with qmp "": why no monitor QEMU has can be used, one line ("" when it has none at all)
	 */
	char why[192];
};

/* Parses the NUL-separated arguments in @buf (@len bytes, the last one may lack its NUL) into @c.
 * Never fails: what is not understood is skipped, and c->why says why a monitor is unusable. */
void qemu_cmdline_parse(const char *buf, size_t len, struct qemu_cmdline *c);

/* A chardev spec "tcp:HOST:PORT[,options]" (as -gdb takes it, or `info chardev` shows it) as a
 * host to connect to and a port: a wildcard or empty HOST becomes loopback ("127.0.0.1", "::1"),
 * brackets are dropped. 0, or -EINVAL (not tcp:, a bad HOST or PORT). */
int qemu_cmdline_tcp(const char *spec, char *host, size_t hlen, int *port);

/* Reads /proc/@pid/cmdline (at most QEMU_CMDLINE_MAX bytes) into a malloc'ed buffer *@buf, its
 * length in *@len. 0 or -errno (-ESRCH: no such process). */
int qemu_cmdline_read(pid_t pid, char **buf, size_t *len);

/* Whether the arguments in @buf hold "-uuid @uuid" (two arguments, case-insensitive UUID). */
int qemu_cmdline_has_uuid(const char *buf, size_t len, const char *uuid);

#endif

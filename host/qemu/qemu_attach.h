/* Reaching a QEMU VM for tracing: launch one (run --qemu), or find a running one (attach by libvirt
 * domain, QMP socket or pid); then its human monitor (QMP, or libvirt's qemu-monitor-command) and
 * its gdbstub (the one already listening, or a new one on a free loopback port). The result is what
 * target_qemu_init needs: a connected gdbstub, QEMU's pid and its RAM size. Main thread. */
#ifndef HVT_QEMU_ATTACH_H
#define HVT_QEMU_ATTACH_H

#include "host/vmm/gdbstub.h"
#include "host/qemu/libvirt_dom.h"
#include "host/qemu/qemu_cmdline.h"
#include "host/qemu/qemu_launch.h"
#include "host/qemu/qmp.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Which VM: exactly one of @launch, @domain, @pid or @qmp. */
struct qemu_attach_cfg {
	bool launch;		     /* start QEMU with @qemu (its qmp_path is chosen here) */
	struct qemu_launch_cfg qemu; /* with @launch */
	const char *domain;	     /* a libvirt domain name */
	const char *uri;	     /* with @domain: libvirt's URI (NULL: the default) */
	int pid;		     /* a QEMU (its command line names its monitor) */
	const char *qmp;	     /* unix:PATH, PATH or tcp:HOST:PORT */
};

struct qemu_conn {
	pid_t pid;	       /* the QEMU process */
	uint64_t ram;	       /* its guest RAM size */
	struct qemu_proc proc; /* with launched */
	bool launched;
	struct qmp qmp;
	bool have_qmp;
	struct libvirt_dom dom;
	bool have_dom;
	char qmp_addr[QEMU_ADDR_MAX]; /* with have_qmp: where (for a guardian) */
	struct gdb gdb;
	bool have_gdb;
	bool no_monitor;   /* --pid of a QEMU with a gdbstub and no QMP: guest memory through it */
	char gdb_host[64]; /* the gdbstub's host */
	bool started_gdb;  /* hvtrace started the gdbstub (gdbserver): it stops it at the end */
	int gdb_port;	   /* the gdbstub's loopback port */
	/* QEMU's version ("11.1.3"): QMP's greeting, or query-version through libvirt; "" unknown */
	char version[32];
	int (*hmp)(void *ctx, const char *cmd, char *out, size_t len); /* human monitor command */
	int (*qmp_cmd)(void *ctx, const char *cmd, char *reply, size_t len); /* QMP command */
	void *hmp_ctx; /* of hmp and qmp_cmd */
};

/* Launches or finds the VM of @cfg, connects to its monitor and its gdbstub. Returns 0, or -errno
 * with one line in @err; what was opened stays in @c for qemu_attach_close either way. */
/* `--pid PID` without --vmm: whether @pid is a KVM VMM (an anon_inode:kvm-vm among its fds) that
 * this backend cannot reach: not a QEMU, or a QEMU with neither a QMP monitor nor a gdbstub on its
 * command line; or no such process. Then the generic backend (host/vmmpid) takes it; otherwise (not
 * a KVM VMM, a QEMU with a channel) this backend does, and says what is wrong. Main thread. */
bool qemu_attach_pid_generic(pid_t pid);

int qemu_attach_open(struct qemu_conn *c, const struct qemu_attach_cfg *cfg, char *err,
		     size_t errlen);

/* Closes the gdbstub connection (gdb_detach it first to let the VM run) and, if hvtrace started the
 * gdbstub, stops it through the monitor (`gdbserver none`), so that nothing hvtrace opened still
 * listens. A gdbstub that was there before stays. 0, or -errno with one line in @err (the stub may
 * still listen). Idempotent. */
int qemu_attach_stop_gdbstub(struct qemu_conn *c, char *err, size_t errlen);

/* The same in a guardian (a process forked after qemu_attach_open) whose parent died: it reaches
 * the monitor by a connection of its own (the inherited one may be mid-command), QMP at the same
 * address or libvirt at the same URI, then stops the gdbstub hvtrace started. */
int qemu_attach_takeover_stop_gdbstub(struct qemu_conn *c, char *err, size_t errlen);

/* Stops the gdbstub hvtrace started if that was not done yet (a line on stderr if that fails while
 * QEMU runs), closes the gdbstub and monitor connections, and ends a launched QEMU that still runs
 * (qemu_attach_end_qemu). Idempotent. */
void qemu_attach_close(struct qemu_conn *c);

/* Ends the QEMU hvtrace launched, if it still runs: QMP's quit (QEMU exits cleanly, its socket
 * closed), up to 3 s for it to exit, then SIGKILL; reaped, its run-time directory removed. The
 * monitor connection stays open (qemu_attach_close closes it). Main thread. */
void qemu_attach_end_qemu(struct qemu_conn *c);

/* In the guardian, after hvtrace died: the QEMU it launched (no longer this process's child) is
 * asked to quit over a fresh monitor connection, killed after 3 s if still there, and its run-time
 * directory removed. Nothing for a QEMU hvtrace did not launch. */
void qemu_attach_takeover_end_qemu(struct qemu_conn *c);

#endif

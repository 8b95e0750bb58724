/* Client of QEMU's QMP monitor: connect (unix socket or TCP), capabilities negotiation, synchronous
 * commands with asynchronous events recorded on the side, HMP passthrough (e.g. `gdbserver`); the
 * JSON scanners it needs are in qmp_json.h. One struct qmp is one connection, used by one thread at
 * a time.
 *
 * The monitor is a peer, not trusted: a command has one deadline (q->timeout_ms) whatever arrives
 * meanwhile (events: the VM's STOP/RESUME pairs pile up while no command waits), takes at most
 * QMP_MAX_SKIPPED other messages that are not its answer and QMP_MAX_MSG bytes for one message, and ends at once with -EINTR on a stop (tcp_set_interrupt). A command that fails
 * so leaves the connection broken (a late answer would be taken for the next command's), and q->why
 * says why in one line. */
#ifndef HVT_QMP_H
#define HVT_QMP_H

#include "host/qemu/qmp_json.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define QMP_TIMEOUT_MS 5000	 /* default wait for a command's reply */
#define QMP_MAX_MSG    (4 << 20) /* largest message accepted (query-qmp-schema is ~200 KiB) */
#define QMP_MAX_SKIPPED 1024	  /* other messages than events a command skips for its answer */
#define QMP_MAX_EVENTS_SKIPPED (1u << 24) /* events it skips when it has no deadline */
#define QMP_DRAIN_MAX (1u << 20)	  /* bytes of events qmp_drain_events takes in one call */

/* Events remembered in qmp->events (any other event sets QMP_EV_OTHER). */
enum qmp_event {
	QMP_EV_STOP = 1u << 0,
	QMP_EV_RESUME = 1u << 1,
	QMP_EV_SHUTDOWN = 1u << 2,
	QMP_EV_RESET = 1u << 3,
	QMP_EV_POWERDOWN = 1u << 4,
	QMP_EV_OTHER = 1u << 31,
};

struct qmp {
	int fd;
	int timeout_ms;	     /* reply wait; QMP_TIMEOUT_MS after connect */
	unsigned events;     /* QMP_EV_* seen since connect or qmp_clear_events */
	unsigned nr_events;  /* events seen since connect */
	char last_event[64]; /* name of the newest event, "" none */
	char end_reason[32]; /* the newest SHUTDOWN or RESET event's "reason" ("guest-shutdown",
			      * "guest-reset", "host-qmp-system-reset", ...), "" none seen */
	char version[32];    /* "7.2.22" from the greeting */
	bool gone;	     /* the peer closed the connection */
	bool broken;	     /* out of step with the peer (see above): commands fail */
	char why[192]; /* the last failure, one line ("qmp: no answer to 'stop' within 5000 ms") */
	char *buf;	     /* received bytes [pos, len) not yet parsed; owned */
	size_t pos, len, cap;
	struct qmp_json_scan scan; /* of the message at pos */
};

/* ---- connection (the thread owning @q) ------------------------------------------------------- */

/* Connects to "unix:PATH", a PATH containing '/' or no ':', "tcp:HOST:PORT" or "HOST:PORT", reads
 * the greeting and sends qmp_capabilities. 0 or a negative errno with a one-line reason in @err: an
 * empty address -EDESTADDRREQ, a path that is no socket -ENOTSOCK (named as what it is), a path too
 * long -ENAMETOOLONG; on failure nothing needs closing. */
int qmp_connect(struct qmp *q, const char *addr, char *err, size_t errlen);

/* Same handshake over an already connected stream @fd, which @q takes over (closed on failure). */
int qmp_attach_fd(struct qmp *q, int fd, char *err, size_t errlen);

/* Closes the connection and frees the buffer. Safe on a closed or zeroed struct. */
void qmp_close(struct qmp *q);

/* Sends the JSON command @cmd (`{"execute":...}`) and waits for its answer, recording the events
 * that arrive meanwhile. On success copies the `return` value's JSON text into @reply (may be NULL)
 * and returns 0 (-ENOSPC if it does not fit). On a QMP error copies its desc into @reply and
 * returns -ENOSYS (CommandNotFound), -ENODEV (DeviceNotFound, DeviceNotActive) or -EINVAL (any
 * other class). -ETIMEDOUT, -EINTR (a stop), -ECONNRESET (peer gone), -EPROTO (not JSON, too many
 * messages), -EMSGSIZE, then -ECONNABORTED for every later command; q->why says which. */
int qmp_execute(struct qmp *q, const char *cmd, char *reply, size_t len);

/* Runs an HMP command line through human-monitor-command; its text output (decoded) goes to @out.
 * HMP reports failures only in that text. 0 or -errno as qmp_execute. */
int qmp_hmp(struct qmp *q, const char *cmdline, char *out, size_t len);

/* Starts QEMU's gdbstub on @dev (e.g. "tcp:127.0.0.1:1234"). 0, or -EIO when QEMU could not open
 * it, or -errno as qmp_execute. QEMU's message goes to @msg (may be NULL) as one line, lines joined
 * by "; ": "Failed to find an available port: Address already in use; Could not open gdbserver on
 * device ...". */
int qmp_gdbserver(struct qmp *q, const char *dev, char *msg, size_t len);

/* query-status: whether the VM runs and its run state ("running", "paused", "prelaunch", ...).
 * @status may be NULL. 0 or -errno. */
int qmp_query_status(struct qmp *q, bool *running, char *status, size_t len);

/* Waits until an event of @mask (QMP_EV_*) has been seen (returns at once if one was already). 0,
 * -ETIMEDOUT (@timeout_ms < 0: until a stop), -EINTR, -ECONNRESET, -ECONNABORTED. */
int qmp_wait_event(struct qmp *q, unsigned mask, int timeout_ms);

/* Takes the events QEMU has sent so far, without waiting (at most QMP_DRAIN_MAX bytes): called now
 * and then while the VM runs, so that they do not pile up in QEMU and in the socket until the next
 * command. 0, -ECONNRESET, -ECONNABORTED, -EPROTO (the connection is broken). */
int qmp_drain_events(struct qmp *q);

/* Forgets the events seen so far (qmp->events). */
void qmp_clear_events(struct qmp *q);

/* QEMU's version "MAJOR.MINOR.MICRO" (a part it lacks is -1) from the version object @ver (@len
 * bytes: the greeting's "version", query-version's return) `{"qemu": {"major": 11, "minor": 1,
 * "micro": 3}, "package": ...}` into @out; "" when it has no "qemu" member. Pure. */
void qmp_version_string(const char *ver, size_t len, char *out, size_t outlen);

#endif

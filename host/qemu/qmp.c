/* QMP client. QEMU sends one JSON object per line ("\r\n"); this reads balanced top-level objects,
 * so line breaks do not matter. A command is answered by {"return": ...} or by {"error": {"class":
 * ..., "desc": ...}}; {"event": ...} messages may come before the answer at any time and are
 * recorded, not returned. */
#include "host/qemu/qmp.h"
#include "host/qemu/qmp_json.h"
#include "host/vmm/tcp.h"
#include "host/trace/clock.h"
#include "host/util/msg_fmt.h"
#include "host/util/peer_text.h"

#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* ---- transport ------------------------------------------------------------------------------- */

/* One line in q->why (the reason of the last failure), then @rc. */
#define why(q, rc, ...) tcp_why((q)->why, sizeof((q)->why), rc, __VA_ARGS__)

/* Out of step with the peer for good: later commands fail with -ECONNABORTED. Returns @rc. */
static int broken(struct qmp *q, int rc)
{
	q->broken = true;
	return rc;
}

static int send_all(struct qmp *q, const char *s, size_t len)
{
	while (len > 0) {
		ssize_t w = send(q->fd, s, len, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			q->gone = true;
			return errno == EPIPE ? -ECONNRESET : -errno;
		}
		s += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Reads more bytes, waiting until @deadline (ms, < 0: forever). */
static int fill(struct qmp *q, int64_t deadline)
{
	if (q->pos > 0) {
		memmove(q->buf, q->buf + q->pos, q->len - q->pos);
		q->len -= q->pos;
		q->pos = 0;
	}
	if (q->cap - q->len < 4096) {
		size_t cap = q->cap ? q->cap * 2 : 65536;
		char *b;

		if (cap > QMP_MAX_MSG + 65536)
			return -EMSGSIZE;
		b = realloc(q->buf, cap);
		if (!b)
			return -ENOMEM;
		q->buf = b;
		q->cap = cap;
	}
	return tcp_read_more(q->fd, q->buf, &q->len, q->cap, deadline, &q->gone);
}

/* Next whole message: *@msg points into q->buf (valid until the next read), consumed already. */
static int next_message(struct qmp *q, int64_t deadline, const char **msg, size_t *mlen)
{
	if (q->fd < 0)
		return -ECONNRESET;
	for (;;) {
		ssize_t end;
		int rc;

		if (!q->scan.at) {
			q->pos = qmp_json_skip_ws(q->buf, q->pos, q->len);
			if (q->pos < q->len && q->buf[q->pos] != '{') {
				char text[80];

				peer_text(q->buf + q->pos, q->len - q->pos, text, sizeof(text));
				return broken(
				    q,
				    why(q, -EPROTO, "qmp: '%s' where a JSON object was due", text));
			}
		}
		end = q->pos < q->len ? (ssize_t)qmp_json_bracket_scan(q->buf + q->pos,
								       q->len - q->pos, &q->scan)
				      : 0;
		if (end > 0) {
			*msg = q->buf + q->pos;
			*mlen = (size_t)end;
			q->pos += (size_t)end;
			return 0;
		}
		if (q->len - q->pos > QMP_MAX_MSG)
			return broken(q, why(q, -EMSGSIZE, "qmp: a message longer than %d bytes",
					     QMP_MAX_MSG));
		rc = fill(q, deadline);
		if (rc == -EMSGSIZE)
			return broken(
			    q, why(q, rc, "qmp: a message longer than %d bytes", QMP_MAX_MSG));
		if (rc)
			return rc;
	}
}

static const struct {
	const char *name;
	unsigned bit;
} event_names[] = {
    {"STOP", QMP_EV_STOP},   {"RESUME", QMP_EV_RESUME},	      {"SHUTDOWN", QMP_EV_SHUTDOWN},
    {"RESET", QMP_EV_RESET}, {"POWERDOWN", QMP_EV_POWERDOWN},
};

/* Records @msg if it is an event; returns whether it was one. */
static bool note_event(struct qmp *q, const char *msg, size_t mlen)
{
	const char *v;
	size_t vlen;
	char name[64];
	unsigned bit = QMP_EV_OTHER;

	if (qmp_json_member(msg, mlen, "event", &v, &vlen))
		return false;
	if (qmp_json_string(v, vlen, name, sizeof(name)))
		snprintf(name, sizeof(name), "?");
	for (size_t i = 0; i < sizeof(event_names) / sizeof(event_names[0]); i++)
		if (!strcmp(name, event_names[i].name))
			bit = event_names[i].bit;
	if (bit == QMP_EV_SHUTDOWN || bit == QMP_EV_RESET) {
		const char *data, *reason;
		size_t dlen, rlen;

		/* QEMU 4.0 and later: {"data": {"guest": B, "reason": "guest-reset"}} */
		snprintf(q->end_reason, sizeof(q->end_reason), "?");
		if (!qmp_json_member(msg, mlen, "data", &data, &dlen) &&
		    !qmp_json_member(data, dlen, "reason", &reason, &rlen) &&
		    qmp_json_string(reason, rlen, q->end_reason, sizeof(q->end_reason)))
			snprintf(q->end_reason, sizeof(q->end_reason), "?");
	}
	q->events |= bit;
	q->nr_events++;
	snprintf(q->last_event, sizeof(q->last_event), "%s", name);
	return true;
}

static int copy_out(const char *s, size_t n, char *out, size_t outlen)
{
	if (!out || outlen == 0)
		return 0;
	if (n + 1 > outlen)
		return -ENOSPC;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

/* The command's name ("query-status") for messages; "?" if @cmd does not say. */
static void cmd_name(const char *cmd, char *out, size_t outlen)
{
	const char *v;
	size_t vlen;

	if (qmp_json_member(cmd, strlen(cmd), "execute", &v, &vlen) ||
	    qmp_json_string(v, vlen, out, outlen))
		snprintf(out, outlen, "?");
}

/* The wait for the answer to @cmd ended with @rc: it is late, interrupted or unreadable, and
 * would arrive as the answer to the next command: the connection is broken. */
static int answer_failed(struct qmp *q, const char *cmd, int rc)
{
	char name[48];

	cmd_name(cmd, name, sizeof(name));
	if (rc == -ETIMEDOUT)
		why(q, rc, "qmp: no answer to '%s' within %d ms", name, q->timeout_ms);
	else if (rc == -EINTR)
		why(q, rc, "qmp: interrupted waiting for the answer to '%s'", name);
	return rc == -ECONNRESET ? rc : broken(q, rc);
}

int qmp_execute(struct qmp *q, const char *cmd, char *reply, size_t len)
{
	unsigned skipped = 0, skipped_events = 0;
	int64_t deadline;
	int rc;

	if (reply && len) /* "" on every failure (found by fuzzing: qmp_hmp printed it unset) */
		reply[0] = '\0';
	if (q->broken)
		return -ECONNABORTED;
	if (q->fd < 0 || q->gone)
		return -ECONNRESET;
	q->why[0] = '\0';
	rc = send_all(q, cmd, strlen(cmd));
	if (!rc)
		rc = send_all(q, "\n", 1);
	if (rc)
		return rc;
	deadline = q->timeout_ms < 0 ? -1 : clock_now_ms() + q->timeout_ms;
	for (;;) {
		const char *msg, *v, *e;
		size_t mlen, vlen, elen;

		rc = next_message(q, deadline, &msg, &mlen);
		if (rc)
			return answer_failed(q, cmd, rc);
		/* Events are what a VM sends as it runs (a STOP and a RESUME per gdbstub stop, queued
		 * while no command was waiting): the deadline bounds them, or QMP_MAX_EVENTS_SKIPPED
		 * without one. Anything else counts against QMP_MAX_SKIPPED. */
		if (note_event(q, msg, mlen)) {
			if (deadline >= 0 || ++skipped_events <= QMP_MAX_EVENTS_SKIPPED)
				continue;
		}
		if (++skipped > QMP_MAX_SKIPPED || skipped_events > QMP_MAX_EVENTS_SKIPPED) {
			char name[48];

			cmd_name(cmd, name, sizeof(name));
			return broken(q, why(q, -EPROTO, "qmp: %u messages and no answer to '%s'",
					     skipped + skipped_events, name));
		}
		if (!qmp_json_member(msg, mlen, "return", &v, &vlen))
			return copy_out(v, vlen, reply, len);
		if (!qmp_json_member(msg, mlen, "error", &e, &elen)) {
			char cls[64] = "";

			if (!qmp_json_member(e, elen, "class", &v, &vlen))
				qmp_json_string(v, vlen, cls, sizeof(cls));
			if (reply && len && !qmp_json_member(e, elen, "desc", &v, &vlen) &&
			    qmp_json_string(v, vlen, reply, len) == -ENOSPC)
				reply[0] = '\0';
			if (!strcmp(cls, "CommandNotFound"))
				return -ENOSYS;
			if (!strcmp(cls, "DeviceNotFound") || !strcmp(cls, "DeviceNotActive"))
				return -ENODEV;
			return -EINVAL;
		}
		/* Anything else (a late greeting, an unknown message) is not our answer. */
	}
}

/* ---- connection ------------------------------------------------------------------------------ */

void qmp_version_string(const char *ver, size_t len, char *out, size_t outlen)
{
	const char *qemu, *v;
	size_t ml, n;
	long part[3] = {-1, -1, -1};
	static const char *const names[3] = {"major", "minor", "micro"};

	out[0] = 0;
	if (qmp_json_member(ver, len, "qemu", &qemu, &ml))
		return;
	for (int i = 0; i < 3; i++)
		if (!qmp_json_member(qemu, ml, names[i], &v, &n))
			part[i] = strtol(v, NULL, 10);
	snprintf(out, outlen, "%ld.%ld.%ld", part[0], part[1], part[2]);
}

/* "7.2.22" from {"QMP": {"version": {"qemu": {"micro": 22, "minor": 2, "major": 7}, ...}}}. */
static void greeting_version(struct qmp *q, const char *msg, size_t mlen)
{
	const char *qmp, *ver;
	size_t ql, vl;

	if (qmp_json_member(msg, mlen, "QMP", &qmp, &ql) ||
	    qmp_json_member(qmp, ql, "version", &ver, &vl))
		return;
	qmp_version_string(ver, vl, q->version, sizeof(q->version));
}

int qmp_attach_fd(struct qmp *q, int fd, char *err, size_t errlen)
{
	const char *msg, *v;
	size_t mlen, vlen;
	char reply[256];
	int rc;

	memset(q, 0, sizeof(*q));
	q->fd = fd;
	q->timeout_ms = QMP_TIMEOUT_MS;
	rc = next_message(q, clock_now_ms() + q->timeout_ms, &msg, &mlen);
	if (rc) {
		if (rc == -ETIMEDOUT)
			msg_fmt(err, errlen, "qmp: no whole greeting within %d ms", q->timeout_ms);
		else if (q->why[0])
			msg_fmt(err, errlen, "qmp: greeting: %s", q->why + strlen("qmp: "));
		else
			msg_fmt(err, errlen, "qmp: greeting: %s", strerror(-rc));
		goto fail;
	}
	if (qmp_json_member(msg, mlen, "QMP", &v, &vlen)) {
		char text[80];

		rc = -EPROTO;
		msg_fmt(err, errlen, "qmp: no QMP greeting: %s",
			peer_text(msg, mlen, text, sizeof(text)));
		goto fail;
	}
	greeting_version(q, msg, mlen);
	rc = qmp_execute(q, "{\"execute\":\"qmp_capabilities\"}", reply, sizeof(reply));
	if (rc && q->why[0]) {
		msg_fmt(err, errlen, "%s", q->why);
		goto fail;
	}
	if (rc) {
		char text[256];

		msg_fmt(err, errlen, "qmp: qmp_capabilities: %s%s%s", strerror(-rc),
			reply[0] ? ": " : "", peer_str(reply, text, sizeof(text)));
		goto fail;
	}
	return 0;
fail:
	qmp_close(q);
	return rc;
}

static int connect_unix(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, rc;

	struct stat st;

	if (!path[0]) {
		msg_fmt(err, errlen, "qmp: an empty socket path");
		return -EDESTADDRREQ;
	}
	if (strlen(path) >= sizeof(sa.sun_path)) {
		msg_fmt(err, errlen, "qmp %s: path too long", path);
		return -ENAMETOOLONG;
	}
	/* connect(2) says "Connection refused" for a file that is no socket: say what it is */
	if (stat(path, &st) < 0) {
		rc = -errno;
		msg_fmt(err, errlen, "qmp %s: %s", path, strerror(-rc));
		return rc;
	}
	if (!S_ISSOCK(st.st_mode)) {
		msg_fmt(err, errlen, "qmp %s: %s, not a socket", path,
			S_ISDIR(st.st_mode)    ? "a directory"
			: S_ISREG(st.st_mode)  ? "a regular file"
			: S_ISFIFO(st.st_mode) ? "a FIFO"
			: S_ISCHR(st.st_mode)  ? "a character device"
					       : "a block device or other file");
		return -ENOTSOCK;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		msg_fmt(err, errlen, "qmp %s: socket: %s", path, strerror(-rc));
		return rc;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		msg_fmt(err, errlen, "qmp %s: connect: %s", path, strerror(-rc));
		close(fd);
		return rc;
	}
	return fd;
}

static int connect_tcp(const char *hostport, char *err, size_t errlen)
{
	const char *colon = strrchr(hostport, ':');
	char host[256];
	int fd, gai;

	if (!colon || (size_t)(colon - hostport) >= sizeof(host)) {
		msg_fmt(err, errlen, "qmp %s: expected HOST:PORT", hostport);
		return -EINVAL;
	}
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = '\0';
	fd = tcp_connect(host, colon + 1, &gai);
	if (fd == -EHOSTUNREACH && gai)
		msg_fmt(err, errlen, "qmp %s: %s", hostport, gai_strerror(gai));
	else if (fd < 0)
		msg_fmt(err, errlen, "qmp %s: connect: %s", hostport, strerror(-fd));
	return fd;
}

int qmp_connect(struct qmp *q, const char *addr, char *err, size_t errlen)
{
	int fd;

	memset(q, 0, sizeof(*q));
	q->fd = -1;
	if (!addr[0] || !strcmp(addr, "tcp:")) {
		msg_fmt(err, errlen, "qmp: an empty address (unix:PATH, PATH or tcp:HOST:PORT)");
		return -EDESTADDRREQ;
	}
	if (!strncmp(addr, "unix:", 5))
		fd = connect_unix(addr + 5, err, errlen);
	else if (!strncmp(addr, "tcp:", 4))
		fd = connect_tcp(addr + 4, err, errlen);
	else if (strchr(addr, '/') || !strchr(addr, ':')) /* a path (a bare name too: no port) */
		fd = connect_unix(addr, err, errlen);
	else
		fd = connect_tcp(addr, err, errlen);
	if (fd < 0)
		return fd;
	return qmp_attach_fd(q, fd, err, errlen);
}

void qmp_close(struct qmp *q)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
	free(q->buf);
	q->buf = NULL;
	q->pos = q->len = q->cap = 0;
	q->scan = (struct qmp_json_scan){0};
}

/* ---- commands -------------------------------------------------------------------------------- */

int qmp_hmp(struct qmp *q, const char *cmdline, char *out, size_t len)
{
	static const char pre[] =
	    "{\"execute\":\"human-monitor-command\",\"arguments\":{\"command-line\":";
	/* A quoted byte takes up to 6 bytes (\u00XX), both in the command and in the answer. */
	size_t cap = sizeof(pre) + 6 * strlen(cmdline) + 8, rlen = 6 * len + 64;
	char *cmd = malloc(cap), *reply = malloc(rlen);
	ssize_t n;
	int rc;

	if (!cmd || !reply) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(cmd, pre, sizeof(pre) - 1);
	n = qmp_json_quote(cmdline, cmd + sizeof(pre) - 1, cap - sizeof(pre) - 2);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	strcpy(cmd + sizeof(pre) - 1 + n, "}}");
	rc = qmp_execute(q, cmd, reply, rlen);
	if (!rc && out && len)
		rc = qmp_json_string(reply, strlen(reply), out, len);
	else if (rc != -ENOSPC && out && len)
		snprintf(out, len, "%s", reply[0] ? reply : q->why);
out:
	free(cmd);
	free(reply);
	return rc;
}

int qmp_gdbserver(struct qmp *q, const char *dev, char *msg, size_t len)
{
	char cmd[512], out[512];
	size_t n;
	int rc;

	if (snprintf(cmd, sizeof(cmd), "gdbserver %s", dev) >= (int)sizeof(cmd))
		return -ENAMETOOLONG;
	rc = qmp_hmp(q, cmd, out, sizeof(out));
	if (rc) {
		if (msg && len)
			peer_str(out, msg, len);
		return rc;
	}
	/* One line: drop the final line end, join the others with "; ". */
	n = strlen(out);
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		out[--n] = '\0';
	if (msg && len) {
		char joined[512];
		size_t o = 0;

		for (size_t i = 0; i < n && o + 1 < sizeof(joined); i++) {
			if (out[i] == '\r' && out[i + 1] == '\n')
				continue;
			if (out[i] == '\n' || out[i] == '\r') {
				if (o + 3 >= sizeof(joined))
					break;
				joined[o++] = ';';
				joined[o++] = ' ';
				continue;
			}
			joined[o++] = out[i];
		}
		peer_text(joined, o, msg, len); /* QEMU's words, escaped */
	}
	return strstr(out, "Waiting for gdb connection") == out ? 0 : -EIO;
}

int qmp_query_status(struct qmp *q, bool *running, char *status, size_t len)
{
	char reply[512];
	const char *v;
	size_t vlen;
	int rc = qmp_execute(q, "{\"execute\":\"query-status\"}", reply, sizeof(reply));

	if (rc)
		return rc;
	if (qmp_json_member(reply, strlen(reply), "running", &v, &vlen))
		return -EPROTO;
	if (vlen == 4 && !memcmp(v, "true", 4))
		*running = true;
	else if (vlen == 5 && !memcmp(v, "false", 5))
		*running = false;
	else
		return -EPROTO;
	if (status && len) {
		if (qmp_json_member(reply, strlen(reply), "status", &v, &vlen))
			return -EPROTO;
		rc = qmp_json_string(v, vlen, status, len);
	}
	return rc;
}

int qmp_wait_event(struct qmp *q, unsigned mask, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : clock_now_ms() + timeout_ms;

	if (q->broken)
		return -ECONNABORTED;
	while (!(q->events & mask)) {
		const char *msg;
		size_t mlen;
		int rc = next_message(q, deadline, &msg, &mlen);

		if (rc)
			return rc;
		note_event(q, msg, mlen);
	}
	return 0;
}

int qmp_drain_events(struct qmp *q)
{
	size_t taken = 0;

	if (q->broken)
		return -ECONNABORTED;
	if (q->fd < 0 || q->gone)
		return -ECONNRESET;
	while (taken < QMP_DRAIN_MAX) {
		const char *msg;
		size_t mlen;
		int rc = next_message(q, clock_now_ms(), &msg, &mlen);

		if (rc == -ETIMEDOUT || rc == -EINTR)
			return 0; /* nothing more right now */
		if (rc)
			return rc;
		taken += mlen;
		/* not an event, with no command waiting: a stray message, not an answer to anything */
		note_event(q, msg, mlen);
	}
	return 0;
}

void qmp_clear_events(struct qmp *q)
{
	q->events = 0;
	q->last_event[0] = '\0';
	q->end_reason[0] = '\0';
}

/* The wire under the gdbstub client: send and receive packets on one connection, each wait with
 * one deadline.
 *
 * Until QStartNoAckMode is accepted each side answers a packet with '+' (or '-' to ask for it
 * again); QEMU 7.2 refuses no-ack mode, so the '+' for a packet we received is held back and sent
 * in front of our next bytes, in the same TCP segment. QEMU (system mode) does not wait for that
 * '+'. While the VM runs, QEMU treats any received byte as "stop": only 0x03 may be sent then,
 * without the '+' owed (gdb_interrupt drops it); QEMU 8.1 and later answer a stop by any other byte
 * with no stop reply at all.
 */
#include "host/vmm/gdb_wire.h"
#include "host/util/msg_fmt.h"
#include "host/util/peer_text.h"
#include "host/vmm/tcp.h"
#include "host/trace/clock.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* One line in g->why (the reason of the last failure), then @rc. */
#define why(g, rc, ...) tcp_why((g)->why, sizeof((g)->why), rc, __VA_ARGS__)

/* A reply the stub should not have sent (the connection stays in step): -EPROTO with g->why. */
#define lie(g, ...) why(g, -EPROTO, "gdbstub: " __VA_ARGS__)

/* The same for the packet just received, shown (printable, cut) before what @fmt says of it. */
int gdb_wire_bad_reply(struct gdb *g, const char *fmt, ...)
{
	char text[40], what[96];
	va_list ap;

	va_start(ap, fmt);
	msg_vfmt(what, sizeof(what), fmt, ap);
	va_end(ap);
	peer_text(g->pkt, g->pkt_len, text, sizeof(text));
	return lie(g, "'%s' %s", text, what);
}

/* The connection is out of step for good (a late reply would be taken for the next command's):
 * every later command fails with -ECONNABORTED. */
int gdb_wire_broken(struct gdb *g, int rc)
{
	g->broken = true;
	return rc;
}

/* Sends @buf, with the '+' owed for packets received since our last send first in the same segment
 * if @acks. */
static int send_bytes(struct gdb *g, const char *buf, size_t len, bool acks)
{
	char plus[16];
	struct iovec iov[2];
	int n = 0;

	if (g->fd < 0 || g->gone)
		return -ECONNRESET;
	if (acks && g->ack_pending) {
		unsigned k = g->ack_pending < sizeof(plus) ? g->ack_pending : sizeof(plus);

		memset(plus, '+', k);
		iov[n].iov_base = plus;
		iov[n++].iov_len = k;
	}
	iov[n].iov_base = (void *)buf;
	iov[n++].iov_len = len;
	while (n > 0) {
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t w = sendmsg(g->fd, &mh, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			g->gone = true;
			return errno == EPIPE ? -ECONNRESET : -errno;
		}
		if (acks)
			g->ack_pending = 0;
		while (n > 0 && (size_t)w >= iov[0].iov_len) {
			w -= (ssize_t)iov[0].iov_len;
			memmove(iov, iov + 1, sizeof(iov[0]) * (size_t)--n);
		}
		if (n > 0) {
			iov[0].iov_base = (char *)iov[0].iov_base + w;
			iov[0].iov_len -= (size_t)w;
		}
	}
	return 0;
}

int gdb_wire_send_bytes(struct gdb *g, const char *buf, size_t len)
{
	return send_bytes(g, buf, len, true);
}

int gdb_wire_send_interrupt(struct gdb *g)
{
	return send_bytes(g, "\x03", 1, false);
}

int gdb_wire_send_packet(struct gdb *g, const char *payload)
{
	ssize_t n = gdb_packet_frame(payload, strlen(payload), g->out, sizeof(g->out));

	if (n < 0)
		return (int)n;
	g->out_len = (size_t)n;
	return gdb_wire_send_bytes(g, g->out, g->out_len);
}

int64_t gdb_wire_deadline_in(int ms)
{
	return ms < 0 ? -1 : clock_now_ms() + ms;
}

/* Reads more bytes into rbuf, waiting until the wait's deadline or a stop (tcp_set_interrupt). */
static int fill(struct gdb *g, const struct gdb_wait *w)
{
	if (g->rpos > 0) {
		memmove(g->rbuf, g->rbuf + g->rpos, g->rlen - g->rpos);
		g->rlen -= g->rpos;
		g->rpos = 0;
	}
	if (g->rlen == sizeof(g->rbuf))
		return gdb_wire_broken(
		    g, why(g, -EMSGSIZE, "gdbstub: a packet longer than %d bytes", GDB_MAX_PACKET));
	return tcp_read_more(g->fd, g->rbuf, &g->rlen, sizeof(g->rbuf), w->deadline, &g->gone);
}

/* Next packet from the stub into g->pkt, skipping acks; answers a '-' by resending our last packet
 * and a corrupt packet by '-' (or -EPROTO without acks). */
static int read_packet(struct gdb *g, struct gdb_wait *w)
{
	int rc;

	if (g->fd < 0)
		return -ECONNRESET;
	for (;;) {
		while (g->rpos < g->rlen) {
			char c = g->rbuf[g->rpos];
			size_t used;

			if (c == '$') {
				rc = gdb_packet_unframe(g->rbuf + g->rpos, g->rlen - g->rpos,
							g->pkt, sizeof(g->pkt), &g->pkt_len, &used);
				if (rc == -EAGAIN)
					break;
				g->rpos += used;
				if (rc == -EBADMSG && g->ack && ++w->resends <= GDB_MAX_RESENDS) {
					rc = gdb_wire_send_bytes(g, "-", 1);
					if (rc)
						return rc;
					continue;
				}
				if (rc == -EBADMSG)
					return gdb_wire_broken(
					    g, why(g, -EPROTO, "gdbstub: bad checksums"));
				if (rc == -EMSGSIZE)
					return why(g, rc,
						   "gdbstub: a packet that decodes to more "
						   "than %d bytes",
						   GDB_MAX_PACKET);
				if (rc)
					return why(g, rc, "gdbstub: a malformed packet");
				if (g->ack)
					g->ack_pending++;
				return 0;
			}
			if (c == '%') { /* notification (non-stop mode only): skip it whole */
				const char *h = memchr(g->rbuf + g->rpos, '#', g->rlen - g->rpos);

				if (!h || (size_t)(h - g->rbuf) + 3 > g->rlen)
					break;
				g->rpos = (size_t)(h - g->rbuf) + 3;
				if (++w->skipped > GDB_MAX_SKIPPED)
					return gdb_wire_broken(g, why(g, -EPROTO,
								      "gdbstub: %u notifications",
								      w->skipped));
				continue;
			}
			g->rpos++;
			if (c == '-' && g->out_len) {
				if (++w->resends > GDB_MAX_RESENDS)
					return gdb_wire_broken(g, why(g, -EPROTO,
								      "gdbstub: our packet "
								      "refused ('-') %u times",
								      w->resends));
				rc = gdb_wire_send_bytes(g, g->out, g->out_len);
				if (rc)
					return rc;
			} else if (c != '+' && ++w->junk > GDB_MAX_PACKET) {
				return gdb_wire_broken(
				    g, why(g, -EPROTO, "gdbstub: %zu bytes outside any packet",
					   w->junk));
			}
		}
		rc = fill(g, w);
		if (rc)
			return rc;
	}
}

void gdb_wire_note_stop(struct gdb *g, const struct gdb_stop *st)
{
	g->last_stop = *st;
	g->running = false;
	g->cur_thread = 0; /* QEMU moves its register thread to the CPU that stopped */
	g->bp_thread = st->thread > 0 ? st->thread : 0; /* and its c_cpu: the thread it names */
	if (st->kind != GDB_STOP_SIGNAL)
		g->gone = true;
}

/* A packet that is not the one waited for: counted against the wait's bound. */
static int skip(struct gdb *g, struct gdb_wait *w)
{
	if (++w->skipped <= GDB_MAX_SKIPPED)
		return 0;
	if (w->cmd)
		return gdb_wire_broken(g, why(g, -EPROTO,
					      "gdbstub: %u console or stop packets and no reply "
					      "to '%.24s'",
					      w->skipped, w->cmd));
	return gdb_wire_broken(
	    g, why(g, -EPROTO, "gdbstub: %u console packets and no stop reply", w->skipped));
}

/* The wait ended without its packet: @rc for the caller, with g->why saying why. A command whose
 * reply is late leaves the connection out of step (broken); one interrupted by a stop still gets
 * its reply later, which the next wait skips (owed). */
static int wait_failed(struct gdb *g, const struct gdb_wait *w, int rc)
{
	if (rc == -EINTR && w->cmd) {
		g->owed++;
		return why(g, rc, "gdbstub: interrupted waiting for the reply to '%.24s'", w->cmd);
	}
	if (rc == -ETIMEDOUT && w->cmd) {
		size_t part = g->rlen - g->rpos;

		if (part)
			return gdb_wire_broken(g,
					       why(g, rc,
						   "gdbstub: no reply to '%.24s' within %d ms (%zu "
						   "bytes of a packet, then nothing)",
						   w->cmd, g->timeout_ms, part));
		return gdb_wire_broken(g, why(g, rc, "gdbstub: no reply to '%.24s' within %d ms",
					      w->cmd, g->timeout_ms));
	}
	return rc;
}

/* The next packet that is no console output and no reply owed to an abandoned command. */
int gdb_wire_next_packet(struct gdb *g, struct gdb_wait *w)
{
	for (;;) {
		int rc = read_packet(g, w);

		if (rc)
			return wait_failed(g, w, rc);
		if (!gdb_packet_is_console(g->pkt, g->pkt_len)) {
			if (!g->owed)
				return 0;
			g->owed--; /* the late reply of an interrupted command */
		}
		rc = skip(g, w);
		if (rc)
			return rc;
	}
}

/* Reads the reply of command @cmd, all of it before one deadline; stop replies that arrive unasked
 * (QEMU sends one when it stops a running VM because a debugger connected) are recorded and skipped
 * unless @want_stop. */
static int read_reply(struct gdb *g, const char *cmd, bool want_stop)
{
	struct gdb_wait w = {.deadline = gdb_wire_deadline_in(g->timeout_ms), .cmd = cmd};

	for (;;) {
		int rc = gdb_wire_next_packet(g, &w);

		if (rc)
			return rc;
		if (!want_stop && gdb_packet_is_stop_reply(g->pkt)) {
			struct gdb_stop st;

			gdb_packet_parse_stop(g->pkt, &st);
			gdb_wire_note_stop(g, &st);
			if (g->gone)
				return why(g, -ECONNRESET, "gdbstub: the VM is gone");
			rc = skip(g, &w);
			if (rc)
				return rc;
			continue;
		}
		if (g->pkt_len == 3 && g->pkt[0] == 'E' &&
		    gdb_packet_hexval((unsigned char)g->pkt[1]) >= 0 &&
		    gdb_packet_hexval((unsigned char)g->pkt[2]) >= 0) {
			g->last_error = gdb_packet_hexval((unsigned char)g->pkt[1]) << 4 |
					gdb_packet_hexval((unsigned char)g->pkt[2]);
			return -EIO;
		}
		return 0;
	}
}

/* Whether a command may be sent now: 0, or why not (a broken, closed or running connection). */
int gdb_wire_ready(const struct gdb *g)
{
	if (g->broken)
		return -ECONNABORTED;
	if (g->fd < 0 || g->gone)
		return -ECONNRESET;
	return g->running ? -EBUSY : 0;
}

int gdb_wire_command(struct gdb *g, const char *cmd, bool want_stop)
{
	int rc = gdb_wire_ready(g);

	if (rc)
		return rc;
	g->why[0] = '\0';
	rc = gdb_wire_send_packet(g, cmd);
	return rc ? rc : read_reply(g, cmd, want_stop);
}

bool gdb_wire_reply_is(const struct gdb *g, const char *s)
{
	return !strcmp(g->pkt, s);
}

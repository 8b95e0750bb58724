/* GDB Remote Serial Protocol client for QEMU's gdbstub (x86_64, system emulation, all-stop).
 *
 * Wire notes: every packet is `$payload#cs` (cs = sum of the payload bytes mod 256, two hex
 * digits). Until QStartNoAckMode is accepted each side answers a packet with '+' (or '-' to ask for
 * it again); QEMU 7.2 refuses no-ack mode, so the '+' for a packet we received is held back and
 * sent in front of our next bytes, in the same TCP segment. QEMU (system mode) does not wait for
 * that '+'. While the VM runs, QEMU treats any received byte as "stop": only 0x03 may be sent then.
 */
#include "host/qemu/gdbstub.h"
#include "host/qemu/tcp.h"
#include "host/trace/clock.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---- pure helpers ---------------------------------------------------------------------------- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static const char hexdig[] = "0123456789abcdef";

static bool needs_escape(unsigned char c)
{
	return c == '$' || c == '#' || c == '}' || c == '*';
}

ssize_t gdb_frame(const void *data, size_t len, char *out, size_t outlen)
{
	const unsigned char *d = data;
	unsigned sum = 0;
	size_t o = 0;

	if (outlen < 4)
		return -ENOSPC;
	out[o++] = '$';
	for (size_t i = 0; i < len; i++) {
		unsigned char c = d[i];

		if (o + (needs_escape(c) ? 2 : 1) + 3 > outlen)
			return -ENOSPC;
		if (needs_escape(c)) {
			out[o++] = '}';
			sum += '}';
			c ^= 0x20;
		}
		out[o++] = (char)c;
		sum += c;
	}
	out[o++] = '#';
	out[o++] = hexdig[(sum >> 4) & 0xf];
	out[o++] = hexdig[sum & 0xf];
	return (ssize_t)o;
}

int gdb_unframe(const char *in, size_t len, char *out, size_t outcap, size_t *outlen,
		size_t *consumed)
{
	const char *hash;
	unsigned sum = 0;
	size_t n, o = 0;
	int hi, lo;

	*consumed = 0;
	if (len == 0 || in[0] != '$')
		return -EPROTO;
	/* A raw '#' never occurs in a payload (escaped, and forbidden as a run-length count). */
	hash = memchr(in + 1, '#', len - 1);
	if (!hash || (size_t)(hash - in) + 3 > len)
		return -EAGAIN;
	*consumed = (size_t)(hash - in) + 3;
	n = (size_t)(hash - in) - 1;
	for (size_t i = 0; i < n; i++)
		sum += (unsigned char)in[1 + i];
	hi = hexval(hash[1]);
	lo = hexval(hash[2]);
	if (hi < 0 || lo < 0 || (unsigned)(hi << 4 | lo) != (sum & 0xff))
		return -EBADMSG;
	if (outcap == 0)
		return -EMSGSIZE;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *p = (const unsigned char *)in + 1;
		unsigned char c = p[i];
		size_t repeat = 1;

		if (c == '}') {
			if (i + 1 >= n)
				return -EPROTO;
			c = p[++i] ^ 0x20;
		} else if (c == '*') {
			/* Run length: the previous byte repeated (count char - 29) more times. */
			if (o == 0 || i + 1 >= n || p[i + 1] < ' ' || p[i + 1] > 126)
				return -EPROTO;
			repeat = (size_t)p[++i] - 29;
			c = (unsigned char)out[o - 1];
		}
		if (o + repeat > outcap - 1)
			return -EMSGSIZE;
		memset(out + o, c, repeat);
		o += repeat;
	}
	out[o] = '\0';
	*outlen = o;
	return 0;
}

/* Parses hex digits at *@s (stops at the first non-hex) into *@v; returns how many were read. */
static unsigned parse_hex(const char **s, uint64_t *v)
{
	unsigned n = 0;
	int d;

	*v = 0;
	while ((d = hexval((unsigned char)**s)) >= 0) {
		*v = *v << 4 | (unsigned)d;
		(*s)++;
		n++;
	}
	return n;
}

/* Thread id "1a", "p1.2" (multiprocess) or "-1"; returns the thread part, -1 for "all", -2 bad. */
static int parse_thread_id(const char **s)
{
	uint64_t v;

	if (**s == 'p') {
		(*s)++;
		if (**s == '-')
			(*s)++;
		parse_hex(s, &v);
		if (**s != '.')
			return (int)v > 0 ? (int)v : -2; /* "pN": the process, its first thread */
		(*s)++;
	}
	if (**s == '-' && (*s)[1] == '1') {
		*s += 2;
		return -1;
	}
	if (parse_hex(s, &v) == 0 || v > 0x7fffffff)
		return -2;
	return (int)v;
}

int gdb_parse_stop(const char *pkt, struct gdb_stop *st)
{
	const char *s = pkt + 1;
	uint64_t v;

	memset(st, 0, sizeof(*st));
	switch (pkt[0]) {
	case 'S':
	case 'T':
		if (hexval((unsigned char)s[0]) < 0 || hexval((unsigned char)s[1]) < 0)
			return -EPROTO;
		st->kind = GDB_STOP_SIGNAL;
		st->code = hexval((unsigned char)s[0]) << 4 | hexval((unsigned char)s[1]);
		s += 2;
		if (pkt[0] == 'S')
			return *s ? -EPROTO : 0;
		/* T: n:r; pairs. Only thread: matters here. */
		while (*s) {
			const char *colon = strchr(s, ':');
			const char *semi;

			if (!colon)
				return -EPROTO;
			semi = strchr(colon, ';');
			if ((size_t)(colon - s) == 6 && !strncmp(s, "thread", 6)) {
				const char *t = colon + 1;
				int tid = parse_thread_id(&t);

				if (tid < -1 || (*t && *t != ';'))
					return -EPROTO;
				st->thread = tid;
			}
			if (!semi)
				break;
			s = semi + 1;
		}
		return 0;
	case 'W':
	case 'X':
		if (parse_hex(&s, &v) == 0 || (*s && *s != ';'))
			return -EPROTO;
		st->kind = pkt[0] == 'W' ? GDB_STOP_EXITED : GDB_STOP_KILLED;
		st->code = (int)v;
		return 0;
	default:
		return -EPROTO;
	}
}

/* Where each register of the `g` prefix lands in struct gdb_regs, and its size on the wire. */
struct reg_slot {
	unsigned size;	/* bytes in the g packet */
	unsigned field; /* bytes of the struct field (4 or 8) */
	size_t off;
};

/* clang-format off */
#define R8(f)  {8, 8, offsetof(struct gdb_regs, f)}
#define R4(f)  {4, 4, offsetof(struct gdb_regs, f)}
#define R48(f) {4, 8, offsetof(struct gdb_regs, f)}

static const struct reg_slot reg_slots[GDB_NR_REGS] = {
	[GDB_REG_RAX] = R8(gp.rax),              [GDB_REG_RBX] = R8(gp.rbx),
	[GDB_REG_RCX] = R8(gp.rcx),              [GDB_REG_RDX] = R8(gp.rdx),
	[GDB_REG_RSI] = R8(gp.rsi),              [GDB_REG_RDI] = R8(gp.rdi),
	[GDB_REG_RBP] = R8(gp.rbp),              [GDB_REG_RSP] = R8(gp.rsp),
	[GDB_REG_R8] = R8(gp.r8),                [GDB_REG_R9] = R8(gp.r9),
	[GDB_REG_R10] = R8(gp.r10),              [GDB_REG_R11] = R8(gp.r11),
	[GDB_REG_R12] = R8(gp.r12),              [GDB_REG_R13] = R8(gp.r13),
	[GDB_REG_R14] = R8(gp.r14),              [GDB_REG_R15] = R8(gp.r15),
	[GDB_REG_RIP] = R8(gp.rip),              [GDB_REG_EFLAGS] = R48(gp.rflags),
	[GDB_REG_CS] = R4(cs),                   [GDB_REG_SS] = R4(ss),
	[GDB_REG_DS] = R4(ds),                   [GDB_REG_ES] = R4(es),
	[GDB_REG_FS] = R4(fs),                   [GDB_REG_GS] = R4(gs),
	[GDB_REG_FS_BASE] = R8(fs_base),         [GDB_REG_GS_BASE] = R8(gs_base),
	[GDB_REG_K_GS_BASE] = R8(k_gs_base),     [GDB_REG_CR0] = R8(cr0),
	[GDB_REG_CR2] = R8(cr2),                 [GDB_REG_CR3] = R8(cr3),
	[GDB_REG_CR4] = R8(cr4),                 [GDB_REG_CR8] = R8(cr8),
	[GDB_REG_EFER] = R8(efer),
};
/* clang-format on */

unsigned gdb_reg_size(unsigned regno)
{
	return regno < GDB_NR_REGS ? reg_slots[regno].size : 0;
}

/* Offset in bytes of register @regno in the g packet. */
static size_t reg_offset(unsigned regno)
{
	size_t off = 0;

	for (unsigned i = 0; i < regno; i++)
		off += reg_slots[i].size;
	return off;
}

/* @n little-endian bytes as hex at @hex ("xx" = unavailable, read as 0). 0 or -EPROTO. */
static int le_from_hex(const char *hex, unsigned n, uint64_t *v)
{
	*v = 0;
	for (unsigned i = 0; i < n; i++) {
		int hi = hexval((unsigned char)hex[2 * i]),
		    lo = hexval((unsigned char)hex[2 * i + 1]);

		if (hex[2 * i] == 'x' && hex[2 * i + 1] == 'x')
			hi = lo = 0;
		if (hi < 0 || lo < 0)
			return -EPROTO;
		*v |= (uint64_t)(hi << 4 | lo) << (8 * i);
	}
	return 0;
}

static void le_to_hex(uint64_t v, unsigned n, char *hex)
{
	for (unsigned i = 0; i < n; i++, v >>= 8) {
		hex[2 * i] = hexdig[(v >> 4) & 0xf];
		hex[2 * i + 1] = hexdig[v & 0xf];
	}
}

int gdb_decode_regs(const char *hex, size_t len, struct gdb_regs *r)
{
	size_t off = 0;

	memset(r, 0, sizeof(*r));
	if (len < 2 * GDB_G_DECODED_BYTES || len % 2)
		return -EPROTO;
	for (unsigned i = 0; i < GDB_NR_REGS; i++) {
		const struct reg_slot *s = &reg_slots[i];
		uint64_t v;

		if (le_from_hex(hex + 2 * off, s->size, &v))
			return -EPROTO;
		if (s->field == 8)
			*(uint64_t *)((char *)r + s->off) = v;
		else
			*(uint32_t *)((char *)r + s->off) = (uint32_t)v;
		off += s->size;
	}
	return 0;
}

/* ---- transport ------------------------------------------------------------------------------- */

/* One line in g->why (the reason of the last failure), then @rc. */
#define why(g, rc, ...) tcp_why((g)->why, sizeof((g)->why), rc, __VA_ARGS__)

/* A reply the stub should not have sent (the connection stays in step): -EPROTO with g->why. */
#define lie(g, ...) why(g, -EPROTO, "gdbstub: " __VA_ARGS__)

/* The same for the packet just received, shown (printable, cut) before what @fmt says of it. */
static int bad_reply(struct gdb *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad_reply(struct gdb *g, const char *fmt, ...)
{
	char text[40], what[96];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	tcp_printable(g->pkt, g->pkt_len, text, sizeof(text));
	return lie(g, "'%s' %s", text, what);
}

/* The connection is out of step for good (a late reply would be taken for the next command's):
 * every later command fails with -ECONNABORTED. */
static int broken(struct gdb *g, int rc)
{
	g->broken = true;
	return rc;
}

/* Sends @buf; the '+' owed for packets received since our last send go first, in the same segment.
 */
static int send_bytes(struct gdb *g, const char *buf, size_t len)
{
	char plus[16];
	struct iovec iov[2];
	int n = 0;

	if (g->fd < 0 || g->gone)
		return -ECONNRESET;
	if (g->ack_pending) {
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

static int send_packet(struct gdb *g, const char *payload)
{
	ssize_t n = gdb_frame(payload, strlen(payload), g->out, sizeof(g->out));

	if (n < 0)
		return (int)n;
	g->out_len = (size_t)n;
	return send_bytes(g, g->out, g->out_len);
}

/* One wait for the stub: a single deadline whatever arrives meanwhile, and bounds on what it puts
 * up with until its packet comes. */
struct wait {
	int64_t deadline; /* clock_now_ms() time, < 0: none */
	const char *cmd;  /* the command whose reply this is, NULL: a stop reply */
	unsigned skipped; /* packets that were not the one waited for (console, unasked stops) */
	unsigned resends; /* our packet sent again because the stub answered '-' */
	size_t junk;	  /* bytes outside any packet */
};

static int64_t deadline_in(int ms)
{
	return ms < 0 ? -1 : clock_now_ms() + ms;
}

/* Reads more bytes into rbuf, waiting until the wait's deadline or a stop (tcp_set_interrupt). */
static int fill(struct gdb *g, const struct wait *w)
{
	ssize_t r;

	if (g->rpos > 0) {
		memmove(g->rbuf, g->rbuf + g->rpos, g->rlen - g->rpos);
		g->rlen -= g->rpos;
		g->rpos = 0;
	}
	if (g->rlen == sizeof(g->rbuf))
		return broken(
		    g, why(g, -EMSGSIZE, "gdbstub: a packet longer than %d bytes", GDB_MAX_PACKET));
	r = tcp_read_until(g->fd, g->rbuf + g->rlen, sizeof(g->rbuf) - g->rlen, w->deadline);
	if (r == -ETIMEDOUT || r == -EINTR)
		return (int)r;
	if (r < 0) {
		g->gone = true;
		return (int)r;
	}
	g->rlen += (size_t)r;
	return 0;
}

/* Next packet from the stub into g->pkt, skipping acks; answers a '-' by resending our last packet
 * and a corrupt packet by '-' (or -EPROTO without acks). */
static int read_packet(struct gdb *g, struct wait *w)
{
	int rc;

	if (g->fd < 0)
		return -ECONNRESET;
	for (;;) {
		while (g->rpos < g->rlen) {
			char c = g->rbuf[g->rpos];
			size_t used;

			if (c == '$') {
				rc = gdb_unframe(g->rbuf + g->rpos, g->rlen - g->rpos, g->pkt,
						 sizeof(g->pkt), &g->pkt_len, &used);
				if (rc == -EAGAIN)
					break;
				g->rpos += used;
				if (rc == -EBADMSG && g->ack && ++w->resends <= GDB_MAX_RESENDS) {
					rc = send_bytes(g, "-", 1);
					if (rc)
						return rc;
					continue;
				}
				if (rc == -EBADMSG)
					return broken(g, why(g, -EPROTO, "gdbstub: bad checksums"));
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
					return broken(g,
						      why(g, -EPROTO, "gdbstub: %u notifications",
							  w->skipped));
				continue;
			}
			g->rpos++;
			if (c == '-' && g->out_len) {
				if (++w->resends > GDB_MAX_RESENDS)
					return broken(g, why(g, -EPROTO,
							     "gdbstub: our packet "
							     "refused ('-') %u times",
							     w->resends));
				rc = send_bytes(g, g->out, g->out_len);
				if (rc)
					return rc;
			} else if (c != '+' && ++w->junk > GDB_MAX_PACKET) {
				return broken(g, why(g, -EPROTO,
						     "gdbstub: %zu bytes outside any packet",
						     w->junk));
			}
		}
		rc = fill(g, w);
		if (rc)
			return rc;
	}
}

/* `O hex` console output (not "OK"). */
static bool is_console(const char *p, size_t len)
{
	if (len < 3 || p[0] != 'O' || len % 2 == 0)
		return false;
	for (size_t i = 1; i < len; i++)
		if (hexval((unsigned char)p[i]) < 0)
			return false;
	return true;
}

static bool is_stop_reply(const char *p)
{
	struct gdb_stop st;

	return (p[0] == 'T' || p[0] == 'S' || p[0] == 'W' || p[0] == 'X') &&
	       !gdb_parse_stop(p, &st);
}

static void note_stop(struct gdb *g, const struct gdb_stop *st)
{
	g->last_stop = *st;
	g->running = false;
	g->cur_thread = 0; /* QEMU moves its register thread to the CPU that stopped */
	if (st->kind != GDB_STOP_SIGNAL)
		g->gone = true;
}

/* A packet that is not the one waited for: counted against the wait's bound. */
static int skip(struct gdb *g, struct wait *w)
{
	if (++w->skipped <= GDB_MAX_SKIPPED)
		return 0;
	if (w->cmd)
		return broken(g, why(g, -EPROTO,
				     "gdbstub: %u console or stop packets and no reply "
				     "to '%.24s'",
				     w->skipped, w->cmd));
	return broken(g,
		      why(g, -EPROTO, "gdbstub: %u console packets and no stop reply", w->skipped));
}

/* The wait ended without its packet: @rc for the caller, with g->why saying why. A command whose
 * reply is late leaves the connection out of step (broken); one interrupted by a stop still gets
 * its reply later, which the next wait skips (owed). */
static int wait_failed(struct gdb *g, const struct wait *w, int rc)
{
	if (rc == -EINTR && w->cmd) {
		g->owed++;
		return why(g, rc, "gdbstub: interrupted waiting for the reply to '%.24s'", w->cmd);
	}
	if (rc == -ETIMEDOUT && w->cmd) {
		size_t part = g->rlen - g->rpos;

		if (part)
			return broken(g, why(g, rc,
					     "gdbstub: no reply to '%.24s' within %d ms (%zu "
					     "bytes of a packet, then nothing)",
					     w->cmd, g->timeout_ms, part));
		return broken(g, why(g, rc, "gdbstub: no reply to '%.24s' within %d ms", w->cmd,
				     g->timeout_ms));
	}
	return rc;
}

/* The next packet that is no console output and no reply owed to an abandoned command. */
static int next_packet(struct gdb *g, struct wait *w)
{
	for (;;) {
		int rc = read_packet(g, w);

		if (rc)
			return wait_failed(g, w, rc);
		if (!is_console(g->pkt, g->pkt_len)) {
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
	struct wait w = {.deadline = deadline_in(g->timeout_ms), .cmd = cmd};

	for (;;) {
		int rc = next_packet(g, &w);

		if (rc)
			return rc;
		if (!want_stop && is_stop_reply(g->pkt)) {
			struct gdb_stop st;

			gdb_parse_stop(g->pkt, &st);
			note_stop(g, &st);
			if (g->gone)
				return why(g, -ECONNRESET, "gdbstub: the VM is gone");
			rc = skip(g, &w);
			if (rc)
				return rc;
			continue;
		}
		if (g->pkt_len == 3 && g->pkt[0] == 'E' && hexval((unsigned char)g->pkt[1]) >= 0 &&
		    hexval((unsigned char)g->pkt[2]) >= 0) {
			g->last_error = hexval((unsigned char)g->pkt[1]) << 4 |
					hexval((unsigned char)g->pkt[2]);
			return -EIO;
		}
		return 0;
	}
}

/* Whether a command may be sent now: 0, or why not (a broken, closed or running connection). */
static int ready(const struct gdb *g)
{
	if (g->broken)
		return -ECONNABORTED;
	if (g->fd < 0 || g->gone)
		return -ECONNRESET;
	return g->running ? -EBUSY : 0;
}

static int command(struct gdb *g, const char *cmd, bool want_stop)
{
	int rc = ready(g);

	if (rc)
		return rc;
	g->why[0] = '\0';
	rc = send_packet(g, cmd);
	return rc ? rc : read_reply(g, cmd, want_stop);
}

int gdb_command(struct gdb *g, const char *cmd)
{
	return command(g, cmd, cmd[0] == '?');
}

static bool reply_is(const struct gdb *g, const char *s)
{
	return !strcmp(g->pkt, s);
}

/* ---- connection ------------------------------------------------------------------------------ */

/* Step @step of the negotiation failed with @rc: the connection is closed, @err says why. */
static int negotiation_failed(struct gdb *g, const char *step, int rc, char *err, size_t errlen)
{
	if (g->why[0])
		snprintf(err, errlen, "%s", g->why);
	else
		snprintf(err, errlen, "gdbstub: %s: %s", step, strerror(-rc));
	close(g->fd);
	g->fd = -1;
	return rc;
}

int gdb_attach_fd(struct gdb *g, int fd, char *err, size_t errlen)
{
	const char *ps;
	bool xml;
	int rc;

	memset(g, 0, sizeof(*g));
	g->fd = fd;
	g->timeout_ms = GDB_TIMEOUT_MS;
	g->packet_size = 400; /* protocol default until the stub says */
	g->ack = true;
	g->p_state = -1;
	g->phys_mode = -1;
	g->last_error = -1;

	rc = gdb_command(g, "qSupported");
	if (rc)
		return negotiation_failed(g, "qSupported", rc, err, errlen);
	ps = strstr(g->pkt, "PacketSize=");
	if (ps) {
		uint64_t v;

		ps += strlen("PacketSize=");
		if (parse_hex(&ps, &v) && v >= 64)
			g->packet_size = v < GDB_MAX_PACKET ? (size_t)v : GDB_MAX_PACKET;
	}
	xml = strstr(g->pkt, "qXfer:features:read+") != NULL;

	rc = gdb_command(g, "QStartNoAckMode");
	if (rc && rc != -EIO)
		return negotiation_failed(g, "QStartNoAckMode", rc, err, errlen);
	if (!rc && reply_is(g, "OK"))
		g->ack = false; /* the '+' for this OK is still pending and goes out first */

	rc = gdb_command(g, "vCont?");
	if (rc && rc != -EIO)
		return negotiation_failed(g, "vCont?", rc, err, errlen);
	g->vcont =
	    !rc && !strncmp(g->pkt, "vCont", 5) && strstr(g->pkt, ";c") && strstr(g->pkt, ";s");

	/* QEMU answers p/P only once the client has read the target description. */
	if (xml) {
		rc = gdb_command(g, "qXfer:features:read:target.xml:0,ffb");
		if (rc && rc != -EIO)
			return negotiation_failed(g, "qXfer target.xml", rc, err, errlen);
	}

	rc = gdb_stop_reason(g, &g->last_stop);
	if (rc)
		return negotiation_failed(g, "?", rc, err, errlen);
	return 0;
}

int gdb_connect(struct gdb *g, const char *host, int port, char *err, size_t errlen)
{
	char service[16];
	int fd, rc, one = 1, gai;

	g->fd = -1;
	snprintf(service, sizeof(service), "%d", port);
	fd = tcp_connect(host, service, &gai);
	if (fd < 0) {
		if (fd == -EHOSTUNREACH && gai)
			snprintf(err, errlen, "gdbstub %s:%d: %s", host, port, gai_strerror(gai));
		else
			snprintf(err, errlen, "gdbstub %s:%d: connect: %s", host, port, strerror(-fd));
		return fd;
	}
	/* Without it every small request waits for the previous segment's delayed ACK (~40 ms). */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "gdbstub %s:%d: TCP_NODELAY: %s", host, port, strerror(-rc));
		close(fd);
		return rc;
	}
	return gdb_attach_fd(g, fd, err, errlen);
}

void gdb_close(struct gdb *g)
{
	if (g->fd < 0)
		return;
	if (g->ack_pending && !g->gone) {
		char plus[16];
		size_t k = g->ack_pending < sizeof(plus) ? g->ack_pending : sizeof(plus);

		memset(plus, '+', k);
		if (send(g->fd, plus, k, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			g->gone = true;
	}
	close(g->fd);
	g->fd = -1;
	g->ack_pending = 0;
}

int gdb_detach(struct gdb *g)
{
	int rc = 0;

	if (g->fd >= 0 && !g->gone) {
		if (g->running) {
			struct gdb_stop st;

			rc = gdb_interrupt(g, g->timeout_ms, &st);
		}
		if (!rc && !g->gone) {
			rc = gdb_command(g, "D");
			if (!rc && !reply_is(g, "OK"))
				rc = -EPROTO;
		}
	}
	gdb_close(g);
	return rc;
}

/* ---- threads and registers ------------------------------------------------------------------- */

int gdb_threads(struct gdb *g, int *tids, unsigned max, unsigned *nr)
{
	int rc = gdb_command(g, "qfThreadInfo");

	*nr = 0;
	while (!rc) {
		const char *s = g->pkt + 1;

		if (g->pkt[0] == 'l')
			return 0;
		if (g->pkt[0] != 'm')
			return bad_reply(g, "in the thread list");
		for (;;) {
			int tid = parse_thread_id(&s);

			if (tid <= 0)
				return bad_reply(g, "in the thread list");
			for (unsigned i = 0; i < *nr; i++)
				if (tids[i] == tid)
					return lie(g, "thread %d listed twice", tid);
			if (*nr >= max)
				return -ENOSPC;
			tids[(*nr)++] = tid;
			if (*s == '\0')
				break;
			if (*s++ != ',')
				return bad_reply(g, "in the thread list");
		}
		rc = gdb_command(g, "qsThreadInfo");
	}
	return rc;
}

int gdb_select_thread(struct gdb *g, int tid)
{
	char cmd[32];
	int rc;

	if (tid <= 0)
		return -EINVAL;
	if (g->cur_thread == tid)
		return 0;
	snprintf(cmd, sizeof(cmd), "Hg%x", tid);
	rc = gdb_command(g, cmd);
	if (rc)
		return rc;
	if (!reply_is(g, "OK"))
		return bad_reply(g, "in reply to '%s'", cmd);
	g->cur_thread = tid;
	return 0;
}

int gdb_read_regs(struct gdb *g, int tid, struct gdb_regs *r)
{
	int rc = gdb_select_thread(g, tid);

	if (!rc)
		rc = gdb_command(g, "g");
	if (rc)
		return rc;
	if (gdb_decode_regs(g->pkt, g->pkt_len, r) < 0)
		return lie(g, "'g' reply of %zu bytes for thread %d, not %u hex digits or more",
			   g->pkt_len, tid, 2 * GDB_G_DECODED_BYTES);
	return 0;
}

int gdb_write_reg(struct gdb *g, int tid, unsigned regno, uint64_t value)
{
	unsigned size = gdb_reg_size(regno);
	char cmd[GDB_MAX_PACKET];
	size_t off;
	int rc, n;

	if (!size)
		return -EINVAL;
	rc = gdb_select_thread(g, tid);
	if (rc)
		return rc;
	if (g->p_state != 0) {
		n = snprintf(cmd, sizeof(cmd), "P%x=", regno);
		le_to_hex(value, size, cmd + n);
		cmd[n + 2 * size] = '\0';
		rc = gdb_command(g, cmd);
		if (rc)
			return rc;
		if (reply_is(g, "OK")) {
			g->p_state = 1;
			return 0;
		}
		if (g->pkt_len)
			return bad_reply(g, "in reply to 'P'");
		g->p_state = 0;
	}
	/* No P: read all, patch one, write all. */
	rc = gdb_command(g, "g");
	if (rc)
		return rc;
	off = 2 * reg_offset(regno);
	if (off + 2 * size > g->pkt_len || g->pkt_len + 2 > sizeof(cmd))
		return lie(g, "'g' reply of %zu bytes for thread %d", g->pkt_len, tid);
	cmd[0] = 'G';
	memcpy(cmd + 1, g->pkt, g->pkt_len + 1);
	le_to_hex(value, size, cmd + 1 + off);
	rc = gdb_command(g, cmd);
	if (rc)
		return rc;
	return reply_is(g, "OK") ? 0 : bad_reply(g, "in reply to 'G'");
}

/* ---- memory ---------------------------------------------------------------------------------- */

int gdb_read_mem(struct gdb *g, int tid, uint64_t addr, void *buf, size_t len)
{
	size_t chunk = (g->packet_size - 8) / 2;
	unsigned char *out = buf;
	char cmd[64];
	int rc;

	if (tid > 0 && (rc = gdb_select_thread(g, tid)))
		return rc;
	if (chunk > (GDB_MAX_PACKET - 8) / 2)
		chunk = (GDB_MAX_PACKET - 8) / 2;
	while (len > 0) {
		size_t n = len < chunk ? len : chunk, got;

		snprintf(cmd, sizeof(cmd), "m%llx,%zx", (unsigned long long)addr, n);
		rc = gdb_command(g, cmd);
		if (rc == -EIO)
			return -EFAULT;
		if (rc)
			return rc;
		got = g->pkt_len / 2;
		if (g->pkt_len % 2 || got > n)
			return lie(g, "'%s' answered with %zu hex digits", cmd, g->pkt_len);
		if (got == 0)
			return -EFAULT;
		for (size_t i = 0; i < got; i++) {
			int hi = hexval((unsigned char)g->pkt[2 * i]);
			int lo = hexval((unsigned char)g->pkt[2 * i + 1]);

			if (hi < 0 || lo < 0)
				return lie(g, "'%s' answered with a byte that is not hex at %zu",
					   cmd, 2 * i + (hi >= 0));
			out[i] = (unsigned char)(hi << 4 | lo);
		}
		out += got;
		addr += got;
		len -= got;
	}
	return 0;
}

int gdb_write_mem(struct gdb *g, int tid, uint64_t addr, const void *buf, size_t len)
{
	size_t chunk = (g->packet_size - 48) / 2;
	const unsigned char *in = buf;
	char cmd[GDB_MAX_PACKET];
	int rc;

	if (tid > 0 && (rc = gdb_select_thread(g, tid)))
		return rc;
	if (chunk > (GDB_MAX_PACKET - 48) / 2)
		chunk = (GDB_MAX_PACKET - 48) / 2;
	while (len > 0) {
		size_t n = len < chunk ? len : chunk;
		int h = snprintf(cmd, sizeof(cmd), "M%llx,%zx:", (unsigned long long)addr, n);

		for (size_t i = 0; i < n; i++) {
			cmd[h + 2 * i] = hexdig[in[i] >> 4];
			cmd[h + 2 * i + 1] = hexdig[in[i] & 0xf];
		}
		cmd[h + 2 * n] = '\0';
		rc = gdb_command(g, cmd);
		if (rc == -EIO)
			return -EFAULT;
		if (rc)
			return rc;
		if (!reply_is(g, "OK"))
			return bad_reply(g, "in reply to 'M'");
		in += n;
		addr += n;
		len -= n;
	}
	return 0;
}

int gdb_set_phys_mode(struct gdb *g, bool phys)
{
	int rc;

	if (g->phys_mode == (int)phys)
		return 0;
	rc = gdb_command(g, phys ? "Qqemu.PhyMemMode:1" : "Qqemu.PhyMemMode:0");
	if (rc)
		return rc;
	if (g->pkt_len == 0)
		return -ENOTSUP;
	if (!reply_is(g, "OK"))
		return bad_reply(g, "in reply to 'Qqemu.PhyMemMode'");
	g->phys_mode = phys;
	return 0;
}

/* ---- breakpoints and execution --------------------------------------------------------------- */

static int breakpoint(struct gdb *g, char op, uint64_t addr)
{
	char cmd[48];
	int rc;

	snprintf(cmd, sizeof(cmd), "%c0,%llx,1", op, (unsigned long long)addr);
	rc = gdb_command(g, cmd);
	if (rc)
		return rc;
	if (g->pkt_len == 0)
		return -ENOTSUP;
	return reply_is(g, "OK") ? 0 : bad_reply(g, "in reply to '%s'", cmd);
}

int gdb_insert_bp(struct gdb *g, uint64_t addr)
{
	return breakpoint(g, 'Z', addr);
}

int gdb_remove_bp(struct gdb *g, uint64_t addr)
{
	return breakpoint(g, 'z', addr);
}

static int resume(struct gdb *g, const char *cmd)
{
	int rc = ready(g);

	if (rc)
		return rc;
	rc = send_packet(g, cmd);
	if (rc)
		return rc;
	g->running = true;
	g->cur_thread = 0;
	return 0;
}

int gdb_continue(struct gdb *g)
{
	return resume(g, g->vcont ? "vCont;c" : "c");
}

int gdb_write_pc_continue(struct gdb *g, int tid, uint64_t pc)
{
	const char *cont = g->vcont ? "vCont;c" : "c";
	struct wait w = {.cmd = "P"};
	char set[32];
	ssize_t n1, n2;
	int rc, h;

	if (tid <= 0)
		return -EINVAL;
	if (g->p_state != 1 || g->cur_thread != tid) {
		rc = gdb_write_reg(g, tid, GDB_REG_RIP, pc);
		return rc ? rc : gdb_continue(g);
	}
	rc = ready(g);
	if (rc)
		return rc;
	g->why[0] = '\0';
	h = snprintf(set, sizeof(set), "P%x=", GDB_REG_RIP);
	le_to_hex(pc, 8, set + h);
	set[h + 16] = '\0';
	/* both packets are what a '-' makes us send again */
	n1 = gdb_frame(set, strlen(set), g->out, sizeof(g->out));
	n2 = n1 < 0 ? n1 : gdb_frame(cont, strlen(cont), g->out + n1, sizeof(g->out) - (size_t)n1);
	if (n2 < 0)
		return (int)n2;
	g->out_len = (size_t)(n1 + n2);
	rc = send_bytes(g, g->out, g->out_len);
	if (rc)
		return rc;
	g->running = true;
	g->cur_thread = 0;
	/* QEMU answers in order: P's reply comes before any stop reply of the continue */
	w.deadline = deadline_in(g->timeout_ms);
	rc = next_packet(g, &w);
	if (rc)
		return rc;
	if (is_stop_reply(g->pkt))
		return broken(g, bad_reply(g, "where the reply to 'P' was due"));
	return reply_is(g, "OK") ? 0 : bad_reply(g, "in reply to 'P' (sent with a continue)");
}

int gdb_step(struct gdb *g, int tid, struct gdb_stop *st)
{
	char cmd[32];
	int rc;

	if (tid <= 0)
		return -EINVAL;
	if (g->vcont) {
		snprintf(cmd, sizeof(cmd), "vCont;s:%x", tid);
		rc = resume(g, cmd);
	} else {
		snprintf(cmd, sizeof(cmd), "Hc%x", tid);
		rc = gdb_command(g, cmd);
		if (!rc)
			rc = resume(g, "s");
	}
	return rc ? rc : gdb_wait_stop(g, g->timeout_ms, st);
}

/* The stop reply just received into *@st, and the VM stopped; -EPROTO ("'<packet>' @what") if it is
 * none. */
static int take_stop(struct gdb *g, struct gdb_stop *st, const char *what)
{
	if (gdb_parse_stop(g->pkt, st))
		return bad_reply(g, "%s", what);
	note_stop(g, st);
	return 0;
}

int gdb_wait_stop(struct gdb *g, int timeout_ms, struct gdb_stop *st)
{
	struct wait w = {.deadline = deadline_in(timeout_ms)};
	int rc;

	if (!g->running)
		return -EINVAL;
	if (g->broken)
		return -ECONNABORTED;
	rc = next_packet(g, &w);
	if (!rc)
		rc = take_stop(g, st, "where a stop reply was due");
	/* A debug stop (breakpoint, watchpoint, step: T05) of a running VM: QEMU made the vCPU that
	 * stopped its register thread (gdb_set_stop_cpu sets c_cpu and g_cpu), so no Hg is due for
	 * it. An interrupt (T02) leaves g_cpu as it was: unknown here. */
	if (!rc && st->kind == GDB_STOP_SIGNAL && st->code == 5 && st->thread > 0)
		g->cur_thread = st->thread;
	return rc;
}

int gdb_interrupt(struct gdb *g, int timeout_ms, struct gdb_stop *st)
{
	int rc;

	if (!g->running) {
		*st = g->last_stop;
		return 0;
	}
	if (g->broken)
		return -ECONNABORTED;
	rc = send_bytes(g, "\x03", 1);
	if (!rc)
		rc = gdb_wait_stop(g, timeout_ms, st);
	if (rc == -ETIMEDOUT)
		why(g, rc, "gdbstub: the VM did not stop within %d ms of an interrupt", timeout_ms);
	return rc;
}

int gdb_stop_reason(struct gdb *g, struct gdb_stop *st)
{
	int rc = gdb_command(g, "?");

	return rc ? rc : take_stop(g, st, "in reply to '?'");
}

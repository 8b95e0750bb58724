/* GDB Remote Serial Protocol client for QEMU's gdbstub (x86_64, system emulation, all-stop): the
 * commands (negotiation, threads, registers, memory, breakpoints, execution) over gdb_wire.
 */
#include "host/vmm/gdbstub.h"
#include "host/vmm/gdb_wire.h"
#include "host/vmm/tcp.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One line in g->why (the reason of the last failure), then @rc. */
#define why(g, rc, ...) tcp_why((g)->why, sizeof((g)->why), rc, __VA_ARGS__)

/* A reply the stub should not have sent (the connection stays in step): -EPROTO with g->why. */
#define lie(g, ...) why(g, -EPROTO, "gdbstub: " __VA_ARGS__)

int gdb_command(struct gdb *g, const char *cmd)
{
	return gdb_wire_command(g, cmd, cmd[0] == '?');
}

/* ---- connection ------------------------------------------------------------------------------ */

/* Step @step of the negotiation failed with @rc: the connection is closed, @err says why. */
static int negotiation_failed(struct gdb *g, const char *step, int rc, char *err, size_t errlen)
{
	if (g->why[0])
		msg_fmt(err, errlen, "%s", g->why);
	else
		msg_fmt(err, errlen, "gdbstub: %s: %s", step, strerror(-rc));
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
		if (gdb_packet_parse_hex(&ps, &v) && v >= 64)
			g->packet_size = v < GDB_MAX_PACKET ? (size_t)v : GDB_MAX_PACKET;
	}
	xml = strstr(g->pkt, "qXfer:features:read+") != NULL;

	rc = gdb_command(g, "QStartNoAckMode");
	if (rc && rc != -EIO)
		return negotiation_failed(g, "QStartNoAckMode", rc, err, errlen);
	if (!rc && gdb_wire_reply_is(g, "OK"))
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
			msg_fmt(err, errlen, "gdbstub %s:%d: %s", host, port, gai_strerror(gai));
		else
			msg_fmt(err, errlen, "gdbstub %s:%d: connect: %s", host, port,
				strerror(-fd));
		return fd;
	}
	/* Without it every small request waits for the previous segment's delayed ACK (~40 ms). */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
		rc = -errno;
		msg_fmt(err, errlen, "gdbstub %s:%d: TCP_NODELAY: %s", host, port, strerror(-rc));
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
			if (!rc && !gdb_wire_reply_is(g, "OK"))
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
			return gdb_wire_bad_reply(g, "in the thread list");
		for (;;) {
			int tid = gdb_packet_parse_thread_id(&s);

			if (tid <= 0)
				return gdb_wire_bad_reply(g, "in the thread list");
			for (unsigned i = 0; i < *nr; i++)
				if (tids[i] == tid)
					return lie(g, "thread %d listed twice", tid);
			if (*nr >= max)
				return -ENOSPC;
			tids[(*nr)++] = tid;
			if (*s == '\0')
				break;
			if (*s++ != ',')
				return gdb_wire_bad_reply(g, "in the thread list");
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
	if (!gdb_wire_reply_is(g, "OK"))
		return gdb_wire_bad_reply(g, "in reply to '%s'", cmd);
	g->cur_thread = tid;
	return 0;
}

/* The `g` layout of @g's guest. */
static const struct arch_gdb_layout *gdb_layout(const struct gdb *g)
{
	return (g->arch ? g->arch : arch_default())->gdb;
}

int gdb_read_regs(struct gdb *g, int tid, struct gdb_regs *r)
{
	int rc = gdb_select_thread(g, tid);

	if (!rc)
		rc = gdb_command(g, "g");
	if (rc)
		return rc;
	if (gdb_packet_decode_regs(gdb_layout(g), g->pkt, g->pkt_len, r) < 0)
		return lie(g, "'g' reply of %zu bytes for thread %d, not %u hex digits or more",
			   g->pkt_len, tid, 2 * gdb_layout(g)->decoded_bytes);
	for (unsigned i = 0; i < gdb_layout(g)->nr_sys_names; i++) {
		unsigned k = gdb_layout(g)->sys_first + i;

		if (k >= ARCH_GDB_SYS_MAX || g->sys_regno[k] < 0)
			continue;
		rc = gdb_read_reg(g, tid, (unsigned)g->sys_regno[k], &r->sys[k]);
		if (rc)
			return rc;
		if (gdb_layout(g)->sys_gp && gdb_layout(g)->sys_gp[i] < ARCH_REGS_MAX)
			r->gp.r[gdb_layout(g)->sys_gp[i]] = r->sys[k];
	}
	return 0;
}

int gdb_read_reg(struct gdb *g, int tid, unsigned regno, uint64_t *v)
{
	char cmd[16];
	int rc = gdb_select_thread(g, tid);

	if (rc)
		return rc;
	snprintf(cmd, sizeof(cmd), "p%x", regno);
	rc = gdb_command(g, cmd);
	if (rc)
		return rc;
	/* 1 to 8 bytes, little-endian hex */
	if (!g->pkt_len || g->pkt_len % 2 || g->pkt_len > 16 ||
	    gdb_packet_le_from_hex(g->pkt, g->pkt_len / 2, v) < 0)
		return lie(g, "'p%x' reply of %zu bytes for thread %d, not 2 to 16 hex digits", regno,
			   g->pkt_len, tid);
	return 0;
}

int gdb_write_reg(struct gdb *g, int tid, unsigned regno, uint64_t value)
{
	unsigned size = gdb_packet_reg_size(gdb_layout(g), regno);
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
		gdb_packet_le_to_hex(value, size, cmd + n);
		cmd[n + 2 * size] = '\0';
		rc = gdb_command(g, cmd);
		if (rc)
			return rc;
		if (gdb_wire_reply_is(g, "OK")) {
			g->p_state = 1;
			return 0;
		}
		if (g->pkt_len)
			return gdb_wire_bad_reply(g, "in reply to 'P'");
		g->p_state = 0;
	}
	/* No P: read all, patch one, write all. */
	rc = gdb_command(g, "g");
	if (rc)
		return rc;
	off = 2 * gdb_packet_reg_offset(gdb_layout(g), regno);
	if (off + 2 * size > g->pkt_len || g->pkt_len + 2 > sizeof(cmd))
		return lie(g, "'g' reply of %zu bytes for thread %d", g->pkt_len, tid);
	cmd[0] = 'G';
	memcpy(cmd + 1, g->pkt, g->pkt_len + 1);
	gdb_packet_le_to_hex(value, size, cmd + 1 + off);
	rc = gdb_command(g, cmd);
	if (rc)
		return rc;
	return gdb_wire_reply_is(g, "OK") ? 0 : gdb_wire_bad_reply(g, "in reply to 'G'");
}

/* ---- memory ---------------------------------------------------------------------------------- */

/* What 'm' and 'M' share: thread @tid (> 0) selected, and the bytes one packet carries, two hex
 * digits each after @head bytes of command, into *@chunk. 0, or gdb_select_thread's error. */
static int mem_begin(struct gdb *g, int tid, size_t head, size_t *chunk)
{
	*chunk = (g->packet_size - head) / 2;
	if (*chunk > (GDB_MAX_PACKET - head) / 2)
		*chunk = (GDB_MAX_PACKET - head) / 2;
	return tid > 0 ? gdb_select_thread(g, tid) : 0;
}

/* Sends memory command @cmd and waits for its reply: 0, -EFAULT (the stub's error reply: memory it
 * could not access), or gdb_command's error. */
static int mem_command(struct gdb *g, const char *cmd)
{
	int rc = gdb_command(g, cmd);

	return rc == -EIO ? -EFAULT : rc;
}

int gdb_read_mem(struct gdb *g, int tid, uint64_t addr, void *buf, size_t len)
{
	size_t chunk;
	unsigned char *out = buf;
	char cmd[64];
	int rc = mem_begin(g, tid, 8, &chunk);

	if (rc)
		return rc;
	while (len > 0) {
		size_t n = len < chunk ? len : chunk, got;

		snprintf(cmd, sizeof(cmd), "m%llx,%zx", (unsigned long long)addr, n);
		rc = mem_command(g, cmd);
		if (rc)
			return rc;
		got = g->pkt_len / 2;
		if (g->pkt_len % 2 || got > n)
			return lie(g, "'%s' answered with %zu hex digits", cmd, g->pkt_len);
		if (got == 0)
			return -EFAULT;
		for (size_t i = 0; i < got; i++) {
			int hi = gdb_packet_hexval((unsigned char)g->pkt[2 * i]);
			int lo = gdb_packet_hexval((unsigned char)g->pkt[2 * i + 1]);

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
	size_t chunk;
	const unsigned char *in = buf;
	char cmd[GDB_MAX_PACKET];
	int rc = mem_begin(g, tid, 48, &chunk);

	if (rc)
		return rc;
	while (len > 0) {
		size_t n = len < chunk ? len : chunk;
		int h = snprintf(cmd, sizeof(cmd), "M%llx,%zx:", (unsigned long long)addr, n);

		for (size_t i = 0; i < n; i++)
			gdb_packet_le_to_hex(in[i], 1, cmd + h + 2 * i);
		cmd[h + 2 * n] = '\0';
		rc = mem_command(g, cmd);
		if (rc)
			return rc;
		if (!gdb_wire_reply_is(g, "OK"))
			return gdb_wire_bad_reply(g, "in reply to 'M'");
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
	if (!gdb_wire_reply_is(g, "OK"))
		return gdb_wire_bad_reply(g, "in reply to 'Qqemu.PhyMemMode'");
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
	return gdb_wire_reply_is(g, "OK") ? 0 : gdb_wire_bad_reply(g, "in reply to '%s'", cmd);
}

int gdb_select_bp_thread(struct gdb *g, int tid)
{
	char cmd[32];
	int rc;

	if (tid <= 0)
		return -EINVAL;
	if (g->bp_thread == tid)
		return 0;
	snprintf(cmd, sizeof(cmd), "Hc%x", tid);
	rc = gdb_command(g, cmd);
	if (rc)
		return rc;
	if (!gdb_wire_reply_is(g, "OK"))
		return gdb_wire_bad_reply(g, "in reply to '%s'", cmd);
	g->bp_thread = tid;
	return 0;
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
	int rc = gdb_wire_ready(g);

	if (rc)
		return rc;
	rc = gdb_wire_send_packet(g, cmd);
	if (rc)
		return rc;
	g->running = true;
	g->cur_thread = 0;
	g->bp_thread = 0; /* the stop reply names it again */
	return 0;
}

int gdb_continue(struct gdb *g)
{
	return resume(g, g->vcont ? "vCont;c" : "c");
}

int gdb_write_pc_continue(struct gdb *g, int tid, uint64_t pc)
{
	const char *cont = g->vcont ? "vCont;c" : "c";
	struct gdb_wait w = {.cmd = "P"};
	char set[32];
	ssize_t n1, n2;
	int rc, h;

	if (tid <= 0)
		return -EINVAL;
	if (g->p_state != 1 || g->cur_thread != tid) {
		rc = gdb_write_reg(g, tid, gdb_layout(g)->pc, pc);
		return rc ? rc : gdb_continue(g);
	}
	rc = gdb_wire_ready(g);
	if (rc)
		return rc;
	g->why[0] = '\0';
	h = snprintf(set, sizeof(set), "P%x=", gdb_layout(g)->pc);
	gdb_packet_le_to_hex(pc, 8, set + h);
	set[h + 16] = '\0';
	/* both packets are what a '-' makes us send again */
	n1 = gdb_packet_frame(set, strlen(set), g->out, sizeof(g->out));
	n2 = n1 < 0
		 ? n1
		 : gdb_packet_frame(cont, strlen(cont), g->out + n1, sizeof(g->out) - (size_t)n1);
	if (n2 < 0)
		return (int)n2;
	g->out_len = (size_t)(n1 + n2);
	rc = gdb_wire_send_bytes(g, g->out, g->out_len);
	if (rc)
		return rc;
	g->running = true;
	g->cur_thread = 0;
	/* QEMU answers in order: P's reply comes before any stop reply of the continue */
	w.deadline = gdb_wire_deadline_in(g->timeout_ms);
	rc = gdb_wire_next_packet(g, &w);
	if (rc)
		return rc;
	if (gdb_packet_is_stop_reply(g->pkt))
		return gdb_wire_broken(g, gdb_wire_bad_reply(g, "where the reply to 'P' was due"));
	return gdb_wire_reply_is(g, "OK")
		   ? 0
		   : gdb_wire_bad_reply(g, "in reply to 'P' (sent with a continue)");
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
	if (gdb_packet_parse_stop(g->pkt, st))
		return gdb_wire_bad_reply(g, "%s", what);
	gdb_wire_note_stop(g, st);
	return 0;
}

int gdb_wait_stop(struct gdb *g, int timeout_ms, struct gdb_stop *st)
{
	struct gdb_wait w = {.deadline = gdb_wire_deadline_in(timeout_ms)};
	int rc;

	if (!g->running)
		return -EINVAL;
	if (g->broken)
		return -ECONNABORTED;
	rc = gdb_wire_next_packet(g, &w);
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
	/* the '+' owed for replies that came while the VM ran are never sent (QEMU in system mode
	 * does not wait for them; sent after the stop they left QEMU 10.0 stuck in a stub detach) */
	g->ack_pending = 0;
	rc = gdb_wire_send_interrupt(g);
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

/* The wire under the gdbstub client: packets sent (acks owed sent in front, resent on '-') and
 * received on one struct gdb's TCP connection, each wait with one deadline and bounds on what it
 * puts up with (GDB_MAX_SKIPPED, GDB_MAX_RESENDS), console output and owed late replies skipped.
 * Only gdbstub.c uses it; the thread owning @g. A failure leaves one line in g->why. */
#ifndef HVT_GDB_WIRE_H
#define HVT_GDB_WIRE_H

#include "host/qemu/gdbstub.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One wait for the stub: a single deadline whatever arrives meanwhile, and bounds on what it puts
 * up with until its packet comes. */
struct gdb_wait {
	int64_t deadline; /* clock_now_ms() time, < 0: none */
	const char *cmd;  /* the command whose reply this is, NULL: a stop reply */
	unsigned skipped; /* packets that were not the one waited for (console, unasked stops) */
	unsigned resends; /* our packet sent again because the stub answered '-' */
	size_t junk;	  /* bytes outside any packet */
};

/* -EPROTO with g->why: the packet just received (g->pkt, printable, cut), then printf @fmt. */
int gdb_wire_bad_reply(struct gdb *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Marks the connection out of step for good (every later command fails with -ECONNABORTED);
 * returns @rc. */
int gdb_wire_broken(struct gdb *g, int rc);

/* Sends @len bytes of @buf, the '+' owed for packets received since the last send in front, in the
 * same segment. 0, -ECONNRESET (closed or gone), or -errno (the connection is then gone). */
int gdb_wire_send_bytes(struct gdb *g, const char *buf, size_t len);

/* Frames NUL-terminated @payload into g->out (kept for a resend on '-') and sends it. 0, -ENOSPC,
 * or as gdb_wire_send_bytes. */
int gdb_wire_send_packet(struct gdb *g, const char *payload);

/* The clock_now_ms() time @ms from now; -1 (no deadline) when @ms < 0. */
int64_t gdb_wire_deadline_in(int ms);

/* Records stop reply @st: the VM stopped (gone for W/X), no thread selected. */
void gdb_wire_note_stop(struct gdb *g, const struct gdb_stop *st);

/* The next packet into g->pkt that is no console output and no reply owed to a command a stop
 * interrupted, before @w's deadline. 0, -ETIMEDOUT (a command's reply late: broken), -EINTR (a
 * stop: a command's reply is owed), -EPROTO, -EMSGSIZE, -ECONNRESET; g->why says which. */
int gdb_wire_next_packet(struct gdb *g, struct gdb_wait *w);

/* Whether a command may be sent now: 0, -ECONNABORTED (broken), -ECONNRESET (closed or gone) or
 * -EBUSY (the VM runs). */
int gdb_wire_ready(const struct gdb *g);

/* Sends @cmd and reads its reply into g->pkt as gdb_command does; unasked stop replies are recorded
 * and skipped unless @want_stop. */
int gdb_wire_command(struct gdb *g, const char *cmd, bool want_stop);

/* Whether the last reply (g->pkt) is exactly @s. */
bool gdb_wire_reply_is(const struct gdb *g, const char *s);

#endif

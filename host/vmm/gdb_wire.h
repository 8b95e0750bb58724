/* The wire under the gdbstub client: packets sent (acks owed sent in front, resent on '-') and
 * received on one struct gdb's TCP connection, each wait with one deadline and bounds on what it
 * puts up with (GDB_MAX_SKIPPED, GDB_MAX_RESENDS), console output and owed late replies skipped.
 * struct gdb (the connection) lives here; its functions are for gdbstub.c only, on the thread
 * owning
 * @g. A failure leaves one line in g->why. */
#ifndef HVT_GDB_WIRE_H
#define HVT_GDB_WIRE_H

#include "host/vmm/gdb_packet.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GDB_MAX_PACKET	16384 /* largest packet payload sent or accepted (decoded) */
#define GDB_TIMEOUT_MS	5000  /* default wait for a command's reply */
#define GDB_MAX_THREADS 256
/* What one wait (a command's reply, a stop reply) puts up with before it gives up: packets that are
 * not its own (console output, unasked stop replies), and '-' asking for our packet again. */
#define GDB_MAX_SKIPPED 256
#define GDB_MAX_RESENDS 8

/* One connection to a gdbstub (see gdbstub.h); its fields are the wire's and the client's. */
struct gdb {
	int fd;
	int timeout_ms;	      /* reply wait for commands; GDB_TIMEOUT_MS after connect */
	size_t packet_size;   /* the stub's PacketSize (QEMU: 4096) */
	bool ack;	      /* acknowledgements on (QEMU 7.2 refuses QStartNoAckMode) */
	unsigned ack_pending; /* packets received and owed a '+' (sent with our next bytes) */
	bool vcont;	      /* the stub supports vCont;c and vCont;s */
	bool running;	      /* continued, no stop reply read since */
	bool gone;	      /* W/X received or the connection dropped */
	bool broken;	      /* out of step with the stub (a late reply, a flood): commands fail */
	unsigned owed;	      /* replies still to come for commands a stop interrupted: skipped */
	int p_state;	      /* P packet: 1 works, 0 unsupported (G used), -1 not tried yet */
	int cur_thread;	      /* thread selected by the last Hg, 0 none */
	int bp_thread;	      /* QEMU's c_cpu: last Hc or stop reply's thread, 0 unknown */
	int phys_mode;	      /* qemu.PhyMemMode as last set, -1 unknown */
	const struct arch *arch; /* the guest's ISA (its `g` layout); NULL: arch_default() */
	/* the numbers of the layout's named system registers (arch_gdb_layout.sys_names), learned
	 * from the target description (gdb_target_desc); read with `p` after each `g` */
	int sys_regno[ARCH_GDB_SYS_MAX];
	int freq_regno; /* the layout's counter_freq_name, -1: none or not described */
	int once_regno[ARCH_GDB_ONCE_MAX]; /* the layout's once_names, -1: not described */
	/* NN of the last "E NN" reply, -1 none. Hex per the protocol, but QEMU writes its decimal
	 * errno there: E14 (EFAULT) reads 0x14, E22 (EINVAL) 0x22. */
	int last_error;
	char why[192]; /* the last failure, one line ("gdbstub: no reply to 'g' within 300 ms") */
	struct gdb_stop last_stop;
	size_t rpos, rlen;
	char rbuf[GDB_MAX_PACKET + 16]; /* bytes received and not yet parsed: rbuf[rpos, rlen) */
	size_t out_len;
	char out[GDB_MAX_PACKET + 8]; /* last framed packet, resent on '-' */
	size_t pkt_len;
	char pkt[GDB_MAX_PACKET + 1]; /* last received packet payload, decoded, NUL-terminated */
};

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

/* Sends the interrupt byte 0x03 alone, for a VM that runs, without the '+' still owed (the caller
 * decides what becomes of them). A '+' while the VM runs would stop it too, and QEMU 8.1 and later
 * then send no stop reply, and take the 0x03 that follows as noise. 0 or as gdb_wire_send_bytes. */
int gdb_wire_send_interrupt(struct gdb *g);

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

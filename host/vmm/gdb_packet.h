/* GDB Remote Serial Protocol packets, without a connection: framing (`$payload#cs`, escapes, run
 * lengths), stop replies, a `g` packet by the guest ISA's layout (arch.h), hex. Pure functions on
 * the caller's buffers; any thread. Every input is a peer's and is bounded here. */
#ifndef HVT_GDB_PACKET_H
#define HVT_GDB_PACKET_H

#include "arch/arch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One vCPU's registers as the stub reports them, placed by the guest ISA's `g` layout (struct
 * arch_gdb_layout): general-purpose ones in @gp, system ones in @sys (x86_64: sys[X86_GDB_SYS(n)]
 * for QEMU's register n, cs .. efer). Outside 64-bit code QEMU reports (and writes) only the low 32
 * bits of rax..rdi/rip and zero for r8..r15. */
struct gdb_regs {
	struct arch_regs gp;
	uint64_t sys[ARCH_GDB_SYS_MAX];
};

enum gdb_stop_kind {
	GDB_STOP_SIGNAL, /* T/S: the VM stopped; signal 5 breakpoint/step, 2 interrupt, 3
			  * (GDB_SIGNAL_QUIT) QEMU's guest shut down (-no-shutdown) */
	GDB_STOP_EXITED, /* W: the VM process is gone; code is its exit status */
	GDB_STOP_KILLED, /* X: the VM process is gone; code is the terminating signal */
};

#define GDB_SIGNAL_QUIT 3 /* gdb's number: QEMU's stop for RUN_STATE_SHUTDOWN */

struct gdb_stop {
	enum gdb_stop_kind kind;
	int code;   /* signal number (SIGNAL, KILLED) or exit status (EXITED) */
	int thread; /* thread id from `thread:` of a T reply, 0 when absent */
};

/* Frames @data as `$data#cs` into @out, escaping `$ # } *` as `}` + (c ^ 0x20). Returns the framed
 * length (no NUL is written) or -ENOSPC. */
ssize_t gdb_packet_frame(const void *data, size_t len, char *out, size_t outlen);

/* Decodes one packet at the start of @in (which begins with '$'): checksum, `}` escapes and `*`
 * run lengths. Writes the payload plus a NUL to @out and its length to *@outlen; *@consumed gets
 * the bytes of @in used (also on -EBADMSG, so the caller can skip the packet). Returns 0, -EAGAIN
 * when
 * @in holds no complete packet yet, -EBADMSG on a bad checksum, -EPROTO on a malformed packet,
 * -EMSGSIZE when the payload does not fit. */
int gdb_packet_unframe(const char *in, size_t len, char *out, size_t outcap, size_t *outlen,
		       size_t *consumed);

/* Parses a stop reply (`S05`, `T05thread:01;...`, `W00`, `X09`, `thread:p1.2` forms). 0 or -EPROTO.
 */
int gdb_packet_parse_stop(const char *pkt, struct gdb_stop *st);

/* Decodes a `g` reply of @len hex digits into @r by layout @l (`xx` reads as 0). 0, or -EPROTO
 * when it is shorter than l->decoded_bytes bytes or not hex. */
int gdb_packet_decode_regs(const struct arch_gdb_layout *l, const char *hex, size_t len,
			   struct gdb_regs *r);

/* Size in bytes of register @regno of layout @l in the `g`/`P` encoding, 0 if unknown. */
unsigned gdb_packet_reg_size(const struct arch_gdb_layout *l, unsigned regno);

/* Value of hex digit @c, -1 if it is none. */
int gdb_packet_hexval(int c);

/* Parses hex digits at *@s (stops at the first non-hex, *@s moved past them) into *@v; returns how
 * many were read (0: none, *@v is 0). */
unsigned gdb_packet_parse_hex(const char **s, uint64_t *v);

/* Thread id "1a", "p1.2" (multiprocess) or "-1" at *@s (moved past it); returns the thread part,
 * -1 for "all", -2 when malformed. */
int gdb_packet_parse_thread_id(const char **s);

/* Offset in bytes of register @regno (< l->nr) of layout @l in the `g` packet. */
size_t gdb_packet_reg_offset(const struct arch_gdb_layout *l, unsigned regno);

/* Writes the @n low bytes of @v, little-endian, as 2 * @n hex digits at @hex (no NUL). */
void gdb_packet_le_to_hex(uint64_t v, unsigned n, char *hex);

/* The little-endian value of the @n bytes hex-encoded at @hex (2 * @n digits; "xx", unavailable,
 * reads as 0) into *@v: 0, or -EPROTO for a digit that is not hex. Pure. */
int gdb_packet_le_from_hex(const char *hex, unsigned n, uint64_t *v);

/* Whether payload @p of @len bytes is `O hex` console output (not "OK"). */
bool gdb_packet_is_console(const char *p, size_t len);

/* Whether NUL-terminated payload @p is a well-formed stop reply (T, S, W, X). */
bool gdb_packet_is_stop_reply(const char *p);

#endif

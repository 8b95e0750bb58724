/* GDB Remote Serial Protocol packets: framing, stop replies, QEMU's x86_64 register layout, hex.
 *
 * Every packet is `$payload#cs` (cs = sum of the payload bytes mod 256, two hex digits); `}`
 * escapes the next byte (xor 0x20) and `*` repeats the previous one.
 */
#include "host/vmm/gdb_packet.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

int gdb_packet_hexval(int c)
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

ssize_t gdb_packet_frame(const void *data, size_t len, char *out, size_t outlen)
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

int gdb_packet_unframe(const char *in, size_t len, char *out, size_t outcap, size_t *outlen,
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
	hi = gdb_packet_hexval(hash[1]);
	lo = gdb_packet_hexval(hash[2]);
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

unsigned gdb_packet_parse_hex(const char **s, uint64_t *v)
{
	unsigned n = 0;
	int d;

	*v = 0;
	while ((d = gdb_packet_hexval((unsigned char)**s)) >= 0) {
		*v = *v << 4 | (unsigned)d;
		(*s)++;
		n++;
	}
	return n;
}

int gdb_packet_parse_thread_id(const char **s)
{
	uint64_t v;

	if (**s == 'p') {
		(*s)++;
		if (**s == '-')
			(*s)++;
		gdb_packet_parse_hex(s, &v);
		if (**s != '.')
			return (int)v > 0 ? (int)v : -2; /* "pN": the process, its first thread */
		(*s)++;
	}
	if (**s == '-' && (*s)[1] == '1') {
		*s += 2;
		return -1;
	}
	if (gdb_packet_parse_hex(s, &v) == 0 || v > 0x7fffffff)
		return -2;
	return (int)v;
}

int gdb_packet_parse_stop(const char *pkt, struct gdb_stop *st)
{
	const char *s = pkt + 1;
	uint64_t v;

	memset(st, 0, sizeof(*st));
	switch (pkt[0]) {
	case 'S':
	case 'T':
		if (gdb_packet_hexval((unsigned char)s[0]) < 0 ||
		    gdb_packet_hexval((unsigned char)s[1]) < 0)
			return -EPROTO;
		st->kind = GDB_STOP_SIGNAL;
		st->code = gdb_packet_hexval((unsigned char)s[0]) << 4 |
			   gdb_packet_hexval((unsigned char)s[1]);
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
				int tid = gdb_packet_parse_thread_id(&t);

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
		if (gdb_packet_parse_hex(&s, &v) == 0 || (*s && *s != ';'))
			return -EPROTO;
		st->kind = pkt[0] == 'W' ? GDB_STOP_EXITED : GDB_STOP_KILLED;
		st->code = (int)v;
		return 0;
	default:
		return -EPROTO;
	}
}

unsigned gdb_packet_reg_size(const struct arch_gdb_layout *l, unsigned regno)
{
	return regno < l->nr ? l->reg[regno].size : 0;
}

size_t gdb_packet_reg_offset(const struct arch_gdb_layout *l, unsigned regno)
{
	size_t off = 0;

	for (unsigned i = 0; i < regno && i < l->nr; i++)
		off += l->reg[i].size;
	return off;
}

/* @n little-endian bytes as hex at @hex ("xx" = unavailable, read as 0). 0 or -EPROTO. */
int gdb_packet_le_from_hex(const char *hex, unsigned n, uint64_t *v)
{
	*v = 0;
	for (unsigned i = 0; i < n; i++) {
		int hi = gdb_packet_hexval((unsigned char)hex[2 * i]),
		    lo = gdb_packet_hexval((unsigned char)hex[2 * i + 1]);

		if (hex[2 * i] == 'x' && hex[2 * i + 1] == 'x')
			hi = lo = 0;
		if (hi < 0 || lo < 0)
			return -EPROTO;
		*v |= (uint64_t)(hi << 4 | lo) << (8 * i);
	}
	return 0;
}

void gdb_packet_le_to_hex(uint64_t v, unsigned n, char *hex)
{
	for (unsigned i = 0; i < n; i++, v >>= 8) {
		hex[2 * i] = hexdig[(v >> 4) & 0xf];
		hex[2 * i + 1] = hexdig[v & 0xf];
	}
}

int gdb_packet_decode_regs(const struct arch_gdb_layout *l, const char *hex, size_t len,
			   struct gdb_regs *r)
{
	size_t off = 0;

	memset(r, 0, sizeof(*r));
	if (len < 2 * (size_t)l->decoded_bytes || len % 2)
		return -EPROTO;
	for (unsigned i = 0; i < l->nr; i++) {
		const struct arch_gdb_reg *s = &l->reg[i];
		uint64_t v;

		if (s->size > 8 || off + s->size > l->decoded_bytes ||
		    gdb_packet_le_from_hex(hex + 2 * off, s->size, &v))
			return -EPROTO;
		if (s->slot >= ARCH_GDB_SYS) {
			if (s->slot - ARCH_GDB_SYS < ARCH_GDB_SYS_MAX)
				r->sys[s->slot - ARCH_GDB_SYS] = v;
		} else if (s->slot < ARCH_REGS_MAX) {
			r->gp.r[s->slot] = v;
		}
		off += s->size;
	}
	return 0;
}

bool gdb_packet_is_console(const char *p, size_t len)
{
	if (len < 3 || p[0] != 'O' || len % 2 == 0)
		return false;
	for (size_t i = 1; i < len; i++)
		if (gdb_packet_hexval((unsigned char)p[i]) < 0)
			return false;
	return true;
}

bool gdb_packet_is_stop_reply(const char *p)
{
	struct gdb_stop st;

	return (p[0] == 'T' || p[0] == 'S' || p[0] == 'W' || p[0] == 'X') &&
	       !gdb_packet_parse_stop(p, &st);
}

#include "host/util/peer_text.h"

#include <stdio.h>
#include <string.h>

/* The escaped form of byte @c into @e (at least 5 bytes); its length. */
static size_t escape_byte(unsigned char c, char *e)
{
	switch (c) {
	case '\\':
		return (size_t)snprintf(e, 5, "\\\\");
	case '\n':
		return (size_t)snprintf(e, 5, "\\n");
	case '\r':
		return (size_t)snprintf(e, 5, "\\r");
	case '\t':
		return (size_t)snprintf(e, 5, "\\t");
	}
	if (c >= 0x20 && c < 0x7f) {
		e[0] = (char)c;
		e[1] = '\0';
		return 1;
	}
	return (size_t)snprintf(e, 5, "\\x%02x", c);
}

const char *peer_text(const void *p, size_t len, char *out, size_t outlen)
{
	const unsigned char *b = p;
	size_t need = 0, o = 0, room;
	char e[8], mark[40];
	int mlen;

	if (!outlen)
		return out;
	for (size_t i = 0; i < len; i++)
		need += escape_byte(b[i], e);
	room = outlen - 1;
	mlen = 0;
	if (need > room) { /* the head that fits, then how long the whole was */
		mlen = snprintf(mark, sizeof(mark), "...(%zu bytes)", len);
		if ((size_t)mlen > room)
			mlen = snprintf(mark, sizeof(mark), "%.*s", (int)room, "...");
		room -= (size_t)mlen;
	}
	for (size_t i = 0; i < len; i++) {
		size_t n = escape_byte(b[i], e);

		if (o + n > room)
			break;
		memcpy(out + o, e, n);
		o += n;
	}
	memcpy(out + o, mark, (size_t)mlen);
	o += (size_t)mlen;
	out[o] = '\0';
	return out;
}

const char *peer_str(const char *s, char *out, size_t outlen)
{
	return peer_text(s, s ? strlen(s) : 0, out, outlen);
}

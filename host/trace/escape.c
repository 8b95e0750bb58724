#include "host/trace/escape.h"

#include <string.h>

static const char hex[] = "0123456789abcdef";

/* strace -x's form of byte @c into @e (at most 4 bytes): its length. */
static size_t escape_c(unsigned char c, char *e)
{
	size_t k = 0;

	if (c == '\\' || c == '\t' || c == '\n' || c == '\r') {
		e[k++] = '\\';
		e[k++] = c == '\\' ? '\\' : c == '\t' ? 't' : c == '\n' ? 'n' : 'r';
	} else if (c < 0x20 || c >= 0x7f) {
		e[k++] = '\\';
		e[k++] = 'x';
		e[k++] = hex[c >> 4];
		e[k++] = hex[c & 15];
	} else {
		e[k++] = (char)c;
	}
	return k;
}

/* JSON's form of byte @c into @e (at most 6 bytes), pure ASCII: its length. */
static size_t escape_json_c(unsigned char c, char *e)
{
	size_t k = 0;

	if (c == '"' || c == '\\') {
		e[k++] = '\\';
		e[k++] = (char)c;
	} else if (c < 0x20 || c >= 0x7f) {
		memcpy(e, "\\u00", 4);
		e[4] = hex[c >> 4];
		e[5] = hex[c & 15];
		k = 6;
	} else {
		e[k++] = (char)c;
	}
	return k;
}

/* The first @max bytes of @s (up to its NUL), each in @one's form, into @buf (@len bytes, always
 * terminated, a byte's form never cut). */
static inline size_t escape_with(char *buf, size_t len, const char *s, size_t max,
				 size_t (*one)(unsigned char c, char *e))
{
	size_t n = 0;

	if (!len)
		return 0;
	for (size_t i = 0; i < max && s[i]; i++) {
		char e[6];
		size_t k = one((unsigned char)s[i], e);

		if (n + k > len - 1)
			break;
		memcpy(buf + n, e, k);
		n += k;
	}
	buf[n] = 0;
	return n;
}

size_t escape_str(char *buf, size_t len, const char *s, size_t max)
{
	size_t n = 0, i = 0;

	if (!len)
		return 0;
	/* the common case, printable ASCII without a backslash, copied as it is (every sink names
	 * functions and tasks through here); the rest in escape_c's form */
	for (; i < max && n < len - 1; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c >= 0x7f || c == '\\')
			break;
		buf[n++] = (char)c;
	}
	if (i < max && s[i] && n < len - 1)
		n += escape_with(buf + n, len - n, s + i, max - i, escape_c);
	buf[n] = 0;
	return n;
}

size_t escape_json(char *buf, size_t len, const char *s, size_t max)
{
	return escape_with(buf, len, s, max, escape_json_c);
}

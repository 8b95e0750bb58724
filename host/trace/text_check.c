#include "host/trace/text_check.h"

#include <stdint.h>

/* The length of the valid UTF-8 sequence of a printable character at @p (@n bytes left), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	uint32_t cp;
	size_t len;

	if (p[0] < 0xc2 || p[0] > 0xf4) /* continuation bytes, overlong 2-byte leads, > U+10FFFF */
		return 0;
	len = p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : 4;
	if (n < len)
		return 0;
	cp = p[0] & (0xff >> (len + 1));
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
		return 0; /* overlong, out of range, a surrogate, a C1 control */
	return len;
}

size_t text_unsafe_at(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		size_t len;

		if (p[i] == '\t' || (p[i] >= 0x20 && p[i] < 0x7f)) {
			i++;
			continue;
		}
		len = p[i] >= 0x80 ? utf8_len(p + i, n - i) : 0;
		if (!len)
			return i;
		i += len;
	}
	return n;
}

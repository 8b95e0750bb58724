#include "host/trace/escape.h"

#include <string.h>

size_t escape_str(char *buf, size_t len, const char *s, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	if (!len)
		return 0;
	for (size_t i = 0; i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		char e[4];
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
		if (n + k > len - 1)
			break;
		memcpy(buf + n, e, k);
		n += k;
	}
	buf[n] = 0;
	return n;
}

size_t escape_json(char *buf, size_t len, const char *s, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	if (!len)
		return 0;
	for (size_t i = 0; i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		char e[6];
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
		if (n + k > len - 1)
			break;
		memcpy(buf + n, e, k);
		n += k;
	}
	buf[n] = 0;
	return n;
}

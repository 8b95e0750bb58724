/* JSON scanning for the QMP client: message ends, members, string literals (no JSON library). */
#include "host/qemu/qmp_json.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

size_t qmp_json_skip_ws(const char *s, size_t i, size_t len)
{
	while (i < len && is_ws(s[i]))
		i++;
	return i;
}

/* End (index past the closing quote) of the string starting at s[i] == '"', 0 if unterminated. */
static size_t string_end(const char *s, size_t i, size_t len)
{
	for (i++; i < len; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return 0;
}

size_t qmp_json_bracket_scan(const char *s, size_t len, struct qmp_json_scan *st)
{
	for (size_t i = st->at; i < len; i++) {
		char c = s[i];

		if (st->in_string) {
			if (st->escape)
				st->escape = false;
			else if (c == '\\')
				st->escape = true;
			else if (c == '"')
				st->in_string = false;
		} else if (c == '"') {
			st->in_string = true;
		} else if (c == '{' || c == '[') {
			st->depth++;
		} else if ((c == '}' || c == ']') && --st->depth == 0) {
			*st = (struct qmp_json_scan){0};
			return i + 1;
		}
	}
	st->at = len;
	return 0;
}

/* End of the value starting at s[i]: string, object/array (balanced), or literal. 0 if incomplete.
 */
static size_t value_end(const char *s, size_t i, size_t len)
{
	struct qmp_json_scan st = {0};
	size_t n;

	if (i >= len)
		return 0;
	if (s[i] == '"')
		return string_end(s, i, len);
	if (s[i] != '{' && s[i] != '[') {
		size_t j = i;

		while (j < len && !is_ws(s[j]) && s[j] != ',' && s[j] != '}' && s[j] != ']')
			j++;
		return j > i ? j : 0;
	}
	n = qmp_json_bracket_scan(s + i, len - i, &st);
	return n ? i + n : 0;
}

ssize_t qmp_json_object_end(const char *s, size_t len)
{
	if (len == 0)
		return 0;
	if (s[0] != '{')
		return -EPROTO;
	return (ssize_t)value_end(s, 0, len);
}

int qmp_json_member(const char *obj, size_t len, const char *key, const char **val, size_t *vlen)
{
	size_t klen = strlen(key), i;

	if (len == 0 || obj[0] != '{')
		return -EPROTO;
	i = qmp_json_skip_ws(obj, 1, len);
	if (i < len && obj[i] == '}')
		return -ENOENT;
	while (i < len) {
		size_t ks, ke, vs, ve;

		if (obj[i] != '"')
			return -EPROTO;
		ks = i;
		ke = string_end(obj, i, len);
		if (!ke)
			return -EPROTO;
		i = qmp_json_skip_ws(obj, ke, len);
		if (i >= len || obj[i] != ':')
			return -EPROTO;
		vs = qmp_json_skip_ws(obj, i + 1, len);
		ve = value_end(obj, vs, len);
		if (!ve)
			return -EPROTO;
		if (ke - ks - 2 == klen && !memcmp(obj + ks + 1, key, klen)) {
			*val = obj + vs;
			*vlen = ve - vs;
			return 0;
		}
		i = qmp_json_skip_ws(obj, ve, len);
		if (i < len && obj[i] == '}')
			return -ENOENT;
		if (i >= len || obj[i] != ',')
			return -EPROTO;
		i = qmp_json_skip_ws(obj, i + 1, len);
	}
	return -EPROTO;
}

static int hex4(const char *s, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -EPROTO;
		*v = *v << 4 | d;
	}
	return 0;
}

static int json_string(const char *val, size_t vlen, char *out, size_t outlen)
{
	size_t o = 0;

	if (vlen < 2 || val[0] != '"' || val[vlen - 1] != '"' || string_end(val, 0, vlen) != vlen)
		return -EPROTO;
	if (outlen == 0)
		return -ENOSPC;
	for (size_t i = 1; i < vlen - 1; i++) {
		char c = val[i], enc[4];
		size_t n = 1;

		if (c == '\\') {
			c = val[++i];
			switch (c) {
			case '"':
			case '\\':
			case '/':
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'n':
				c = '\n';
				break;
			case 'r':
				c = '\r';
				break;
			case 't':
				c = '\t';
				break;
			case 'u': {
				unsigned cp, lo;

				if (i + 4 >= vlen - 1 || hex4(val + i + 1, &cp))
					return -EPROTO;
				i += 4;
				if (cp >= 0xd800 && cp < 0xdc00 && i + 6 < vlen - 1 &&
				    val[i + 1] == '\\' && val[i + 2] == 'u' &&
				    !hex4(val + i + 3, &lo) && lo >= 0xdc00 && lo < 0xe000) {
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					i += 6;
				}
				if (cp < 0x80) {
					enc[0] = (char)cp;
				} else if (cp < 0x800) {
					enc[0] = (char)(0xc0 | cp >> 6);
					enc[1] = (char)(0x80 | (cp & 0x3f));
					n = 2;
				} else if (cp < 0x10000) {
					enc[0] = (char)(0xe0 | cp >> 12);
					enc[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
					enc[2] = (char)(0x80 | (cp & 0x3f));
					n = 3;
				} else {
					enc[0] = (char)(0xf0 | cp >> 18);
					enc[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
					enc[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
					enc[3] = (char)(0x80 | (cp & 0x3f));
					n = 4;
				}
				if (o + n >= outlen)
					return -ENOSPC;
				memcpy(out + o, enc, n);
				o += n;
				continue;
			}
			default:
				return -EPROTO;
			}
		}
		if (o + 1 >= outlen)
			return -ENOSPC;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

/* Found by fuzzing: a string that failed half-way was left unterminated (qmp_hmp then printed
 * past its buffer). */
int qmp_json_string(const char *val, size_t vlen, char *out, size_t outlen)
{
	int rc = json_string(val, vlen, out, outlen);

	if (rc < 0 && outlen)
		out[0] = '\0';
	return rc;
}

ssize_t qmp_json_quote(const char *s, char *out, size_t outlen)
{
	size_t o = 0;

	if (outlen < 3)
		return -ENOSPC;
	out[o++] = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];
		size_t n;

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			n = 2;
		} else if (c < 0x20) {
			n = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", c);
		} else {
			esc[0] = (char)c;
			n = 1;
		}
		if (o + n + 2 > outlen)
			return -ENOSPC;
		memcpy(out + o, esc, n);
		o += n;
	}
	out[o++] = '"';
	out[o] = '\0';
	return (ssize_t)o;
}

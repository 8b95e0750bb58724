/* The few JSON scanners QMP needs (no JSON library): where a message ends (also across reads), a
 * top-level member, a string literal decoded, a string quoted. Pure functions on the caller's
 * buffers; any thread. The text is a peer's: every scan is bounded by its length. */
#ifndef HVT_QMP_JSON_H
#define HVT_QMP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* How far bracket scanning of an incomplete message got. */
struct qmp_json_scan {
	size_t at;	/* bytes scanned */
	unsigned depth; /* brackets open */
	bool in_string, escape;
};

/* Length of the balanced JSON object that starts at @s[0] == '{' (strings and escapes honoured), 0
 * when @len bytes do not complete it yet, -EPROTO when @s does not start with '{'. */
ssize_t qmp_json_object_end(const char *s, size_t len);

/* Finds top-level member @key of the object @obj (@len bytes) and points *@val, *@vlen at its value
 * text (a string keeps its quotes). 0, -ENOENT, or -EPROTO when @obj is malformed. */
int qmp_json_member(const char *obj, size_t len, const char *key, const char **val, size_t *vlen);

/* Decodes the JSON string literal @val (with quotes; \uXXXX to UTF-8) into @out, NUL-terminated
 * ("" on failure). 0, -ENOSPC, or -EPROTO when @val is not a string. */
int qmp_json_string(const char *val, size_t vlen, char *out, size_t outlen);

/* Writes @s as a JSON string literal, quotes included, into @out. Length, or -ENOSPC. */
ssize_t qmp_json_quote(const char *s, char *out, size_t outlen);

/* Index of the first byte at or after @i in @s (@len bytes) that is no JSON whitespace. */
size_t qmp_json_skip_ws(const char *s, size_t i, size_t len);

/* Length of the object or array at @s[0] once @len bytes complete it, else 0 with *@st saying how
 * far it got: scanning goes on from there when more bytes have come (a message in many pieces is
 * scanned once). Iterative: any nesting depth. */
size_t qmp_json_bracket_scan(const char *s, size_t len, struct qmp_json_scan *st);

#endif

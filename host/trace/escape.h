/* Text output of bytes a guest (or any peer) supplied: task names, string arguments, symbol names.
 * Every byte that is not printable ASCII is escaped the way `strace -x` prints it, so no such byte
 * can start a line of its own or reach a terminal as a control sequence. */
#ifndef HVT_ESCAPE_H
#define HVT_ESCAPE_H

#include <stddef.h>

/* Room for the escaped form of @n bytes (each at most 4 characters) and the NUL. */
#define ESCAPE_SIZE(n) (4 * (n) + 1)

/* Writes the bytes of @s up to its first NUL or @max bytes into @buf: printable ASCII as it is, `\`
 * as `\\`, tab, newline and carriage return as `\t`, `\n`, `\r`, every other byte as `\xHH`. At
 * most
 * @len - 1 characters, NUL-terminated when @len > 0; an escape that does not fit is left out whole.
 * Returns the length written. Pure; any thread. */
size_t escape_str(char *buf, size_t len, const char *s, size_t max);

/* Room for the JSON-escaped form of @n bytes (each at most 6 characters) and the NUL. */
#define ESCAPE_JSON_SIZE(n) (6 * (n) + 1)

/* The inside of a JSON string for the bytes of @s up to its first NUL or @max bytes: printable
 * ASCII as it is, `"` and `\` as `\"` and `\\`, every other byte (controls, DEL, and each byte
 * >= 0x80, valid UTF-8 or not) as `\u00XX`, its Latin-1 reading: the result is pure ASCII, valid
 * JSON whatever the bytes, and each byte value can be read back. At most @len - 1 characters,
 * NUL-terminated when @len > 0; an escape that does not fit is left out whole. Returns the length
 * written. Pure; any thread. */
size_t escape_json(char *buf, size_t len, const char *s, size_t max);

#endif

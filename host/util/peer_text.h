/* Bytes a peer sent (QMP and HMP text, gdbstub packets, libvirt's and virsh's messages, QEMU's
 * stderr, a target process's command line), shown inside hvtrace's own lines: the one escaping
 * every such byte goes through before it reaches a terminal, so a peer can neither start a line of
 * its own nor send a terminal control sequence. */
#ifndef HVT_PEER_TEXT_H
#define HVT_PEER_TEXT_H

#include <stddef.h>

/* Up to @outlen - 1 characters (@outlen >= 16) showing the @len bytes at @p: printable ASCII as it
 * is, `\` as `\\`, newline, carriage return and tab as `\n`, `\r`, `\t`, any other byte (NUL,
 * ESC, DEL, each byte >= 0x80) as `\xNN`; when they do not all fit, the escaped head that fits
 * followed by "...(N bytes)". Returns @out. Pure; any thread. */
const char *peer_text(const void *p, size_t len, char *out, size_t outlen);

/* peer_text of the NUL-terminated @s. */
const char *peer_str(const char *s, char *out, size_t outlen);

#endif

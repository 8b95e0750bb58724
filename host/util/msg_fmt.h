/* Error messages formatted into a caller's buffer (the one-line reasons every layer hands up): when
 * the whole does not fit, the values it echoes (its %s arguments, longest first) are shortened,
 * never the words around them, so a 100 KB glob or path cannot push the reason out of the line. */
#ifndef HVT_MSG_FMT_H
#define HVT_MSG_FMT_H

#include <stdarg.h>
#include <stddef.h>

/* Shortest and longest head a shortened value keeps (bytes), before its "...(N bytes)". */
#define MSG_VALUE_KEEP 48
#define MSG_VALUE_HEAD 200

/* printf @fmt into @buf (@len bytes, NUL-terminated when @len > 0), as snprintf does when it fits;
 * when it does not, each %s value, the longest first, is cut to a head (what room allows, between
 * MSG_VALUE_KEEP and MSG_VALUE_HEAD bytes, never inside a UTF-8 character) followed by
 * "...(N bytes)" (N its whole length) until the message fits; only if it still does not is its end
 * cut. Returns the length written. Allocates nothing; any thread. */
size_t msg_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* msg_fmt over a va_list. */
size_t msg_vfmt(char *buf, size_t len, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif

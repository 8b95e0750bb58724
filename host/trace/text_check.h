/* Whether bytes from a file or a peer are plain text that may reach a terminal as they are: no
 * control character (C0 but tab, DEL, C1) and nothing but valid UTF-8. What is not is escaped
 * (escape.h) or refused, never printed raw. */
#ifndef HVT_TEXT_CHECK_H
#define HVT_TEXT_CHECK_H

#include <stddef.h>

/* The offset of the first byte of @s (@n bytes) that is not plain text: a control character other
 * than tab (a C0 byte, DEL, or a C1 control U+0080..U+009F in UTF-8), or a byte that is no part of
 * a valid UTF-8 sequence (overlong forms, surrogates and values above U+10FFFF included); @n when
 * there is none. Pure; any thread. */
size_t text_unsafe_at(const char *s, size_t n);

#endif

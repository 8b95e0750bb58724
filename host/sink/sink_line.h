/* A line built in a bounded buffer without printf, for the sinks that format every event (the
 * function text, JSON Lines): @n counts what snprintf would have written, the buffer holds what
 * fits, always terminated. Static inline: the writer thread's hot path. */
#ifndef HVT_SINK_LINE_H
#define HVT_SINK_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct line {
	char *buf;
	size_t len, n;
};

static inline void put_mem(struct line *l, const char *p, size_t k)
{
	if (l->n < l->len) {
		size_t room = l->len - 1 - l->n;

		memcpy(l->buf + l->n, p, k < room ? k : room);
	}
	l->n += k;
}

static inline void put_spaces(struct line *l, size_t k)
{
	static const char spaces[] = "                ";

	while (k) {
		size_t c = k < sizeof(spaces) - 1 ? k : sizeof(spaces) - 1;

		put_mem(l, spaces, c);
		k -= c;
	}
}

/* @v in decimal, at least @digits digits (zero-padded), right-aligned in @width (space-padded) or
 * left-aligned in -@width. */
static inline void put_dec(struct line *l, bool neg, uint64_t v, unsigned digits, int width)
{
	char d[24];
	size_t k = 0, len;

	do {
		d[sizeof(d) - 1 - k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (k < digits && k < sizeof(d) - 1)
		d[sizeof(d) - 1 - k++] = '0';
	if (neg)
		d[sizeof(d) - 1 - k++] = '-';
	len = k;
	if (width > 0 && (size_t)width > len)
		put_spaces(l, (size_t)width - len);
	put_mem(l, d + sizeof(d) - k, k);
	if (width < 0 && (size_t)-width > len)
		put_spaces(l, (size_t)-width - len);
}

static inline void put_end(struct line *l)
{
	if (l->len)
		l->buf[l->n < l->len ? l->n : l->len - 1] = 0;
}

#endif

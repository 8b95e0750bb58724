#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#define MSG_PIECES 48	/* literal runs and conversions of one format */
#define MSG_ARENA  2048 /* the text of its conversions other than %s */
#define MSG_SPEC   48	/* one conversion's own format */

/* One piece of the message: literal text of the format, a converted argument, or a %s value. */
struct piece {
	const char *s;
	size_t len;  /* bytes of s shown */
	size_t full; /* a value's whole length (len < full: shortened) */
	size_t pad;  /* a %s value's width padding (spaces) */
	int left;    /* the padding goes after it ('-') */
	int value;   /* a %s argument: may be shortened */
};

/* "...(N bytes)" after a value cut from @full bytes: its length (written to @m when not NULL). */
static size_t mark_len(size_t full, char *m, size_t mlen)
{
	char tmp[40];

	return (size_t)snprintf(m ? m : tmp, m ? mlen : sizeof(tmp), "...(%zu bytes)", full);
}

static size_t shown(const struct piece *p)
{
	size_t n = p->len + p->pad;

	if (p->value && p->len < p->full)
		n += mark_len(p->full, NULL, 0);
	return n;
}

/* A head of @n bytes of @s that does not end inside a UTF-8 sequence. */
static size_t utf8_head(const char *s, size_t n)
{
	size_t k = n;

	while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
		k--;
	return k ? k : n;
}

/* Splits @fmt into pieces, converting each argument. Returns the number of pieces, or -1 when the
 * format has more than MSG_PIECES pieces or an unknown conversion (then shown as it is). */
static int split(const char *fmt, va_list ap, struct piece *pc, char *arena, int saved_errno)
{
	size_t used = 0;
	int n = 0;

	for (const char *f = fmt; *f;) {
		if (n >= MSG_PIECES)
			return -1;
		if (*f != '%' || f[1] == '%') {
			const char *e = f;

			if (*f == '%') { /* "%%": one '%' */
				pc[n++] = (struct piece){.s = "%", .len = 1};
				f += 2;
				continue;
			}
			while (*e && *e != '%')
				e++;
			pc[n++] = (struct piece){.s = f, .len = (size_t)(e - f)};
			f = e;
			continue;
		}
		/* %[flags][width][.precision][length]conversion */
		char spec[MSG_SPEC];
		size_t sl = 0;
		int width = -1, prec = -1, left = 0, lng = 0, sz = 0, mx = 0, pd = 0, ld = 0;

		f++;

		spec[sl++] = '%';
		while (*f && strchr("-+ #0'I", *f)) {
			if (*f == '-')
				left = 1;
			else if (sl < MSG_SPEC - 24)
				spec[sl++] = *f;
			f++;
		}
		if (*f == '*') {
			width = va_arg(ap, int);
			if (width < 0) {
				left = 1;
				width = -width;
			}
			f++;
		} else if (*f >= '0' && *f <= '9') {
			width = 0;
			while (*f >= '0' && *f <= '9')
				width = width * 10 + (*f++ - '0');
		}
		if (*f == '.') {
			f++;
			prec = 0;
			if (*f == '*') {
				prec = va_arg(ap, int);
				f++;
			} else
				while (*f >= '0' && *f <= '9')
					prec = prec * 10 + (*f++ - '0');
		}
		if (width >= 0)
			sl += (size_t)snprintf(spec + sl, MSG_SPEC - sl, "%s%d", left ? "-" : "",
					       width);
		if (prec >= 0)
			sl += (size_t)snprintf(spec + sl, MSG_SPEC - sl, ".%d", prec);
		for (;; f++) {
			if (*f == 'l')
				lng++;
			else if (*f == 'h')
				;
			else if (*f == 'z' || *f == 'Z')
				sz = 1;
			else if (*f == 'j')
				mx = 1;
			else if (*f == 't')
				pd = 1;
			else if (*f == 'L' || *f == 'q')
				ld = 1;
			else
				break;
			if (sl < MSG_SPEC - 2)
				spec[sl++] = *f;
		}
		char conv = *f;

		if (!conv)
			return -1;
		f++;
		spec[sl++] = conv;
		spec[sl] = '\0';
		if (conv == 's' || conv == 'm') {
			const char *s =
			    conv == 'm' ? strerror(saved_errno) : va_arg(ap, const char *);
			size_t len;

			if (!s)
				s = "(null)";
			len = prec >= 0 ? strnlen(s, (size_t)prec) : strlen(s);
			pc[n++] = (struct piece){
			    .s = s,
			    .len = len,
			    .full = len,
			    .pad = width > 0 && (size_t)width > len ? (size_t)width - len : 0,
			    .left = left,
			    .value = conv == 's'};
			continue;
		}
		char *out = arena + used;
		size_t room = MSG_ARENA - used;
		int k;

		switch (conv) {
		case 'd':
		case 'i':
			if (mx)
				k = snprintf(out, room, spec, va_arg(ap, intmax_t));
			else if (sz)
				k = snprintf(out, room, spec, va_arg(ap, ssize_t));
			else if (pd)
				k = snprintf(out, room, spec, va_arg(ap, ptrdiff_t));
			else if (lng >= 2 || ld)
				k = snprintf(out, room, spec, va_arg(ap, long long));
			else if (lng == 1)
				k = snprintf(out, room, spec, va_arg(ap, long));
			else
				k = snprintf(out, room, spec, va_arg(ap, int));
			break;
		case 'o':
		case 'u':
		case 'x':
		case 'X':
			if (mx)
				k = snprintf(out, room, spec, va_arg(ap, uintmax_t));
			else if (sz)
				k = snprintf(out, room, spec, va_arg(ap, size_t));
			else if (pd)
				k = snprintf(out, room, spec, va_arg(ap, ptrdiff_t));
			else if (lng >= 2 || ld)
				k = snprintf(out, room, spec, va_arg(ap, unsigned long long));
			else if (lng == 1)
				k = snprintf(out, room, spec, va_arg(ap, unsigned long));
			else
				k = snprintf(out, room, spec, va_arg(ap, unsigned int));
			break;
		case 'e':
		case 'E':
		case 'f':
		case 'F':
		case 'g':
		case 'G':
		case 'a':
		case 'A':
			if (ld)
				k = snprintf(out, room, spec, va_arg(ap, long double));
			else
				k = snprintf(out, room, spec, va_arg(ap, double));
			break;
		case 'c':
			k = snprintf(out, room, spec, va_arg(ap, int));
			break;
		case 'p':
			k = snprintf(out, room, spec, va_arg(ap, void *));
			break;
		default: /* %n and what this does not know: shown as written, nothing consumed after
			  */
			return -1;
		}
		if (k < 0)
			k = 0;
		if ((size_t)k >= room)
			k = room ? (int)room - 1 : 0;
		pc[n++] = (struct piece){.s = out, .len = (size_t)k};
		used += (size_t)k + (room ? 1 : 0);
	}
	return n;
}

size_t msg_vfmt(char *buf, size_t len, const char *fmt, va_list ap)
{
	struct piece pc[MSG_PIECES];
	char arena[MSG_ARENA];
	int saved_errno = errno, n;
	size_t total = 0, o = 0;
	va_list aq;

	if (!len)
		return 0;
	va_copy(aq, ap);
	n = split(fmt, aq, pc, arena, saved_errno);
	va_end(aq);
	if (n < 0) { /* a format this cannot take apart: as snprintf does */
		int k = vsnprintf(buf, len, fmt, ap);

		errno = saved_errno;
		return k < 0 ? 0 : (size_t)k >= len ? len - 1 : (size_t)k;
	}
	for (int i = 0; i < n; i++)
		total += shown(&pc[i]);
	/* too long: cut the longest value that can still give, then the next */
	while (total > len - 1) {
		int best = -1;

		for (int i = 0; i < n; i++)
			if (pc[i].value &&
			    pc[i].len > MSG_VALUE_KEEP + mark_len(pc[i].full, NULL, 0) &&
			    (best < 0 || pc[i].len > pc[best].len))
				best = i;
		if (best < 0)
			break;
		size_t before = shown(&pc[best]), excess = total - (len - 1);
		size_t mark = mark_len(pc[best].full, NULL, 0), pad = pc[best].pad;
		size_t target = before > excess + pad ? before - excess - pad : 0;
		/* what the value keeps: the room left for it, at least MSG_VALUE_KEEP bytes */
		size_t keep = target > mark ? target - mark : 0;

		if (keep > MSG_VALUE_HEAD)
			keep = MSG_VALUE_HEAD;
		if (keep < MSG_VALUE_KEEP)
			keep = MSG_VALUE_KEEP;
		pc[best].len = utf8_head(pc[best].s, keep);
		total = total - before + shown(&pc[best]);
	}
	for (int i = 0; i < n && o < len - 1; i++) {
		char m[40];
		size_t k, room;

		if (pc[i].pad && !pc[i].left)
			for (size_t j = 0; j < pc[i].pad && o < len - 1; j++)
				buf[o++] = ' ';
		room = len - 1 - o;
		k = pc[i].len < room ? pc[i].len : room;
		memcpy(buf + o, pc[i].s, k);
		o += k;
		if (pc[i].value && pc[i].len < pc[i].full) {
			size_t ml = mark_len(pc[i].full, m, sizeof(m));

			room = len - 1 - o;
			k = ml < room ? ml : room;
			memcpy(buf + o, m, k);
			o += k;
		}
		if (pc[i].pad && pc[i].left)
			for (size_t j = 0; j < pc[i].pad && o < len - 1; j++)
				buf[o++] = ' ';
	}
	buf[o] = '\0';
	errno = saved_errno;
	return o;
}

size_t msg_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	n = msg_vfmt(buf, len, fmt, ap);
	va_end(ap);
	return n;
}

#include "host/session/session_file.h"
#include "host/trace/escape.h"
#include "host/trace/text_check.h"
#include "vmi/vmi_file.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The option of @opts named @name (@len bytes): an exact match, else the one option it abbreviates
 * (getopt_long's rule); NULL when none or ambiguous. */
static const struct option *find_long(const struct option *opts, const char *name, size_t len,
				      bool exact_only)
{
	const struct option *hit = NULL;
	size_t hits = 0;

	for (const struct option *o = opts; o->name; o++) {
		if (strncmp(o->name, name, len))
			continue;
		if (strlen(o->name) == len)
			return o;
		hit = o;
		hits++;
	}
	return !exact_only && hits == 1 ? hit : NULL;
}

static int add_word(struct session_words *w, size_t *cap, char *word)
{
	if ((size_t)w->argc + 2 > *cap) {
		size_t n = *cap ? *cap * 2 : 16;
		char **v = realloc(w->argv, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->argv = v;
		*cap = n;
	}
	w->argv[w->argc++] = word;
	w->argv[w->argc] = NULL;
	return 0;
}

/* Takes @word (malloc'd) into @w as a word made from @file line @line. */
static int add_owned(struct session_words *w, size_t *cap, char *word, const char *file,
		     unsigned line)
{
	char **o = realloc(w->owned, (w->nr_owned + 1) * sizeof(*o));
	struct session_origin *g;

	if (!o) {
		free(word);
		return -ENOMEM;
	}
	w->owned = o;
	g = realloc(w->origin, (w->nr_owned + 1) * sizeof(*g));
	if (!g) {
		free(word);
		return -ENOMEM;
	}
	w->origin = g;
	o[w->nr_owned] = word;
	g[w->nr_owned] = (struct session_origin){.file = file, .line = line};
	w->nr_owned++;
	return add_word(w, cap, word);
}

/* The whole of @path ("-": standard input), at most SESSION_FILE_MAX_SIZE bytes, in *@buf
 * (malloc'd, NUL-terminated; *@len excludes the terminator). */
static int read_all(const char *path, const char *name, char **buf, size_t *len, char *err,
		    size_t errlen)
{
	bool own = strcmp(path, "-") != 0;
	/* a FIFO, a directory or a device is refused before a byte is read (standard input is read
	 * as it comes) */
	int fd =
	    own ? vmi_file_open("--session", path, SESSION_FILE_MAX_SIZE, NULL, err, errlen) : 0;
	int ret = -EINVAL;
	size_t n = 0, cap = 4096;
	char *b;

	if (fd < 0)
		return -EINVAL;
	b = malloc(cap);
	if (!b)
		goto nomem;
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			char *nb;

			if (cap > SESSION_FILE_MAX_SIZE) {
				msg_fmt(err, errlen, "%s: larger than %u bytes", name,
					SESSION_FILE_MAX_SIZE);
				goto fail;
			}
			nb = realloc(b, cap * 2);
			if (!nb)
				goto nomem;
			b = nb;
			cap *= 2;
		}
		r = read(fd, b + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			msg_fmt(err, errlen, "--session %s: %s", path, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > SESSION_FILE_MAX_SIZE) {
		msg_fmt(err, errlen, "%s: larger than %u bytes", name, SESSION_FILE_MAX_SIZE);
		goto fail;
	}
	if (own)
		close(fd);
	b[n] = 0;
	*buf = b;
	*len = n;
	return 0;
nomem:
	msg_fmt(err, errlen, "out of memory");
	ret = -ENOMEM;
fail:
	free(b);
	if (own)
		close(fd);
	return ret;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Whether the @n bytes at @p start with a control character: C0, DEL, or C1 in UTF-8. */
static bool control_at(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;

	return u[0] < 0x20 || u[0] == 0x7f ||
	       (u[0] == 0xc2 && n > 1 && u[1] >= 0x80 && u[1] <= 0x9f);
}

/* One line (@p, @n bytes, no newline) of session file @name: nothing for a blank or comment line,
 * else one "--name[=value]" word added to @w. */
static int parse_line(struct session_words *w, size_t *cap, const struct option *opts,
		      const char *name, unsigned line, const char *p, size_t n, char *err,
		      size_t errlen)
{
	const char *end = p + n, *key, *val;
	const struct option *o;
	size_t klen, vlen;
	char *word;

	if (memchr(p, 0, n)) {
		msg_fmt(err, errlen, "%s:%u: a NUL byte in the line", name, line);
		return -EINVAL;
	}
	if (n > SESSION_FILE_MAX_LINE) {
		msg_fmt(err, errlen, "%s:%u: line longer than %u bytes", name, line,
			SESSION_FILE_MAX_LINE);
		return -EINVAL;
	}
	/* text only (a CRLF line's CR aside): no byte of the file can reach a terminal as a control
	 * sequence through any message that echoes a value of it */
	size_t text = n && p[n - 1] == '\r' ? n - 1 : n, bad = text_unsafe_at(p, text);

	if (bad < text) {
		char b[ESCAPE_SIZE(1)];

		escape_str(b, sizeof(b), p + bad, 1);
		msg_fmt(err, errlen, "%s:%u: byte %s at column %zu: %s (session files are text)",
			 name, line, b, bad + 1,
			 control_at(p + bad, text - bad) ? "a control character"
							 : "not UTF-8 text");
		return -EINVAL;
	}
	while (p < end && blank(*p))
		p++;
	while (end > p && blank(end[-1]))
		end--;
	if (p == end || *p == '#')
		return 0;
	if (end - p > 2 && p[0] == '-' && p[1] == '-')
		p += 2; /* "--tracer x" copied from a command line */
	key = p;
	while (p < end && !blank(*p) && *p != '=')
		p++;
	klen = (size_t)(p - key);
	while (p < end && blank(*p))
		p++;
	if (p < end && *p == '=')
		for (p++; p < end && blank(*p); p++)
			;
	val = p;
	vlen = (size_t)(end - p);
	/* one pair of quotes around the whole value, as a shell would strip them; nothing inside */
	if (vlen >= 2 && (val[0] == '\'' || val[0] == '"') && val[vlen - 1] == val[0]) {
		val++;
		vlen -= 2;
	}
	o = find_long(opts, key, klen, true);
	if (klen == 7 && !strncmp(key, "session", 7)) {
		msg_fmt(err, errlen,
			"%s:%u: 'session' in a session file (session files do not nest)", name,
			 line);
		return -EINVAL;
	}
	if (!o || !strcmp(o->name, "help")) {
		char shown[ESCAPE_SIZE(64)];

		escape_str(shown, sizeof(shown), key, klen > 64 ? 64 : klen);
		msg_fmt(err, errlen, "%s:%u: unknown option '%s'", name, line, shown);
		return -EINVAL;
	}
	if (o->has_arg == required_argument && !vlen) {
		msg_fmt(err, errlen, "%s:%u: option '%s' needs a value", name, line, o->name);
		return -EINVAL;
	}
	if (o->has_arg == no_argument && vlen) {
		msg_fmt(err, errlen, "%s:%u: option '%s' takes no value", name, line, o->name);
		return -EINVAL;
	}
	if (asprintf(&word, "--%s%s%.*s", o->name, o->has_arg == no_argument ? "" : "=", (int)vlen,
		     val) < 0) {
		msg_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return add_owned(w, cap, word, name, line);
}

/* Adds the options of session file @path to @w. */
static int expand_file(struct session_words *w, size_t *cap, const struct option *opts,
		       const char *path, char *err, size_t errlen)
{
	const char *name = strcmp(path, "-") ? path : "<stdin>";
	char *buf, *p, *end;
	unsigned line = 0;
	size_t len;
	int ret;

	ret = read_all(path, name, &buf, &len, err, errlen);
	if (ret < 0)
		return ret;
	end = buf + len;
	p = buf;
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		p += 3; /* a UTF-8 byte order mark, as some editors write one: not part of line 1 */
	while (p < end && ret == 0) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		ret = parse_line(w, cap, opts, name, ++line, p, n, err, errlen);
		p += n + 1;
	}
	free(buf);
	return ret;
}

/* Whether short option @c takes an argument in @shortopts. */
static bool short_takes_arg(const char *shortopts, char c)
{
	const char *p = c != ':' ? strchr(shortopts, c) : NULL;

	return p && p[1] == ':';
}

int session_expand(int argc, char **argv, const struct option *opts, const char *shortopts,
		   struct session_words *w, char *err, size_t errlen)
{
	size_t cap = 0;
	bool stdin_read = false;
	int ret = 0;

	memset(w, 0, sizeof(*w));
	ret = add_word(w, &cap, argc > 0 ? argv[0] : NULL);
	for (int i = 1; i < argc && ret == 0; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			for (; i < argc && ret == 0; i++)
				ret = add_word(w, &cap, argv[i]);
			break;
		}
		if (a[0] == '-' && a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			const struct option *o = find_long(opts, a + 2, len, false);
			const char *file;

			if (o && !strcmp(o->name, "session")) {
				file = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
				if (!file || !*file) {
					msg_fmt(err, errlen, "%s: missing argument", a);
					ret = -EINVAL;
					break;
				}
				if (!strcmp(file, "-") && stdin_read) {
					msg_fmt(err, errlen,
						"--session -: standard input given twice");
					ret = -EINVAL;
					break;
				}
				stdin_read |= !strcmp(file, "-");
				ret = expand_file(w, &cap, opts, file, err, errlen);
				continue;
			}
			ret = add_word(w, &cap, argv[i]);
			if (ret == 0 && o && o->has_arg == required_argument && !eq && i + 1 < argc)
				ret = add_word(w, &cap, argv[++i]);
			continue;
		}
		ret = add_word(w, &cap, argv[i]);
		if (a[0] != '-' || !a[1])
			continue;
		/* a group of short options: the first that takes an argument ends it, and takes the
		 * next word when it is the group's last character */
		for (const char *c = a + 1; *c && ret == 0; c++)
			if (short_takes_arg(shortopts, *c)) {
				if (!c[1] && i + 1 < argc)
					ret = add_word(w, &cap, argv[++i]);
				break;
			}
	}
	if (ret == -ENOMEM)
		msg_fmt(err, errlen, "out of memory");
	if (ret < 0)
		session_words_free(w);
	return ret;
}

const struct session_origin *session_words_origin(const struct session_words *w, const char *p)
{
	for (size_t i = 0; i < w->nr_owned; i++) {
		const char *s = w->owned[i];

		if (p >= s && p <= s + strlen(s))
			return &w->origin[i];
	}
	return NULL;
}

void session_words_free(struct session_words *w)
{
	struct session_words *older = w->older; /* the caller's */

	for (size_t i = 0; i < w->nr_owned; i++)
		free(w->owned[i]);
	free(w->owned);
	free(w->origin);
	free(w->argv);
	memset(w, 0, sizeof(*w));
	w->older = older;
}

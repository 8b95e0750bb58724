#include "host/qemu/qemu_cmdline.h"
#include "host/util/msg_fmt.h"
#include "host/util/peer_text.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MAX_CHARDEVS 64
#define MAX_MONITORS 16
#define VAL_MAX	     QEMU_ADDR_MAX

/* One -chardev: its id and, if QMP can connect to it, its address; else why not. */
struct chardev {
	char id[64];
	char addr[QEMU_ADDR_MAX];
	char why[96];
};

/* One monitor in command-line order: inline (-qmp DEV: addr/why) or by chardev id (-mon). */
struct monitor {
	bool control; /* QMP (not HMP) */
	bool by_id;
	char id[64];
	char addr[QEMU_ADDR_MAX];
	char why[96];
	char opt[24]; /* the option as given, for messages */
};

struct parse {
	struct chardev dev[MAX_CHARDEVS];
	unsigned nr_dev;
	struct monitor mon[MAX_MONITORS];
	unsigned nr_mon;
	bool readconfig;
};

/* Copies @src into @dst whole, or leaves @dst "" (an id cut short could match another). */
static void copy_whole(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	dst[0] = 0;
	if (n < len)
		memcpy(dst, src, n + 1);
}

/* ---- QemuOpts: "a,key=value,flag,key=va,,lue" ------------------------------------------------ */

/* One element of a QemuOpts string at *@s (up to @end): its key, and its value with ",," made ','.
 * A value (or key) that does not fit sets *@too_long. Returns false at the end. */
static bool next_opt(const char **s, const char *end, char *key, size_t klen, char *val,
		     size_t vlen, bool *has_val, bool *too_long)
{
	const char *p = *s;
	size_t k = 0, v = 0;

	*has_val = false;
	*too_long = false;
	if (p >= end)
		return false;
	while (p < end && *p != '=' && *p != ',') {
		if (k + 1 < klen)
			key[k++] = *p;
		else
			*too_long = true;
		p++;
	}
	key[k] = 0;
	if (p < end && *p == '=') {
		*has_val = true;
		p++;
		while (p < end) {
			if (*p == ',') {
				if (p + 1 < end && p[1] == ',')
					p++; /* ",," is a comma of the value */
				else
					break;
			}
			if (v + 1 < vlen)
				val[v++] = *p;
			else
				*too_long = true;
			p++;
		}
	}
	val[v] = 0;
	if (p < end && *p == ',')
		p++;
	*s = p;
	return true;
}

/* QemuOpts' booleans: a bare flag is on. */
static bool opt_on(bool has_val, const char *val)
{
	return !has_val || !strcmp(val, "on") || !strcmp(val, "yes") || !strcmp(val, "true") ||
	       !strcmp(val, "y");
}

/* HOST and PORT (HOST may be empty, or "[v6]") as a connectable "tcp:HOST:PORT", brackets dropped.
 */
static int tcp_addr(const char *host, const char *port, char *addr, size_t len)
{
	char h[72];
	size_t n = strlen(host);
	char *end;
	long p;

	errno = 0;
	p = strtol(port, &end, 10);
	if (!isdigit((unsigned char)port[0]) || *end || errno || p < 1 || p > 65535)
		return -EINVAL;
	if (n && host[0] == '[') {
		if (n < 3 || host[n - 1] != ']' || n - 2 >= sizeof(h))
			return -EINVAL;
		memcpy(h, host + 1, n - 2);
		h[n - 2] = 0;
	} else if (n < sizeof(h)) {
		memcpy(h, host, n + 1);
	} else {
		return -EINVAL;
	}
	for (const char *c = h; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr(".-:_", *c))
			return -EINVAL;
	/* a wildcard listens on loopback too */
	if (!h[0] || !strcmp(h, "0.0.0.0") || !strcmp(h, "localhost"))
		strcpy(h, "127.0.0.1");
	else if (!strcmp(h, "::"))
		strcpy(h, "::1");
	if ((size_t)snprintf(addr, len, "tcp:%s:%ld", h, p) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* A socket chardev's options after its backend word ("id=..,path=..,server=on"): the address to
 * connect to, or why there is none. Sets @id if given. */
static void socket_opts(const char *s, const char *end, char *id, size_t idlen, char *addr,
			size_t alen, char *why, size_t wlen, bool server_default)
{
	char key[32], val[VAL_MAX], path[VAL_MAX] = "", host[72] = "", port[16] = "";
	bool has_val, too_long, server = server_default, have_port = false, fd = false, bad = false;

	addr[0] = 0;
	while (next_opt(&s, end, key, sizeof(key), val, sizeof(val), &has_val, &too_long)) {
		if (too_long) {
			bad = true;
			continue;
		}
		if (!strcmp(key, "id") && id)
			copy_whole(id, idlen, val);
		else if (!strcmp(key, "path"))
			copy_whole(path, sizeof(path), val);
		else if (!strcmp(key, "host"))
			snprintf(host, sizeof(host), "%.*s", (int)sizeof(host) - 1, val);
		else if (!strcmp(key, "port")) {
			snprintf(port, sizeof(port), "%.*s", (int)sizeof(port) - 1, val);
			have_port = true;
		} else if (!strcmp(key, "fd"))
			fd = true;
		else if (!strcmp(key, "server"))
			server = opt_on(has_val, val);
		else if (!strcmp(key, "noserver"))
			server = false;
	}
	if (bad) {
		msg_fmt(why, wlen, "an option too long");
	} else if (fd) {
		msg_fmt(why, wlen, "a socket passed by fd (libvirt's own): attach by domain name");
	} else if (!server) {
		msg_fmt(why, wlen, "not a server (QEMU connects out)");
	} else if (path[0]) {
		if (strlen(path) > 107 || (size_t)snprintf(addr, alen, "unix:%s", path) >= alen) {
			addr[0] = 0;
			msg_fmt(why, wlen, "a unix socket path too long");
		}
	} else if (have_port) {
		if (tcp_addr(host, port, addr, alen) < 0) {
			addr[0] = 0;
			msg_fmt(why, wlen, "no valid tcp HOST:PORT");
		}
	} else {
		msg_fmt(why, wlen, "a socket with neither path nor port");
	}
}

/* A compat chardev spec ("unix:PATH,server=on", "tcp:HOST:PORT,...", "stdio", ...), as -qmp,
 * -monitor and -gdb take. @server: QEMU forces server mode on a TCP one (-gdb). */
static void compat_spec(const char *spec, char *addr, size_t alen, char *why, size_t wlen,
			bool server)
{
	const char *end = spec + strlen(spec);

	addr[0] = why[0] = 0;
	if (!strncmp(spec, "unix:", 5)) {
		char opts[VAL_MAX + 16];

		/* "unix:" implies the key "path" */
		if ((size_t)snprintf(opts, sizeof(opts), "path=%s", spec + 5) >= sizeof(opts)) {
			msg_fmt(why, wlen, "a unix socket path too long");
			return;
		}
		socket_opts(opts, opts + strlen(opts), NULL, 0, addr, alen, why, wlen, server);
	} else if (!strncmp(spec, "tcp:", 4)) {
		const char *hp = spec + 4, *comma = hp, *colon;
		char host[72], port[16];
		bool forced = server;

		while (comma < end && *comma != ',')
			comma++;
		colon = memrchr(hp, ':', (size_t)(comma - hp));
		if (!colon || (size_t)(colon - hp) >= sizeof(host) ||
		    (size_t)(comma - colon - 1) >= sizeof(port)) {
			msg_fmt(why, wlen, "no valid tcp HOST:PORT");
			return;
		}
		memcpy(host, hp, (size_t)(colon - hp));
		host[colon - hp] = 0;
		memcpy(port, colon + 1, (size_t)(comma - colon - 1));
		port[comma - colon - 1] = 0;
		/* the options after HOST:PORT: only "server" matters */
		{
			const char *o = *comma ? comma + 1 : comma;
			char key[32], val[16];
			bool has_val, too_long;

			while (!forced && next_opt(&o, end, key, sizeof(key), val, sizeof(val),
						   &has_val, &too_long))
				if (!strcmp(key, "server"))
					server = opt_on(has_val, val);
				else if (!strcmp(key, "noserver"))
					server = false;
		}
		if (!server)
			msg_fmt(why, wlen, "not a server (QEMU connects out)");
		else if (tcp_addr(host, port, addr, alen) < 0) {
			addr[0] = 0;
			msg_fmt(why, wlen, "no valid tcp HOST:PORT");
		}
	} else {
		size_t n = strcspn(spec, ":,");
		char kind[48];

		msg_fmt(why, wlen, "a '%s' chardev, not a socket",
			peer_text(spec, n > 24 ? 24 : n, kind, sizeof(kind)));
	}
}

/* ---- the options ------------------------------------------------------------------------------
 */

static struct monitor *new_monitor(struct parse *p, const char *opt, bool control)
{
	struct monitor *m;

	if (p->nr_mon >= MAX_MONITORS)
		return NULL;
	m = &p->mon[p->nr_mon++];
	memset(m, 0, sizeof(*m));
	m->control = control;
	snprintf(m->opt, sizeof(m->opt), "%s", opt);
	return m;
}

static void opt_chardev(struct parse *p, const char *val)
{
	const char *s = val, *end = val + strlen(val);
	char key[32], backend[32];
	bool has_val, too_long;
	struct chardev *d;

	if (p->nr_dev >= MAX_CHARDEVS)
		return;
	d = &p->dev[p->nr_dev];
	memset(d, 0, sizeof(*d));
	/* the backend comes first ("socket,id=..."); "backend=socket" says it too */
	if (!next_opt(&s, end, key, sizeof(key), backend, sizeof(backend), &has_val, &too_long))
		return;
	if (has_val && strcmp(key, "backend"))
		return; /* QEMU itself refuses a -chardev without a backend */
	if (!has_val)
		snprintf(backend, sizeof(backend), "%s", key);
	if (!strcmp(backend, "socket")) {
		socket_opts(s, end, d->id, sizeof(d->id), d->addr, sizeof(d->addr), d->why,
			    sizeof(d->why), false);
	} else {
		char v[VAL_MAX];

		while (next_opt(&s, end, key, sizeof(key), v, sizeof(v), &has_val, &too_long))
			if (!strcmp(key, "id") && !too_long)
				copy_whole(d->id, sizeof(d->id), v);
		snprintf(d->why, sizeof(d->why), "a '%s' chardev, not a socket", backend);
	}
	if (d->id[0])
		p->nr_dev++;
}

static void opt_mon(struct parse *p, const char *val)
{
	const char *s = val, *end = val + strlen(val);
	char key[32], v[64], id[64] = "";
	bool has_val, too_long, control = false, first = true;
	struct monitor *m;

	while (next_opt(&s, end, key, sizeof(key), v, sizeof(v), &has_val, &too_long)) {
		if (too_long)
			return;
		if (first && !has_val)
			copy_whole(id, sizeof(id), key); /* the implied "chardev" */
		else if (!strcmp(key, "chardev"))
			copy_whole(id, sizeof(id), v);
		else if (!strcmp(key, "mode"))
			control = !strcmp(v, "control");
		first = false;
	}
	if (!id[0])
		return;
	m = new_monitor(p, "-mon", control);
	if (!m)
		return;
	m->by_id = true;
	copy_whole(m->id, sizeof(m->id), id);
}

static void opt_qmp(struct parse *p, const char *opt, const char *val, bool control)
{
	struct monitor *m = new_monitor(p, opt, control);

	if (!m)
		return;
	/* "chardev:ID" names a -chardev; else the device is a chardev spec of its own */
	if (!strncmp(val, "chardev:", 8)) {
		m->by_id = true;
		copy_whole(m->id, sizeof(m->id), val + 8);
		return;
	}
	compat_spec(val, m->addr, sizeof(m->addr), m->why, sizeof(m->why), false);
}

int qemu_cmdline_tcp(const char *spec, char *host, size_t hlen, int *port)
{
	char addr[QEMU_ADDR_MAX], why[96];
	const char *colon;

	if (strncmp(spec, "tcp:", 4))
		return -EINVAL;
	compat_spec(spec, addr, sizeof(addr), why, sizeof(why), true);
	if (strncmp(addr, "tcp:", 4))
		return -EINVAL;
	colon = strrchr(addr, ':');
	if ((size_t)(colon - addr - 4) >= hlen)
		return -EINVAL;
	snprintf(host, hlen, "%.*s", (int)(colon - addr - 4), addr + 4);
	*port = atoi(colon + 1);
	return 0;
}

static void opt_gdb(struct qemu_cmdline *c, const char *dev)
{
	/* QEMU takes the last -gdb or -s; only a TCP one can be reused */
	if (qemu_cmdline_tcp(dev, c->gdb_host, sizeof(c->gdb_host), &c->gdb_port) < 0) {
		c->gdb_host[0] = 0;
		c->gdb_port = 0;
	}
}

static bool valid_uuid(const char *s)
{
	size_t n = strlen(s);

	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++)
		if (i == 8 || i == 13 || i == 18 || i == 23 ? s[i] != '-'
							    : !isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* The option @a as QEMU names it ("--qmp" is "-qmp"), or NULL if @a is not an option. */
static const char *option_name(const char *a)
{
	if (a[0] != '-')
		return NULL;
	return a[1] == '-' && a[2] ? a + 1 : a;
}

/* Fills @c->qmp from the first usable QMP monitor, or @c->why. */
static void resolve(struct parse *p, struct qemu_cmdline *c)
{
	const char *hmp = NULL;

	for (unsigned i = 0; i < p->nr_mon; i++) {
		struct monitor *m = &p->mon[i];
		const char *addr = m->addr, *why = m->why;

		if (m->by_id) {
			struct chardev *d = NULL;

			for (unsigned k = 0; k < p->nr_dev && !d; k++)
				if (!strcmp(p->dev[k].id, m->id))
					d = &p->dev[k];
			addr = d ? d->addr : "";
			why = d ? d->why : "no -chardev with that id";
		}
		if (!m->control) {
			if (!hmp)
				hmp = m->opt;
			continue;
		}
		if (addr[0]) {
			snprintf(c->qmp, sizeof(c->qmp), "%s", addr);
			c->why[0] = 0;
			return;
		}
		if (!c->why[0]) {
			char opt[160], id[80]; /* the target's own words, escaped */

			peer_str(m->opt, opt, sizeof(opt));
			if (m->by_id)
				msg_fmt(c->why, sizeof(c->why),
					"its QMP monitor (%s chardev %s): %s", opt,
					peer_str(m->id, id, sizeof(id)), why);
			else
				msg_fmt(c->why, sizeof(c->why), "its QMP monitor (%s): %s", opt,
					why);
		}
	}
	if (c->why[0])
		return;
	if (hmp)
		msg_fmt(c->why, sizeof(c->why),
			"its only monitor is a human one (%s, HMP); hvtrace needs QMP "
			"(-qmp unix:PATH,server=on,wait=off)",
			hmp);
	else if (p->readconfig)
		msg_fmt(c->why, sizeof(c->why),
			"no QMP monitor on its command line (hvtrace does not read -readconfig)");
}

void qemu_cmdline_parse(const char *buf, size_t len, struct qemu_cmdline *c)
{
	struct parse *p = calloc(1, sizeof(*p));
	const char *end = buf + len;
	/* one argument's copy, NUL-terminated and bounded */
	char *val = malloc(4096);

	memset(c, 0, sizeof(*c));
	if (!p || !val) {
		msg_fmt(c->why, sizeof(c->why), "out of memory");
		goto out;
	}
	for (const char *a = buf; a < end;) {
		size_t alen = strnlen(a, (size_t)(end - a));
		const char *next = a + alen + 1, *opt;
		size_t vlen;

		if (alen >= 64) { /* no option QEMU knows is this long */
			a = next;
			continue;
		}
		char name[64];

		memcpy(name, a, alen);
		name[alen] = 0;
		opt = option_name(name);
		a = next;
		if (!opt)
			continue;
		if (!strcmp(opt, "-s")) {
			opt_gdb(c, "tcp::1234");
			continue;
		}
		if (!strcmp(opt, "-readconfig"))
			p->readconfig = true;
		if (strcmp(opt, "-qmp") && strcmp(opt, "-qmp-pretty") && strcmp(opt, "-mon") &&
		    strcmp(opt, "-chardev") && strcmp(opt, "-monitor") && strcmp(opt, "-gdb") &&
		    strcmp(opt, "-uuid"))
			continue;
		/* the option's value: the next argument */
		if (a >= end)
			break;
		vlen = strnlen(a, (size_t)(end - a));
		next = a + vlen + 1;
		if (vlen < 4096) {
			memcpy(val, a, vlen);
			val[vlen] = 0;
			if (!strcmp(opt, "-qmp") || !strcmp(opt, "-qmp-pretty"))
				opt_qmp(p, opt, val, true);
			else if (!strcmp(opt, "-monitor") && strcmp(val, "none"))
				opt_qmp(p, opt, val, false); /* -monitor none: no monitor at all */
			else if (!strcmp(opt, "-mon"))
				opt_mon(p, val);
			else if (!strcmp(opt, "-chardev"))
				opt_chardev(p, val);
			else if (!strcmp(opt, "-gdb"))
				opt_gdb(c, val);
			else if (!strcmp(opt, "-uuid") && valid_uuid(val))
				snprintf(c->uuid, sizeof(c->uuid), "%s", val);
		}
		a = next;
	}
	resolve(p, c);
out:
	free(val);
	free(p);
}

int qemu_cmdline_read(pid_t pid, char **buf, size_t *len)
{
	char path[64];
	size_t n = 0, cap = 4096;
	char *b = malloc(cap);
	int fd, err;

	*buf = NULL;
	*len = 0;
	if (!b)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno == ENOENT ? -ESRCH : -errno;
		free(b);
		return err;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb;

			if (cap >= QEMU_CMDLINE_MAX)
				break;
			nb = realloc(b, cap * 2);
			if (!nb) {
				close(fd);
				free(b);
				return -ENOMEM;
			}
			b = nb;
			cap *= 2;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			close(fd);
			free(b);
			return err;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*buf = b;
	*len = n;
	return 0;
}

int qemu_cmdline_has_uuid(const char *buf, size_t len, const char *uuid)
{
	const char *end = buf + len;
	bool after_opt = false;

	for (const char *a = buf; a < end;) {
		size_t alen = strnlen(a, (size_t)(end - a));

		if (after_opt && alen == strlen(uuid) && !strncasecmp(a, uuid, alen))
			return 1;
		after_opt =
		    (alen == 5 && !memcmp(a, "-uuid", 5)) || (alen == 6 && !memcmp(a, "--uuid", 6));
		a += alen + 1;
	}
	return 0;
}

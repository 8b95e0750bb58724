#include "host/trace/hist_spec.h"
#include "host/trace/fevent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mod_names[] = {
    [HIST_MOD_NONE] = "",	    [HIST_MOD_EXECNAME] = "execname",	  [HIST_MOD_HEX] = "hex",
    [HIST_MOD_SYM] = "sym",	    [HIST_MOD_SYM_OFFSET] = "sym-offset", [HIST_MOD_LOG2] = "log2",
    [HIST_MOD_BUCKETS] = "buckets", [HIST_MOD_USECS] = "usecs",
};

static const struct {
	const char *name;
	enum hist_src src;
} builtin[] = {
    {"common_pid", HIST_SRC_PID},
    {"common_cpu", HIST_SRC_CPU},
    {"cpu", HIST_SRC_CPU},
    {"ip", HIST_SRC_IP},
    {"parent_ip", HIST_SRC_PARENT_IP},
    {"duration", HIST_SRC_DURATION},
    {"hitcount", HIST_SRC_HITCOUNT},
    {"stacktrace", HIST_SRC_STACKTRACE},
    {"common_stacktrace", HIST_SRC_STACKTRACE},
};

bool hist_is_trigger(const char *text)
{
	const char *colon = strchr(text, ':');

	return colon && !strncmp(colon + 1, "hist", 4) && (colon[5] == ':' || !colon[5]);
}

static bool name_char(char c)
{
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z');
}

/* One field "NAME[.MOD]" of @len bytes at @s into @f (@key: a key, else a value). NULL, or why
 * not (in @why's buffer). */
static const char *parse_field(const char *s, size_t len, bool key, struct hist_field *f, char *why,
			       size_t wlen)
{
	const char *dot = memchr(s, '.', len);
	size_t nlen = dot ? (size_t)(dot - s) : len;

	memset(f, 0, sizeof(*f));
	if (!nlen || nlen >= sizeof(f->name)) {
		snprintf(why, wlen, "%s: bad field name '%.*s'", key ? "keys" : "vals", (int)len,
			 s);
		return why;
	}
	for (size_t i = 0; i < nlen; i++)
		if (!name_char(s[i])) {
			snprintf(why, wlen, "%s: bad field name '%.*s'", key ? "keys" : "vals",
				 (int)nlen, s);
			return why;
		}
	memcpy(f->name, s, nlen);
	f->src = HIST_SRC_EVENT;
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (!strcmp(builtin[i].name, f->name))
			f->src = builtin[i].src;
	if (f->src == HIST_SRC_CPU)
		strcpy(f->name, "common_cpu"); /* the kernel's name for "cpu" too */
	if (f->src == HIST_SRC_HITCOUNT && key) {
		snprintf(why, wlen, "keys: hitcount is not a key");
		return why;
	}
	if (f->src == HIST_SRC_STACKTRACE && (!key || dot)) {
		snprintf(why, wlen, "%s: %s", f->name,
			 key ? "a stack trace takes no modifier" : "a stack trace is a key, not a value");
		return why;
	}
	if (dot) {
		const char *m = dot + 1;
		size_t mlen = len - nlen - 1;
		unsigned k;

		for (k = 1; k < sizeof(mod_names) / sizeof(mod_names[0]); k++)
			if (k == HIST_MOD_BUCKETS
				? mlen > 8 && !strncmp(m, "buckets=", 8)
				: strlen(mod_names[k]) == mlen && !strncmp(m, mod_names[k], mlen))
				break;
		if (k == sizeof(mod_names) / sizeof(mod_names[0])) {
			snprintf(why, wlen,
				 "%s: unknown modifier '.%.*s' (execname, hex, sym, sym-offset, "
				 "log2, buckets=N, usecs)",
				 f->name, (int)mlen, m);
			return why;
		}
		f->mod = (enum hist_mod)k;
		if (k == HIST_MOD_BUCKETS) {
			char num[24], *end;

			if (mlen - 8 >= sizeof(num))
				goto bad_buckets;
			memcpy(num, m + 8, mlen - 8);
			num[mlen - 8] = 0;
			errno = 0;
			f->buckets = strtoull(num, &end, 0);
			if (errno || *end || !f->buckets || num[0] == '-' || num[0] == '+')
				goto bad_buckets;
		}
	}
	if (f->mod == HIST_MOD_EXECNAME && f->src != HIST_SRC_PID) {
		snprintf(why, wlen, "%s.execname: only common_pid has an execname", f->name);
		return why;
	}
	if (f->mod == HIST_MOD_USECS && f->src != HIST_SRC_DURATION) {
		snprintf(why, wlen, "%s.usecs: only duration is a time", f->name);
		return why;
	}
	if (!key && f->mod != HIST_MOD_NONE && f->mod != HIST_MOD_HEX && f->mod != HIST_MOD_USECS) {
		snprintf(why, wlen, "vals: %s.%s: a value takes .hex or .usecs only", f->name,
			 mod_names[f->mod]);
		return why;
	}
	return NULL;
bad_buckets:
	snprintf(why, wlen, "%s.buckets=N: expected a number above 0", f->name);
	return why;
}

/* A comma-separated list of fields of @len bytes at @s into @v (at most @max). */
static const char *parse_list(const char *s, size_t len, bool key, struct hist_field *v,
			      unsigned max, unsigned *nr, char *why, size_t wlen)
{
	const char *end = s + len;

	if (!len) {
		snprintf(why, wlen, "%s: empty list", key ? "keys" : "vals");
		return why;
	}
	for (const char *p = s; p <= end;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		size_t flen = c ? (size_t)(c - p) : (size_t)(end - p);
		struct hist_field f;
		const char *bad = parse_field(p, flen, key, &f, why, wlen);

		if (bad)
			return bad;
		if (!key && f.src == HIST_SRC_HITCOUNT) { /* always there, first */
			p += flen + 1;
			continue;
		}
		if (*nr == max) {
			snprintf(why, wlen, "%s: too many (at most %u)", key ? "keys" : "vals",
				 max);
			return why;
		}
		v[(*nr)++] = f;
		p += flen + 1;
	}
	return NULL;
}

/* "sort=" fields, by name (as the kernel: a key's or a value's name, modifier left out). */
static const char *parse_sort(struct hist_spec *h, const char *s, size_t len, char *why,
			      size_t wlen)
{
	const char *end = s + len;

	if (!len) {
		snprintf(why, wlen, "sort: empty sort field");
		return why;
	}
	for (const char *p = s; p <= end;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		size_t flen = c ? (size_t)(c - p) : (size_t)(end - p);
		const char *dot = memchr(p, '.', flen);
		size_t nlen = dot ? (size_t)(dot - p) : flen;
		struct hist_sort so = {0};
		bool found = false;

		if (dot) {
			size_t mlen = flen - nlen - 1;

			if (mlen == 10 && !strncmp(dot + 1, "descending", 10))
				so.descending = true;
			else if (!(mlen == 9 && !strncmp(dot + 1, "ascending", 9))) {
				snprintf(why, wlen, "sort: %.*s: invalid sort modifier", (int)flen,
					 p);
				return why;
			}
		}
		if (nlen == 8 && !strncmp(p, "hitcount", 8))
			found = true;
		for (unsigned i = 0; i < h->nr_keys && !found; i++)
			if (strlen(h->keys[i].name) == nlen && !strncmp(h->keys[i].name, p, nlen)) {
				so.is_key = true;
				so.idx = i;
				found = true;
			}
		for (unsigned i = 0; i < h->nr_vals && !found; i++)
			if (strlen(h->vals[i].name) == nlen && !strncmp(h->vals[i].name, p, nlen)) {
				so.idx = i + 1;
				found = true;
			}
		if (!found) {
			snprintf(why, wlen, "sort: %.*s: sort field must be a key or a val",
				 (int)nlen, p);
			return why;
		}
		if (h->nr_sort == HIST_SORT_MAX) {
			snprintf(why, wlen, "sort: too many sort fields (at most %d)",
				 HIST_SORT_MAX);
			return why;
		}
		h->sort[h->nr_sort++] = so;
		p += flen + 1;
	}
	return NULL;
}

/* A stacktrace key is counted from the host's stack walk at the call, which has the call's task and
 * CPU but no -e field and no return: alone, with common_pid, common_cpu or ip keys, hitcount the
 * only value. NULL, or why not. */
static const char *stack_fields(const struct hist_spec *h, char *why, size_t wlen)
{
	int k = hist_stack_key(h);

	if (k < 0)
		return NULL;
	for (unsigned i = 0; i < h->nr_keys; i++) {
		enum hist_src src = h->keys[i].src;

		if ((int)i != k && src == HIST_SRC_STACKTRACE) {
			snprintf(why, wlen, "keys: one stacktrace at most");
			return why;
		}
		if (src != HIST_SRC_STACKTRACE && src != HIST_SRC_PID && src != HIST_SRC_CPU &&
		    src != HIST_SRC_IP) {
			snprintf(why, wlen,
				 "keys: %s with %s: a stacktrace key goes with common_pid, "
				 "common_cpu and ip only",
				 h->keys[k].name, h->keys[i].name);
			return why;
		}
	}
	if (h->nr_vals) {
		snprintf(why, wlen, "vals: %s with %s: a stacktrace hist counts hits only",
			 h->keys[k].name, h->vals[0].name);
		return why;
	}
	return NULL;
}

int hist_stack_key(const struct hist_spec *h)
{
	for (unsigned i = 0; i < h->nr_keys; i++)
		if (h->keys[i].src == HIST_SRC_STACKTRACE)
			return (int)i;
	return -1;
}

int hist_parse(const char *text, struct hist_spec *h, char *err, size_t errlen)
{
	const char *colon = strchr(text, ':'), *p, *sort = NULL;
	size_t flen, sort_len = 0;
	char why[256];
	const char *bad = why;

	memset(h, 0, sizeof(*h));
	h->size = HIST_SIZE_DEFAULT;
	snprintf(why, sizeof(why), "expected FUNC:hist:keys=...");
	if (!colon || colon == text || !hist_is_trigger(text))
		goto out;
	flen = (size_t)(colon - text);
	snprintf(why, sizeof(why), "function name too long");
	if (flen >= sizeof(h->func))
		goto out;
	snprintf(why, sizeof(why), "bad function name");
	for (size_t i = 0; i < flen; i++)
		if (!(name_char(text[i]) || text[i] == '.' || (text[i] == '+' && i)))
			goto out;
	snprintf(why, sizeof(why), "bad offset into the function");
	if (fe_place_label(text, flen, h->func, sizeof(h->func)) < 0)
		goto out;
	for (p = colon + 5; *p == ':';) {
		const char *a = p + 1, *next = strchr(a, ':');
		size_t alen = next ? (size_t)(next - a) : strlen(a);

		if (alen >= 5 && !strncmp(a, "keys=", 5)) {
			bad = parse_list(a + 5, alen - 5, true, h->keys, HIST_KEYS_MAX, &h->nr_keys,
					 why, sizeof(why));
		} else if (alen >= 4 && !strncmp(a, "key=", 4)) {
			bad = parse_list(a + 4, alen - 4, true, h->keys, HIST_KEYS_MAX, &h->nr_keys,
					 why, sizeof(why));
		} else if (alen >= 5 && !strncmp(a, "vals=", 5)) {
			bad = parse_list(a + 5, alen - 5, false, h->vals, HIST_VALS_MAX,
					 &h->nr_vals, why, sizeof(why));
		} else if (alen >= 4 && !strncmp(a, "val=", 4)) {
			bad = parse_list(a + 4, alen - 4, false, h->vals, HIST_VALS_MAX,
					 &h->nr_vals, why, sizeof(why));
		} else if (alen >= 7 && !strncmp(a, "values=", 7)) {
			bad = parse_list(a + 7, alen - 7, false, h->vals, HIST_VALS_MAX,
					 &h->nr_vals, why, sizeof(why));
		} else if (alen >= 5 && !strncmp(a, "sort=", 5)) {
			sort = a + 5; /* once keys and vals are known */
			sort_len = alen - 5;
			bad = NULL;
		} else if (alen >= 5 && !strncmp(a, "size=", 5)) {
			char num[16], *end;
			unsigned long n = 0;

			bad = why;
			snprintf(why, sizeof(why), "size: expected a number from %d to %d",
				 HIST_SIZE_MIN, HIST_SIZE_MAX);
			if (alen - 5 >= sizeof(num) || alen == 5 || a[5] == '-' || a[5] == '+')
				goto out;
			memcpy(num, a + 5, alen - 5);
			num[alen - 5] = 0;
			errno = 0;
			n = strtoul(num, &end, 0);
			if (errno || *end || n < 1 || n > HIST_SIZE_MAX)
				goto out;
			/* as the kernel: rounded up to a power of two, 2^7 at least */
			for (h->size = HIST_SIZE_MIN; h->size < n; h->size <<= 1)
				;
			bad = NULL;
		} else if (alen >= 5 && !strncmp(a, "name=", 5)) {
			bad = why;
			snprintf(why, sizeof(why), "name: expected a name of letters, digits, _");
			if (alen == 5 || alen - 5 >= sizeof(h->name))
				goto out;
			for (size_t i = 5; i < alen; i++)
				if (!name_char(a[i]))
					goto out;
			memcpy(h->name, a + 5, alen - 5);
			bad = NULL;
		} else {
			bad = why;
			snprintf(why, sizeof(why),
				 "'%.*s': not supported (keys=, vals=, sort=, size=, name=)",
				 (int)alen, a);
		}
		if (bad)
			goto out;
		p = a + alen;
	}
	bad = why;
	if (*p) {
		snprintf(why, sizeof(why), "expected FUNC:hist:keys=...");
		goto out;
	}
	if (!h->nr_keys) {
		snprintf(why, sizeof(why), "keys= is missing");
		goto out;
	}
	bad = stack_fields(h, why, sizeof(why));
	if (!bad)
		bad = sort ? parse_sort(h, sort, sort_len, why, sizeof(why)) : NULL;
	if (!sort)
		h->nr_sort = 1; /* hitcount, ascending */
out:
	if (!bad)
		return 0;
	snprintf(err, errlen, "--trigger '%s': %s", text, bad);
	return -EINVAL;
}

bool hist_wants_returns(const struct hist_spec *h)
{
	for (unsigned i = 0; i < h->nr_keys; i++)
		if (h->keys[i].src == HIST_SRC_DURATION)
			return true;
	for (unsigned i = 0; i < h->nr_vals; i++)
		if (h->vals[i].src == HIST_SRC_DURATION)
			return true;
	return false;
}

/* "name[.mod[=N]]" as the kernel's hist_field_print. */
static size_t put_field(char *buf, size_t len, size_t n, const struct hist_field *f)
{
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n, "%s", f->name);
	if (f->mod != HIST_MOD_NONE && n < len)
		n += (size_t)snprintf(buf + n, len - n, ".%s", mod_names[f->mod]);
	if (f->mod == HIST_MOD_BUCKETS && n < len)
		n += (size_t)snprintf(buf + n, len - n, "=%llu", (unsigned long long)f->buckets);
	return n;
}

int hist_spec_info(char *buf, size_t len, const struct hist_spec *h)
{
	size_t n = 0;

	if (!len)
		return 0;
	buf[0] = 0;
	n += (size_t)snprintf(buf, len, "hist:%s%skeys=", h->name, h->name[0] ? ":" : "");
	for (unsigned i = 0; i < h->nr_keys; i++) {
		if (i && n < len)
			n += (size_t)snprintf(buf + n, len - n, ",");
		n = put_field(buf, len, n, &h->keys[i]);
	}
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n, ":vals=hitcount");
	for (unsigned i = 0; i < h->nr_vals; i++) {
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, ",");
		n = put_field(buf, len, n, &h->vals[i]);
	}
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n, ":sort=");
	for (unsigned i = 0; i < h->nr_sort; i++) {
		const struct hist_sort *s = &h->sort[i];

		if (i && n < len)
			n += (size_t)snprintf(buf + n, len - n, ",");
		if (!s->is_key && !s->idx) {
			if (n < len)
				n += (size_t)snprintf(buf + n, len - n, "hitcount");
		} else {
			n = put_field(buf, len, n,
				      s->is_key ? &h->keys[s->idx] : &h->vals[s->idx - 1]);
		}
		if (s->descending && n < len)
			n += (size_t)snprintf(buf + n, len - n, ".descending");
	}
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n, ":size=%u [active]", h->size);
	return (int)n;
}

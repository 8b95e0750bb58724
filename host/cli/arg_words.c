/* Option words as the command line parsers take them (session_args.c): numbers, seconds, one word
 * of a list, growing argv-string lists, getopt's short options from an option table. Pure (arg_push
 * allocates). */
#include "host/cli/arg_words.h"
#include "host/util/msg_fmt.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int arg_uint(const char *opt, const char *arg, unsigned lo, unsigned hi, unsigned *out, char *err,
	     size_t errlen)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	/* digits only: strtoul also takes blanks, '+' and '-' (which wraps) */
	if (errno || !isdigit((unsigned char)arg[0]) || *end || v < lo || v > hi) {
		msg_fmt(err, errlen, "%s '%s': expected an integer in %u..%u", opt, arg, lo, hi);
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

int arg_push(char ***v, size_t *n, char *s)
{
	char **p = realloc(*v, (*n + 1) * sizeof(**v));

	if (!p)
		return -ENOMEM;
	p[(*n)++] = s;
	*v = p;
	return 0;
}

/* The index of @arg among the @n words of @words (NULL ones skipped), or -1. */
int arg_pick(const char *arg, const char *const *words, int n)
{
	for (int i = 0; i < n; i++)
		if (words[i] && !strcmp(arg, words[i]))
			return i;
	return -1;
}

/* Option @opt's value @arg, one of the @n words of @words (no NULL among them): its index in *@k,
 * 0; or -EINVAL with "@opt '@arg': expected w0, w1 or w2" in @err. */
int arg_one_of(const char *opt, const char *arg, const char *const *words, int n, int *k, char *err,
	       size_t errlen)
{
	char list[128];
	size_t at = 0;

	*k = arg_pick(arg, words, n);
	if (*k >= 0)
		return 0;
	for (int i = 0; i < n && at < sizeof(list); i++)
		at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s",
				       !i	    ? ""
				       : i == n - 1 ? " or "
						    : ", ",
				       words[i]);
	msg_fmt(err, errlen, "%s '%s': expected %s", opt, arg, list);
	return -EINVAL;
}
/* getopt's short options for @opts, from the table itself: ':' first (a missing argument comes back
 * as ':'), then the val of each option that has a letter, followed by ':' when it takes an
 * argument. Into @buf (@len bytes; the table's letters fit). Returns @buf. */
const char *arg_short_options(const struct option *opts, char *buf, size_t len)
{
	size_t n = 0;

	buf[n++] = ':';
	for (; opts->name; opts++)
		if (opts->val < 256 && isalpha(opts->val) && n + 3 <= len) {
			buf[n++] = (char)opts->val;
			if (opts->has_arg == required_argument)
				buf[n++] = ':';
		}
	buf[n] = '\0';
	return buf;
}

int arg_seconds(const char *opt, const char *arg, double *out, char *err, size_t errlen)
{
	char *end;

	errno = 0;
	*out = strtod(arg, &end);
	if (errno || end == arg || *end || !(*out > 0) || *out > 1e6) {
		msg_fmt(err, errlen, "%s '%s': expected seconds > 0", opt, arg);
		return -EINVAL;
	}
	return 0;
}

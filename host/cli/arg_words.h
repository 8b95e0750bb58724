/* Option words as the command line parsers take them: each failure is -EINVAL (or -ENOMEM) with
 * one line in @err naming the option and its value. */
#ifndef HVT_ARG_WORDS_H
#define HVT_ARG_WORDS_H

#include <getopt.h>
#include <stddef.h>

/* @arg as an integer in @lo..@hi (digits only) into *@out; else "OPT 'ARG': expected an integer in
 * LO..HI". */
int arg_uint(const char *opt, const char *arg, unsigned lo, unsigned hi, unsigned *out, char *err,
	     size_t errlen);

/* @arg as seconds > 0 (at most 1e6) into *@out; else "OPT 'ARG': expected seconds > 0". */
int arg_seconds(const char *opt, const char *arg, double *out, char *err, size_t errlen);

/* Appends @s (borrowed) to the list *@v of *@n strings. 0 or -ENOMEM. */
int arg_push(char ***v, size_t *n, char *s);

/* The index of @arg among the @n words of @words (NULL ones skipped), or -1. */
int arg_pick(const char *arg, const char *const *words, int n);

/* Option @opt's value @arg, one of the @n words of @words (no NULL among them): its index in *@k,
 * 0; or -EINVAL with "@opt '@arg': expected w0, w1 or w2" in @err. */
int arg_one_of(const char *opt, const char *arg, const char *const *words, int n, int *k, char *err,
	       size_t errlen);

/* getopt's short options for @opts, from the table itself: ':' first (a missing argument comes back
 * as ':'), then the val of each option that has a letter, followed by ':' when it takes an
 * argument. Into @buf (@len bytes). Returns @buf. */
const char *arg_short_options(const struct option *opts, char *buf, size_t len);

#endif

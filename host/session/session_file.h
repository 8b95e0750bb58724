/* Session files (`--session FILE`, `--session -` for standard input): the long options of run / attach /
 * record, one per line without the dashes ("tracer function_graph", "event f(int a)"), '#' comment lines
 * and blank lines. Each file is expanded into "--name=value" words at the place of its --session, so the
 * getopt table that parses the command line parses the file too, and options after --session win
 * (scalars are overridden, repeatable options add up). */
#ifndef HVT_SESSION_FILE_H
#define HVT_SESSION_FILE_H

#include <getopt.h>
#include <stddef.h>

/* Longest line and largest file a session file may have. */
#define SESSION_FILE_MAX_LINE 8192
#define SESSION_FILE_MAX_SIZE (1u << 20)

/* Where a word made from a session file came from. */
struct session_origin {
	const char *file; /* as named after --session ("<stdin>" for -); borrowed from argv */
	unsigned line;	  /* 1-based */
};

/* An argument vector with every --session expanded. */
struct session_words {
	int argc;
	char **argv;   /* argv[0] as given; NULL-terminated; the words point into argv or into owned */
	char **owned;  /* the words made from session files (malloc'd) */
	struct session_origin *origin; /* parallel to owned */
	size_t nr_owned;
	struct session_words *older; /* the caller's: not touched by session_expand / _free */
};

/* Expands every `--session FILE` / `--session=FILE` (or an unambiguous abbreviation of it) among
 * @argv[1..@argc) into @w, walking the words as getopt_long(@opts, @shortopts) would (an option's separate
 * argument is never taken for an option, nothing after "--" is). Reads the files. Returns 0, or -EINVAL /
 * -ENOMEM with one line in @err naming the file and line ("s.txt:3: unknown option 'tracr'"). A session
 * file may not name --session itself; standard input is read at most once. @w is freed on error too. */
int session_expand(int argc, char **argv, const struct option *opts, const char *shortopts,
		   struct session_words *w, char *err, size_t errlen);

/* The file and line the word holding @p came from (@p anywhere inside it), or NULL for a word of the
 * command line. */
const struct session_origin *session_words_origin(const struct session_words *w, const char *p);

/* Frees what session_expand made (not @w itself, nor @w->older). */
void session_words_free(struct session_words *w);

#endif

/* libFuzzer harness for session files (host/session/session_file.c: the input is the file, read through a
 * memfd as `--session /proc/self/fd/N` among command-line words) and for --expect-* specs
 * (host/tap/expect.c: the input's first line as each kind of spec). */
#include "host/session/session_file.h"
#include "host/tap/expect.h"
#include "host/trace/text_check.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A table shaped like run_opts: options with and without values, short forms, "session" itself. */
static const struct option opts[] = {
    {"tracer", required_argument, NULL, 'p'},  {"filter", required_argument, NULL, 'l'},
    {"event", required_argument, NULL, 'e'},   {"stats", no_argument, NULL, 1},
    {"funcgraph-tail", no_argument, NULL, 2},  {"smp", required_argument, NULL, 3},
    {"session", required_argument, NULL, 4},   {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum expect_kind kinds[] = {EXPECT_CALL, EXPECT_NO_CALL, EXPECT_RETURN,
						 EXPECT_ORDER};
	char path[64], err[512], *spec;
	struct session_words w;
	struct expect e;
	int fd = memfd_create("session", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	{
		char *argv[] = {"hvtrace", "-p", "nop", "--session", path, "-l", "x", "g.elf", NULL};

		if (session_expand(8, argv, opts, ":p:l:e:h", &w, err, sizeof(err)) == 0) {
			/* every word made from the file is an option of the table, with its origin */
			for (size_t i = 0; i < w.nr_owned; i++) {
				if (strncmp(w.owned[i], "--", 2) ||
				    session_words_origin(&w, w.owned[i]) != &w.origin[i])
					abort();
				/* and plain text: no file byte reaches a message raw (issue 37) */
				if (text_unsafe_at(w.owned[i], strlen(w.owned[i])) !=
				    strlen(w.owned[i]))
					abort();
			}
			if (w.argc != 6 + (int)w.nr_owned || w.argv[w.argc])
				abort();
			session_words_free(&w);
		} else if (!err[0] || text_unsafe_at(err, strlen(err)) != strlen(err)) {
			abort(); /* one line of plain text, always: no raw byte of the file */
		}
	}
	close(fd);

	spec = strndup((const char *)data, size);
	if (!spec)
		return 0;
	spec[strcspn(spec, "\n")] = 0;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (expect_parse(&e, kinds[k], spec, err, sizeof(err)) == 0 &&
		    (!e.nr_funcs || e.nr_funcs > EXPECT_MAX_ORDER || !e.funcs[0][0]))
			abort();
	free(spec);
	return 0;
}

/* libFuzzer harness for `hvtrace report`'s reader (tracedat_read.c): the input is a whole trace.dat
 * file. libtracecmd parses the file; what is fuzzed here is ours on top of it: the probe specs
 * rebuilt from event formats, every field taken from a record, the merging of events into records
 * and their replay through the writer into the text sinks. A file is refused with one line, or
 * printed; nothing else. */
#include "host/sink/tracedat_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The reader's libtracecmd check runs in a child that resets SIGSEGV & co to their default, so that
 * the library's own crashes on bad files are the child's death, not a finding here (ASan must let
 * it); the library asks malloc for absurd sizes a file names, and copes with NULL. A child that
 * still dies in the sanitizer leaves a crash- file behind while the fuzzing goes on: the parent,
 * where our code runs, saw a refused file. */
const char *__asan_default_options(void)
{
	return "allow_user_segv_handler=1:allocator_may_return_null=1";
}

/* libtraceevent's format parser (not instrumented, not ours) leaks on some malformed formats. */
const char *__lsan_default_suppressions(void)
{
	return "leak:libtraceevent.so\nleak:libtracecmd.so\n";
}

static void replay(const char *path, const struct vmi_symtab *syms, const struct tdr_summary *sum,
		   FILE *out)
{
	char err[1024];
	struct tdr *r = tdr_open(path, err, sizeof(err));
	struct sink k;

	if (!r)
		return;
	if (sum->graph) {
		if (sink_graph_init(&k, out, syms, sum->nr_cpus, true, true) < 0)
			abort();
	} else {
		sink_function_init(&k, out, syms, sum->nr_cpus);
	}
	if (tdr_replay(r, &k, sum->graph, err, sizeof(err)) < 0 &&
	    (!memchr(err, 0, sizeof(err)) || strchr(err, '\n')))
		abort();
	free(k.priv); /* the graph sink's, NULL once its end() ran */
	tdr_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *out;
	int fd = memfd_create("tracedat", 0);
	char path[64], err[1024];
	struct vmi_symtab syms = {0};
	struct tdr_summary sum;
	struct tdr *r;

	if (!out)
		out = fopen("/dev/null", "w");
	if (fd < 0 || !out || write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = tdr_open(path, err, sizeof(err));
	if (!r) {
		/* one line naming the file */
		if (!memchr(err, 0, sizeof(err)) || strchr(err, '\n') || !strstr(err, path))
			abort();
	} else {
		if (tdr_scan(r, &syms, &sum, err, sizeof(err)) == 0) {
			tdr_close(r);
			r = NULL;
			replay(path, &syms, &sum, out);
		}
		tdr_close(r);
	}
	vmi_symtab_free(&syms);
	close(fd);
	return 0;
}

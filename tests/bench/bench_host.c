/* make bench-host: the host pipeline alone (rings -> writer -> sink), one core, on a recorded ring
 * stream. The stream is a real all-functions run's trace.dat (tests/bench/bench-host.sh records it
 * once into the build folder), read back into records before any timing (report's reader); each
 * format then gets the whole stream preloaded into one host ring per vCPU, and the writer thread
 * merges and writes it while the clock (the process's CPU time, which is then the writer thread's)
 * runs: trace.dat (record's sink, its temporary files and the
 * file's assembly included), function text and JSON Lines to /dev/null. Prints one line:
 *   host pipeline: trace.dat R1 M records/s, text R2 M records/s, jsonl R3 M records/s (one core)
 * Usage: bench_host TRACE.DAT [ROUNDS] (the best of ROUNDS runs per format, default 3). */
#include "host/sink/sink_format.h"
#include "host/sink/tracedat_read.h"
#include "host/sink/writer.h"
#include "host/trace/clock.h"
#include "host/trace/ring.h"
#include "vmi/vmi_symtab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* The stream: every record as the writer handed it to report's sink. */
static struct hvt_record *recs;
static size_t nr_recs, cap_recs;
static unsigned nr_cpus;

static void keep(const struct hvt_record *r)
{
	if (nr_recs == cap_recs) {
		cap_recs = cap_recs ? 2 * cap_recs : 1 << 16;
		recs = realloc(recs, cap_recs * sizeof(*recs));
		if (!recs) {
			perror("bench_host");
			exit(1);
		}
	}
	recs[nr_recs++] = *r;
	if (r->cpu >= nr_cpus)
		nr_cpus = r->cpu + 1u;
}

static unsigned cap_entry(struct sink *s, const struct sink_rec *rec, const struct sink_rec *next)
{
	(void)s, (void)next;
	keep(rec->r);
	return 1;
}

static void cap_ret(struct sink *s, const struct sink_rec *rec)
{
	(void)s;
	keep(rec->r);
}

static void cap_lost(struct sink *s, const struct hvt_record *r)
{
	(void)s;
	keep(r);
}

static void cap_none(struct sink *s)
{
	(void)s;
}

/* records with a payload (-e events) are left out: an all-functions stream has none */
static const struct sink_ops capture_ops = {
    .begin = cap_none, .entry = cap_entry, .ret = cap_ret, .lost = cap_lost, .end = cap_none};

static uint64_t horizon_all(void *ctx)
{
	(void)ctx;
	return UINT64_MAX;
}

/* The process's CPU time in seconds: while the clock runs the main thread waits in writer_stop's
 * join, so this is the writer thread's, the pipeline's one core (a loaded host measures the same).
 */
static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One timed run of format @name over the stream into @out (@path); returns CPU seconds. */
static double run_format(const char *name, const struct vmi_symtab *syms, const char *path)
{
	const struct sink_format *f = sink_format_find(name);
	sink_make_fn make = f->live ? f->live : f->record;
	struct ring *rings = calloc(nr_cpus, sizeof(*rings));
	size_t *per = calloc(nr_cpus, sizeof(*per));
	struct writer w;
	struct sink k;
	FILE *out = fopen(path, "w");
	struct sink_config cfg = {
	    .out = out, .path = path, .syms = syms, .nr_cpus = nr_cpus, .tracer = "function"};
	double t0, t1;

	if (!rings || !per || !out) {
		perror("bench_host");
		exit(1);
	}
	for (size_t i = 0; i < nr_recs; i++)
		per[recs[i].cpu]++;
	for (unsigned c = 0; c < nr_cpus; c++)
		if (ring_init(&rings[c], per[c] + 1) < 0) {
			perror("bench_host: ring");
			exit(1);
		}
	for (size_t i = 0; i < nr_recs; i++)
		if (!ring_emit(&rings[recs[i].cpu], &recs[i], NULL, 0)) {
			fprintf(stderr, "bench_host: ring full\n");
			exit(1);
		}
	memset(&k, 0, sizeof(k));
	if (make(&k, &cfg) < 0) {
		fprintf(stderr, "bench_host: %s: cannot make the sink\n", name);
		exit(1);
	}
	memset(&w, 0, sizeof(w));
	t0 = cpu_s();
	/* the writer thread inherits the name: `perf report --comm bench-writer` is the pipeline */
	prctl(PR_SET_NAME, "bench-writer");
	if (writer_start(&w, rings, nr_cpus, &k, horizon_all, NULL) < 0) {
		fprintf(stderr, "bench_host: writer\n");
		exit(1);
	}
	prctl(PR_SET_NAME, "bench_host");
	writer_stop(&w, 0);
	fflush(out);
	t1 = cpu_s();
	if (k.err) {
		fprintf(stderr, "bench_host: %s: %s\n", name, strerror(k.err));
		exit(1);
	}
	writer_free(&w);
	fclose(out);
	for (unsigned c = 0; c < nr_cpus; c++)
		ring_free(&rings[c]);
	free(rings);
	free(per);
	return t1 - t0;
}

int main(int argc, char **argv)
{
	struct vmi_symtab syms;
	struct tdr_summary sum;
	struct sink cap;
	struct tdr *r;
	char err[512], dat[4096];
	const char *names[3] = {"tracedat", "text", "jsonl"};
	double best[3] = {0, 0, 0};
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	const char *only = getenv("BENCH_HOST_ONLY"); /* one format alone (to profile it) */

	if (argc < 2) {
		fprintf(stderr, "usage: bench_host TRACE.DAT [ROUNDS]\n");
		return 2;
	}
	memset(&syms, 0, sizeof(syms));
	r = tdr_open(argv[1], err, sizeof(err));
	if (!r || tdr_scan(r, &syms, &sum, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_host: %s\n", err);
		return 1;
	}
	tdr_close(r);
	r = tdr_open(argv[1], err, sizeof(err));
	sink_setup(&cap, &capture_ops, stdout, &syms, sum.nr_cpus);
	if (!r || tdr_replay(r, &cap, sum.graph, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_host: %s\n", err);
		return 1;
	}
	tdr_close(r);
	if (!nr_recs) {
		fprintf(stderr, "bench_host: %s holds no record\n", argv[1]);
		return 1;
	}
	snprintf(dat, sizeof(dat), "%s.bench-out.dat", argv[1]);
	for (int k = 0; k < rounds; k++)
		for (int f = 0; f < 3; f++) {
			if (only && strcmp(only, names[f]))
				continue;
			double s = run_format(names[f], &syms, f == 0 ? dat : "/dev/null");
			double rate = nr_recs / s / 1e6;

			if (rate > best[f])
				best[f] = rate;
		}
	if (!getenv("BENCH_HOST_KEEP")) /* the trace.dat written, to read back */
		unlink(dat);
	printf("bench-host: %zu records of %u vCPUs from %s, best of %d\n", nr_recs, nr_cpus,
	       argv[1], rounds);
	printf("host pipeline: trace.dat %.2f M records/s, text %.2f M records/s, jsonl %.2f M "
	       "records/s (one core)\n",
	       best[0], best[1], best[2]);
	vmi_symtab_free(&syms);
	free(recs);
	return 0;
}

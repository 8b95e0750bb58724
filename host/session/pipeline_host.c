/* record --host: the host's side of the trace (host/hosttrace/host_rec.c) started, ended and
 * paired with the guest's trace.dat. Main thread. */
#include "host/session/cmd_out.h"
#include "host/session/exitcode.h"
#include "host/session/pipeline.h"
#include "host/sink/sink_tracedat.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

int pipeline_host_start(struct pipeline *p, const int *tids, unsigned n, const char *guest,
			char *err, size_t errlen)
{
	const struct session *s = p->s;
	char dir[4096];
	int ret;

	if (!s->host)
		return 0;
	snprintf(dir, sizeof(dir), "%s", s->output);
	ret = host_rec_start(&p->host, tids, n, (const char *const *)s->host_events,
			     s->nr_host_events, dirname(dir), err, errlen);
	if (ret < 0)
		return ret == -ENOENT || ret == -EINVAL || ret == -E2BIG ? EXIT_BAD_INPUT
									 : EXIT_HOST_ERROR;
	p->hosting = true;
	snprintf(p->host_guest, sizeof(p->host_guest), "%s", guest && *guest ? guest : "guest");
	return 0;
}

int pipeline_host_end(struct pipeline *p, int status, bool after)
{
	char path[4096], err[512];
	int ret;

	if (!p->hosting)
		return status;
	if (!after) {
		host_rec_stop(&p->host);
		if (getrandom(&p->guest_trace_id, sizeof(p->guest_trace_id), 0) !=
		    sizeof(p->guest_trace_id))
			p->guest_trace_id = p->host.trace_id ^ 0x9e3779b97f4a7c15ull;
		sink_tracedat_peer(&p->sink, p->guest_trace_id, p->host.trace_id, tracer_t0(p->tr));
		return status;
	}
	ret = host_rec_path(p->s->output, path, sizeof(path));
	if (!ret)
		ret = host_rec_write(&p->host, path, p->host_guest, p->guest_trace_id, err,
				     sizeof(err));
	else
		snprintf(err, sizeof(err), "--host: -o %s: the name is too long", p->s->output);
	host_rec_close(&p->host);
	p->hosting = false;
	if (ret < 0) {
		cmd_error("%s", err);
		return status ? status : EXIT_HOST_ERROR;
	}
	if (!p->s->quiet)
		fprintf(stderr, "hvtrace: the host's side: %s (trace-cmd report -i %s -i %s)\n",
			path, path, p->s->output);
	return status;
}

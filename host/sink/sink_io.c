/* Output of the sinks, with every write checked: the first failure is kept (errno in sink->err) and
 * every later write skipped, so the CLI can say once why the trace is incomplete, and the run is
 * asked to end (out_fail_raise). Writer thread.
 * Only the calls' own results count, not ferror(): stdout may be shared with the guest's console,
 * whose failures are the console's to report. */
#include "host/sink/sink.h"
#include "host/sink/out_fail.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

void sink_setup(struct sink *s, const struct sink_ops *ops, FILE *out, const struct vmi_symtab *syms,
		unsigned nr_cpus)
{
	memset(s, 0, sizeof(*s));
	s->ops = ops;
	s->out = out;
	s->syms = syms;
	s->nr_cpus = nr_cpus;
}

bool sink_graph_tracer(const struct sink *s)
{
	return s->tracer && !strcmp(s->tracer, "function_graph");
}

void sink_fail(struct sink *s, int err)
{
	if (!s->err)
		s->err = err ? err : EIO;
	out_fail_raise();
}

/* Keeps the first failure's errno (EIO when the library set none). */
static void failed(struct sink *s)
{
	sink_fail(s, errno);
}

void sink_write(struct sink *s, const char *buf, size_t len)
{
	if (s->err || !len)
		return;
	errno = 0;
	if (fwrite(buf, 1, len, s->out) != len)
		failed(s);
}

void sink_printf(struct sink *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (s->err)
		return;
	errno = 0;
	va_start(ap, fmt);
	n = vfprintf(s->out, fmt, ap);
	va_end(ap);
	if (n < 0)
		failed(s);
}

void sink_flush(struct sink *s)
{
	if (s->err)
		return;
	errno = 0;
	if (fflush(s->out))
		failed(s);
}

/* The output-format table. Adding a format: a sink file that defines
 *	const struct sink_format sink_format_NAME = {"NAME", live, record, report};
 * (each writer a sink_make_fn, NULL where the format is not offered) and its line below. */
#include "host/sink/sink_format.h"
#include "host/util/msg_fmt.h"

#include <stdio.h>
#include <string.h>

/* The formats, in the order --help and the error lines list them: one line each. */
#define SINK_FORMATS(X)                                                                            \
	X(text)	    /* sink_function.c: ftrace's function tracer text */                           \
	X(graph)    /* sink_graph.c: ftrace's function_graph text */                               \
	X(json)	    /* sink_chrome.c: Chrome / Perfetto trace-event JSON */                        \
	X(jsonl)    /* sink_json.c: JSON Lines, one object per record */                           \
	X(folded)   /* sink_folded.c: collapsed stacks for flame graphs */                         \
	X(tracedat) /* sink_tracedat.c: trace-cmd's trace.dat */

#define SINK_FORMAT_DECLARE(n) extern const struct sink_format sink_format_##n;
SINK_FORMATS(SINK_FORMAT_DECLARE)

#define SINK_FORMAT_ENTRY(n) &sink_format_##n,
static const struct sink_format *const formats[] = {SINK_FORMATS(SINK_FORMAT_ENTRY)};

#define NR_FORMATS (sizeof(formats) / sizeof(formats[0]))

const struct sink_format *sink_format_find(const char *name)
{
	for (size_t i = 0; i < NR_FORMATS; i++)
		if (!strcmp(formats[i]->name, name))
			return formats[i];
	return NULL;
}

const struct sink_format *sink_format_default(enum sink_use use, bool graph)
{
	if (use == SINK_RECORD)
		return &sink_format_tracedat;
	return graph ? &sink_format_graph : &sink_format_text;
}

sink_make_fn sink_format_maker(const struct sink_format *f, enum sink_use use)
{
	switch (use) {
	case SINK_LIVE:
		return f->live;
	case SINK_RECORD:
		return f->record;
	case SINK_REPORT:
		return f->report;
	}
	return NULL;
}

void sink_format_names(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NR_FORMATS && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
				      !i		    ? ""
				      : i + 1 == NR_FORMATS ? " or "
							    : ", ",
				      formats[i]->name);
}

const struct sink_format *sink_format_choose(const char *name, enum sink_use use, const char *cmd,
					     char *err, size_t errlen)
{
	const struct sink_format *f = sink_format_find(name);
	char names[256];

	if (!f) {
		sink_format_names(names, sizeof(names));
		msg_fmt(err, errlen, "--format '%s': expected %s", name, names);
		return NULL;
	}
	if (sink_format_maker(f, use))
		return f;
	msg_fmt(err, errlen, "--format %s: %s does not write it (%s%s%s%s%s %s)", name, cmd,
		f->live ? "run, attach" : "", f->live && (f->record || f->report) ? ", " : "",
		f->record ? "record" : "", f->record && f->report ? ", " : "",
		f->report ? "report" : "", f->live || (f->record && f->report) ? "do" : "does");
	return NULL;
}

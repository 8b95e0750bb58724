#include "host/session/session.h"
#include "host/session/session_file.h"

#include <stdlib.h>
#include <string.h>

void session_init(struct session *s)
{
	memset(s, 0, sizeof(*s));
	s->tracer = TRACER_FUNCTION;
	s->smp = 2;
	s->mem_mb = 64;
	s->buffer_size_kb = 4096;
}

/* Frees one of the session's arrays and empties it. */
#define SESSION_DROP(array, nr)                                                                    \
	do {                                                                                       \
		free(array);                                                                       \
		(array) = NULL;                                                                    \
		(nr) = 0;                                                                          \
	} while (0)

void session_free(struct session *s)
{
	SESSION_DROP(s->filter, s->nr_filter);
	SESSION_DROP(s->notrace, s->nr_notrace);
	SESSION_DROP(s->graph, s->nr_graph);
	SESSION_DROP(s->host_events, s->nr_host_events);
	SESSION_DROP(s->events, s->nr_events);
	SESSION_DROP(s->rprobes, s->nr_rprobes);
	SESSION_DROP(s->expects, s->nr_expects);
	rec_filter_free(&s->tasks);
	SESSION_DROP(s->efilters, s->nr_efilters);
	SESSION_DROP(s->triggers, s->nr_triggers);
	SESSION_DROP(s->hists, s->nr_hists);
	while (s->words) {
		struct session_words *older = s->words->older;

		session_words_free(s->words);
		free(s->words);
		s->words = older;
	}
}

const char *tracer_name(enum tracer_kind k)
{
	switch (k) {
	case TRACER_NOP:
		return "nop";
	case TRACER_FUNCTION:
		return "function";
	case TRACER_FUNCTION_GRAPH:
		return "function_graph";
	}
	return "?";
}

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

void session_free(struct session *s)
{
	free(s->filter);
	free(s->notrace);
	free(s->graph);
	free(s->host_events);
	s->host_events = NULL;
	s->nr_host_events = 0;
	free(s->events);
	free(s->rprobes);
	s->events = s->rprobes = NULL;
	s->nr_events = s->nr_rprobes = 0;
	free(s->expects);
	s->expects = NULL;
	s->nr_expects = 0;
	rec_filter_free(&s->tasks);
	free(s->efilters);
	s->efilters = NULL;
	s->nr_efilters = 0;
	free(s->triggers);
	s->triggers = NULL;
	s->nr_triggers = 0;
	while (s->words) {
		struct session_words *older = s->words->older;

		session_words_free(s->words);
		free(s->words);
		s->words = older;
	}
	s->filter = s->notrace = s->graph = NULL;
	s->nr_filter = s->nr_notrace = s->nr_graph = 0;
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

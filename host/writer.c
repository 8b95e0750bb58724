#include "writer.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* Emits up to @budget records, oldest first across rings. Returns how many. */
static unsigned drain(struct writer *w, unsigned budget)
{
	unsigned done = 0;

	while (done < budget) {
		const struct hvt_record *best = NULL;
		unsigned best_i = 0;

		for (unsigned i = 0; i < w->nr; i++) {
			const struct hvt_record *r = ring_peek(&w->rings[i]);

			if (r && (!best || r->ts < best->ts)) {
				best = r;
				best_i = i;
			}
		}
		if (!best)
			break;
		w->sink->ops->record(w->sink, best);
		ring_pop(&w->rings[best_i]);
		w->events[best_i]++;
		done++;
	}
	return done;
}

static void *writer_thread(void *arg)
{
	struct writer *w = arg;

	while (!atomic_load(&w->stop))
		if (!drain(w, 4096))
			usleep(500);
	while (drain(w, 4096))
		;
	return NULL;
}

int writer_start(struct writer *w, struct ring *rings, unsigned nr, struct sink *sink)
{
	int e;

	w->rings = rings;
	w->nr = nr;
	w->sink = sink;
	atomic_store(&w->stop, 0);
	w->events = calloc(nr, sizeof(*w->events));
	if (!w->events)
		return -ENOMEM;
	sink->ops->begin(sink);
	e = pthread_create(&w->thread, NULL, writer_thread, w);
	if (e) {
		free(w->events);
		w->events = NULL;
		return -e;
	}
	return 0;
}

void writer_stop(struct writer *w, unsigned long long lost)
{
	atomic_store(&w->stop, 1);
	pthread_join(w->thread, NULL);
	w->sink->lost = lost;
	w->sink->ops->end(w->sink);
}

void writer_free(struct writer *w)
{
	free(w->events);
	w->events = NULL;
}

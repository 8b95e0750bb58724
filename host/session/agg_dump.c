#include "host/session/agg_dump.h"

#include <errno.h>
#include <string.h>

void agg_dump_block(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, AGG_DUMP_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
}

/* Takes AGG_DUMP_SIGNAL (blocked everywhere, so pending until this sigwait) until stopped. */
static void *wait_signal(void *arg)
{
	struct agg_dump *d = arg;
	sigset_t s;
	int sig;

	sigemptyset(&s);
	sigaddset(&s, AGG_DUMP_SIGNAL);
	while (!atomic_load(&d->stop)) {
		if (sigwait(&s, &sig) != 0)
			continue;
		if (!atomic_load(&d->stop))
			atomic_store(&d->want, true);
	}
	return NULL;
}

int agg_dump_start(struct agg_dump *d)
{
	int e;

	memset(d, 0, sizeof(*d));
	pthread_mutex_init(&d->lock, NULL);
	d->live = true;
	agg_dump_block(); /* the main thread's too, whoever called agg_dump_block before */
	e = pthread_create(&d->thread, NULL, wait_signal, d);
	if (e)
		return -e;
	d->running = true;
	return 0;
}

bool agg_dump_wanted(struct agg_dump *d)
{
	return atomic_load_explicit(&d->want, memory_order_relaxed) &&
	       atomic_exchange(&d->want, false);
}

void agg_dump_end_live(struct agg_dump *d)
{
	if (!d->running)
		return;
	pthread_mutex_lock(&d->lock);
	d->live = false;
	pthread_mutex_unlock(&d->lock);
}

void agg_dump_stop(struct agg_dump *d)
{
	if (!d->running)
		return;
	atomic_store(&d->stop, true);
	pthread_kill(d->thread, AGG_DUMP_SIGNAL); /* ends its sigwait */
	pthread_join(d->thread, NULL);
	pthread_mutex_destroy(&d->lock);
	d->running = false;
}

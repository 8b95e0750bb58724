#include "host/session/progress.h"
#include "host/trace/clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Back to the start of the line and erase it (ANSI EL): stderr is a terminal. */
#define ERASE "\r\033[K"

/* The terminal's line is shared with the messages of cmd_error: writes to it hold this lock, and a
 * message erases the line first (progress_hold). @shown: the progress fd while a line may show. */
static pthread_mutex_t term_lock = PTHREAD_MUTEX_INITIALIZER;
static int shown = -1;

void progress_hold(void)
{
	pthread_mutex_lock(&term_lock);
	if (shown >= 0 && write(shown, ERASE, sizeof(ERASE) - 1) < 0) {
		/* a terminal that cannot take it: the message follows anyway */
	}
}

void progress_release(void)
{
	pthread_mutex_unlock(&term_lock);
}

bool progress_wanted(int fd, bool quiet)
{
	return !quiet && isatty(fd);
}

int progress_format(char *buf, size_t len, unsigned long long events, double rate,
		    unsigned long long lost, double elapsed)
{
	return snprintf(buf, len, "hvtrace: %llu events (%.0f/s), %llu lost, %.1f s", events,
			rate < 0 ? 0 : rate, lost, elapsed < 0 ? 0 : elapsed);
}

/* Records the vCPUs (and the stub drain) published into the rings so far: each ring's head only
 * grows, and is read atomically. */
static unsigned long long captured(const struct tracer *tr)
{
	unsigned nr;
	struct ring *rings = tracer_rings((struct tracer *)tr, &nr);
	unsigned long long n = 0;

	for (unsigned i = 0; i < nr; i++)
		n += atomic_load_explicit(&rings[i].head, memory_order_relaxed);
	return n;
}

/* One refresh: the line, written whole with one write(2) so no other stderr text splits it. */
static void refresh(struct progress *p)
{
	char line[160];
	double now = clock_now_s();
	unsigned long long events = captured(p->tr);
	/* the lost counters are 64-bit words that only grow: a read is at worst a moment old */
	unsigned long long lost = tracer_lost(p->tr);
	double dt = now - p->last_t;
	int n;

	memcpy(line, ERASE, sizeof(ERASE) - 1);
	n = progress_format(line + sizeof(ERASE) - 1, sizeof(line) - sizeof(ERASE) + 1, events,
			    dt > 0 ? (double)(events - p->last_events) / dt : 0, lost,
			    now - p->t_start);
	if (n > 0) {
		size_t len = sizeof(ERASE) - 1 + ((size_t)n < sizeof(line) - sizeof(ERASE)
							 ? (size_t)n
							 : sizeof(line) - sizeof(ERASE));

		pthread_mutex_lock(&term_lock);
		if (write(p->fd, line, len) < 0) {
			/* a terminal that cannot take it: nothing else to do */
		}
		pthread_mutex_unlock(&term_lock);
	}
	p->last_events = events;
	p->last_t = now;
}

static void *progress_main(void *arg)
{
	struct progress *p = arg;
	struct timespec due;

	pthread_mutex_lock(&p->lock);
	clock_gettime(CLOCK_MONOTONIC, &due);
	while (!p->stop) {
		due.tv_sec += p->interval_ms / 1000;
		due.tv_nsec += (long)(p->interval_ms % 1000) * 1000000L;
		if (due.tv_nsec >= 1000000000L) {
			due.tv_sec++;
			due.tv_nsec -= 1000000000L;
		}
		while (!p->stop && pthread_cond_timedwait(&p->wake, &p->lock, &due) != ETIMEDOUT)
			;
		if (!p->stop)
			refresh(p);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int progress_start(struct progress *p, const struct tracer *tr, int fd, unsigned interval_ms)
{
	pthread_condattr_t ca;
	int ret;

	memset(p, 0, sizeof(*p));
	p->interval_ms = interval_ms ? interval_ms : 500;
	p->tr = tr;
	p->fd = fd;
	p->t_start = p->last_t = clock_now_s();
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->wake, &ca);
	pthread_condattr_destroy(&ca);
	ret = pthread_create(&p->thread, NULL, progress_main, p);
	if (ret) {
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
		return -ret;
	}
	p->running = true;
	pthread_mutex_lock(&term_lock);
	shown = fd;
	pthread_mutex_unlock(&term_lock);
	return 0;
}

void progress_stop(struct progress *p)
{
	if (!p->running)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	p->running = false;
	pthread_mutex_lock(&term_lock);
	shown = -1;
	if (write(p->fd, ERASE, sizeof(ERASE) - 1) < 0) {
		/* as in refresh() */
	}
	pthread_mutex_unlock(&term_lock);
}

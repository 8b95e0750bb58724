/* The progress line: while a trace runs, one line on stderr, rewritten in place about twice a
 * second, "hvtrace: N events (R/s), L lost, T s", and erased at the end. Only when stderr is a
 * terminal and --quiet was not given; never in the trace (which goes to stdout or -o). */
#ifndef HVT_PROGRESS_H
#define HVT_PROGRESS_H

#include "host/trace/tracer.h"

#include <pthread.h>
#include <stdbool.h>

struct progress {
	const struct tracer *tr; /* borrowed: its rings and lost counters are read */
	int fd;			 /* where the line goes (stderr) */
	unsigned interval_ms;
	double t_start;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop, running;
	unsigned long long last_events;
	double last_t;
};

/* Whether a progress line belongs on @fd: a terminal, and not @quiet. */
bool progress_wanted(int fd, bool quiet);

/* Starts the thread that refreshes the line on @fd every @interval_ms from @tr's counters (events
 * captured in its rings, events lost), elapsed time counted from now. Returns 0 or -errno (no line
 * then; the trace is not affected). Main thread. */
int progress_start(struct progress *p, const struct tracer *tr, int fd, unsigned interval_ms);

/* Stops the thread and erases the line (nothing of it stays on the terminal). Idempotent. Main
 * thread. */
void progress_stop(struct progress *p);

/* Around a message on stderr (cmd_error): hold erases the line, if one shows, and keeps it from
 * being redrawn until release; the next refresh draws it again below the message. Any thread. */
void progress_hold(void);
void progress_release(void);

/* Formats the line for @events captured, @lost, @rate events/s and @elapsed seconds, without the
 * leading "\r" and the erase: "hvtrace: 12345 events (678/s), 0 lost, 3.5 s". Returns the length.
 * Pure. */
int progress_format(char *buf, size_t len, unsigned long long events, double rate,
		    unsigned long long lost, double elapsed);

#endif

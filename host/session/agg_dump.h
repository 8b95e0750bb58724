/* SIGUSR2, on demand: the aggregations so far (the hists, with what the stub counted in the guest
 * up to now), written while the trace goes on, as reading a hist file of ftrace's shows it at
 * any time. This file owns the signal's thread and the request; the pipeline writes the text
 * from the writer thread's poll (no race with the tap that fills the tables). */
#ifndef HVT_AGG_DUMP_H
#define HVT_AGG_DUMP_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

#define AGG_DUMP_SIGNAL SIGUSR2

struct agg_dump {
	pthread_t thread;
	bool running;
	atomic_bool stop;
	atomic_bool want; /* a signal came: the next poll writes the aggregations */
	atomic_uint dumps; /* written so far */
	/* held while the stub's tables are read: the detach clears @live under it first */
	pthread_mutex_t lock;
	bool live;
};

/* Blocks AGG_DUMP_SIGNAL in the calling thread (and so in every thread it starts afterwards):
 * call it before any thread starts, so only agg_dump_start's thread takes the signal. */
void agg_dump_block(void);

/* Starts the thread that waits for AGG_DUMP_SIGNAL and sets @d->want; the stub's tables count as
 * readable (live) from now on. 0 or -errno. Main thread. */
int agg_dump_start(struct agg_dump *d);

/* Whether a dump was asked for since the last call (and clears the request). Any thread. */
bool agg_dump_wanted(struct agg_dump *d);

/* From now on the stub's tables are not read (before the detach unmaps them); waits for a read
 * in progress. Main thread. */
void agg_dump_end_live(struct agg_dump *d);

/* Stops and joins the thread (no-op if not started). Main thread. */
void agg_dump_stop(struct agg_dump *d);

#endif

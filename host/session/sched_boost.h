/* Scheduling weight for stub probes' drain and writer threads, without real-time priority: nice
 * -10 for hvtrace (its threads started after inherit it), and the same for its autogroup, when the
 * kernel groups tasks by session (sched_autogroup): there, a thread's nice only weighs against
 * its own session's threads, and a drain woken on a CPU where its group has little load was
 * measured waiting 100-150 ms behind other sessions' busy tasks, long enough for a TCG guest to
 * fill a 65536-record ring. Best effort: an unprivileged hvtrace keeps its weights. */
#ifndef HVT_SCHED_BOOST_H
#define HVT_SCHED_BOOST_H

#include <stdbool.h>

#define SCHED_BOOST_NICE (-10)

struct sched_boost {
	bool autogroup_set; /* the autogroup's nice was changed: sched_boost_end puts it back */
	int autogroup_was;
};

/* Raises the calling process's weight as above. Main thread, before the threads that should
 * inherit it are started. */
void sched_boost_begin(struct sched_boost *b);

/* Puts the autogroup's nice back as it was if it is still the one set (the process's own nice
 * stays: it ends with the process). Idempotent. */
void sched_boost_end(struct sched_boost *b);

/* The nice of an autogroup line ("/autogroup-4 nice 0"): 0 and *@nice, or -EINVAL. Pure. */
int sched_boost_parse_autogroup(const char *line, int *nice);

#endif

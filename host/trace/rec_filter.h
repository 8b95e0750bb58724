/* Which guest tasks and CPUs are traced (trace-cmd's -P and --comm, ftrace's set_ftrace_pid and
 * tracing_cpumask): a test on each record the host makes, trap and stub path alike, before it
 * reaches the writer. */
#ifndef HVT_REC_FILTER_H
#define HVT_REC_FILTER_H

#include "host/trace/event_filter.h"
#include "host/trace/record.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REC_FILTER_MAX_CPUS 1024 /* CPU numbers a --cpu list may name: 0..1023 */

struct rec_filter {
	int32_t *pids; /* -P: guest task pids (task_struct.pid) */
	size_t nr_pids;
	char **comms; /* --comm: ftrace globs on the task's comm (owned copies) */
	size_t nr_comms;
	bool by_cpu;				 /* --cpu given: only the CPUs in cpus */
	uint64_t cpus[REC_FILTER_MAX_CPUS / 64]; /* bit n: CPU n */
	/* --filter-event: the event records of the probe at @ip must satisfy each @ef */
	struct rec_event_filter {
		uint64_t ip;
		const struct ef_filter *ef; /* bound; borrowed */
	} * events;
	size_t nr_events;
};

/* -P PID: adds a pid (decimal, 0..2^30). 0, -EINVAL with "-P 'ARG': ..." in @err, or -ENOMEM. */
int rec_filter_add_pid(struct rec_filter *f, const char *arg, char *err, size_t errlen);

/* --comm GLOB: adds a task name glob (1..15 characters, as a comm). 0, -EINVAL or -ENOMEM. */
int rec_filter_add_comm(struct rec_filter *f, const char *glob, char *err, size_t errlen);

/* --cpu LIST: adds the CPUs of a list like tracing_cpumask's ranges, "0,2-3" (each below
 * REC_FILTER_MAX_CPUS, ranges ascending). 0, or -EINVAL with "--cpu 'LIST': ... at column N". */
int rec_filter_add_cpus(struct rec_filter *f, const char *list, char *err, size_t errlen);

/* --cpu against a guest of @nr_cpus vCPUs: 0, or -EINVAL with "--cpu: CPU N is not one of the
 * guest's M vCPUs (0-M-1)" in @err for the first CPU the list names that the guest does not have
 * (records of it can never come: the trace would keep nothing of it). Pure. */
int rec_filter_check_cpus(const struct rec_filter *f, unsigned nr_cpus, char *err, size_t errlen);

/* --filter-event: event records of the probe at @ip are kept only if @ef (bound, outliving @f)
 * accepts their payload. 0 or -ENOMEM. */
int rec_filter_add_event(struct rec_filter *f, uint64_t ip, const struct ef_filter *ef);

/* Whether the filter selects anything (some -P, --comm, --cpu or event filter). Pure. */
bool rec_filter_active(const struct rec_filter *f);

/* Whether record @r (with its @len bytes of @payload) is kept: its CPU is selected (or no --cpu),
 * its task is (its pid is one of -P or its comm matches a --comm glob, or neither was given), and,
 * for an event record, every event filter of its probe accepts the payload. A lost-events or
 * snapshot mark is always kept. Pure, allocation-free (hot path). */
bool rec_filter_keep(const struct rec_filter *f, const struct hvt_record *r, const void *payload,
		     size_t len);

/* Frees what the add functions allocated; @f is then empty. (A shallow copy that added only event
 * filters frees those with rec_filter_free_events.) */
void rec_filter_free(struct rec_filter *f);
void rec_filter_free_events(struct rec_filter *f);

#endif

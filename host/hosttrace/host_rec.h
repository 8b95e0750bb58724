/* The host's side of a guest trace (record --host): the host kernel's own events about the vCPU
 * threads (sched_switch and sched_wakeup, kvm_entry and kvm_exit where the host has them, and the
 * --host-event ones) recorded through libtracefs into an instance of the host's tracefs of its
 * own, on the "mono" clock (CLOCK_MONOTONIC, the clock hvtrace stamps guest events with), while the
 * guest is traced; then written as trace-cmd's trace.dat with the options trace-cmd's host-guest
 * tracing writes (TRACEID, and GUEST: the guest's name, trace id and vCPU -> host thread map).
 * One owner thread; host_rec's reader thread copies the raw ring-buffer pages to temporary files.
 */
#ifndef HVT_HOST_REC_H
#define HVT_HOST_REC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define HOST_REC_MAX_VCPUS  64
#define HOST_REC_MAX_EVENTS 32

struct tracefs_instance;
struct tracefs_cpu;

struct host_rec_cpu {
	struct tracefs_cpu *tcpu;
	FILE *tmp;	/* its raw pages, unlinked */
	uint64_t pages; /* written to tmp */
};

struct host_rec {
	struct tracefs_instance *inst; /* "hvtrace-PID", removed by host_rec_close */
	unsigned nr_cpus;	       /* the host's possible CPUs */
	struct host_rec_cpu *cpus;
	int page_size; /* of the host's ring buffer (trace_pipe_raw's read size) */
	char events[HOST_REC_MAX_EVENTS][96]; /* "system:event", enabled */
	size_t nr_events;
	int tids[HOST_REC_MAX_VCPUS]; /* host thread of each vCPU */
	unsigned nr_vcpus;
	uint64_t trace_id; /* this file's TRACEID */
	pthread_t thread;
	bool thread_running;
	atomic_bool stop;
	int err; /* first write error of the reader thread (errno), 0 none */
};

/* Where the host's file goes beside the guest's @guest_path: "-host" before the extension of its
 * last path component ("out/trace.dat" -> "out/trace-host.dat", "t" -> "t-host"). -ENAMETOOLONG. */
int host_rec_path(const char *guest_path, char *out, size_t len);

/* Whether @name has the shape SYSTEM:EVENT (identifiers). Pure. */
bool host_rec_event_name_ok(const char *name);

/* The tracefs filter that keeps the events whose @nf @fields hold one of the @n thread ids @tids:
 * "F==a||F==b||G==a...", in @out. 0, or -ENOSPC when it does not fit in @len. Pure. */
int host_rec_tid_filter(const char *const *fields, size_t nf, const int *tids, unsigned n,
			char *out, size_t len);

/* Before anything starts: the host's tracefs can be reached, and has each of @extra. 0, or a
 * negative errno with one line in @err. */
int host_rec_check(const char *const *extra, size_t nr_extra, char *err, size_t errlen);

/* Starts recording: a tracefs instance on the mono clock with sched:sched_switch and
 * sched:sched_wakeup filtered to the @nr_tids vCPU threads @tids (kvm:kvm_entry and kvm:kvm_exit
 * too, where the host has them), and each of @extra ("system:event", unfiltered). Temporary files
 * in @tmpdir. 0, or a negative errno with one line in @err (nothing left behind). */
int host_rec_start(struct host_rec *h, const int *tids, unsigned nr_tids, const char *const *extra,
		   size_t nr_extra, const char *tmpdir, char *err, size_t errlen);

/* Removes the host's tracefs instances "hvtrace-PID" and "hvtrace-PID-tsc" that an hvtrace killed
 * before it could remove them left behind: those whose process is gone (and this process's own
 * "hvtrace-PID", not made yet), one line on stderr each. host_rec_start calls it. Returns how many. */
unsigned host_rec_sweep(void);

/* The same for the instances ("hvtrace-PID", "hvtrace-PID-tsc") of processes that are gone only,
 * never this process's own (tsc_follow_start calls it, whatever this process has made). */
unsigned host_rec_sweep_dead(void);

/* Stops recording and takes in what the ring buffers still hold. Safe to call twice. */
void host_rec_stop(struct host_rec *h);

/* Writes the stopped recording to @path as trace.dat (version 6) with the options TRACECLOCK,
 * TRACEID (h->trace_id) and GUEST (@guest_name, @guest_trace_id, each vCPU's host thread). 0, or
 * a negative errno with one line in @err. */
int host_rec_write(struct host_rec *h, const char *path, const char *guest_name,
		   uint64_t guest_trace_id, char *err, size_t errlen);

/* Stops if needed, removes the instance, frees everything. Safe on a zeroed or closed struct. */
void host_rec_close(struct host_rec *h);

#endif

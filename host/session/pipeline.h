/* One trace session's pipeline, the same for every backend: the sites a session selects, the tracer
 * over a target, the sink that formats, the profile and expectations that summarise, the writer
 * thread between them. `run` (embedded VMM), `run --qemu` and `attach` build it the same way; only
 * what reaches the target differs. All calls on the main thread. */
#ifndef HVT_PIPELINE_H
#define HVT_PIPELINE_H

#include "host/session/pipeline_guest.h"
#include "host/session/session.h"
#include "host/trace/tracer.h"
#include "vmi/vmi_sites.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One session's pipeline: an opaque handle, made by pipeline_new, freed by pipeline_free. */
struct pipeline;

/* A new, empty pipeline in *@out (the caller's; pipeline_free). 0 or -ENOMEM. Main thread. */
int pipeline_new(struct pipeline **out);

/* Chooses the sites to probe among @sites: @preselected (taken over; the backend's own choice for
 * the tracer, e.g. a graph closure) or else the session's -l/-n filters; none for the nop tracer;
 * then every -e/-r function, and the site in @inside (NULL: none built) of every -e func+OFFSET.
 * Touches no guest. Returns 0 or an exit status with @err. */
int pipeline_select(struct pipeline *p, const struct session *s, const struct vmi_sites *sites,
		    const struct vmi_sites *inside, const struct vmi_site **preselected,
		    size_t nr_preselected, char *err, size_t errlen);

/* record --host: starts recording the host's events about the guest's @n vCPU threads @tids (host
 * thread ids, vCPU i's at [i]), the guest named @guest in the host's file. Stopped by
 * pipeline_finish, which writes that file beside -o and pairs the two. 0 (nothing to do without
 * --host) or an exit status with @err. Main thread, before pipeline_start. */
int pipeline_host_start(struct pipeline *p, const int *tids, unsigned n, const char *guest,
			char *err, size_t errlen);

/* Builds the tracer over @g's target for the selected sites, binds events, return probes and graph
 * roots, checks --expect-* names, and prepares sink (writing to @out) and profile. Nothing touches
 * the guest yet. Returns 0 or an exit status with @err. */
int pipeline_build(struct pipeline *p, const struct pipeline_guest *g, FILE *out, char *err,
		   size_t errlen);

/* Patches the guest (tracer_attach) and starts the writer. Returns 0, @attach_status when the guest
 * could not be patched (what tracer_attach could not undo then, pipeline_detach does), or another
 * exit status; @err says why. */
int pipeline_start(struct pipeline *p, int attach_status, char *err, size_t errlen);

/* Leaves the guest as it was found (tracer_detach). Idempotent. 0 or -errno. */
int pipeline_detach(struct pipeline *p);

/* The run has ended (by the guest, a signal, --timeout), the rest of the trace is to be written: the
 * progress line is erased (the backend's message on how the run ended follows it), and until
 * pipeline_finish a signal on @sfd (the backend's signalfd, which nothing else reads from now on)
 * cuts the trace short: the records not yet written are dropped and counted (tracer_cut,
 * writer_cut), so a second Ctrl-C does not wait for a large backlog, and the trace still ends with
 * its trailer, which says how many were not written. Starts a thread (nothing without a writer).
 * 0 or -errno (then a signal waits until hvtrace exits, as before). Main thread. */
int pipeline_run_ended(struct pipeline *p, int sfd);

/* Ends the session after the guest was detached (or is gone): stops the writer (and the watcher of
 * pipeline_run_ended: a trace it cut short is one line, and a @status of 0 becomes the signal's),
 * prints the stats (--stats: @backend_stats(@ctx, @p)), the profile (--profile) and, when
 * @status is still 0, the --expect-* verdict; then writes --summary and --junit. Returns @status,
 * EXIT_EXPECT for an unmet expectation, or EXIT_HOST_ERROR when the trace (the sink) or --summary /
 * --junit could not be written (and @status was 0). Call once. */
int pipeline_finish(struct pipeline *p, int status,
		    void (*backend_stats)(void *ctx, const struct pipeline *p), void *ctx);

/* --stats: the stub-probe line (nothing without stub probes); for backend_stats. */
void pipeline_print_stub_stats(const struct pipeline *p);

/* What the driver and the backends ask of a pipeline; main thread. */
/* Whether pipeline_select ran on @p. */
bool pipeline_selected(const struct pipeline *p);
/* The sink's write error (errno, 0 none), once pipeline_finish has run. */
int pipeline_sink_err(const struct pipeline *p);
/* Whether pipeline_build made the tracer. */
bool pipeline_has_tracer(const struct pipeline *p);
/* Whether the vCPUs are to be held while the stub drain asks (stub probes with backpressure). */
bool pipeline_backpressure(const struct pipeline *p);
/* Whether the stub drain asks for the vCPUs to be held now (any thread). */
bool pipeline_drain_holding(struct pipeline *p);
/* Counts @n holds of the vCPUs, @ns in all, in the stub drain's pauses. */
void pipeline_count_pauses(struct pipeline *p, uint64_t n, uint64_t ns);
/* The tracer's target (after pipeline_build). */
struct target *pipeline_target(const struct pipeline *p);
/* For a guest that went away without a detach: tracer_stop_drain, if there is a tracer. */
void pipeline_stop_drain(struct pipeline *p);
/* The selected sites (pipeline_select), @nr of them; borrowed. */
const struct vmi_site *const *pipeline_selection(const struct pipeline *p, size_t *nr);
/* The backend's hook in the detach (tracer_set_before_detach). After pipeline_build. */
void pipeline_set_before_detach(struct pipeline *p, void (*fn)(void *ctx), void *ctx);
/* The guest's text patchers (tracer_set_patchers): before pipeline_start. 0 or -errno. */
int pipeline_set_patchers(struct pipeline *p, const struct vmi_patcher *ps, size_t n);
/* tracer_forget_range on the pipeline's tracer (in before_detach). */
size_t pipeline_forget_range(struct pipeline *p, uint64_t lo, uint64_t hi);
/* tracer_set_task_slots on the pipeline's tracer (in before_detach). */
void pipeline_set_task_slots(struct pipeline *p, const uint64_t *current, const uint64_t *preempt);

/* The pipeline's tracer, to read (tracer_probes, trampoline); borrowed. */
const struct tracer *pipeline_tracer(const struct pipeline *p);
/* In the guardian: tracer_takeover_detach on the pipeline's tracer. */
int pipeline_takeover_detach(struct pipeline *p);

/* Each vCPU's events the writer delivered, for backend_stats (NULL before the writer started).
 * Borrowed; main thread, in pipeline_finish. */
const unsigned long long *pipeline_cpu_events(const struct pipeline *p);

/* Frees everything pipeline_select and pipeline_build made, and @p itself (NULL: nothing). Main
 * thread, after pipeline_finish when the pipeline was selected. */
void pipeline_free(struct pipeline *p);

#endif

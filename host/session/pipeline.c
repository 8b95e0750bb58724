/* One session's pipeline (pipeline.h): selection, build, start, the end watcher, finish, record
 * --host. */
#include "host/session/pipeline.h"
#include "host/hosttrace/host_rec.h"
#include "host/session/cmd_out.h"
#include "host/session/events.h"
#include "host/session/exitcode.h"
#include "host/session/probe_setup.h"
#include "host/session/progress.h"
#include "host/sink/out_fail.h"
#include "host/sink/sink.h"
#include "host/sink/sink_format.h"
#include "host/sink/sink_quiet.h"
#include "host/sink/sink_tracedat.h"
#include "host/sink/tracedat_host.h"
#include "host/sink/sink_trigger.h"
#include "host/sink/writer.h"
#include "host/tap/expect.h"
#include "host/tap/hist.h"
#include "host/tap/hist_print.h"
#include "host/tap/profile.h"
#include "host/tap/profile_stat.h"
#include "host/tap/agg_feed.h"
#include "host/session/agg_plan.h"
#include "host/session/agg_dump.h"
#include "host/tap/verdict_files.h"
#include "host/trace/clock.h"
#include "host/trace/filter.h"
#include "vmi/vmi_dwarf.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <libgen.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <unistd.h>

struct pipeline {
	const struct session *s;     /* borrowed */
	const struct vmi_site **sel; /* the sites probed (owned) */
	size_t nr_sel;
	size_t nr_traced;  /* sel[0..nr_traced) are the tracer's; the rest only there for -e / -r */
	struct tracer *tr; /* pipeline_build's (owned) */
	struct sink sink;
	struct writer w;
	struct profile prof;
	struct expect_state expect;	  /* --expect-*, --summary, --junit */
	struct fe_spec *events, *rprobes; /* the session's -e / -r, typed from BTF (owned) */
	bool have_tr, profiling, writing, expecting;
	double t_start; /* when the writer started (clock_now_s), for --summary / --junit */
	struct progress progress;      /* the progress line on a terminal's stderr (not --quiet) */
	struct rec_filter keep;	       /* the session's task filter with the event filters added */
	struct ef_filter *efilters;    /* --filter-event, bound to the probes' events (owned) */
	struct sink_trigger trig_sink; /* --trigger: wraps the sink */
	struct hist_set hists;	       /* --trigger FUNC:hist: the tables the tap fills */
	struct sink_quiet quiet_sink;  /* -p nop: a hist's function feeds the hist alone */
	uint32_t own_ret[64];	       /* probes whose returns are hooked for a duration hist only */
	size_t nr_own_ret;
	struct agg_dump dump; /* SIGUSR2: the hists so far, written mid-run */
	/* pipeline_run_ended: the thread that reads the signals coming once the run has ended */
	pthread_t watcher;
	bool watching;
	int watch_sfd, watch_efd; /* the backend's signalfd (borrowed), the stop eventfd (owned) */
	atomic_int cut_sig;	  /* the signal that cut the trace short, 0: none */
	/* record --host (pipeline_host_start, pipeline_host_end) */
	struct host_rec host;
	bool hosting;
	char host_guest[64]; /* the guest's name in the host file */
	uint64_t guest_trace_id;
	int host_status;	     /* the host file's writing: 0, or an exit status (said) */
	char host_path[4096];	     /* where it went */
	struct host_side *host_side; /* that file read back: trap events to their exits (owned) */
	struct td_restamp_counts moved; /* what the sink moved */
};

int pipeline_new(struct pipeline **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

/* The nop tracer traces nothing, but a hist trigger's function among the -l sites @sel (@nr) is
 * probed all the same, its records feeding the hist only: those are moved to the front. Returns
 * how many. */
static size_t hist_only_sites(const struct session *s, const struct vmi_site **sel, size_t nr)
{
	size_t kept = 0;

	for (size_t i = 0; i < nr; i++)
		for (size_t k = 0; k < s->nr_hists; k++)
			if (!strcmp(sel[i]->func->name, s->hists[k].func)) {
				sel[kept++] = sel[i];
				break;
			}
	return kept;
}

int pipeline_select(struct pipeline *p, const struct session *s, const struct vmi_sites *sites,
		    const struct vmi_sites *inside, const struct vmi_site **preselected,
		    size_t nr_preselected, char *err, size_t errlen)
{
	int ret = 0;

	memset(p, 0, sizeof(*p));
	p->s = s;
	if (preselected) {
		p->sel = preselected;
		p->nr_sel = nr_preselected;
	} else if (s->tracer != TRACER_NOP || s->nr_filter || s->nr_notrace) {
		ret = filter_select(sites, s->filter, s->nr_filter, s->notrace, s->nr_notrace,
				    &p->sel, &p->nr_sel, err, errlen);
	}
	if (ret == 0 && s->tracer == TRACER_NOP && !s->profile)
		p->nr_sel = hist_only_sites(s, p->sel, p->nr_sel);
	p->nr_traced = p->nr_sel;
	if (ret == 0)
		ret = events_select(s, sites, inside, &p->sel, &p->nr_sel, err, errlen);
	if (ret == -ENOMEM)
		msg_fmt(err, errlen, "out of memory");
	return ret == 0 ? 0 : ret == -ENOMEM ? EXIT_HOST_ERROR : EXIT_BAD_INPUT;
}

/* -e events and -r return probes; @traced[i]: probe i is one of the tracer's own sites. */
static int bind_events(struct pipeline *p)
{
	bool *traced = calloc(p->nr_sel ? p->nr_sel : 1, sizeof(*traced));
	int ret;

	if (!traced)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_traced; i++)
		traced[i] = true;
	ret = events_bind(p->s, p->events, p->rprobes, p->tr, traced);
	free(traced);
	return ret;
}

/* --filter-event: each filter bound to the -e event of its function, in the record filter. */
static int bind_event_filters(struct pipeline *p, char *err, size_t errlen)
{
	const struct session *s = p->s;
	const struct probe_table *probes = tracer_probes(p->tr);

	if (!s->nr_efilters)
		return 0;
	p->efilters = malloc(s->nr_efilters * sizeof(*p->efilters));
	if (!p->efilters) {
		msg_fmt(err, errlen, "out of memory");
		return EXIT_HOST_ERROR;
	}
	memcpy(p->efilters, s->efilters, s->nr_efilters * sizeof(*p->efilters));
	for (size_t k = 0; k < s->nr_efilters; k++) {
		struct ef_filter *ef = &p->efilters[k];
		const struct probe *pr = NULL;

		/* an event inside a function by its probe's name (FUNC+0xOFF), others by their
		 * spec's function (an alias of the probed symbol's name included) */
		probe_for_each(q, probes)
			if (q->event &&
			    !strcmp(q->inside ? q->func->name : q->event->func, ef->func)) {
				pr = q;
				break;
			}
		if (!pr) {
			msg_fmt(err, errlen, "--filter-event '%s': %s has no -e event", ef->text,
				ef->func);
			return EXIT_BAD_INPUT;
		}
		if (ef_bind(ef, pr->event, err, errlen) < 0)
			return EXIT_BAD_INPUT;
		if (rec_filter_add_event(&p->keep, pr->addr, ef) < 0) {
			msg_fmt(err, errlen, "out of memory");
			return EXIT_HOST_ERROR;
		}
	}
	return 0;
}

/* The guest's code addresses: from the first function to the end of the last. */
static void text_range(const struct vmi_symtab *funcs, uint64_t *lo, uint64_t *hi)
{
	*lo = *hi = 0;
	if (!funcs || !funcs->nr)
		return;
	*lo = funcs->syms[0].addr;
	*hi = funcs->syms[funcs->nr - 1].addr + funcs->syms[funcs->nr - 1].size;
}

/* The profile (--profile, and what the verdicts count) and the expectations, bound to the probes:
 * before the sink, so a function that is not traced is refused before anything is made. */
static int prepare_expect(struct pipeline *p, unsigned nr_cpus, char *err, size_t errlen)
{
	const struct session *s = p->s;
	bool expecting = s->nr_expects || s->summary || s->junit;

	if (!s->profile && !expecting)
		return 0;
	if (profile_init(&p->prof, tracer_probes(p->tr)) < 0 ||
	    profile_set_cpus(&p->prof, nr_cpus) < 0)
		goto nomem;
	p->profiling = true;
	if (!expecting)
		return 0;
	if (expect_state_init(&p->expect, &p->prof, s->expects, s->nr_expects) < 0)
		goto nomem;
	p->expecting = true;
	if (expect_bind(p->expect.v, p->expect.nr, tracer_probes(p->tr),
			s->tracer == TRACER_FUNCTION_GRAPH, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	return 0;
nomem:
	msg_fmt(err, errlen, "out of memory");
	return EXIT_HOST_ERROR;
}

/* The sink of --format (or the command's default) over the live record stream, or record's
 * trace.dat. 0, or an exit status with @err. */
static int make_sink(struct pipeline *p, const struct pipeline_guest *g, FILE *out, unsigned nr_cpus,
		     char *err, size_t errlen)
{
	const struct session *s = p->s;
	enum sink_use use = s->record ? SINK_RECORD : SINK_LIVE;
	const struct sink_format *f =
	    s->format ? s->format : sink_format_default(use, s->tracer == TRACER_FUNCTION_GRAPH);
	const struct vmi_sym *lo = vmi_symtab_find(g->funcs, "__irqentry_text_start");
	const struct vmi_sym *hi = vmi_symtab_find(g->funcs, "__irqentry_text_end");
	struct sink_config cfg = {
	    .out = out,
	    .path = s->output,
	    .syms = g->funcs,
	    .nr_cpus = nr_cpus,
	    .tracer = tracer_name(s->tracer),
	    .graph_retval = s->funcgraph_retval,
	    .graph_retval_hex = s->funcgraph_retval_hex,
	    .graph_tail = s->funcgraph_tail,
	    .events = p->events,
	    .nr_events = s->nr_events,
	    .rprobes = p->rprobes,
	    .nr_rprobes = s->nr_rprobes,
	};
	sink_make_fn make = sink_format_maker(f, use);
	int ret;

	/* the kernel's ==========> / <========== around its .irqentry.text */
	if (lo && hi && lo->addr < hi->addr) {
		cfg.irq_lo = lo->addr;
		cfg.irq_hi = hi->addr;
	}
	ret = make ? make(&p->sink, &cfg) : -ENOTSUP; /* session_args chose a format @use writes */
	if (ret < 0 && use == SINK_RECORD) {
		msg_fmt(err, errlen, "-o %s: temporary per-CPU files: %s", s->output,
			strerror(-ret));
		return EXIT_HOST_ERROR;
	}
	if (ret < 0) {
		msg_fmt(err, errlen, "--format %s: %s", f->name,
			ret == -ENOMEM ? "out of memory" : strerror(-ret));
		return EXIT_HOST_ERROR;
	}
	return 0;
}

/* Whether a hist of @s needs returns. */
static bool hists_want_returns(const struct session *s)
{
	for (size_t k = 0; k < s->nr_hists; k++)
		if (hist_wants_returns(&s->hists[k]))
			return true;
	return false;
}

/* Whether a hist of @s is keyed by stacktrace (its stack records are hidden from the trace). */
static bool hists_want_stacks(const struct session *s)
{
	for (size_t k = 0; k < s->nr_hists; k++)
		if (hist_stack_key(&s->hists[k]) >= 0)
			return true;
	return false;
}

/* Whether probe @id's returns are hooked for a duration hist alone. */
static bool own_return(const struct pipeline *p, uint32_t id)
{
	for (size_t i = 0; i < p->nr_own_ret; i++)
		if (p->own_ret[i] == id)
			return true;
	return false;
}

/* What only the aggregations want: the entries and returns of a probe only they watch (agg_plan);
 * under the nop tracer an entry, or a return that is no -r's, of a hist's
 * function; under any tracer a return hooked for a duration hist alone. */
static bool hist_only_record(const void *ctx, const struct sink_rec *rec)
{
	const struct pipeline *p = ctx;
	const struct probe *pr = rec->probe;
	bool nop = p->s->tracer == TRACER_NOP;

	if (rec->r->type == HVT_REC_STACK && rec->r->parent == HVT_STACK_FOR_HIST)
		return true; /* a hist's stacktrace key, never traced */
	if (pr && pr->agg)
		return rec->r->type == HVT_REC_ENTRY || rec->r->type == HVT_REC_RETURN;
	if (!pr || !hist_set_watches(&p->hists, pr->id))
		return false;
	if (rec->r->type == HVT_REC_ENTRY)
		return nop;
	return rec->r->type == HVT_REC_RETURN && ((nop && !pr->ret_probe) || own_return(p, pr->id));
}

/* A duration hist (keys or vals) needs its function's returns: hooked here when neither -r nor
 * function_graph hooks them (their records then feed the hist alone). 0 or -errno. */
static int hook_hist_returns(struct pipeline *p)
{
	const struct session *s = p->s;
	const struct probe_table *probes = tracer_probes(p->tr);

	if (s->tracer == TRACER_FUNCTION_GRAPH)
		return 0;
	for (size_t k = 0; k < s->nr_hists; k++) {
		const struct probe *pr = probe_find(probes, s->hists[k].func);
		int ret;

		if (!hist_wants_returns(&s->hists[k]) || !pr || pr->ret_probe || pr->agg ||
		    pr->no_return || pr->inside || (pr->quiet_entry && !pr->event))
			continue;
		if (p->nr_own_ret == sizeof(p->own_ret) / sizeof(p->own_ret[0]))
			return -E2BIG;
		ret = tracer_set_return(p->tr, pr->id, NULL, false);
		if (ret < 0)
			return ret;
		p->own_ret[p->nr_own_ret++] = pr->id;
	}
	return 0;
}

/* The writer's tap: the expectations (which feed the profile) or the profile, and the hists. */
static void pipeline_tap(void *ctx, const struct sink_rec *rec)
{
	struct pipeline *p = ctx;

	if (p->expecting)
		expect_tap(&p->expect, rec);
	else if (p->profiling)
		profile_add(&p->prof, rec);
	if (p->hists.nr)
		hist_add(&p->hists, rec);
}

int pipeline_build(struct pipeline *p, const struct pipeline_guest *g, FILE *out, char *err,
		   size_t errlen)
{
	const struct session *s = p->s;
	struct tracer_opts opts = {
	    .stub = g->stub,
	    .stub_backpressure = g->stub && g->backpressure,
	    .returns = s->tracer == TRACER_FUNCTION_GRAPH || s->nr_rprobes ||
		       hists_want_returns(s) || (s->tracer == TRACER_NOP && s->profile),
	    .hook_all = s->tracer == TRACER_FUNCTION_GRAPH,
	    .graph_filter = s->nr_graph > 0,
	    .lazy = s->nr_graph > 0, /* trap probes only (tracer_new) */
	    .max_depth = s->max_depth,
	    .ring_records = (uint64_t)s->buffer_size_kb * 1024 / sizeof(struct hvt_record),
	    .ring_exact = s->buffer_size_set,
	    .keep = rec_filter_active(&s->tasks) || s->nr_efilters ? &p->keep : NULL,
	    .tracing_off = s->tracing_off,
	};
	unsigned nr_cpus = g->tgt->nr_cpus;
	int ret;

	/* -e / -r typed from BTF: refused here, before any probe, like any bad spec */
	ret = events_resolve(s, g->btf, &p->events, &p->rprobes, err, errlen);
	if (ret < 0) {
		if (ret == -ENOMEM)
			msg_fmt(err, errlen, "out of memory");
		return ret == -ENOMEM ? EXIT_HOST_ERROR : EXIT_BAD_INPUT;
	}
	text_range(g->funcs, &opts.text_lo, &opts.text_hi);
	/* a Linux kernel with the ORC unwinder keeps no frame pointers */
	opts.no_frame_pointers = g->funcs && vmi_symtab_find(g->funcs, "__orc_find");
	/* the session's task filter, borrowed; the event filters are added once the probes exist */
	p->keep = s->tasks;
	p->keep.events = NULL;
	p->keep.nr_events = 0;
	ret = tracer_new(&p->tr, g->tgt, p->sel, p->nr_sel, g->task, &opts);
	if (ret < 0) {
		msg_fmt(err, errlen, "%s",
			ret == -ENOTSUP ? g->no_trampoline : "out of memory for the trace buffers");
		return ret == -ENOTSUP ? EXIT_BAD_INPUT : EXIT_HOST_ERROR;
	}
	p->have_tr = true;
	if (probe_setup_detours(p->tr, s, g) < 0) {
		msg_fmt(err, errlen, "out of memory");
		return EXIT_HOST_ERROR;
	}
	if (bind_events(p) < 0) {
		msg_fmt(err, errlen, "out of memory for event buffers");
		return EXIT_HOST_ERROR;
	}
	ret = probe_setup_no_returns(p->tr, s, g, err, errlen);
	if (!ret)
		ret = bind_event_filters(p, err, errlen);
	if (!ret)
		ret = probe_setup_triggers(p->tr, s, err, errlen);
	if (ret)
		return ret;
	if (probe_setup_graph_roots(p->tr, s, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	ret = prepare_expect(p, nr_cpus, err, errlen);
	if (ret)
		return ret;
	/* after the arguments' own checks: a wrong command line is told as such on every host */
	if (g->no_trap && probe_setup_need_trap(p->tr, err, errlen))
		return EXIT_BAD_INPUT;
	if (g->stub && s->probe == PROBE_STUB)
		probe_setup_say_trap(p->tr);
	ret = agg_plan_apply(p->tr, s, g->stub);
	if (ret < 0) {
		msg_fmt(err, errlen, "aggregation in the guest: %s", strerror(-ret));
		return EXIT_HOST_ERROR;
	}
	ret = hook_hist_returns(p);
	if (ret < 0) {
		if (ret == -E2BIG)
			snprintf(err, errlen, "--trigger hist: duration on more than %zu functions",
				 sizeof(p->own_ret) / sizeof(p->own_ret[0]));
		else
			snprintf(err, errlen, "--trigger hist: returns: %s", strerror(-ret));
		return ret == -E2BIG ? EXIT_BAD_INPUT : EXIT_HOST_ERROR;
	}
	ret = hist_set_init(&p->hists, s->hists, s->nr_hists, tracer_probes(p->tr),
			    s->tracer == TRACER_FUNCTION_GRAPH, err, errlen);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory for the hist tables");
	if (ret)
		return ret == -ENOMEM ? EXIT_HOST_ERROR : EXIT_BAD_INPUT;
	ret = make_sink(p, g, out, nr_cpus, err, errlen);
	if (ret)
		return ret;
	if (s->nr_triggers)
		sink_trigger_wrap(&p->sink, &p->trig_sink, s->record ? NULL : s->output);
	if ((s->nr_hists || s->profile) &&
	    (s->tracer == TRACER_NOP || p->nr_own_ret || hists_want_stacks(s)))
		sink_quiet_wrap(&p->sink, &p->quiet_sink, hist_only_record, p);
	/* each record's probe and spec, looked up once by the writer for the sink and the tap */
	p->w.lookup = writer_lookup_probes;
	p->w.lookup_ctx = tracer_probes(p->tr);
	if (p->expecting || p->profiling || s->nr_hists) {
		p->w.tap = pipeline_tap;
		p->w.tap_ctx = p;
	}
	return 0;
}

static void pipeline_poll(void *ctx);

int pipeline_start(struct pipeline *p, int attach_status, char *err, size_t errlen)
{
	unsigned nr_rings;
	struct ring *rings;
	int ret;

	ret = tracer_attach(p->tr, err, errlen);
	if (ret < 0) /* out of memory (the stub drain's buffers among it): a host failure */
		return ret == -ENOMEM ? EXIT_HOST_ERROR : attach_status;
	/* SIGUSR2: the hists and the profile so far, from the writer thread's poll */
	if ((p->hists.nr || (p->profiling && p->s->profile)) && agg_dump_start(&p->dump) == 0) {
		p->w.poll = pipeline_poll;
		p->w.poll_ctx = p;
	}
	rings = tracer_rings(p->tr, &nr_rings);
	ret = writer_start(&p->w, rings, nr_rings, &p->sink, tracer_horizon, p->tr);
	if (ret < 0) {
		msg_fmt(err, errlen, "writer thread: %s", strerror(-ret));
		return EXIT_HOST_ERROR;
	}
	p->writing = true;
	p->t_start = clock_now_s();
	/* the progress line: on a terminal's stderr only, and not over a trace printed on a terminal;
	 * without it the trace is the same */
	if (progress_wanted(STDERR_FILENO, p->s->quiet) &&
	    !(p->sink.out == stdout && isatty(STDOUT_FILENO)))
		progress_start(&p->progress, p->tr, STDERR_FILENO, 500);
	return 0;
}

/* The watcher: the first signal after the run's end cuts the trace short; later ones are read and
 * ignored (the trace is being closed). A failed output (out_fail) cuts it too, silently: nothing
 * more can be written, and the output's own line says why. Ends when the eventfd is written. */
static void *watch_end(void *arg)
{
	struct pipeline *p = arg;

	for (;;) {
		struct pollfd fds[2] = {{.fd = p->watch_sfd, .events = POLLIN},
					{.fd = p->watch_efd, .events = POLLIN}};
		struct signalfd_siginfo si;

		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			break;
		if (fds[1].revents)
			break;
		if (!(fds[0].revents & POLLIN) || read(p->watch_sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (out_fail_is((int)si.ssi_signo)) {
			/* an output failed: nothing more can be written (its own line says so) */
			tracer_cut(p->tr);
			writer_cut(&p->w);
		} else if (!atomic_load(&p->cut_sig)) {
			atomic_store(&p->cut_sig, (int)si.ssi_signo);
			tracer_cut(p->tr);
			writer_cut(&p->w);
		}
	}
	return NULL;
}

int pipeline_run_ended(struct pipeline *p, int sfd)
{
	int e;

	if (!p->writing || p->watching)
		return 0;
	progress_stop(&p->progress);
	if (sfd < 0)
		return 0;
	p->watch_sfd = sfd;
	p->watch_efd = eventfd(0, EFD_CLOEXEC);
	if (p->watch_efd < 0)
		return -errno;
	atomic_store(&p->cut_sig, 0);
	e = pthread_create(&p->watcher, NULL, watch_end, p);
	if (e) {
		close(p->watch_efd);
		return -e;
	}
	p->watching = true;
	return 0;
}

/* Stops the watcher of pipeline_run_ended, if it runs. */
static void unwatch_end(struct pipeline *p)
{
	uint64_t one = 1;

	if (!p->watching)
		return;
	if (write(p->watch_efd, &one, sizeof(one)) != sizeof(one))
		pthread_cancel(p->watcher); /* cannot happen: an eventfd takes a write of 1 */
	pthread_join(p->watcher, NULL);
	close(p->watch_efd);
	p->watching = false;
}

int pipeline_detach(struct pipeline *p)
{
	agg_dump_end_live(&p->dump); /* the stub's tables are not read once it may be unmapped */
	return p->have_tr ? tracer_detach(p->tr) : 0;
}

/* The stub's counting sites (aggregation in the guest), when there are any: how many, the table
 * entries each CPU had, the entries read back, and the guest's overflow and forged entries. */
static void print_counting_stats(const struct pipeline *p)
{
	const struct stub_agg *a = tracer_stub_agg(p->tr);
	size_t n = 0;

	probe_for_each(pr, tracer_probes(p->tr))
		n += pr->stub && pr->agg && pr->agg_count;
	if (!n)
		return;
	fprintf(stderr,
		"hvtrace: stats: stub counting sites %zu table-entries %llu/cpu entries-read %zu "
		"agg-dropped %llu agg-rejected %llu%s\n",
		n, (unsigned long long)tracer_stub_agg_entries(p->tr), a ? a->nr : 0,
		a ? (unsigned long long)a->dropped : 0ull,
		a ? (unsigned long long)a->rejected : 0ull,
		a && !a->read ? " (tables unread)" : "");
}

void pipeline_print_stub_stats(const struct pipeline *p)
{
	struct tracer_stats st;

	tracer_stats(p->tr, &st);
	if (!st.stub_probes)
		return;
	fprintf(stderr,
		"hvtrace: stats: stub probes %zu records %llu lost %llu guest-reported-lost %llu "
		"rejected %llu ring %llu/cpu region %llu KiB %s%s%s host-ring-stalls %llu "
		"cpu-from %s backpressure %s pauses %llu paused-us %llu guest-waits %llu wait-timeouts %llu "
		"tasks-changed %llu tasks-announced %llu detach-scans %u detach-stacks %lu "
		"detach-hooked %ld detach-hooked-ms %llu\n",
		st.stub_probes, st.stub_records, st.stub_lost, st.stub_guest_lost, st.stub_rejected,
		st.stub_ring_records, st.stub_region_bytes >> 10, st.stub_region_where,
		st.stub_region_perm ? " perm " : "", st.stub_region_perm ? st.stub_region_perm : "",
		st.stub_host_stalls, st.stub_cpu_from,
		st.stub_backpressure ? "on" : "off", st.stub_pauses, st.stub_paused_ns / 1000,
		st.stub_waits, st.stub_wait_timeouts, st.stub_tasks_changed, st.stub_announced,
		st.stub_leave_scans,
		st.stub_leave_stacks, st.stub_leave_hooked, st.stub_leave_hooked_ms);
	print_counting_stats(p);
}

int pipeline_host_start(struct pipeline *p, const int *tids, unsigned n, const char *guest,
			char *err, size_t errlen)
{
	const struct session *s = p->s;
	char dir[4096];
	int ret;

	if (!s->host)
		return 0;
	snprintf(dir, sizeof(dir), "%s", s->output);
	ret = host_rec_start(&p->host, tids, n, (const char *const *)s->host_events,
			     s->nr_host_events, dirname(dir), err, errlen);
	if (ret < 0)
		return ret == -ENOENT || ret == -EINVAL || ret == -E2BIG ? EXIT_BAD_INPUT
									 : EXIT_HOST_ERROR;
	p->hosting = true;
	snprintf(p->host_guest, sizeof(p->host_guest), "%s", guest && *guest ? guest : "guest");
	return 0;
}

/* record --host, before the guest's file is written: the host's file, then read back so that the
 * guest's trap events take their vCPU's kvm_exit as their time (sink_tracedat_restamp). A host file
 * that cannot be read back leaves them as hvtrace stamped them, with one line. */
static void host_file_write(struct pipeline *p)
{
	char err[512];
	int ret;

	ret = host_rec_path(p->s->output, p->host_path, sizeof(p->host_path));
	if (!ret)
		ret = host_rec_write(&p->host, p->host_path, p->host_guest, p->guest_trace_id, err,
				     sizeof(err));
	else
		msg_fmt(err, sizeof(err), "--host: -o %s: the name is too long", p->s->output);
	if (ret < 0) {
		cmd_error("%s", err);
		p->host_status = EXIT_HOST_ERROR;
		return;
	}
	p->host_side = malloc(sizeof(*p->host_side));
	if (!p->host_side ||
	    host_side_read(p->host_side, p->host_path, p->guest_trace_id, err, sizeof(err)) < 0) {
		if (p->host_side)
			fprintf(stderr,
				"hvtrace: --host: trap events keep hvtrace's own times: %s\n", err);
		free(p->host_side);
		p->host_side = NULL;
		return;
	}
	sink_tracedat_restamp(&p->sink, p->host_side, tracer_trampoline(p->tr), &p->moved);
}

/* pipeline_finish's part: before the sink ends, stops the host recording, writes the host's file
 * and gives the guest's file its pairing options; after (@after), says where the host's file went
 * and how many trap events moved to their exits. Returns @status, or an exit status when the host's
 * file could not be written. */
static int pipeline_host_end(struct pipeline *p, int status, bool after)
{
	if (!p->hosting)
		return status;
	if (!after) {
		host_rec_stop(&p->host);
		if (getrandom(&p->guest_trace_id, sizeof(p->guest_trace_id), 0) !=
		    sizeof(p->guest_trace_id))
			p->guest_trace_id = p->host.trace_id ^ 0x9e3779b97f4a7c15ull;
		sink_tracedat_peer(&p->sink, p->guest_trace_id, p->host.trace_id, tracer_t0(p->tr));
		host_file_write(p);
		return status;
	}
	host_rec_close(&p->host);
	p->hosting = false;
	if (p->host_side) {
		host_side_free(p->host_side);
		free(p->host_side);
		p->host_side = NULL;
	}
	if (p->host_status)
		return status ? status : p->host_status;
	if (!p->s->quiet && p->moved.moved)
		fprintf(stderr,
			"hvtrace: --host: %llu trap events at their vCPU's kvm_exit (moved back "
			"%.1f us on average, %.1f us at most)\n",
			(unsigned long long)p->moved.moved,
			(double)p->moved.shift_total_ns / (double)p->moved.moved / 1000.0,
			(double)p->moved.shift_max_ns / 1000.0);
	if (!p->s->quiet)
		fprintf(stderr, "hvtrace: the host's side: %s (trace-cmd report -i %s -i %s)\n",
			p->host_path, p->host_path, p->s->output);
	return status;
}

/* The name docs/usage.md gives for exit status @status. */
static const char *exit_reason(int status, char *buf, size_t len)
{
	switch (status) {
	case 0: return "ok";
	case EXIT_BAD_INPUT: return "bad-input";
	case EXIT_GUEST_FAULT: return "guest-fault";
	case EXIT_HOST_ERROR: return "host-error";
	case EXIT_GUEST_PANIC: return "guest-panic";
	case EXIT_QEMU_FAILED: return "qemu-failed";
	case EXIT_EXPECT: return "expect-unmet";
	case EXIT_TIMEOUT: return "timeout";
	}
	if (status > EXIT_SIGNAL_BASE && status < EXIT_SIGNAL_BASE + 65) {
		const char *name = sigabbrev_np(status - EXIT_SIGNAL_BASE);

		snprintf(buf, len, "signal SIG%s", name ? name : "?");
		return buf;
	}
	return "guest-exit-status";
}

/* Writes @path with @write; 0, or -errno after one line naming @flag and @path. */
static int write_file(const char *path, const char *flag, const struct expect_state *st,
		      const struct verdict_end *end,
		      int (*write)(FILE *, const struct expect_state *, const struct verdict_end *))
{
	FILE *f = fopen(path, "w");
	int err;

	if (!f) {
		cmd_error("%s %s: %s", flag, path, strerror(errno));
		return -errno;
	}
	err = write(f, st, end);
	return cmd_finish_out(f, path, flag, err < 0 ? -err : 0);
}

/* --summary and --junit, with the final @status; returns it, or EXIT_HOST_ERROR if a file could not
 * be written and @status was 0. */
static int write_verdicts(struct pipeline *p, int status, unsigned long long lost)
{
	const struct session *s = p->s;
	char buf[32];
	struct verdict_end end = {
		.tracer = tracer_name(s->tracer),
		.exit_status = status,
		.exit_reason = exit_reason(status, buf, sizeof(buf)),
		.lost = lost,
		.elapsed = clock_now_s() - p->t_start,
	};
	int bad = 0;

	if (s->summary)
		bad |= write_file(s->summary, "--summary", &p->expect, &end, verdict_write_summary);
	if (s->junit)
		bad |= write_file(s->junit, "--junit", &p->expect, &end, verdict_write_junit);
	return bad && !status ? EXIT_HOST_ERROR : status;
}

/* -o's file when side files go beside it (OUTPUT.hist, OUTPUT.profile): a regular file (or one
 * not there), not a device such as /dev/null, whose side files would land in /dev. */
static const char *side_base(const struct pipeline *p)
{
	struct stat st;

	if (!p->s->output || (stat(p->s->output, &st) == 0 && !S_ISREG(st.st_mode)))
		return NULL;
	return p->s->output;
}

/* The hists of @hs, one section each, to @f. 0 or -errno. */
static int print_hists(const struct pipeline *p, const struct hist_set *hs, FILE *f)
{
	int ret = 0;

	for (size_t k = 0; k < hs->nr && !ret; k++)
		ret = hist_print(&hs->v[k], p->sink.syms, k == 0, f);
	if (fflush(f) && !ret)
		ret = -errno;
	return ret;
}

/* Writes @hs (SIGUSR2: the hists so far) to @f. */
static int print_hists_to(void *ctx, const void *what, FILE *f)
{
	return print_hists(ctx, what, f);
}

/* Writes @what (the profile so far) to @f as trace_stat/function. */
static int print_profile_to(void *ctx, const void *what, FILE *f)
{
	(void)ctx;
	return profile_stat_print(what, f);
}

/* SIGUSR2's dump of one aggregation: @print's text to OUTPUT@suffix beside -o OUTPUT (written to
 * OUTPUT@suffix.part, then renamed, so a reader never sees half of it), else to stderr. 0, or
 * -errno after one line; the file's name (or "the lines above") in @where. */
static int dump_one(struct pipeline *p, const char *suffix,
		    int (*print)(void *ctx, const void *what, FILE *f), const void *what, char *where,
		    size_t wlen)
{
	const char *out = side_base(p);
	char path[4096], part[4096 + 8];
	FILE *f = stderr;
	int ret;

	if (out && (snprintf(path, sizeof(path), "%s%s", out, suffix) >= (int)sizeof(path) ||
		    snprintf(part, sizeof(part), "%s.part", path) >= (int)sizeof(part)))
		out = NULL;
	snprintf(where, wlen, "%s", out ? path : "the lines above");
	if (out && !(f = fopen(part, "we"))) {
		ret = -errno;
		cmd_error("SIGUSR2: %s: %s", part, strerror(errno));
		return ret;
	}
	ret = print(p, what, f);
	if (out && fclose(f) && !ret)
		ret = -errno;
	if (out && !ret && rename(part, path) < 0)
		ret = -errno;
	if (ret)
		cmd_error("SIGUSR2: %s: %s", out ? path : "stderr", strerror(-ret));
	return ret;
}

/* SIGUSR2 (the writer thread's poll): the hists, and with --profile the function profile, so far:
 * the host's own counts copied, the stub's tables read now (the guest running on) and added to the
 * copies, each written out (dump_one). */
static void dump_aggregates(struct pipeline *p)
{
	struct hist_set copy = {0};
	struct profile prof = {0};
	bool want_prof = p->profiling && p->s->profile;
	struct stub_agg a = {0};
	char where[4096 + 16];
	unsigned long long hits = 0;
	int read_ret = 0;

	if (p->hists.nr && hist_set_copy(&copy, &p->hists) < 0) {
		cmd_error("SIGUSR2: out of memory for the hists' copy");
		return;
	}
	if (want_prof && profile_copy(&prof, &p->prof) < 0) {
		cmd_error("SIGUSR2: out of memory for the profile's copy");
		hist_set_free(&copy);
		return;
	}
	pthread_mutex_lock(&p->dump.lock);
	if (p->dump.live)
		read_ret = tracer_stub_agg_now(p->tr, &a);
	pthread_mutex_unlock(&p->dump.lock);
	if (a.read)
		agg_feed(&a, &copy, want_prof ? &prof : NULL, tracer_probes(p->tr));
	stub_agg_free(&a);
	if (p->hists.nr && dump_one(p, ".hist", print_hists_to, &copy, where, sizeof(where)) == 0) {
		for (size_t k = 0; k < copy.nr; k++)
			hits += copy.v[k].hits;
		fprintf(stderr, "hvtrace: SIGUSR2: the hists so far (%zu, hits %llu%s) in %s\n",
			copy.nr, hits,
			read_ret < 0 ? "; the stub's tables could not be read" : "", where);
	}
	if (want_prof && dump_one(p, ".profile", print_profile_to, &prof, where, sizeof(where)) == 0)
		fprintf(stderr, "hvtrace: SIGUSR2: the profile so far%s in %s\n",
			read_ret < 0 ? " (the stub's tables could not be read)" : "", where);
	atomic_fetch_add(&p->dump.dumps, 1);
	hist_set_free(&copy);
	if (want_prof)
		profile_free(&prof);
}

/* The writer thread's poll: a SIGUSR2's dump. */
static void pipeline_poll(void *ctx)
{
	struct pipeline *p = ctx;

	if (agg_dump_wanted(&p->dump))
		dump_aggregates(p);
}

/* The hist triggers' tables as the kernel's `hist` files print them, one section each: to
 * OUTPUT.hist beside -o OUTPUT (a regular file), else on stdout after the trace. Returns 0, or 1
 * after one line on stderr saying what could not be written. */
static int write_hists(struct pipeline *p)
{
	const char *out = side_base(p);
	char path[4096];
	FILE *f = stdout;
	int ret = 0;

	if (out) {
		if (snprintf(path, sizeof(path), "%s.hist", out) >= (int)sizeof(path)) {
			cmd_error("-o %s: the hist file's name is too long", out);
			return 1;
		}
		f = fopen(path, "we");
		if (!f) {
			cmd_error("%s: %s", path, strerror(errno));
			return 1;
		}
	} else {
		fflush(stdout);
	}
	ret = print_hists(p, &p->hists, f);
	if (out && fclose(f) && !ret)
		ret = -errno;
	if (ret)
		cmd_error("%s: %s", out ? path : "stdout", strerror(-ret));
	return ret != 0;
}

/* What the stub counted in the guest, into the hists and the profile (after the detach read the
 * tables). Returns 1 after one line when they could not be read (the hists and the profile then
 * lack those counts: not a success), else 0. */
static int feed_counted(struct pipeline *p)
{
	const struct stub_agg *a = tracer_stub_agg(p->tr);

	if (!a)
		return 0;
	if (!a->read) {
		cmd_error(
		    "the stub's aggregation tables could not be read (the guest is gone): the "
		    "counts of the functions it counted are missing");
		return 1;
	}
	agg_feed(a, &p->hists, p->profiling ? &p->prof : NULL, tracer_probes(p->tr));
	return 0;
}

/* --profile as ftrace's trace_stat/function files: to OUTPUT.profile beside -o OUTPUT (a regular
 * file), else on stderr after the summary. Returns 0, or 1 after one line on stderr. */
static int write_profile_stat(struct pipeline *p)
{
	const char *out = side_base(p);
	char path[4096];
	FILE *f = stderr;
	int ret;

	if (out) {
		if (snprintf(path, sizeof(path), "%s.profile", out) >= (int)sizeof(path)) {
			cmd_error("-o %s: the profile file's name is too long", out);
			return 1;
		}
		f = fopen(path, "we");
		if (!f) {
			cmd_error("%s: %s", path, strerror(errno));
			return 1;
		}
	}
	ret = profile_stat_print(&p->prof, f);
	if (f != stderr && fclose(f) && !ret)
		ret = -errno;
	if (ret)
		cmd_error("%s: %s", f != stderr ? path : "stderr", strerror(-ret));
	return ret != 0;
}

int pipeline_finish(struct pipeline *p, int status,
		    void (*backend_stats)(void *ctx, const struct pipeline *p), void *ctx)
{
	const struct session *s = p->s;
	struct tracer_stats st;

	if (!p->writing)
		return status;
	progress_stop(&p->progress); /* erased before anything else goes to stderr */
	tracer_stats(p->tr, &st);
	p->sink.guest_lost = st.stub_guest_lost;
	status = pipeline_host_end(p, status, false);
	writer_stop(&p->w, tracer_lost(p->tr));
	agg_dump_stop(&p->dump);
	if (p->sink.err && !status)
		status = EXIT_HOST_ERROR; /* the trace is incomplete: so say --summary and --junit */
	status = pipeline_host_end(p, status, true);
	unwatch_end(p);
	int cut = atomic_load(&p->cut_sig);

	if (cut) {
		const char *name = sigabbrev_np(cut);

		cmd_error("SIG%s: the rest of the trace was not written: %llu events, counted as lost",
			  name ? name : "?", p->w.not_written);
		if (!status)
			status = EXIT_SIGNAL_BASE + cut;
	}
	if (s->stats) {
		backend_stats(ctx, p);
		if (rec_filter_active(&p->keep))
			fprintf(stderr, "hvtrace: stats: filtered %llu (-P, --comm, --cpu, --filter-event)\n",
				st.filtered);
	}
	if (feed_counted(p) && !status)
		status = EXIT_HOST_ERROR;
	if (p->profiling && s->profile) {
		profile_print(&p->prof, st.stub_guest_lost, stderr);
		if (write_profile_stat(p) && !status)
			status = EXIT_HOST_ERROR;
	}
	if (p->hists.nr && write_hists(p) && !status)
		status = EXIT_HOST_ERROR;
	if (p->expecting && expect_evaluate(&p->expect) && status == 0) {
		fflush(stdout);
		expect_print_unmet(&p->expect, stderr);
		status = EXIT_EXPECT;
	}
	if (p->expecting)
		status = write_verdicts(p, status, tracer_lost(p->tr) + st.stub_guest_lost);
	writer_free(&p->w);
	p->writing = false;
	return status;
}

void pipeline_free(struct pipeline *p)
{
	if (!p)
		return;
	unwatch_end(p);
	agg_dump_stop(&p->dump);
	if (p->hosting)
		host_rec_close(&p->host);
	if (p->host_side) {
		host_side_free(p->host_side);
		free(p->host_side);
	}
	if (p->expecting)
		expect_state_free(&p->expect);
	hist_set_free(&p->hists);
	if (p->profiling)
		profile_free(&p->prof);
	tracer_free(p->tr);
	free(p->sel);
	rec_filter_free_events(&p->keep);
	free(p->efilters);
	free(p->events);
	free(p->rprobes);
	free(p);
}

bool pipeline_selected(const struct pipeline *p)
{
	return p->s != NULL;
}

int pipeline_sink_err(const struct pipeline *p)
{
	return p->sink.err;
}

bool pipeline_has_tracer(const struct pipeline *p)
{
	return p->have_tr;
}

bool pipeline_backpressure(const struct pipeline *p)
{
	return p->have_tr && tracer_backpressure(p->tr);
}

bool pipeline_drain_holding(struct pipeline *p)
{
	return tracer_drain_holding(p->tr);
}

void pipeline_count_pauses(struct pipeline *p, uint64_t n, uint64_t ns)
{
	tracer_count_pauses(p->tr, n, ns);
}

struct target *pipeline_target(const struct pipeline *p)
{
	return tracer_target(p->tr);
}

void pipeline_stop_drain(struct pipeline *p)
{
	if (p->have_tr)
		tracer_stop_drain(p->tr);
}

const struct vmi_site *const *pipeline_selection(const struct pipeline *p, size_t *nr)
{
	*nr = p->nr_sel;
	return p->sel;
}

void pipeline_set_before_detach(struct pipeline *p, void (*fn)(void *ctx), void *ctx)
{
	tracer_set_before_detach(p->tr, fn, ctx);
}

int pipeline_set_patchers(struct pipeline *p, const struct vmi_patcher *ps, size_t n)
{
	return tracer_set_patchers(p->tr, ps, n);
}

size_t pipeline_forget_range(struct pipeline *p, uint64_t lo, uint64_t hi)
{
	return tracer_forget_range(p->tr, lo, hi);
}

void pipeline_set_task_slots(struct pipeline *p, const uint64_t *current, const uint64_t *preempt)
{
	tracer_set_task_slots(p->tr, current, preempt);
}

const struct tracer *pipeline_tracer(const struct pipeline *p)
{
	return p->tr;
}

int pipeline_takeover_detach(struct pipeline *p)
{
	return tracer_takeover_detach(p->tr);
}

const unsigned long long *pipeline_cpu_events(const struct pipeline *p)
{
	return p->w.events;
}

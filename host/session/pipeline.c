#include "host/session/pipeline.h"
#include "host/session/detour_plan.h"
#include "host/session/entry_sites.h"
#include "host/session/cmd_out.h"
#include "host/session/events.h"
#include "host/session/exitcode.h"
#include "host/tap/expect.h"
#include "host/sink/sink_format.h"
#include "host/tap/verdict_files.h"
#include "host/trace/clock.h"
#include "host/trace/filter.h"
#include "host/trace/stub_drain.h"
#include "vmi/vmi_dwarf.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

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
	if (ret == 0 && s->tracer == TRACER_NOP)
		p->nr_sel = 0;
	p->nr_traced = p->nr_sel;
	if (ret == 0)
		ret = events_select(s, sites, inside, &p->sel, &p->nr_sel, err, errlen);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	return ret == 0 ? 0 : ret == -ENOMEM ? EXIT_HOST_ERROR : EXIT_BAD_INPUT;
}

/* set_graph_function: marks the probes whose function matches a -g glob; each glob must match one
 * traced function, else -ENOENT with a reason in @err. */
static int mark_graph_roots(struct pipeline *p, char *err, size_t errlen)
{
	const struct probe_table *probes = tracer_probes(&p->tr);
	const struct session *s = p->s;

	for (size_t g = 0; g < s->nr_graph; g++) {
		bool any = false;

		for (size_t i = 0; i < probes->nr; i++)
			if (!probes->v[i].inside &&
			    filter_glob_match(s->graph[g], probes->v[i].func->name)) {
				tracer_set_graph_root(&p->tr, probes->v[i].id);
				any = true;
			}
		if (!any) {
			snprintf(err, errlen, "-g '%s': matches no traced function", s->graph[g]);
			return -ENOENT;
		}
	}
	return 0;
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
	ret = events_bind(p->s, p->events, p->rprobes, &p->tr, traced);
	free(traced);
	return ret;
}

/* --filter-event: each filter bound to the -e event of its function, in the record filter. */
static int bind_event_filters(struct pipeline *p, char *err, size_t errlen)
{
	const struct session *s = p->s;
	const struct probe_table *probes = tracer_probes(&p->tr);

	if (!s->nr_efilters)
		return 0;
	p->efilters = malloc(s->nr_efilters * sizeof(*p->efilters));
	if (!p->efilters) {
		snprintf(err, errlen, "out of memory");
		return EXIT_HOST_ERROR;
	}
	memcpy(p->efilters, s->efilters, s->nr_efilters * sizeof(*p->efilters));
	for (size_t k = 0; k < s->nr_efilters; k++) {
		struct ef_filter *ef = &p->efilters[k];
		const struct probe *pr = NULL;

		/* an event inside a function by its probe's name (FUNC+0xOFF), others by their
		 * spec's function (an alias of the probed symbol's name included) */
		for (size_t i = 0; i < probes->nr && !pr; i++)
			if (probes->v[i].event &&
			    !strcmp(probes->v[i].inside ? probes->v[i].func->name
							: probes->v[i].event->func,
				    ef->func))
				pr = &probes->v[i];
		if (!pr) {
			snprintf(err, errlen, "--filter-event '%s': %s has no -e event", ef->text,
				 ef->func);
			return EXIT_BAD_INPUT;
		}
		if (ef_bind(ef, pr->event, err, errlen) < 0)
			return EXIT_BAD_INPUT;
		if (rec_filter_add_event(&p->keep, pr->addr, ef) < 0) {
			snprintf(err, errlen, "out of memory");
			return EXIT_HOST_ERROR;
		}
	}
	return 0;
}

/* --trigger: each on the probe of its function, which must be a traced one. */
static int bind_triggers(struct pipeline *p, char *err, size_t errlen)
{
	const struct session *s = p->s;
	const struct probe_table *probes = tracer_probes(&p->tr);

	for (size_t k = 0; k < s->nr_triggers; k++) {
		const struct trigger *tg = &s->triggers[k];
		size_t i;

		for (i = 0; i < probes->nr; i++)
			if (!strcmp(probes->v[i].func->name, tg->func))
				break;
		if (i == probes->nr || (probes->v[i].quiet_entry && !probes->v[i].event)) {
			snprintf(err, errlen, "--trigger %s:%s: %s is not a traced function (-l, -g, -e)",
				 tg->func, trigger_cmd_name(tg->cmd), tg->func);
			return EXIT_BAD_INPUT;
		}
		if (tracer_add_trigger(&p->tr, probes->v[i].id, tg) < 0) {
			snprintf(err, errlen, "out of memory");
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

/* With no trap probe allowed: true (and why in @err) if a probe can only be a trap probe. */
static bool need_trap_probe(struct pipeline *p, char *err, size_t errlen)
{
	const struct probe_table *probes = tracer_probes(&p->tr);
	const struct probe *first = NULL;
	size_t stuck = 0;

	/* functions without an fentry site whose first bytes no detour can move */
	for (size_t i = 0; i < probes->nr; i++)
		if (probes->v[i].entry && !probes->v[i].inside && !probes->v[i].detour &&
		    !stuck++)
			first = &probes->v[i];
	if (stuck == 1)
		snprintf(err, errlen,
			 "trap probes: INT3 in a guest does not exit on this host's KVM, and %s has no "
			 "fentry site and no stub detour (its first bytes cannot be moved): leave it "
			 "out with -n",
			 first->func->name);
	else if (stuck)
		snprintf(err, errlen,
			 "trap probes: INT3 in a guest does not exit on this host's KVM, and %zu "
			 "functions without an fentry site (%s, ...) have no stub detour (their first "
			 "bytes cannot be moved): leave them out with -n",
			 stuck, first->func->name);
	if (stuck)
		return true;
	for (size_t i = 0; i < probes->nr; i++) {
		const struct probe *pr = &probes->v[i];

		if (stub_drain_capable(pr) && !tracer_has_trigger(&p->tr, pr))
			continue;
		snprintf(err, errlen,
			 "trap probes: INT3 in a guest does not exit on this host's KVM, and %s %s "
			 "needs one",
			 pr->ret_event && !fe_return_register_only(pr->ret_event)
			     ? "the return probe -r of"
			 : pr->inside && !pr->detour ? "the -e event with no stub detour at"
			 : pr->event && !fe_registers_only(pr->event) ? "the -e event of"
								      : "the --trigger on",
			 pr->func->name);
		return true;
	}
	return false;
}

/* --probe stub: one line naming the -e events and -r return probes that read guest memory at the
 * call and so stay trap probes (nothing when there is none). */
static void say_trap_probes(struct pipeline *p)
{
	const struct probe_table *probes = tracer_probes(&p->tr);
	char list[512];
	size_t len = 0, more = 0;

	list[0] = 0;
	for (size_t i = 0; i < probes->nr; i++) {
		const struct probe *pr = &probes->v[i];
		bool r = pr->ret_event && !fe_return_register_only(pr->ret_event);
		bool e = pr->event && !pr->inside && !fe_registers_only(pr->event);

		for (int k = 0; k < 2; k++) {
			int n;

			if (!(k ? r : e))
				continue;
			n = snprintf(list + len, sizeof(list) - len, "%s%s %s", len ? ", " : "",
				     k ? "-r" : "-e", pr->func->name);
			if (n < 0 || (size_t)n >= sizeof(list) - len - 16) {
				list[len] = 0;
				more++;
			} else {
				len += (size_t)n;
			}
		}
	}
	if (len || more)
		fprintf(stderr,
			"hvtrace: --probe stub: these read guest memory at the call and stay trap "
			"probes: %s%s\n",
			len ? list : "", more ? (len ? " and more" : "several") : "");
	len = more = 0;
	for (size_t i = 0; i < probes->nr; i++) {
		len += probes->v[i].inside && stub_drain_capable(&probes->v[i]);
		more += probes->v[i].inside && !stub_drain_capable(&probes->v[i]);
	}
	if (len || more)
		fprintf(stderr,
			"hvtrace: --probe stub: -e events inside a function: %zu through stub "
			"detours, %zu trap probes (a detour records only RDI, RSI, RDX, RCX, R8 "
			"and R9, and only where the instructions there can be moved)\n",
			len, more);
}

/* The profile (--profile, and what the verdicts count) and the expectations, bound to the probes:
 * before the sink, so a function that is not traced is refused before anything is made. */
static int prepare_expect(struct pipeline *p, char *err, size_t errlen)
{
	const struct session *s = p->s;
	bool expecting = s->nr_expects || s->summary || s->junit;

	if (!s->profile && !expecting)
		return 0;
	if (profile_init(&p->prof, tracer_probes(&p->tr)) < 0)
		goto nomem;
	p->profiling = true;
	if (!expecting)
		return 0;
	if (expect_state_init(&p->expect, &p->prof, s->expects, s->nr_expects) < 0)
		goto nomem;
	p->expecting = true;
	if (expect_bind(p->expect.v, p->expect.nr, tracer_probes(&p->tr),
			s->tracer == TRACER_FUNCTION_GRAPH, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return EXIT_HOST_ERROR;
}

/* Whether @f is a C function of the guest's BTF (else of its DWARF): entered by a CALL, its
 * return address at RSP. A compiler's clone (foo.isra.0, foo.constprop.0, foo.part.0) is its
 * origin's in BTF, and has an entry of its own in DWARF; a .cold part is entered by a jump. */
static bool c_function(const struct pipeline_guest *g, const struct vmi_sym *f)
{
	char base[128];
	size_t n = strcspn(f->name, ".");

	if (strstr(f->name, ".cold") || n >= sizeof(base))
		return false;
	if (!g->btf)
		return vmi_dwarf_is_c_function(g->c_funcs, f->addr);
	memcpy(base, f->name, n);
	base[n] = 0;
	return vmi_btf_has_func(g->btf, base);
}

/* Why entry probes on @g's functions trace no return, as words for a line. */
static const char *no_c_function(const struct pipeline_guest *g)
{
	if (g->btf)
		return "not a C function in the guest's BTF";
	if (g->c_funcs && g->c_funcs->nr)
		return "not a C function in the guest's DWARF";
	return g->c_funcs ? "the guest has no DWARF of C functions" : "the guest has no BTF";
}

/* Entry probes on what the guest's BTF does not know as a C function (asm: interrupt and exception
 * entries, code reached by a jump) trace entries only: a hooked "return" there would overwrite an
 * interrupt frame or whatever lies at RSP. One line says so when returns are traced (a function
 * named exactly, else a count); -r on one is refused. 0 or EXIT_BAD_INPUT with @err. */
static int entries_without_return(struct pipeline *p, const struct pipeline_guest *g, char *err,
				  size_t errlen)
{
	const struct probe_table *probes = tracer_probes(&p->tr);
	long globbed = 0;

	if (!p->tr.opts.returns)
		return 0;
	for (size_t i = 0; i < probes->nr; i++) {
		const struct probe *v = &probes->v[i];

		if (!v->entry || v->inside || c_function(g, v->func))
			continue; /* inside a function: never a return (probe_table_build) */
		if (v->ret_probe) {
			snprintf(err, errlen,
				 "-r %s: %s, so its return cannot be hooked (it may be entered "
				 "without a CALL)",
				 v->func->name, no_c_function(g));
			return EXIT_BAD_INPUT;
		}
		tracer_set_no_return(&p->tr, v->id);
		if (entry_sites_named(p->s, v->func->name))
			fprintf(stderr,
				"hvtrace: %s: %s: its entries are traced, not its returns (it may "
				"be entered without a CALL)\n",
				v->func->name, no_c_function(g));
		else
			globbed++;
	}
	if (globbed)
		fprintf(stderr,
			"hvtrace: %ld function%s without an fentry site (%s): entries traced, not "
			"returns (asm code may be entered without a CALL)\n",
			globbed, globbed == 1 ? "" : "s", no_c_function(g));
	return 0;
}

static int plan_detours(struct pipeline *p, const struct pipeline_guest *g)
{
	const struct probe_table *probes = tracer_probes(&p->tr);
	long entries = 0, planned = 0;

	long inside = 0;

	for (size_t i = 0; i < probes->nr; i++) {
		entries += probes->v[i].entry && !probes->v[i].inside;
		inside += probes->v[i].inside;
	}
	if ((!entries && !inside) || p->s->cmd == CMD_LIST_FUNCTIONS)
		return 0;
	if (g->stub && g->text_read && g->funcs) {
		planned = detour_plan(&p->tr, p->s, g->funcs, g->text_read, g->text_ctx, g->no_user,
				      stderr);
		if (planned < 0)
			return (int)planned;
	}
	if (!g->stub)
		return 0;
	for (size_t i = 0; i < probes->nr; i++)
		planned -= probes->v[i].inside && probes->v[i].detour; /* said by say_trap_probes */
	if (!entries)
		return 0;
	if (planned == entries)
		fprintf(stderr,
			"hvtrace: %ld function%s without an fentry site probed at %s entry through "
			"%s\n",
			entries, entries == 1 ? "" : "s", entries == 1 ? "its" : "their",
			entries == 1 ? "a stub detour" : "stub detours");
	else
		fprintf(stderr,
			"hvtrace: %ld function%s without an fentry site probed at %s entry: %ld "
			"through stub detours, %ld with trap probes\n",
			entries, entries == 1 ? "" : "s", entries == 1 ? "its" : "their", planned,
			entries - planned);
	return 0;
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
		snprintf(err, errlen, "-o %s: temporary per-CPU files: %s", s->output, strerror(-ret));
		return EXIT_HOST_ERROR;
	}
	if (ret < 0) {
		snprintf(err, errlen, "--format %s: %s", f->name,
			 ret == -ENOMEM ? "out of memory" : strerror(-ret));
		return EXIT_HOST_ERROR;
	}
	return 0;
}

int pipeline_build(struct pipeline *p, const struct pipeline_guest *g, FILE *out, char *err,
		   size_t errlen)
{
	const struct session *s = p->s;
	struct tracer_opts opts = {
	    .stub = g->stub,
	    .stub_backpressure = g->stub && g->backpressure,
	    .returns = s->tracer == TRACER_FUNCTION_GRAPH || s->nr_rprobes,
	    .hook_all = s->tracer == TRACER_FUNCTION_GRAPH,
	    .graph_filter = s->nr_graph > 0,
	    .lazy = s->nr_graph > 0, /* trap probes only (tracer_init) */
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
			snprintf(err, errlen, "out of memory");
		return ret == -ENOMEM ? EXIT_HOST_ERROR : EXIT_BAD_INPUT;
	}
	text_range(g->funcs, &opts.text_lo, &opts.text_hi);
	/* a Linux kernel with the ORC unwinder keeps no frame pointers */
	opts.no_frame_pointers = g->funcs && vmi_symtab_find(g->funcs, "__orc_find");
	/* the session's task filter, borrowed; the event filters are added once the probes exist */
	p->keep = s->tasks;
	p->keep.events = NULL;
	p->keep.nr_events = 0;
	ret = tracer_init(&p->tr, g->tgt, p->sel, p->nr_sel, g->task, &opts);
	if (ret < 0) {
		snprintf(err, errlen, "%s",
			 ret == -ENOTSUP ? g->no_trampoline
					 : "out of memory for the trace buffers");
		return ret == -ENOTSUP ? EXIT_BAD_INPUT : EXIT_HOST_ERROR;
	}
	p->have_tr = true;
	if (plan_detours(p, g) < 0) {
		snprintf(err, errlen, "out of memory");
		return EXIT_HOST_ERROR;
	}
	if (bind_events(p) < 0) {
		snprintf(err, errlen, "out of memory for event buffers");
		return EXIT_HOST_ERROR;
	}
	ret = entries_without_return(p, g, err, errlen);
	if (!ret)
		ret = bind_event_filters(p, err, errlen);
	if (!ret)
		ret = bind_triggers(p, err, errlen);
	if (ret)
		return ret;
	if (mark_graph_roots(p, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	ret = prepare_expect(p, err, errlen);
	if (ret)
		return ret;
	/* after the arguments' own checks: a wrong command line is told as such on every host */
	if (g->no_trap && need_trap_probe(p, err, errlen))
		return EXIT_BAD_INPUT;
	if (g->stub && s->probe == PROBE_STUB)
		say_trap_probes(p);
	ret = make_sink(p, g, out, nr_cpus, err, errlen);
	if (ret)
		return ret;
	if (s->nr_triggers)
		sink_trigger_wrap(&p->sink, &p->trig_sink, s->record ? NULL : s->output);
	/* each record's probe and spec, looked up once by the writer for the sink and the tap */
	p->w.lookup = writer_lookup_probes;
	p->w.lookup_ctx = tracer_probes(&p->tr);
	if (p->expecting) {
		p->w.tap = expect_tap;
		p->w.tap_ctx = &p->expect;
	} else if (p->profiling) {
		p->w.tap = profile_add;
		p->w.tap_ctx = &p->prof;
	}
	return 0;
}

int pipeline_start(struct pipeline *p, int attach_status, char *err, size_t errlen)
{
	unsigned nr_rings;
	struct ring *rings;
	int ret;

	ret = tracer_attach(&p->tr, err, errlen);
	if (ret < 0) /* out of memory (the stub drain's buffers among it): a host failure */
		return ret == -ENOMEM ? EXIT_HOST_ERROR : attach_status;
	rings = tracer_rings(&p->tr, &nr_rings);
	ret = writer_start(&p->w, rings, nr_rings, &p->sink, tracer_horizon, &p->tr);
	if (ret < 0) {
		snprintf(err, errlen, "writer thread: %s", strerror(-ret));
		return EXIT_HOST_ERROR;
	}
	p->writing = true;
	p->t_start = clock_now_s();
	/* the progress line: on a terminal's stderr only, and not over a trace printed on a terminal;
	 * without it the trace is the same */
	if (progress_wanted(STDERR_FILENO, p->s->quiet) &&
	    !(p->sink.out == stdout && isatty(STDOUT_FILENO)))
		progress_start(&p->progress, &p->tr, STDERR_FILENO, 500);
	return 0;
}

/* The watcher: the first signal after the run's end cuts the trace short; later ones are read and
 * ignored (the trace is being closed). Ends when the eventfd is written. */
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
		if (!atomic_load(&p->cut_sig)) {
			atomic_store(&p->cut_sig, (int)si.ssi_signo);
			tracer_cut(&p->tr);
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
	return p->have_tr ? tracer_detach(&p->tr) : 0;
}

void pipeline_print_stub_stats(const struct pipeline *p)
{
	struct tracer_stats st;

	tracer_stats(&p->tr, &st);
	if (!st.stub_probes)
		return;
	fprintf(stderr,
		"hvtrace: stats: stub probes %zu records %llu lost %llu guest-reported-lost %llu "
		"rejected %llu ring %llu/cpu region %llu KiB %s host-ring-stalls %llu "
		"cpu-from %s backpressure %s pauses %llu paused-us %llu guest-waits %llu wait-timeouts %llu "
		"tasks-changed %llu tasks-announced %llu detach-scans %u detach-stacks %lu\n",
		st.stub_probes, st.stub_records, st.stub_lost, st.stub_guest_lost, st.stub_rejected,
		st.stub_ring_records, st.stub_region_bytes >> 10, st.stub_region_where,
		st.stub_host_stalls, st.stub_cpu_from,
		st.stub_backpressure ? "on" : "off", st.stub_pauses, st.stub_paused_ns / 1000,
		st.stub_waits, st.stub_wait_timeouts, st.stub_tasks_changed, st.stub_announced,
		st.stub_leave_scans,
		st.stub_leave_stacks);
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

int pipeline_finish(struct pipeline *p, int status,
		    void (*backend_stats)(void *ctx, const struct pipeline *p), void *ctx)
{
	const struct session *s = p->s;
	struct tracer_stats st;

	if (!p->writing)
		return status;
	progress_stop(&p->progress); /* erased before anything else goes to stderr */
	tracer_stats(&p->tr, &st);
	p->sink.guest_lost = st.stub_guest_lost;
	status = pipeline_host_end(p, status, false);
	writer_stop(&p->w, tracer_lost(&p->tr));
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
	if (p->profiling && s->profile)
		profile_print(&p->prof, st.stub_guest_lost, stderr);
	if (p->expecting && expect_evaluate(&p->expect) && status == 0) {
		fflush(stdout);
		expect_print_unmet(&p->expect, stderr);
		status = EXIT_EXPECT;
	}
	if (p->expecting)
		status = write_verdicts(p, status, tracer_lost(&p->tr) + st.stub_guest_lost);
	writer_free(&p->w);
	p->writing = false;
	return status;
}

void pipeline_free(struct pipeline *p)
{
	unwatch_end(p);
	if (p->hosting)
		host_rec_close(&p->host);
	p->hosting = false;
	if (p->expecting)
		expect_state_free(&p->expect);
	if (p->profiling)
		profile_free(&p->prof);
	if (p->have_tr)
		tracer_free(&p->tr);
	p->expecting = p->profiling = p->have_tr = false;
	free(p->sel);
	p->sel = NULL;
	rec_filter_free_events(&p->keep);
	free(p->efilters);
	p->efilters = NULL;
	free(p->events);
	free(p->rprobes);
	p->events = p->rprobes = NULL;
}

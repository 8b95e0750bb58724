/* The trace.dat sink: the record stream as `trace-cmd record` would have saved it (file version 6,
 * flyrecord), so trace-cmd, KernelShark and `hvtrace report` read it.
 *
 * While tracing, each record becomes one ftrace event in its vCPU's ring-buffer page; full pages go
 * to one unlinked temporary file per vCPU next to the output (no formatting, no symbol lookup, no
 * allocation). At the end the headers are written (tracedat_headers.c: event formats, the guest's
 * symbols as kallsyms, the task names seen, the vCPU count) and the per-vCPU pages appended.
 *
 * Events: ftrace:function (function tracer), ftrace:funcgraph_entry / funcgraph_exit
 * (function_graph, exit with retval as Linux 6.5+ lays it out), and per -e spec a kprobe event
 * kprobes/p_<func>_<n> (fprobes/<func>__entry_<n> for BTF-typed specs, as the kernel names fprobe
 * events), per -r a kretprobe event kprobes/r_<func>_0, with the fields and print fmt the kernel
 * would write. Three fields of ours follow the kernel's (no print fmt names them, so trace-cmd does
 * not show them): __hvt_fault, a bit per field whose guest memory could not be read, __hvt_parent,
 * the call site, and in return probes __hvt_duration (ns since the entry): `hvtrace report` needs
 * them to print what `run` printed. */
#include "host/sink/sink_tracedat.h"
#include "host/sink/sink_format.h"
#include "host/sink/tracedat_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the events (writer thread, per record) ----------------------------------------------- */

static void flush_page(struct sink *s, struct td_cpu *c)
{
	if (!c->page.started)
		return;
	td_page_finish(&c->page);
	errno = 0;
	if (!s->err && fwrite(c->page.buf, 1, TD_PAGE_SIZE, c->tmp) != TD_PAGE_SIZE)
		sink_fail(s, errno);
	c->pages++;
	c->page.started = false;
}

static void emit(struct sink *s, unsigned cpu, uint64_t ts, const void *data, size_t len)
{
	struct td_sink *t = s->priv;
	struct td_cpu *c = &t->cpus[cpu];

	if (c->page.started && ts < c->page.last_ts)
		ts = c->page.last_ts; /* never a negative delta */
	if (!c->page.started) {
		td_page_start(&c->page, ts, c->pending_lost);
		c->pending_lost = 0;
	}
	if (td_page_add(&c->page, ts, data, len))
		return;
	flush_page(s, c);
	td_page_start(&c->page, ts, 0);
	td_page_add(&c->page, ts, data, len); /* an event fits an empty page (bounded specs) */
}

static void remember_comm(struct td_sink *t, const struct hvt_record *r)
{
	uint32_t h = (uint32_t)r->pid * 2654435761u;

	if (r->pid == 0) {
		t->cpus[r->cpu].idle_seen = true;
		memcpy(t->cpus[r->cpu].idle_comm, r->comm, VMI_COMM_LEN);
		return;
	}
	for (unsigned k = 0; k < 16; k++) {
		struct td_comm *e = &t->comms[(h + k) % TD_COMMS];

		if (e->used && e->pid == r->pid) {
			memcpy(e->comm, r->comm, VMI_COMM_LEN);
			return;
		}
		if (!e->used) {
			e->used = true;
			e->pid = r->pid;
			memcpy(e->comm, r->comm, VMI_COMM_LEN);
			return;
		}
	}
}

static size_t common(uint8_t *ev, unsigned id, int32_t pid)
{
	uint16_t type = (uint16_t)id;

	memset(ev, 0, 8);
	memcpy(ev, &type, 2);
	memcpy(ev + 4, &pid, 4);
	return 8;
}

static size_t put(uint8_t *ev, size_t at, const void *v, size_t n)
{
	memcpy(ev + at, v, n);
	return at + n;
}

/* The fields of @spec from its @payload, as the kprobe event's layout says (spec_format). */
static size_t put_fields(uint8_t *ev, size_t at, const struct fe_spec *spec, const uint8_t *payload,
			 uint64_t parent, const uint8_t **end)
{
	size_t dyn = at, strings;
	uint32_t fault = 0;

	/* the fixed part first, strings (__data_loc) after it */
	for (unsigned i = 0; i < spec->nr_fields; i++) {
		const struct fe_field *f = &spec->fields[i];

		dyn += f->kind == FE_STRING   ? 4
		       : f->kind == FE_CHARS  ? f->count
		       : f->count	      ? (size_t)f->count * f->size
		       : f->kind == FE_SYMBOL ? 8
					      : f->size;
	}
	dyn += 4 + 8; /* __hvt_fault, __hvt_parent */
	strings = dyn;
	for (unsigned i = 0; i < spec->nr_fields; i++) {
		const struct fe_field *f = &spec->fields[i];
		const uint8_t *data = payload + 1;

		if (*payload)
			fault |= 1u << i;
		if (f->kind == FE_STRING) {
			size_t n = *payload ? 0 : strnlen((const char *)data, FE_MAX_STRING - 1);
			/* a fault is an empty string, as the kernel stores it */
			uint32_t loc = (uint32_t)(*payload ? 0 : n + 1) << 16 | (uint32_t)strings;

			memcpy(ev + strings, data, n);
			ev[strings + n] = 0;
			strings += *payload ? 0 : n + 1;
			at = put(ev, at, &loc, 4);
		} else if (f->kind == FE_CHARS || f->count) {
			at = put(ev, at, data, fe_field_data_size(f));
		} else {
			at = put(ev, at, data, f->kind == FE_SYMBOL ? 8 : f->size);
		}
		payload += 1 + fe_field_data_size(f);
	}
	at = put(ev, at, &fault, 4);
	put(ev, at, &parent, 8);
	*end = payload;
	return strings;
}

static unsigned spec_id(const struct td_sink *t, const struct fe_spec *spec, bool ret)
{
	if (!ret && spec >= t->events && spec < t->events + t->nr_events)
		return TD_ID_DYNAMIC + (unsigned)(spec - t->events);
	if (ret && spec >= t->rprobes && spec < t->rprobes + t->nr_rprobes)
		return TD_ID_DYNAMIC + (unsigned)(t->nr_events + (size_t)(spec - t->rprobes));
	return 0;
}

/* The -r probe of the function of return @rec (typed: its spec, or bare): its id, or 0. */
static unsigned rprobe_id(struct sink *s, const struct sink_rec *rec)
{
	struct td_sink *t = s->priv;
	const struct hvt_record *r = rec->r;
	const struct vmi_sym *sym;

	if (rec->spec)
		return spec_id(t, rec->spec, true);
	/* a bare -r: found by its function's name */
	sym = s->syms ? vmi_symtab_lookup(s->syms, r->ip) : NULL;
	for (size_t i = 0; sym && i < t->nr_rprobes; i++)
		if (!strcmp(t->rprobes[i].func, sym->name))
			return TD_ID_DYNAMIC + (unsigned)(t->nr_events + i);
	return 0;
}

static void emit_events(struct sink *s, const struct sink_rec *rec)
{
	struct td_sink *t = s->priv;
	const struct hvt_record *r = rec->r;
	const struct fe_spec *e = rec->spec;
	const uint8_t *payload = rec->payload;

	for (unsigned k = 0; e && payload && k < FE_MAX_CHAIN; e = e->next, k++) {
		size_t at = common(t->ev, spec_id(t, e, false), r->pid);

		at = put(t->ev, at, &r->ip, 8);
		at = put_fields(t->ev, at, e, payload, r->parent, &payload);
		emit(s, r->cpu, r->ts, t->ev, at);
	}
}

static void emit_return_probe(struct sink *s, const struct sink_rec *rec)
{
	struct td_sink *t = s->priv;
	const struct hvt_record *r = rec->r;
	unsigned id = rprobe_id(s, rec);
	const uint8_t *end;
	size_t at;

	if (!id)
		return;
	at = common(t->ev, id, r->pid);
	at = put(t->ev, at, &r->ip, 8);
	at = put(t->ev, at, &r->parent, 8);
	at = put(t->ev, at, &r->duration, 8);
	if (rec->spec && rec->payload) {
		at = put_fields(t->ev, at, rec->spec, rec->payload, r->parent, &end);
	} else {
		uint32_t fault = 0;

		at = put(t->ev, at, &r->value, 8);
		at = put(t->ev, at, &fault, 4);
		at = put(t->ev, at, &r->parent, 8);
	}
	emit(s, r->cpu, r->ts, t->ev, at);
}

static void tracedat_lost(struct sink *s, const struct hvt_record *r)
{
	struct td_sink *t = s->priv;
	struct td_cpu *c;

	if (r->cpu >= s->nr_cpus)
		return;
	c = &t->cpus[r->cpu];
	if (c->page.started && !c->page.len)
		c->page.lost += r->value;
	else {
		flush_page(s, c);
		c->pending_lost += r->value;
	}
}

/* The sink's state for a record of @r's vCPU, its task's name remembered; NULL (the record left
 * out) for a vCPU the file has no pages for. */
static struct td_sink *seen(struct sink *s, const struct hvt_record *r)
{
	if (r->cpu >= s->nr_cpus)
		return NULL;
	remember_comm(s->priv, r);
	return s->priv;
}

/* An entry (@event: with its -e fields, each a probe event after it): funcgraph_entry with
 * function_graph, else function (not for an event's entry: its probe events stand for it). */
static void tracedat_call(struct sink *s, const struct sink_rec *rec, bool event)
{
	const struct hvt_record *r = rec->r;
	struct td_sink *t = seen(s, r);
	int32_t depth = r->depth, pad = 0;
	size_t at = 0;

	if (!t)
		return;
	if (t->graph) {
		at = common(t->ev, TD_ID_FUNCGRAPH_ENTRY, r->pid);
		at = put(t->ev, at, &r->ip, 8);
		at = put(t->ev, at, &depth, 4);
		at = put(t->ev, at, &pad, 4);
	} else if (!event) {
		at = common(t->ev, TD_ID_FUNCTION, r->pid);
		at = put(t->ev, at, &r->ip, 8);
		at = put(t->ev, at, &r->parent, 8);
	}
	if (at)
		emit(s, r->cpu, r->ts, t->ev, at);
	if (event)
		emit_events(s, rec);
	s->written++;
}

static unsigned tracedat_entry(struct sink *s, const struct sink_rec *rec,
			       const struct sink_rec *next)
{
	(void)next;
	tracedat_call(s, rec, false);
	return 1;
}

static unsigned tracedat_event(struct sink *s, const struct sink_rec *rec,
			       const struct sink_rec *next)
{
	(void)next;
	tracedat_call(s, rec, true);
	return 1;
}

/* the probe events alone, no graph entry */
static void tracedat_event_alone(struct sink *s, const struct sink_rec *rec)
{
	if (!seen(s, rec->r))
		return;
	emit_events(s, rec);
	s->written++;
}

/* funcgraph_exit of return @r */
static void graph_exit(struct sink *s, struct td_sink *t, const struct hvt_record *r)
{
	int32_t depth = r->depth;
	uint32_t overrun = 0;
	uint64_t calltime = r->ts - (r->duration < r->ts ? r->duration : r->ts);
	size_t at = common(t->ev, TD_ID_FUNCGRAPH_EXIT, r->pid);

	at = put(t->ev, at, &r->ip, 8);
	at = put(t->ev, at, &r->value, 8);
	at = put(t->ev, at, &depth, 4);
	at = put(t->ev, at, &overrun, 4);
	at = put(t->ev, at, &calltime, 8);
	at = put(t->ev, at, &r->ts, 8);
	emit(s, r->cpu, r->ts, t->ev, at);
}

/* A return: funcgraph_exit with function_graph, and a return probe's event. */
static void tracedat_ret(struct sink *s, const struct sink_rec *rec)
{
	struct td_sink *t = seen(s, rec->r);

	if (!t)
		return;
	if (t->graph)
		graph_exit(s, t, rec->r);
	emit_return_probe(s, rec);
	s->written++;
}

static FILE *temp_next_to(const char *path, FILE *out);

/* The per-vCPU pages again, trap events at their exits (sink_tracedat_restamp). A vCPU whose pages
 * cannot be copied keeps them as they were; the error is the sink's. */
static void restamp_pages(struct sink *s, struct td_sink *t)
{
	memset(t->restamped, 0, sizeof(*t->restamped));
	for (unsigned c = 0; c < s->nr_cpus && !s->err; c++) {
		struct td_cpu *cpu = &t->cpus[c];
		FILE *to = temp_next_to(t->path, s->out);
		uint64_t pages;
		int ret;

		if (!to) {
			sink_fail(s, errno);
			return;
		}
		ret =
		    td_restamp_cpu(&t->restamp, c, cpu->tmp, cpu->pages, to, &pages, t->restamped);
		if (ret < 0) {
			fclose(to);
			sink_fail(s, -ret);
			return;
		}
		fclose(cpu->tmp);
		cpu->tmp = to;
		cpu->pages = pages;
	}
}

static void tracedat_end(struct sink *s)
{
	struct td_sink *t = s->priv;

	for (unsigned c = 0; c < s->nr_cpus; c++) {
		struct td_cpu *cpu = &t->cpus[c];

		if (cpu->pending_lost && !cpu->page.started)
			td_page_start(&cpu->page, cpu->page.last_ts, cpu->pending_lost);
		if (cpu->page.started && (cpu->page.len || cpu->page.lost))
			flush_page(s, cpu);
	}
	if (t->restamped)
		restamp_pages(s, t);
	tracedat_headers_write(s);
	for (unsigned c = 0; c < s->nr_cpus; c++)
		if (t->cpus[c].tmp)
			fclose(t->cpus[c].tmp);
	free(t->cpus);
	free(t->comms);
	free(t);
	s->priv = NULL;
}

static void tracedat_begin(struct sink *s)
{
	(void)s;
}

static const struct sink_ops tracedat_ops = {
    .begin = tracedat_begin,
    .entry = tracedat_entry,
    .event = tracedat_event,
    .event_alone = tracedat_event_alone,
    .ret = tracedat_ret,
    .lost = tracedat_lost,
    .end = tracedat_end,
};

/* An unlinked temporary file in @path's directory (so the pages stay on the output's filesystem),
 * or in $TMPDIR (else /tmp) when the output @out is no regular file (a pipe, /dev/stdout). */
static FILE *temp_next_to(const char *path, FILE *out)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	struct stat st;
	int fd;

	if (fstat(fileno(out), &st) == 0 && !S_ISREG(st.st_mode))
		snprintf(dir, sizeof(dir), "%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	else if (slash)
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path) + 1, path);
	else
		snprintf(dir, sizeof(dir), ".");
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		char tmpl[4200];

		snprintf(tmpl, sizeof(tmpl), "%s/.hvtrace-cpu-XXXXXX", dir);
		fd = mkostemp(tmpl, O_CLOEXEC);
		if (fd < 0)
			return NULL;
		unlink(tmpl);
	}
	FILE *f = fdopen(fd, "w+b");

	if (!f)
		close(fd);
	return f;
}

int sink_tracedat_init(struct sink *s, FILE *out, const char *path, const struct vmi_symtab *syms,
		       unsigned nr_cpus, bool graph, const struct fe_spec *events, size_t nr_events,
		       const struct fe_spec *rprobes, size_t nr_rprobes)
{
	struct td_sink *t = calloc(1, sizeof(*t));
	int err = 0;

	memset(s, 0, sizeof(*s));
	if (!t)
		return -ENOMEM;
	t->path = path;
	t->graph = graph;
	t->events = events;
	t->nr_events = nr_events;
	t->rprobes = rprobes;
	t->nr_rprobes = nr_rprobes;
	t->cpus = calloc(nr_cpus ? nr_cpus : 1, sizeof(*t->cpus));
	t->comms = calloc(TD_COMMS, sizeof(*t->comms));
	if (!t->cpus || !t->comms)
		err = -ENOMEM;
	for (unsigned c = 0; !err && c < nr_cpus; c++)
		if (!(t->cpus[c].tmp = temp_next_to(path, out)))
			err = -errno;
	if (err) {
		for (unsigned c = 0; t->cpus && c < nr_cpus; c++)
			if (t->cpus[c].tmp)
				fclose(t->cpus[c].tmp);
		free(t->cpus);
		free(t->comms);
		free(t);
		return err;
	}
	sink_setup(s, &tracedat_ops, out, syms, nr_cpus);
	s->priv = t;
	return 0;
}

void sink_tracedat_peer(struct sink *s, uint64_t trace_id, uint64_t host_trace_id, uint64_t t0_ns)
{
	struct td_sink *t = s->priv;

	t->peer = true;
	t->trace_id = trace_id;
	t->host_trace_id = host_trace_id;
	t->t0_ns = t0_ns;
}

void sink_tracedat_restamp(struct sink *s, const struct host_side *host, uint64_t trampoline,
			   struct td_restamp_counts *counts)
{
	struct td_sink *t = s->priv;

	t->restamp = (struct td_restamp){
	    .host = host,
	    .t0_ns = t->t0_ns,
	    .trampoline = trampoline,
	    .ret_first = TD_ID_DYNAMIC + (unsigned)t->nr_events,
	    .ret_end = TD_ID_DYNAMIC + (unsigned)(t->nr_events + t->nr_rprobes),
	};
	t->restamped = counts;
}

static int tracedat_make(struct sink *s, const struct sink_config *cfg)
{
	int ret = sink_tracedat_init(s, cfg->out, cfg->path, cfg->syms, cfg->nr_cpus,
				     cfg->tracer && !strcmp(cfg->tracer, "function_graph"),
				     cfg->events, cfg->nr_events, cfg->rprobes, cfg->nr_rprobes);

	if (ret < 0)
		return ret;
	s->tracer = cfg->tracer;
	return 0;
}

const struct sink_format sink_format_tracedat = {"tracedat", NULL, tracedat_make, NULL};

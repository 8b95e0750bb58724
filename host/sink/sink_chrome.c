/* Chrome trace-event JSON (the "JSON Object Format" that Perfetto's UI, chrome://tracing and
 * speedscope load), one event per line:
 *   - process 1 "CPUs": one thread per vCPU (tid = CPU number, named "CPU N");
 *   - process 2 "tasks": one thread per guest task, i.e. per (pid, comm) pair, so that the per-CPU
 *     idle tasks of pid 0 stay apart (tid = nr_cpus + the task's index in order of appearance,
 *     named "<comm>-<pid>"); at most CHROME_MAX_TASKS, later tasks share one "other tasks" thread.
 * A vCPU's track shows the calls of the task last seen on it: when another task's record comes,
 * the open calls there end ("switched_out" in their args) and the new task's open calls begin again
 * ("resumed"); a task's calls are on one vCPU's track at a time.
 * function_graph calls are B/E slices on both tracks, kept well nested: a return closes the
 * matching open call (and any calls above it whose returns were lost); a return whose entry was
 * not seen becomes a complete (X) slice where it fits, else an instant; calls still open at the
 * end are closed at the last timestamp with "unfinished" in their args. With the function tracer
 * an entry is an instant (its return is not known). -e events are instants with their fields as
 * args, returns carry "ret" (or a return probe's fields), lost events are instants on the CPU
 * track. Timestamps in microseconds with three decimals (ns). Every string is JSON-escaped: bytes
 * a guest supplied cannot break the document. */
#include "host/sink/sink.h"
#include "host/sink/sink_format.h"
#include "host/sink/task_table.h"
#include "host/trace/escape.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define CHROME_MAX_TASKS 4096
#define CHROME_PID_CPUS	 1
#define CHROME_PID_TASKS 2

/* An open call on a track. */
struct chrome_frame {
	uint64_t ip;
	uint64_t ts;
	int32_t pid;
	uint8_t depth;
};

/* The open calls of one track, innermost last; deeper calls than fit are not drawn on the track. */
struct chrome_stack {
	unsigned nr;
	struct chrome_frame f[SINK_GRAPH_MAX_DEPTH];
};

struct chrome_task {
	unsigned tid;
	int on_cpu; /* the vCPU whose track shows its calls, -1 none */
	struct chrome_stack *stack;
};

struct chrome {
	bool graph; /* function_graph: entries open calls */
	bool first; /* no event written yet (no comma before the next) */
	uint64_t last_ts;
	struct chrome_stack *cpus; /* nr_cpus of them */
	struct chrome_task **on;   /* per vCPU: the task its track shows, NULL none */
	struct task_table table;
	struct chrome_task tasks[CHROME_MAX_TASKS + 1]; /* the last one: "other tasks" */
};

/* Writes @s (at most @max bytes, up to a NUL) as the inside of a JSON string (escape_json: '"',
 * '\\' and every byte outside printable ASCII as an escape, bytes >= 0x80 as \u00XX, their Latin-1
 * reading), so the document stays valid UTF-8 JSON whatever the bytes. */
static void json_str(struct sink *s, const char *str, size_t max)
{
	char buf[ESCAPE_JSON_SIZE(64)];
	size_t n = strnlen(str, max);

	for (size_t off = 0; off < n; off += 64)
		sink_write(s, buf, escape_json(buf, sizeof(buf), str + off, n - off < 64 ? n - off : 64));
}

/* Writes the literal text @str. */
static void put(struct sink *s, const char *str)
{
	sink_write(s, str, strlen(str));
}

/* Writes "<key>":"<escaped value>" */
static void json_kv(struct sink *s, const char *key, const char *val, size_t max)
{
	sink_printf(s, "\"%s\":\"", key);
	json_str(s, val, max);
	put(s, "\"");
}

/* Starts an event line: the separator, phase, track and timestamp. */
static void event_start(struct sink *s, char ph, int pid, unsigned tid, uint64_t ts)
{
	struct chrome *c = s->priv;

	sink_printf(s, "%s{\"ph\":\"%c\",\"pid\":%d,\"tid\":%u,\"ts\":%" PRIu64 ".%03" PRIu64,
		    c->first ? "" : ",\n", ph, pid, tid, ts / 1000, ts % 1000);
	c->first = false;
}

/* The function's name as a "name" member. */
static void event_name(struct sink *s, uint64_t ip)
{
	const struct vmi_sym *sym = vmi_symtab_lookup(s->syms, ip);

	put(s, ",\"name\":\"");
	if (sym)
		json_str(s, sym->name, SIZE_MAX);
	else
		sink_printf(s, "0x%" PRIx64, ip);
	put(s, "\"");
}

static void metadata(struct sink *s, const char *what, int pid, unsigned tid, const char *name)
{
	struct chrome *c = s->priv;

	sink_printf(s, "%s{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"%s\",\"args\":{",
		    c->first ? "" : ",\n", pid, tid, what);
	json_kv(s, "name", name, SIZE_MAX);
	put(s, "}}");
	c->first = false;
}

/* The task track of @r's task, created (and named) when first seen; NULL without memory. */
static struct chrome_task *task_of(struct sink *s, const struct hvt_record *r)
{
	struct chrome *c = s->priv;
	char name[3 * VMI_COMM_LEN + 16], comm[VMI_COMM_LEN + 1];
	bool added;
	unsigned i = task_table_find(&c->table, r->pid, r->comm, &added);
	struct chrome_task *t = &c->tasks[i];

	if (t->stack)
		return t;
	t->stack = calloc(1, sizeof(*t->stack));
	if (!t->stack)
		return NULL;
	t->tid = s->nr_cpus + i;
	t->on_cpu = -1;
	memcpy(comm, r->comm, VMI_COMM_LEN);
	comm[VMI_COMM_LEN] = 0;
	if (added)
		snprintf(name, sizeof(name), "%s-%d", comm, r->pid);
	else
		snprintf(name, sizeof(name), "other tasks");
	metadata(s, "thread_name", CHROME_PID_TASKS, t->tid, name);
	return t;
}

/* ,"args":{"task":"comm-pid"} or {"cpu":N}, left open for more members. */
static void args_open(struct sink *s, const struct hvt_record *r, bool cpu_track)
{
	if (cpu_track) {
		put(s, ",\"args\":{\"task\":\"");
		json_str(s, r->comm, VMI_COMM_LEN);
		sink_printf(s, "-%d\"", r->pid);
	} else {
		sink_printf(s, ",\"args\":{\"cpu\":%u", r->cpu);
	}
}

/* Each field of @spec (and of its chain) as a member "name":"value", formatted by fe_format one
 * field at a time (its "name=" left out). */
static void args_fields(struct sink *s, const struct fe_spec *spec, const uint8_t *payload)
{
	for (unsigned k = 0; spec && k < FE_MAX_CHAIN; spec = spec->next, k++)
		for (unsigned i = 0; i < spec->nr_fields; i++) {
			struct fe_spec one;
			char v[2048];
			size_t skip = strnlen(spec->fields[i].name, FE_NAME_LEN) + 1;
			int n;

			one.nr_fields = 1;
			one.fprobe_style = spec->fprobe_style;
			one.fields[0] = spec->fields[i];
			n = fe_format(v, sizeof(v), &one, payload, s->syms);
			put(s, ",\"");
			json_str(s, spec->fields[i].name, FE_NAME_LEN);
			put(s, "\":\"");
			if (n >= 0 && (size_t)n > skip)
				json_str(s, v + skip, sizeof(v));
			put(s, "\"");
			payload += fe_event_size(&one);
		}
}

/* The fields of return @rec (a return probe's typed ones when @typed, else RAX as "ret") as
 * members. */
static void args_return(struct sink *s, const struct sink_rec *rec, bool typed)
{
	if (!typed)
		sink_printf(s, ",\"ret\":\"0x%" PRIx64 "\"", rec->r->value);
	else if (rec->spec && rec->payload)
		args_fields(s, rec->spec, rec->payload);
}

/* Opens @r's call on a track: a B event, the call pushed on @st (not drawn when @st is full). */
static void open_call(struct sink *s, struct chrome_stack *st, int pid, unsigned tid,
		      const struct hvt_record *r)
{
	if (st->nr >= SINK_GRAPH_MAX_DEPTH)
		return;
	st->f[st->nr++] =
	    (struct chrome_frame){.ip = r->ip, .ts = r->ts, .pid = r->pid, .depth = r->depth};
	event_start(s, 'B', pid, tid, r->ts);
	event_name(s, r->ip);
	args_open(s, r, pid == CHROME_PID_CPUS);
	put(s, "}}");
}

/* Closes the innermost open call of @st at @ts: an E event with return @rec's values (@typed: a
 * return probe's fields), or without one (@rec NULL) @why (e.g. "unfinished") true in its args. */
static void close_top(struct sink *s, struct chrome_stack *st, int pid, unsigned tid, uint64_t ts,
		      const struct sink_rec *rec, bool typed, const char *why)
{
	const struct chrome_frame *f = &st->f[--st->nr];
	const struct hvt_record *r = rec ? rec->r : NULL;

	event_start(s, 'E', pid, tid, ts);
	event_name(s, f->ip);
	if (r) {
		put(s, ",\"args\":{");
		/* the first member without its comma */
		if (!typed) {
			sink_printf(s, "\"ret\":\"0x%" PRIx64 "\"", r->value);
		} else {
			sink_printf(s, "\"duration_ns\":%" PRIu64, r->duration);
			args_return(s, rec, typed);
		}
		put(s, "}}");
	} else {
		sink_printf(s, ",\"args\":{\"%s\":true}}", why);
	}
}

/* Return @rec (@typed: a return probe's, with its fields) on a track: closes its open call (and the
 * calls above it, whose returns were lost). Without one it is a complete slice when it fits around
 * the calls still open, else an instant. */
static void return_call(struct sink *s, struct chrome_stack *st, int pid, unsigned tid,
			const struct sink_rec *rec, bool typed)
{
	const struct hvt_record *r = rec->r;
	bool cpu_track = pid == CHROME_PID_CPUS;
	uint64_t start = r->duration < r->ts ? r->ts - r->duration : 0;
	unsigned i = st->nr;

	while (i > 0) {
		const struct chrome_frame *f = &st->f[i - 1];

		if (f->ip == r->ip && f->depth == r->depth && (!cpu_track || f->pid == r->pid))
			break;
		i--;
	}
	if (i > 0) {
		while (st->nr > i)
			close_top(s, st, pid, tid, r->ts, NULL, false, "unfinished");
		close_top(s, st, pid, tid, r->ts, rec, typed, NULL);
		return;
	}
	if (!st->nr || start >= st->f[st->nr - 1].ts) {
		event_start(s, 'X', pid, tid, start);
		sink_printf(s, ",\"dur\":%" PRIu64 ".%03" PRIu64, r->duration / 1000,
			    r->duration % 1000);
	} else {
		event_start(s, 'i', pid, tid, r->ts);
		put(s, ",\"s\":\"t\"");
	}
	event_name(s, r->ip);
	args_open(s, r, cpu_track);
	sink_printf(s, ",\"duration_ns\":%" PRIu64, r->duration);
	args_return(s, rec, typed);
	put(s, "}}");
}

/* An instant for entry @r on a track: a function-tracer hit (with its caller) or an -e event (with
 * its fields, @spec's chain from @payload). */
static void instant(struct sink *s, int pid, unsigned tid, const struct hvt_record *r,
		    const struct fe_spec *spec, const uint8_t *payload)
{
	const struct vmi_sym *parent = vmi_symtab_lookup(s->syms, r->parent);

	event_start(s, 'i', pid, tid, r->ts);
	put(s, ",\"s\":\"t\"");
	event_name(s, r->ip);
	sink_printf(s, ",\"cat\":\"%s\"", spec ? "event" : "function");
	args_open(s, r, pid == CHROME_PID_CPUS);
	put(s, ",\"parent\":\"");
	if (parent)
		json_str(s, parent->name, SIZE_MAX);
	else
		sink_printf(s, "0x%" PRIx64, r->parent);
	put(s, "\"");
	if (spec)
		args_fields(s, spec, payload);
	put(s, "}}");
}

/* Makes vCPU @cpu's track show task @t from @r on: the calls of the task it showed are closed
 * ("switched_out"), so are @t's on the track of the vCPU it ran on before (it runs on one at a
 * time), and @t's open calls are opened again here ("resumed"). */
static void switch_to(struct sink *s, unsigned cpu, struct chrome_task *t,
		      const struct hvt_record *r)
{
	struct chrome *c = s->priv;
	struct chrome_stack *st = &c->cpus[cpu];

	if (c->on[cpu] == t)
		return;
	while (st->nr)
		close_top(s, st, CHROME_PID_CPUS, cpu, r->ts, NULL, false, "switched_out");
	if (c->on[cpu])
		c->on[cpu]->on_cpu = -1;
	if (t->on_cpu >= 0 && (unsigned)t->on_cpu < s->nr_cpus) {
		struct chrome_stack *was = &c->cpus[t->on_cpu];

		while (was->nr)
			close_top(s, was, CHROME_PID_CPUS, (unsigned)t->on_cpu, r->ts, NULL, false,
				  "switched_out");
		c->on[t->on_cpu] = NULL;
	}
	c->on[cpu] = t;
	t->on_cpu = (int)cpu;
	for (unsigned i = 0; i < t->stack->nr; i++) {
		const struct chrome_frame *f = &t->stack->f[i];

		st->f[st->nr++] = (struct chrome_frame){
		    .ip = f->ip, .ts = r->ts, .pid = f->pid, .depth = f->depth};
		event_start(s, 'B', CHROME_PID_CPUS, cpu, r->ts);
		event_name(s, f->ip);
		args_open(s, r, true);
		put(s, ",\"resumed\":true}}");
	}
}

static void chrome_begin(struct sink *s)
{
	struct chrome *c = s->priv;
	char name[32];

	c->graph = sink_graph_tracer(s);
	put(s, "{\"traceEvents\":[\n");
	metadata(s, "process_name", CHROME_PID_CPUS, 0, "CPUs");
	metadata(s, "process_name", CHROME_PID_TASKS, 0, "tasks");
	for (unsigned cpu = 0; cpu < s->nr_cpus; cpu++) {
		snprintf(name, sizeof(name), "CPU %u", cpu);
		metadata(s, "thread_name", CHROME_PID_CPUS, cpu, name);
	}
}

/* Every record moves the trace's end (the time open calls are closed at). */
static void chrome_seen(struct sink *s, const struct hvt_record *r)
{
	struct chrome *c = s->priv;

	if (r->ts > c->last_ts)
		c->last_ts = r->ts;
}

static void chrome_lost(struct sink *s, const struct hvt_record *r)
{
	chrome_seen(s, r);
	if (r->cpu >= s->nr_cpus)
		return;
	event_start(s, 'i', CHROME_PID_CPUS, r->cpu, r->ts);
	sink_printf(s,
		    ",\"s\":\"t\",\"name\":\"lost events\",\"cat\":\"lost\","
		    "\"args\":{\"lost\":%" PRIu64 "}}",
		    r->value);
}

/* The task of @r, its track shown on @r's vCPU; NULL (the record left out) without memory. */
static struct chrome_task *chrome_task_on_cpu(struct sink *s, const struct hvt_record *r)
{
	struct chrome_task *t;

	chrome_seen(s, r);
	t = task_of(s, r);
	if (t && r->cpu < s->nr_cpus)
		switch_to(s, r->cpu, t, r);
	return t;
}

/* An entry (@event: carrying -e fields; @alone: of a call not traced, its instant only): with
 * function_graph a call opened on both tracks, else (and for its fields) instants. */
static void chrome_call(struct sink *s, const struct sink_rec *rec, bool event, bool alone)
{
	const struct hvt_record *r = rec->r;
	struct chrome *c = s->priv;
	struct chrome_task *t = chrome_task_on_cpu(s, r);
	bool cpu = r->cpu < s->nr_cpus;
	const struct fe_spec *spec = (event || alone) && rec->payload ? rec->spec : NULL;

	if (!t)
		return; /* no memory for a new task's track: its records are left out */
	if (c->graph && !alone) {
		if (cpu)
			open_call(s, &c->cpus[r->cpu], CHROME_PID_CPUS, r->cpu, r);
		open_call(s, t->stack, CHROME_PID_TASKS, t->tid, r);
	}
	if (!c->graph || spec || alone) {
		if (cpu)
			instant(s, CHROME_PID_CPUS, r->cpu, r, spec, rec->payload);
		instant(s, CHROME_PID_TASKS, t->tid, r, spec, rec->payload);
	}
	s->written++;
}

static unsigned chrome_entry(struct sink *s, const struct sink_rec *rec,
			     const struct sink_rec *next)
{
	(void)next;
	chrome_call(s, rec, false, false);
	return 1;
}

static unsigned chrome_event(struct sink *s, const struct sink_rec *rec,
			     const struct sink_rec *next)
{
	(void)next;
	chrome_call(s, rec, true, false);
	return 1;
}

static void chrome_event_alone(struct sink *s, const struct sink_rec *rec)
{
	chrome_call(s, rec, false, true);
}

/* A return (@typed: a return probe's, with its fields) closing its call on both tracks. */
static void chrome_return(struct sink *s, const struct sink_rec *rec, bool typed)
{
	const struct hvt_record *r = rec->r;
	struct chrome *c = s->priv;
	struct chrome_task *t = chrome_task_on_cpu(s, r);

	if (!t)
		return;
	if (r->cpu < s->nr_cpus)
		return_call(s, &c->cpus[r->cpu], CHROME_PID_CPUS, r->cpu, rec, typed);
	return_call(s, t->stack, CHROME_PID_TASKS, t->tid, rec, typed);
	s->written++;
}

static void chrome_ret(struct sink *s, const struct sink_rec *rec)
{
	chrome_return(s, rec, false);
}

static void chrome_ret_event(struct sink *s, const struct sink_rec *rec)
{
	chrome_return(s, rec, true);
}

static void chrome_end(struct sink *s)
{
	struct chrome *c = s->priv;

	/* calls whose returns did not come: closed at the last timestamp */
	for (unsigned cpu = 0; cpu < s->nr_cpus; cpu++)
		while (c->cpus[cpu].nr)
			close_top(s, &c->cpus[cpu], CHROME_PID_CPUS, cpu, c->last_ts, NULL, false,
				  "unfinished");
	for (unsigned i = 0; i <= CHROME_MAX_TASKS; i++) {
		struct chrome_task *t = &c->tasks[i];

		while (t->stack && t->stack->nr)
			close_top(s, t->stack, CHROME_PID_TASKS, t->tid, c->last_ts, NULL, false,
				  "unfinished");
		free(t->stack);
		t->stack = NULL;
	}
	sink_printf(
	    s,
	    "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"tracer\":\"%s\","
	    "\"entries-written\":\"%llu\",\"lost\":\"%llu\",\"guest-reported-lost\":\"%llu\"",
	    c->graph ? "function_graph" : "function", s->written, s->lost, s->guest_lost);
	if (s->not_written) /* the trace was cut short: part of "lost" */
		sink_printf(s, ",\"not-written\":\"%llu\"", s->not_written);
	sink_write(s, "}}\n", 3);
	sink_flush(s);
	free(c->cpus);
	free(c->on);
	task_table_free(&c->table);
	free(c);
	s->priv = NULL;
}

static const struct sink_ops chrome_ops = {
    .begin = chrome_begin,
    .entry = chrome_entry,
    .event = chrome_event,
    .event_alone = chrome_event_alone,
    .ret = chrome_ret,
    .ret_event = chrome_ret_event,
    .lost = chrome_lost,
    .end = chrome_end,
};

int sink_chrome_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus)
{
	struct chrome *c;

	sink_setup(s, &chrome_ops, out, syms, nr_cpus);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -1;
	c->first = true;
	c->cpus = calloc(nr_cpus ? nr_cpus : 1, sizeof(*c->cpus));
	c->on = calloc(nr_cpus ? nr_cpus : 1, sizeof(*c->on));
	if (!c->cpus || !c->on || task_table_init(&c->table, CHROME_MAX_TASKS) < 0) {
		free(c->cpus);
		free(c->on);
		free(c);
		return -1;
	}
	s->priv = c;
	return 0;
}

static int chrome_make(struct sink *s, const struct sink_config *cfg)
{
	if (sink_chrome_init(s, cfg->out, cfg->syms, cfg->nr_cpus) < 0)
		return -ENOMEM;
	s->tracer = cfg->tracer;
	return 0;
}

const struct sink_format sink_format_json = {"json", chrome_make, NULL, chrome_make};

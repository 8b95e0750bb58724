#include "host/sink/sink.h"
#include "host/sink/sink_format.h"
#include "host/trace/escape.h"
#include "host/trace/probe.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Per-vCPU state of the function_graph sink: who ran last, for the task-switch marker. */
struct graph_cpu {
	int32_t pid;
	char comm[VMI_COMM_LEN];
	bool seen;
};

static int cpu_width(unsigned nr_cpus)
{
	int w = 1;

	for (unsigned n = nr_cpus > 1 ? nr_cpus - 1 : 0; n >= 10; n /= 10)
		w++;
	return w;
}

char sink_graph_mark(uint64_t ns)
{
	/* the kernel's trace_find_mark: the first threshold exceeded, from the longest */
	static const struct {
		uint64_t above;
		char mark;
	} marks[] = {{1000000000ull, '$'}, {100000000ull, '@'}, {10000000ull, '*'},
		     {1000000ull, '#'},	   {100000ull, '!'},	{10000ull, '+'}};

	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (ns > marks[i].above)
			return marks[i].mark;
	return ' ';
}

/* Appends the formatted text to @buf (@len bytes, @n used) as far as it fits. Returns the new
 * length, never past @len - 1. */
__attribute__((format(printf, 4, 5))) static size_t add(char *buf, size_t len, size_t n,
							const char *fmt, ...)
{
	va_list ap;
	int k;

	if (n + 1 >= len)
		return n;
	va_start(ap, fmt);
	k = vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
	if (k < 0)
		return n;
	return n + (size_t)k < len ? n + (size_t)k : len - 1;
}

/* Ends the line in @buf at @n with '\n' (over its last character when it is full). */
static size_t end_line(char *buf, size_t len, size_t n)
{
	if (len < 2) {
		if (len)
			buf[0] = 0;
		return 0;
	}
	if (n + 1 >= len)
		n = len - 2;
	buf[n++] = '\n';
	buf[n] = 0;
	return n;
}

int sink_graph_duration(char *buf, size_t len, uint64_t ns)
{
	char us[24], frac[4];
	size_t w;
	int n;

	n = snprintf(us, sizeof(us), "%" PRIu64, ns / 1000);
	/* at most 7 digits in all: as many nanosecond digits as fit */
	if (n < 7) {
		snprintf(frac, sizeof(frac), "%03" PRIu64, ns % 1000);
		frac[7 - n < 3 ? 7 - n : 3] = 0;
		w = add(buf, len, 0, "%c %s.%s us ", sink_graph_mark(ns), us, frac);
		n += (int)strlen(frac) + 1;
	} else {
		w = add(buf, len, 0, "%c %s us ", sink_graph_mark(ns), us);
	}
	for (; n < 8 && w + 1 < len; n++)
		buf[w++] = ' ';
	if (len)
		buf[w] = 0;
	return (int)w;
}

/* Writes the " N) " CPU column and the duration column ("" = filled with spaces). */
static size_t prefix(char *buf, size_t len, const struct sink *s, unsigned cpu, const uint64_t *dur)
{
	size_t n = add(buf, len, 0, " %*u) ", cpu_width(s->nr_cpus), cpu);

	if (dur && n + 1 < len)
		n += (size_t)sink_graph_duration(buf + n, len - n, *dur);
	else
		n = add(buf, len, n, "              ");
	return add(buf, len, n, "|  ");
}

/* The retval comment of print_graph_retval(): errno values (-4095..-1, also as a sign-extended
 * 32-bit int) in decimal unless @hex, everything else in hex. */
static size_t add_retval(char *buf, size_t len, size_t n, uint64_t v, bool hex)
{
	uint64_t err = 0;

	if (v && !hex) {
		err = (v & (1ull << 31)) && !(v >> 32) ? (uint64_t)(int64_t)(int32_t)v : v;
		if (err < (uint64_t)-4095) /* !IS_ERR_VALUE */
			err = 0;
	}
	if (err)
		return add(buf, len, n, " ret=%" PRId64, (int64_t)err);
	return add(buf, len, n, " ret=0x%" PRIx64, v);
}

int sink_graph_format(char *buf, size_t len, const struct sink *s, const struct hvt_record *r,
		      const struct hvt_record *ret)
{
	/* whatever depth a record claims, the line stays in @buf */
	int indent = 2 * (r->depth < SINK_GRAPH_MAX_DEPTH ? r->depth : SINK_GRAPH_MAX_DEPTH);
	char func[128];
	size_t n;

	sink_symbol_name(func, sizeof(func), r->ip, s->syms);
	if (r->type != HVT_REC_RETURN && !ret) {
		/* print_graph_entry_nested() */
		n = prefix(buf, len, s, r->cpu, NULL);
		n = add(buf, len, n, "%*s%s() {", indent, "", func);
	} else if (r->type != HVT_REC_RETURN) {
		/* print_graph_entry_leaf(), print_graph_retval() with an entry */
		n = prefix(buf, len, s, r->cpu, &ret->duration);
		n = add(buf, len, n, "%*s%s();", indent, "", func);
		if (s->graph_retval) {
			n = add(buf, len, n, " /*");
			n = add_retval(buf, len, n, ret->value, s->graph_retval_hex);
			n = add(buf, len, n, " */");
		}
	} else {
		/* print_graph_return(), print_graph_retval() without an entry */
		n = prefix(buf, len, s, r->cpu, &r->duration);
		n = add(buf, len, n, "%*s}", indent, "");
		if (s->graph_retval) {
			n = add(buf, len, n, " /* %s", func);
			n = add_retval(buf, len, n, r->value, s->graph_retval_hex);
			n = add(buf, len, n, " */");
		} else if (s->graph_tail) {
			n = add(buf, len, n, " /* %s */", func);
		}
	}
	return (int)end_line(buf, len, n);
}

/* An entry whose return is never traced (a probe with no_return: asm entered without a CALL): a
 * call line with no duration and no block, at its depth. */
static int format_entry_only(char *buf, size_t len, const struct sink *s,
			     const struct hvt_record *r)
{
	int indent = 2 * (r->depth < SINK_GRAPH_MAX_DEPTH ? r->depth : SINK_GRAPH_MAX_DEPTH);
	char func[128];
	size_t n;

	sink_symbol_name(func, sizeof(func), r->ip, s->syms);
	n = prefix(buf, len, s, r->cpu, NULL);
	n = add(buf, len, n, "%*s%s(); /* entry only */", indent, "", func);
	return (int)end_line(buf, len, n);
}

static void graph_begin(struct sink *s)
{
	sink_printf(s, "# tracer: function_graph\n"
		       "#\n"
		       "# CPU  DURATION                  FUNCTION CALLS\n"
		       "# |     |   |                     |   |   |   |\n");
}

/* print_graph_proc(): "comm-pid" (comm cut to 7 bytes), centred in 14 columns. */
static size_t add_proc(char *buf, size_t len, size_t n, const char *comm, int32_t pid)
{
	char raw[8], name[ESCAPE_SIZE(8)], id[16];
	int w, spaces;

	memcpy(raw, comm, 7);
	raw[7] = 0;
	escape_str(name, sizeof(name), raw, 7);
	snprintf(id, sizeof(id), "%d", pid);
	w = (int)(strlen(name) + strlen(id) + 1);
	spaces = w < 14 ? 14 - w : 0;
	return add(buf, len, n, "%*s%s-%s%*s", spaces / 2, "", name, id, spaces - spaces / 2, "");
}

/* verif_pid(): the context-switch block when the guest task (pid) on this vCPU changed. */
static void task_marker(struct sink *s, const struct hvt_record *r)
{
	char line[256];
	struct graph_cpu *c;
	size_t n;

	if (r->cpu >= s->nr_cpus)
		return;
	c = &((struct graph_cpu *)s->priv)[r->cpu];
	if (c->seen && c->pid != r->pid) {
		n = add(line, sizeof(line), 0, " ------------------------------------------\n");
		n = add(line, sizeof(line), n, " %*u) ", cpu_width(s->nr_cpus), r->cpu);
		n = add_proc(line, sizeof(line), n, c->comm, c->pid);
		n = add(line, sizeof(line), n, " => ");
		n = add_proc(line, sizeof(line), n, r->comm, r->pid);
		n = add(line, sizeof(line), n, "\n ------------------------------------------\n\n");
		sink_write(s, line, n);
		s->task_switches++;
	}
	c->seen = true;
	c->pid = r->pid;
	memcpy(c->comm, r->comm, VMI_COMM_LEN);
}

/* print_graph_irq(): "==========>" before an entry into the guest's .irqentry.text, "<=========="
 * after its return. */
static void irq_marker(struct sink *s, const struct hvt_record *r, bool enter)
{
	char line[64];
	size_t n;

	if (r->ip < s->irq_lo || r->ip >= s->irq_hi)
		return;
	n = add(line, sizeof(line), 0, " %*u)   %s |\n", cpu_width(s->nr_cpus), r->cpu,
		enter ? "==========>" : "<==========");
	sink_write(s, line, n);
}

/* RAX of return @rec into *@v: a plain return's value, or a return probe's first field when that
 * is the register itself (a bare -r). False when the probe's fields hold no copy of it. */
static bool return_value(const struct sink_rec *rec, uint64_t *v)
{
	const struct fe_spec *spec = rec->spec;
	const uint8_t *payload = rec->payload;
	const struct fe_field *f;

	if (rec->r->type == HVT_REC_RETURN) {
		*v = rec->r->value;
		return true;
	}
	if (!spec || !payload || !spec->nr_fields)
		return false;
	f = &spec->fields[0];
	if (f->arg || f->memory || f->nr_steps || f->count || payload[0])
		return false;
	memcpy(v, payload + 1, 8);
	return true;
}

/* A comment line ("/" "* text *" "/") as ftrace's function_graph prints trace events
 * (print_graph_comment): blank duration column, indented by the vCPU's graph depth @depth as the
 * kernel keeps it (the entry's depth inside a function, one less after a return), and not at all
 * when that is 0. */
static void comment_line(struct sink *s, unsigned cpu, int depth, const char *text)
{
	char line[4096];
	int d = depth < SINK_GRAPH_MAX_DEPTH ? depth : SINK_GRAPH_MAX_DEPTH;
	int indent = d > 0 ? 2 * (d + 1) : 0;
	size_t n = prefix(line, sizeof(line), s, cpu, NULL);

	n = add(line, sizeof(line), n, "%*s/* %s */", indent, "", text);
	n = end_line(line, sizeof(line), n);
	sink_write(s, line, n);
}

/* The "r_<func>: (...) ret=.." comment of a return probe's return @rec. */
static void return_comment(struct sink *s, const struct sink_rec *rec)
{
	char body[2560];

	sink_return_body(body, sizeof(body), rec->r, rec->spec, rec->payload, s->syms);
	comment_line(s, rec->r->cpu, (int)rec->r->depth - 1, body);
}

/* The "<func>: fields" comments of -e event @rec inside its function, one level deeper; for an
 * event alone (HVT_REC_EVENT_ALONE) at the depth of the graph around it, as ftrace prints a trace
 * event there. */
static void event_comment(struct sink *s, const struct sink_rec *rec, bool alone)
{
	const struct hvt_record *r = rec->r;
	int depth = alone ? (int)r->depth - 1 : r->depth;
	const struct fe_spec *spec = rec->spec;
	const uint8_t *payload = rec->payload;
	char body[2560], fields[2048], label[160];

	if (!payload)
		return;
	/* one comment per -e event of the function, each from its part of the payload */
	for (unsigned k = 0; spec && k < FE_MAX_CHAIN; spec = spec->next, k++) {
		fe_format(fields, sizeof(fields), spec, payload, s->syms);
		snprintf(body, sizeof(body), "%s: %s", fe_label(spec, label, sizeof(label)),
			 fields);
		comment_line(s, r->cpu, depth, body);
		payload += fe_event_size(spec);
	}
}

/* The function_graph line of return @rec (a return probe's too: as a plain return, its RAX from
 * its payload where the probe recorded it). */
static int format_return(char *buf, size_t len, const struct sink *s, const struct sink_rec *rec,
			 const struct hvt_record *entry)
{
	struct hvt_record ret = *rec->r;
	struct sink plain = *s;

	ret.type = HVT_REC_RETURN;
	plain.graph_retval = s->graph_retval && return_value(rec, &ret.value);
	return entry ? sink_graph_format(buf, len, &plain, entry, &ret)
		     : sink_graph_format(buf, len, &plain, &ret, NULL);
}

static void graph_lost(struct sink *s, const struct hvt_record *r)
{
	char line[512];

	/* print_trace_line(): before the next event of that CPU */
	sink_write_line(s, line, sizeof(line), sink_lost_format(line, sizeof(line), r));
}

/* no call of the graph: its comment alone */
static void graph_event_alone(struct sink *s, const struct sink_rec *rec)
{
	task_marker(s, rec->r);
	event_comment(s, rec, true);
	s->written++;
}

/* An entry (@event: with its -e fields, commented inside it): an opening line, the one line of a
 * leaf when @ahead is its return (and it carries no event), or the entry alone of a probe whose
 * return is not hooked. */
static unsigned graph_call(struct sink *s, const struct sink_rec *rec, const struct sink_rec *ahead,
			   bool event)
{
	const struct hvt_record *r = rec->r;
	char line[512];
	/* an entry with an -e event is no leaf: its comment goes inside, as the kernel prints it */
	bool leaf = !event && sink_next_returns(rec, ahead);

	task_marker(s, r);
	irq_marker(s, r, true);
	if (!event && rec->probe && rec->probe->no_return) {
		sink_write_line(s, line, sizeof(line), format_entry_only(line, sizeof(line), s, r));
	} else if (leaf) {
		sink_write_line(s, line, sizeof(line),
				format_return(line, sizeof(line), s, ahead, r));
	} else {
		sink_write_line(s, line, sizeof(line),
				sink_graph_format(line, sizeof(line), s, r, NULL));
	}
	s->written += leaf ? 2 : 1;
	if (leaf)
		irq_marker(s, r, false);
	if (event)
		event_comment(s, rec, false);
	/* the looked-ahead return's own fields (a return probe's) */
	if (leaf && ahead->r->type == HVT_REC_RETURN_EVENT)
		return_comment(s, ahead);
	return leaf ? 2 : 1;
}

static unsigned graph_entry(struct sink *s, const struct sink_rec *rec,
			    const struct sink_rec *ahead)
{
	return graph_call(s, rec, ahead, false);
}

static unsigned graph_event(struct sink *s, const struct sink_rec *rec,
			    const struct sink_rec *ahead)
{
	return graph_call(s, rec, ahead, true);
}

/* A return's closing line; a return probe's fields (@typed) as a comment after it. */
static void graph_return(struct sink *s, const struct sink_rec *rec, bool typed)
{
	char line[512];

	task_marker(s, rec->r);
	sink_write_line(s, line, sizeof(line), format_return(line, sizeof(line), s, rec, NULL));
	s->written++;
	irq_marker(s, rec->r, false);
	if (typed)
		return_comment(s, rec);
}

static void graph_ret(struct sink *s, const struct sink_rec *rec)
{
	graph_return(s, rec, false);
}

static void graph_ret_event(struct sink *s, const struct sink_rec *rec)
{
	graph_return(s, rec, true);
}

static void graph_end(struct sink *s)
{
	sink_trailer(s);
	sink_flush(s);
	free(s->priv);
	s->priv = NULL;
}

static const struct sink_ops graph_ops = {
    .begin = graph_begin,
    .entry = graph_entry,
    .event = graph_event,
    .event_alone = graph_event_alone,
    .ret = graph_ret,
    .ret_event = graph_ret_event,
    .lost = graph_lost,
    .end = graph_end,
    .lookahead = true,
};

int sink_graph_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus,
		    bool retval, bool tail)
{
	sink_setup(s, &graph_ops, out, syms, nr_cpus);
	s->graph_retval = retval;
	s->graph_tail = tail;
	s->priv = calloc(nr_cpus, sizeof(struct graph_cpu));
	return s->priv ? 0 : -1;
}

static int graph_make(struct sink *s, const struct sink_config *cfg)
{
	if (sink_graph_init(s, cfg->out, cfg->syms, cfg->nr_cpus, cfg->graph_retval,
			    cfg->graph_tail) < 0)
		return -ENOMEM;
	s->graph_retval_hex = cfg->graph_retval_hex;
	s->irq_lo = cfg->irq_lo;
	s->irq_hi = cfg->irq_hi;
	s->tracer = "function_graph";
	return 0;
}

const struct sink_format sink_format_graph = {"graph", graph_make, NULL, graph_make};

/* The live trace as JSON Lines (`run --format jsonl`): one JSON object per line, for scripts and CI
 * (jq, python). Every line has "type":
 *   begin  {"type":"begin","tracer":T,"cpus":N}, the first line;
 *   entry  a traced function was entered: ts (seconds, rounded to the microsecond as ftrace
 *          prints it, a JSON number), ts_ns, cpu, comm, pid, func, parent (the caller's function),
 *          and with function_graph depth;
 *   exit   it returned (function_graph, -r): the same context, func, parent when known, retval (RAX
 *          as "0x..", exact), duration_ns; a typed return probe has args instead of retval;
 *   event  an -e event: the context, func, parent, args {field: value}; one line per -e spec of
 *          the function, as the text output prints one line per event;
 *   lost   {"type":"lost","ts","ts_ns","cpu","lost":N}: N events of that CPU were lost there;
 *   end    {"type":"end","written":W,"lost":L,"guest_lost":G}, the last line; with
 *          "not_written":N (part of L) when the trace was cut short.
 * In args a number field (int, long, s32, u64, ...) is a JSON number, a string a JSON string of the
 * guest's bytes, a field the guest's memory could not give null, anything else (hex, symbols,
 * arrays) a string as the text output prints it. Every string a guest supplied (comm, symbol names,
 * string arguments, field names from its BTF) is JSON-escaped by escape_json: quotes, control bytes
 * and bytes >= 0x80 (valid UTF-8 or not) cannot break a line or the document. */
#include "host/sink/sink.h"
#include "host/sink/sink_format.h"
#include "host/sink/sink_line.h"
#include "host/trace/escape.h"

#include <inttypes.h>
#include <string.h>

/* Writes @str (at most @max bytes) as a JSON string, quotes included. */
static void json_string(struct sink *s, const char *str, size_t max)
{
	char buf[ESCAPE_JSON_SIZE(256)];
	size_t n = strnlen(str, max);

	sink_write(s, "\"", 1);
	/* in pieces, so any length fits */
	for (size_t off = 0; off < n; off += 256) {
		size_t k = escape_json(buf, sizeof(buf), str + off, n - off < 256 ? n - off : 256);

		sink_write(s, buf, k);
	}
	sink_write(s, "\"", 1);
}

/* Writes the name of the function holding @addr as a JSON string ("0x<addr>" if none). */
static void json_symbol(struct sink *s, uint64_t addr)
{
	const struct vmi_sym *sym = vmi_symtab_lookup(s->syms, addr);

	if (sym)
		json_string(s, sym->name, SIZE_MAX);
	else
		sink_printf(s, "\"0x%" PRIx64 "\"", addr);
}

/* {"type":@type,"ts":..,"ts_ns":..,"cpu":..,"comm":..,"pid":.. (left open) */
static void json_context(struct sink *s, const char *type, const struct hvt_record *r)
{
	/* ns2usecs() rounds to the nearest microsecond */
	uint64_t us = r->ts / 1000u + (r->ts % 1000u >= 500u);

	sink_printf(s,
		    "{\"type\":\"%s\",\"ts\":%" PRIu64 ".%06" PRIu64 ",\"ts_ns\":%" PRIu64
		    ",\"cpu\":%u,\"comm\":",
		    type, us / 1000000u, us % 1000000u, r->ts, r->cpu);
	json_string(s, r->comm, VMI_COMM_LEN);
	sink_printf(s, ",\"pid\":%" PRId32, r->pid);
}

/* Whether @v is a JSON integer: an optional '-', then digits without a leading zero. */
static bool json_integer(const char *v)
{
	if (*v == '-')
		v++;
	if (!*v || (v[0] == '0' && v[1]))
		return false;
	for (; *v; v++)
		if (*v < '0' || *v > '9')
			return false;
	return true;
}

/* "args":{...} for the fields of @spec alone (not its chain) in @payload. */
static void json_args(struct sink *s, const struct fe_spec *spec, const uint8_t *payload)
{
	sink_write(s, ",\"args\":{", 9);
	for (unsigned i = 0; i < spec->nr_fields && i < FE_MAX_FIELDS; i++) {
		const struct fe_field *f = &spec->fields[i];
		struct fe_spec one;
		char v[2048];
		size_t skip = strnlen(f->name, FE_NAME_LEN) + 1;
		int n;

		if (i)
			sink_write(s, ",", 1);
		json_string(s, f->name, FE_NAME_LEN);
		sink_write(s, ":", 1);
		one.nr_fields = 1;
		one.fprobe_style = spec->fprobe_style;
		one.fields[0] = *f;
		if (payload[0]) {
			sink_write(s, "null", 4); /* (fault): the guest's memory did not give it */
		} else if (f->kind == FE_STRING || f->kind == FE_CHARS) {
			json_string(s, (const char *)payload + 1,
				    f->kind == FE_STRING ? FE_MAX_STRING : f->count);
		} else {
			/* fe_format's "name=value", the value alone */
			n = fe_format(v, sizeof(v), &one, payload, s->syms);
			if (n < 0 || (size_t)n < skip)
				sink_write(s, "null", 4);
			else if ((f->kind == FE_SIGNED || f->kind == FE_UNSIGNED) && !f->count &&
				 json_integer(v + skip))
				sink_write(s, v + skip, (size_t)n - skip);
			else
				json_string(s, v + skip, sizeof(v));
		}
		payload += fe_event_size(&one);
	}
	sink_write(s, "}", 1);
}

static void json_begin(struct sink *s)
{
	sink_printf(s, "{\"type\":\"begin\",\"tracer\":\"%s\",\"cpus\":%u}\n",
		    s->tracer ? s->tracer : "function", s->nr_cpus);
}

/* @str (at most @max bytes) as a JSON string into @l, quotes included (a name longer than a line
 * holds is cut: the line's length says so and the caller writes it the slow way). */
static void put_json_string(struct line *l, const char *str, size_t max)
{
	size_t n = strnlen(str, max);

	put_mem(l, "\"", 1);
	if (l->n < l->len && l->len - l->n >= ESCAPE_JSON_SIZE(n))
		l->n += escape_json(l->buf + l->n, l->len - l->n, str, n);
	else
		l->n = l->len; /* does not fit whole: the line is the slow way's */
	put_mem(l, "\"", 1);
}

/* The name of the function holding @addr as a JSON string into @l (the sink's symbol cache),
 * "0x<addr>" if none. */
static void put_json_symbol(struct sink *s, struct line *l, uint64_t addr)
{
	const struct vmi_sym *sym = sink_symbol(s, addr);
	static const char hex[] = "0123456789abcdef";
	char d[20];
	size_t k = 0;

	if (sym) {
		put_json_string(l, sym->name, SIZE_MAX);
		return;
	}
	do {
		d[sizeof(d) - 1 - k++] = hex[addr & 15];
		addr >>= 4;
	} while (addr);
	put_mem(l, "\"0x", 3);
	put_mem(l, d + sizeof(d) - k, k);
	put_mem(l, "\"", 1);
}

/* A string literal into a line. */
#define PUT_LIT(l, lit) put_mem(l, lit, sizeof(lit) - 1)

/* An entry, the one line built in a buffer without printf (every event of a function trace
 * comes through here); one that does not fit is written piece by piece instead. */
static void json_entry(struct sink *s, const struct hvt_record *r)
{
	char buf[1024];
	struct line l = {buf, sizeof(buf), 0};
	uint64_t us = r->ts / 1000u + (r->ts % 1000u >= 500u); /* as ns2usecs() rounds */

	PUT_LIT(&l, "{\"type\":\"entry\",\"ts\":");
	put_dec(&l, false, us / 1000000u, 1, 0);
	PUT_LIT(&l, ".");
	put_dec(&l, false, us % 1000000u, 6, 0);
	PUT_LIT(&l, ",\"ts_ns\":");
	put_dec(&l, false, r->ts, 1, 0);
	PUT_LIT(&l, ",\"cpu\":");
	put_dec(&l, false, r->cpu, 1, 0);
	PUT_LIT(&l, ",\"comm\":");
	put_json_string(&l, r->comm, VMI_COMM_LEN);
	PUT_LIT(&l, ",\"pid\":");
	put_dec(&l, r->pid < 0, r->pid < 0 ? -(uint64_t)(int64_t)r->pid : (uint64_t)r->pid, 1, 0);
	PUT_LIT(&l, ",\"func\":");
	put_json_symbol(s, &l, r->ip);
	PUT_LIT(&l, ",\"parent\":");
	put_json_symbol(s, &l, r->parent);
	if (sink_graph_tracer(s)) {
		PUT_LIT(&l, ",\"depth\":");
		put_dec(&l, false, r->depth, 1, 0);
	}
	PUT_LIT(&l, "}\n");
	if (l.n < l.len) {
		sink_write(s, buf, l.n);
		return;
	}
	json_context(s, "entry", r);
	sink_write(s, ",\"func\":", 8);
	json_symbol(s, r->ip);
	sink_write(s, ",\"parent\":", 10);
	json_symbol(s, r->parent);
	if (sink_graph_tracer(s))
		sink_printf(s, ",\"depth\":%u", r->depth);
	sink_write(s, "}\n", 2);
}

/* One line per -e event of the function of @rec, each from its part of the payload. */
static void json_events(struct sink *s, const struct sink_rec *rec)
{
	const struct hvt_record *r = rec->r;
	const uint8_t *payload = rec->payload;
	const struct fe_spec *e = rec->spec;

	for (unsigned k = 0; e && k < FE_MAX_CHAIN; e = e->next, k++) {
		json_context(s, "event", r);
		sink_write(s, ",\"func\":", 8);
		json_string(s, e->func, sizeof(e->func));
		if (e->offset) /* an instruction inside it: no caller there */
			sink_printf(s, ",\"offset\":%u", (unsigned)e->offset);
		else {
			sink_write(s, ",\"parent\":", 10);
			json_symbol(s, r->parent);
		}
		if (sink_graph_tracer(s))
			sink_printf(s, ",\"depth\":%u", r->depth);
		json_args(s, e, payload);
		sink_write(s, "}\n", 2);
		payload += fe_event_size(e);
	}
}

/* An exit: with @retval RAX as "retval", else the return probe's typed fields as "args". */
static void json_exit(struct sink *s, const struct sink_rec *rec, bool retval)
{
	const struct hvt_record *r = rec->r;
	const struct fe_spec *spec = rec->payload ? rec->spec : NULL;

	json_context(s, "exit", r);
	sink_write(s, ",\"func\":", 8);
	json_symbol(s, r->ip);
	if (r->parent) {
		sink_write(s, ",\"parent\":", 10);
		json_symbol(s, r->parent);
	}
	if (sink_graph_tracer(s))
		sink_printf(s, ",\"depth\":%u", r->depth);
	if (retval)
		sink_printf(s, ",\"retval\":\"0x%" PRIx64 "\"", r->value);
	else if (spec)
		json_args(s, spec, rec->payload);
	sink_printf(s, ",\"duration_ns\":%" PRIu64 "}\n", r->duration);
}

static void json_lost(struct sink *s, const struct hvt_record *r)
{
	uint64_t us = r->ts / 1000u + (r->ts % 1000u >= 500u);

	sink_printf(s,
		    "{\"type\":\"lost\",\"ts\":%" PRIu64 ".%06" PRIu64 ",\"ts_ns\":%" PRIu64
		    ",\"cpu\":%u,\"lost\":%" PRIu64 "}\n",
		    us / 1000000u, us % 1000000u, r->ts, r->cpu, r->value);
}

static unsigned json_on_entry(struct sink *s, const struct sink_rec *rec,
			      const struct sink_rec *next)
{
	(void)next;
	json_entry(s, rec->r);
	s->written++;
	return 1;
}

/* an entry's -e events, or the entry itself when their fields are not there */
static unsigned json_on_event(struct sink *s, const struct sink_rec *rec,
			      const struct sink_rec *next)
{
	(void)next;
	if (rec->spec && rec->payload)
		json_events(s, rec);
	else
		json_entry(s, rec->r);
	s->written++;
	return 1;
}

/* its event lines are all a call not traced shows */
static void json_on_event_alone(struct sink *s, const struct sink_rec *rec)
{
	json_on_event(s, rec, NULL);
}

static void json_on_ret(struct sink *s, const struct sink_rec *rec)
{
	json_exit(s, rec, true);
	s->written++;
}

static void json_on_ret_event(struct sink *s, const struct sink_rec *rec)
{
	json_exit(s, rec, false);
	s->written++;
}

static void json_end(struct sink *s)
{
	sink_printf(s, "{\"type\":\"end\",\"written\":%llu,\"lost\":%llu,\"guest_lost\":%llu",
		    s->written, s->lost, s->guest_lost);
	if (s->not_written) /* the trace was cut short: part of "lost" */
		sink_printf(s, ",\"not_written\":%llu", s->not_written);
	sink_write(s, "}\n", 2);
	sink_flush(s);
}

static const struct sink_ops json_ops = {
    .begin = json_begin,
    .entry = json_on_entry,
    .event = json_on_event,
    .event_alone = json_on_event_alone,
    .ret = json_on_ret,
    .ret_event = json_on_ret_event,
    .lost = json_lost,
    .end = json_end,
};

void sink_json_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus)
{
	sink_setup(s, &json_ops, out, syms, nr_cpus);
}

static int json_make(struct sink *s, const struct sink_config *cfg)
{
	sink_json_init(s, cfg->out, cfg->syms, cfg->nr_cpus);
	s->tracer = cfg->tracer;
	return 0;
}

const struct sink_format sink_format_jsonl = {"jsonl", json_make, NULL, json_make};

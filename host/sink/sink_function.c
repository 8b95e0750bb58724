#include "host/sink/sink.h"
#include "host/sink/sink_line.h"
#include "host/sink/sink_format.h"
#include "host/trace/escape.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

void sink_symbol_name(char *buf, size_t len, uint64_t addr, const struct vmi_symtab *syms)
{
	const struct vmi_sym *s = vmi_symtab_lookup(syms, addr);

	if (s)
		escape_str(buf, len, s->name, SIZE_MAX);
	else
		snprintf(buf, len, "0x%" PRIx64, addr);
}

void sink_write_line(struct sink *s, char *buf, size_t size, int n)
{
	size_t len = n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;

	if (len && buf[len - 1] != '\n')
		buf[len - 1] = '\n';
	sink_write(s, buf, len);
}

void sink_trailer(struct sink *s)
{
	sink_printf(s, "# entries-written: %llu   lost: %llu", s->written, s->lost);
	if (s->guest_lost)
		sink_printf(s, "   guest-reported-lost: %llu", s->guest_lost);
	if (s->not_written)
		sink_printf(s, "   not-written: %llu", s->not_written);
	sink_write(s, "\n", 1);
}

/* The context columns (see sink.h) into @l. */
static void put_context(struct line *l, const struct hvt_record *r)
{
	char comm[ESCAPE_SIZE(VMI_COMM_LEN)];
	/* ns2usecs() rounds to the nearest microsecond */
	uint64_t us = r->ts / 1000u + (r->ts % 1000u >= 500u);
	size_t k = escape_str(comm, sizeof(comm), r->comm, VMI_COMM_LEN);

	if (k < 16)
		put_spaces(l, 16 - k);
	put_mem(l, comm, k);
	put_mem(l, "-", 1);
	put_dec(l, r->pid < 0, r->pid < 0 ? -(uint64_t)(int64_t)r->pid : (uint64_t)r->pid, 1, -7);
	put_mem(l, " [", 2);
	put_dec(l, false, r->cpu, 3, 0);
	put_mem(l, "]  ", 3);
	put_dec(l, false, us / 1000000u, 1, 5);
	put_mem(l, ".", 1);
	put_dec(l, false, us % 1000000u, 6, 0);
	put_mem(l, ": ", 2);
}

int sink_context(char *buf, size_t len, const struct hvt_record *r)
{
	struct line l = {buf, len, 0};

	put_context(&l, r);
	put_end(&l);
	return (int)l.n;
}

/* The length of @name when escape_str would copy it as it is (printable ASCII, no backslash, at
 * most 127 bytes: what a 128-byte name buffer holds), else 0. */
static uint16_t plain_len(const char *name)
{
	size_t n = 0;

	for (; name[n] && n < 128; n++)
		if ((unsigned char)name[n] < 0x20 || (unsigned char)name[n] >= 0x7f || name[n] == '\\')
			return 0;
	return n < 128 ? (uint16_t)n : 0;
}

/* @s's cache slot of @addr, filled from s->syms when it held another address. */
static const struct sink_sym_slot *symbol_slot(struct sink *s, uint64_t addr)
{
	struct sink_sym_slot *slot =
	    &s->sym_cache[(addr * 0x9e3779b97f4a7c15ull) >> (64 - SINK_SYM_CACHE_BITS)];
	const struct vmi_sym *sym;

	if (slot->idx && slot->addr == addr)
		return slot;
	sym = s->syms ? vmi_symtab_lookup(s->syms, addr) : NULL;
	if (sym && (size_t)(sym - s->syms->syms) >= UINT32_MAX - 1)
		sym = NULL; /* no table is that large: never reached */
	slot->addr = addr;
	slot->idx = sym ? (uint32_t)(sym - s->syms->syms) + 1 : UINT32_MAX;
	slot->plain_len = sym ? plain_len(sym->name) : 0;
	return slot;
}

const struct vmi_sym *sink_symbol(struct sink *s, uint64_t addr)
{
	const struct sink_sym_slot *slot = symbol_slot(s, addr);

	return slot->idx == UINT32_MAX ? NULL : &s->syms->syms[slot->idx - 1];
}

/* The symbol at @addr (sink_symbol_name; through @cache's slots when it is given) into @l. */
static void put_symbol(struct line *l, uint64_t addr, const struct vmi_symtab *syms,
		       struct sink *cache)
{
	char name[128];
	const struct sink_sym_slot *slot = cache ? symbol_slot(cache, addr) : NULL;
	const struct vmi_sym *s;
	size_t k;

	if (slot && slot->plain_len) {
		put_mem(l, cache->syms->syms[slot->idx - 1].name, slot->plain_len);
		return;
	}
	s = slot ? (slot->idx == UINT32_MAX ? NULL : &cache->syms->syms[slot->idx - 1])
		 : vmi_symtab_lookup(syms, addr);
	k = s ? escape_str(name, sizeof(name), s->name, SIZE_MAX)
	      : (size_t)snprintf(name, sizeof(name), "0x%" PRIx64, addr);
	put_mem(l, name, k < sizeof(name) ? k : sizeof(name) - 1);
}

int sink_lost_format(char *buf, size_t len, const struct hvt_record *r)
{
	return snprintf(buf, len, "CPU:%u [LOST %" PRIu64 " EVENTS]\n", r->cpu, r->value);
}

/* sink_function_format, the symbols through @cache's sink_symbol when it is given. */
static int function_line(char *buf, size_t len, const struct hvt_record *r,
			 const struct vmi_symtab *syms, struct sink *cache)
{
	struct line l = {buf, len, 0};

	/* trace_fn_trace(): "func <-parent" */
	put_context(&l, r);
	put_symbol(&l, r->ip, syms, cache);
	put_mem(&l, " <-", 3);
	put_symbol(&l, r->parent, syms, cache);
	put_mem(&l, "\n", 1);
	put_end(&l);
	return (int)l.n;
}

int sink_function_format(char *buf, size_t len, const struct hvt_record *r,
			 const struct vmi_symtab *syms)
{
	return function_line(buf, len, r, syms, NULL);
}

int sink_event_format(char *buf, size_t len, const struct hvt_record *r, const struct fe_spec *spec,
		      const uint8_t *payload, const struct vmi_symtab *syms)
{
	char parent[128], fields[2048], ctx[128], label[160];

	fe_format(fields, sizeof(fields), spec, payload, syms);
	sink_context(ctx, sizeof(ctx), r);
	fe_label(spec, label, sizeof(label));
	if (spec->offset) /* an instruction inside the function: no caller there */
		return snprintf(buf, len, "%s%s(%s)\n", ctx, label, fields);
	sink_symbol_name(parent, sizeof(parent), r->parent, syms);
	return snprintf(buf, len, "%s%s->%s(%s)\n", ctx, parent, label, fields);
}

int sink_return_body(char *buf, size_t len, const struct hvt_record *r, const struct fe_spec *spec,
		     const uint8_t *payload, const struct vmi_symtab *syms)
{
	char func[128], caller[160], fields[2048];
	const struct vmi_sym *c = vmi_symtab_lookup(syms, r->parent);
	size_t n;

	sink_symbol_name(func, sizeof(func), r->ip, syms);
	if (c) {
		n = escape_str(caller, sizeof(caller), c->name, SIZE_MAX);
		snprintf(caller + n, sizeof(caller) - n, "+0x%" PRIx64 "/0x%" PRIx64,
			 r->parent - c->addr, c->size);
	} else {
		snprintf(caller, sizeof(caller), "0x%" PRIx64, r->parent);
	}
	if (spec && payload)
		fe_format(fields, sizeof(fields), spec, payload, syms);
	else
		snprintf(fields, sizeof(fields), "ret=0x%" PRIx64, r->value);
	/* a void return has no value */
	return snprintf(buf, len, "r_%s: (%s <- %s)%s%s", func, caller, func, *fields ? " " : "",
			fields);
}

int sink_return_format(char *buf, size_t len, const struct hvt_record *r, const struct fe_spec *spec,
		       const uint8_t *payload, const struct vmi_symtab *syms)
{
	char body[2560], ctx[128];

	sink_return_body(body, sizeof(body), r, spec, payload, syms);
	sink_context(ctx, sizeof(ctx), r);
	return snprintf(buf, len, "%s%s duration=%" PRIu64 ".%03" PRIu64 "us\n", ctx, body,
			r->duration / 1000, r->duration % 1000);
}

static void function_begin(struct sink *s)
{
	/* s_show() names the tracer; print_func_help_header() (irq-info off: we cannot know the
	 * irqs-off/need-resched flags) prints the counts (print_event_info) and the legend. A live
	 * trace does not know its counts yet: they go to the trailer. */
	sink_printf(s, "# tracer: %s\n#\n", s->tracer ? s->tracer : "function");
	if (s->counts_known)
		sink_printf(s, "# entries-in-buffer/entries-written: %llu/%llu   #P:%u\n#\n",
			    s->hdr_entries, s->hdr_written, s->nr_cpus);
	sink_printf(s, "#           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n"
		       "#              | |         |         |         |\n");
}

/* One line per -e event of the function of @rec, each from its part of the payload. */
static void function_events(struct sink *s, const struct sink_rec *rec)
{
	const uint8_t *payload = rec->payload;
	char ev[4096];
	unsigned k = 0;

	for (const struct fe_spec *e = rec->spec; e && k < FE_MAX_CHAIN; e = e->next, k++) {
		int n = sink_event_format(ev, sizeof(ev), rec->r, e, payload, s->syms);

		sink_write_line(s, ev, sizeof(ev), n);
		payload += fe_event_size(e);
	}
}

static void function_lost(struct sink *s, const struct hvt_record *r)
{
	char line[512];

	/* print_trace_line(): before the next event of that CPU */
	sink_write_line(s, line, sizeof(line), sink_lost_format(line, sizeof(line), r));
}

/* An entry, with its -e events' lines instead when it carries their fields (an event without
 * them: as its entry). */
static unsigned function_entry(struct sink *s, const struct sink_rec *rec,
			       const struct sink_rec *next)
{
	char line[512];

	(void)next;
	if (rec->spec && rec->payload) {
		function_events(s, rec);
	} else {
		int n = function_line(line, sizeof(line), rec->r, s->syms, s);

		sink_write_line(s, line, sizeof(line), n);
	}
	s->written++;
	return 1;
}

/* a call the tracer did not trace: its event lines alone */
static void function_event_alone(struct sink *s, const struct sink_rec *rec)
{
	if (!rec->spec || !rec->payload)
		return;
	function_events(s, rec);
	s->written++;
}

static void function_ret(struct sink *s, const struct sink_rec *rec)
{
	char rl[4096];
	int n = sink_return_format(rl, sizeof(rl), rec->r, rec->spec, rec->payload, s->syms);

	sink_write_line(s, rl, sizeof(rl), n);
	s->written++;
}

static void function_end(struct sink *s)
{
	/* the kernel's count line (print_event_info), where a live trace knows the numbers */
	if (!s->counts_known)
		sink_printf(s, "# entries-in-buffer/entries-written: %llu/%llu   #P:%u\n", s->written,
			    s->written + s->lost, s->nr_cpus);
	sink_trailer(s);
	sink_flush(s);
}

static const struct sink_ops function_ops = {
    .begin = function_begin,
    .entry = function_entry,
    .event_alone = function_event_alone,
    .ret = function_ret,
    .lost = function_lost,
    .end = function_end,
};

void sink_function_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus)
{
	sink_setup(s, &function_ops, out, syms, nr_cpus);
}

static int function_make(struct sink *s, const struct sink_config *cfg)
{
	sink_function_init(s, cfg->out, cfg->syms, cfg->nr_cpus);
	s->tracer = cfg->tracer;
	return 0;
}

const struct sink_format sink_format_text = {"text", function_make, NULL, function_make};

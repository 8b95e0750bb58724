/* trace.dat's headers and the file's assembly at the end of the trace: the page and event header
 * descriptions, the event formats (ftrace's, and a kprobe-like one per -e and -r spec), the guest's
 * symbols as kallsyms, the cmdlines, then the per-vCPU pages sink_tracedat.c kept in temporary
 * files. Not the hot path. */
#include "host/sink/tracedat_sink.h"
#include "host/tracedat/tracedat_write.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char header_page[] = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
				  "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
				  "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
				  "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";

static const char header_event[] = "# compressed entry header\n"
				   "\ttype_len    :    5 bits\n"
				   "\ttime_delta  :   27 bits\n"
				   "\tarray       :   32 bits\n"
				   "\n"
				   "\tpadding     : type == 29\n"
				   "\ttime_extend : type == 30\n"
				   "\ttime_stamp : type == 31\n"
				   "\tdata max type_len  == 28\n";

#define COMMON_FIELDS                                                                              \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"                     \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"                     \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"             \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"

static const char fmt_function[] =
    "name: function\nID: 1\nformat:\n" COMMON_FIELDS
    "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long parent_ip;\toffset:16;\tsize:8;\tsigned:0;\n\n"
    "print fmt: \" %ps <-- %ps\", (void *)REC->ip, (void *)REC->parent_ip\n";

static const char fmt_funcgraph_entry[] =
    "name: funcgraph_entry\nID: 11\nformat:\n" COMMON_FIELDS
    "\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:int depth;\toffset:16;\tsize:4;\tsigned:1;\n\n"
    "print fmt: \"--> %ps (%d)\", (void *)REC->func, REC->depth\n";

static const char fmt_funcgraph_exit[] =
    "name: funcgraph_exit\nID: 10\nformat:\n" COMMON_FIELDS
    "\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long retval;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:int depth;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:unsigned int overrun;\toffset:28;\tsize:4;\tsigned:0;\n"
    "\tfield:unsigned long long calltime;\toffset:32;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long long rettime;\toffset:40;\tsize:8;\tsigned:0;\n\n"
    "print fmt: \"<-- %ps (%d) (start: %llx  end: %llx) over: %d retval: %lx\", "
    "(void *)REC->func, REC->depth, REC->calltime, REC->rettime, REC->depth, REC->retval\n";

/* A growing text (headers only; not the hot path). */
struct td_text {
	char *buf;
	size_t len, cap;
	bool oom;
};

static void text_add(struct td_text *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(struct td_text *x, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (x->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(x->buf ? x->buf + x->len : NULL, x->buf ? x->cap - x->len : 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (x->len + (size_t)n + 1 > x->cap) {
		size_t cap = (x->len + (size_t)n + 1) * 2;
		char *b = realloc(x->buf, cap);

		if (!b) {
			x->oom = true;
			return;
		}
		x->buf = b;
		x->cap = cap;
		va_start(ap, fmt);
		vsnprintf(x->buf + x->len, x->cap - x->len, fmt, ap);
		va_end(ap);
	}
	x->len += (size_t)n;
}

/* A kprobe-like field type and its print conversion for field @f. */
static void field_type(const struct fe_field *f, const char **type, const char **conv)
{
	static const char *const s[] = {"s8", "s16", "s32", "s64"}, *const u[] = {"u8", "u16",
										  "u32", "u64"};
	unsigned lg = f->size == 1 ? 0 : f->size == 2 ? 1 : f->size == 4 ? 2 : 3;

	switch (f->kind) {
	case FE_SIGNED:
		*type = s[lg];
		*conv = lg == 3 ? "%Ld" : "%d";
		break;
	case FE_UNSIGNED:
		*type = u[lg];
		*conv = lg == 3 ? "%Lu" : "%u";
		break;
	case FE_HEX:
		*type = u[lg];
		*conv = lg == 3 ? "0x%Lx" : "0x%x";
		break;
	case FE_SYMBOL:
		*type = "u64";
		*conv = "%pS";
		break;
	default:
		*type = "char";
		*conv = "%s";
		break;
	}
}

/* @name as a C identifier, the only field name a format (and libtraceevent) takes: an -e field
 * given as a member chain ("file->f_path.dentry") gets each run of other characters as one '_'
 * ("file_f_path_dentry"), as the kernel names a probe's BTF argument. */
static const char *field_ident(const char *name, char *out, size_t len)
{
	size_t n = 0;

	for (const char *c = name; *c && n + 1 < len; c++) {
		bool word = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			    (*c >= '0' && *c <= '9') || *c == '_';

		if (word)
			out[n++] = *c;
		else if (n && out[n - 1] != '_')
			out[n++] = '_';
	}
	while (n > 1 && out[n - 1] == '_')
		n--;
	out[n] = '\0';
	return out;
}

/* The fields after the probe's own (at @offset) and the print fmt's tail: the kernel's kprobe
 * layout (packed, strings as __data_loc char[] after the fixed part), then __hvt_fault. */
static void spec_format(struct td_text *x, const struct fe_spec *spec, unsigned offset,
			const char *fmt_head, const char *args_head)
{
	struct td_text pf = {0}, pa = {0};

	for (unsigned i = 0; i < spec->nr_fields; i++) {
		const struct fe_field *f = &spec->fields[i];
		const char *type, *conv;
		char ident[FE_NAME_LEN];
		const char *name = field_ident(f->name, ident, sizeof(ident));
		unsigned size;

		field_type(f, &type, &conv);
		if (f->kind == FE_STRING) {
			text_add(x,
				 "\tfield:__data_loc char[] %s;\toffset:%u;\tsize:4;\tsigned:1;\n",
				 name, offset);
			text_add(&pf, " %s=\\\"%%s\\\"", name);
			text_add(&pa, ", __get_str(%s)", name);
			offset += 4;
			continue;
		}
		if (f->kind == FE_CHARS) {
			text_add(x, "\tfield:char %s[%u];\toffset:%u;\tsize:%u;\tsigned:1;\n", name,
				 f->count, offset, f->count);
			text_add(&pf, " %s=\\\"%%s\\\"", name);
			text_add(&pa, ", REC->%s", name);
			offset += f->count;
			continue;
		}
		size = f->kind == FE_SYMBOL ? 8 : f->size;
		if (f->count) {
			/* "u16 arr[4]": the kernel writes "arr[]", which libtraceevent (1.7) prints
			 * as zeros */
			text_add(x, "\tfield:%s %s[%u];\toffset:%u;\tsize:%u;\tsigned:%d;\n", type,
				 name, f->count, offset, size * f->count, f->kind == FE_SIGNED);
			text_add(&pf, " %s={", name);
			for (unsigned k = 0; k < f->count; k++) {
				text_add(&pf, "%s%s", k ? "," : "", conv);
				text_add(&pa, ", REC->%s[%u]", name, k);
			}
			text_add(&pf, "}");
			offset += size * f->count;
			continue;
		}
		text_add(x, "\tfield:%s %s;\toffset:%u;\tsize:%u;\tsigned:%d;\n", type, name,
			 offset, size, f->kind == FE_SIGNED);
		text_add(&pf, " %s=%s", name, conv);
		text_add(&pa, ", REC->%s", name);
		offset += size;
	}
	text_add(x,
		 "\tfield:u32 __hvt_fault;\toffset:%u;\tsize:4;\tsigned:0;\n"
		 "\tfield:unsigned long __hvt_parent;\toffset:%u;\tsize:8;\tsigned:0;\n\n",
		 offset, offset + 4);
	text_add(x, "print fmt: \"%s%s\", %s%s\n", fmt_head, pf.buf ? pf.buf : "", args_head,
		 pa.buf ? pa.buf : "");
	x->oom |= pf.oom || pa.oom;
	free(pf.buf);
	free(pa.buf);
}

/* The name of -e event @i: p_<func>_<n> (kprobes; p_<func>_<offset>_<n> inside a function),
 * <func>__entry_<n> (fprobes), n its place among the events of the same place. */
static void event_name(char *buf, size_t len, const struct td_sink *t, size_t i)
{
	const struct fe_spec *e = &t->events[i];
	unsigned n = 0;

	for (size_t k = 0; k < i; k++)
		n += t->events[k].offset == e->offset && !strcmp(t->events[k].func, e->func);
	if (e->offset)
		snprintf(buf, len, "p_%s_%u_%u", e->func, (unsigned)e->offset, n);
	else if (e->fprobe_style)
		snprintf(buf, len, "%s__entry_%u", e->func, n);
	else
		snprintf(buf, len, "p_%s_%u", e->func, n);
}

static void event_format(struct td_text *x, const struct td_sink *t, size_t i)
{
	char name[160];

	event_name(name, sizeof(name), t, i);
	text_add(x, "name: %s\nID: %u\nformat:\n" COMMON_FIELDS, name, TD_ID_DYNAMIC + (unsigned)i);
	text_add(x, "\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n");
	spec_format(x, &t->events[i], 16, "(%lx)", "REC->__probe_ip");
}

static void rprobe_format(struct td_text *x, const struct td_sink *t, size_t i)
{
	const struct fe_spec *r = &t->rprobes[i];

	text_add(x, "name: r_%s_0\nID: %u\nformat:\n" COMMON_FIELDS, r->func,
		 TD_ID_DYNAMIC + (unsigned)(t->nr_events + i));
	text_add(x, "\tfield:unsigned long __probe_func;\toffset:8;\tsize:8;\tsigned:0;\n"
		    "\tfield:unsigned long __probe_ret_ip;\toffset:16;\tsize:8;\tsigned:0;\n"
		    "\tfield:u64 __hvt_duration;\toffset:24;\tsize:8;\tsigned:0;\n");
	if (r->nr_fields) {
		spec_format(x, r, 32, "(%lx <- %lx)", "REC->__probe_func, REC->__probe_ret_ip");
		return;
	}
	/* a bare -r: RAX as the kernel's `r:func $retval` names it */
	text_add(x, "\tfield:u64 arg1;\toffset:32;\tsize:8;\tsigned:0;\n"
		    "\tfield:u32 __hvt_fault;\toffset:40;\tsize:4;\tsigned:0;\n"
		    "\tfield:unsigned long __hvt_parent;\toffset:44;\tsize:8;\tsigned:0;\n\n"
		    "print fmt: \"(%%lx <- %%lx) arg1=0x%%Lx\", REC->__probe_func, "
		    "REC->__probe_ret_ip, REC->arg1\n");
}

/* Whether @name can stand in a kallsyms line (guest-supplied: no blanks, nothing unprintable). */
static bool plain_name(const char *name)
{
	if (!*name)
		return false;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		if (*c <= ' ' || *c >= 127)
			return false;
	return true;
}

/* record --host: TRACEID, and TIME_SHIFT (trace-cmd's layout: the host file's trace id, flags, the
 * vCPU count, per vCPU one sample {time, offset, scaling}, then per vCPU its scaling's fraction
 * bits): guest time + t0 is the host's mono clock, the same rate (scaling 1, no fraction bits). */
static void peer_options(struct td_out *o, const struct sink *s)
{
	const struct td_sink *t = s->priv;

	td_out_option_u64(o, TD_OPT_TRACEID, t->trace_id);
	td_out_u16(o, TD_OPT_TIME_SHIFT);
	td_out_u32(o, 8 + 4 + 4 + s->nr_cpus * (4 + 3 * 8) + s->nr_cpus * 8);
	td_out_u64(o, t->host_trace_id);
	td_out_u32(o, 0); /* flags: no interpolation (one sample) */
	td_out_u32(o, s->nr_cpus);
	for (unsigned c = 0; c < s->nr_cpus; c++) {
		td_out_u32(o, 1);
		td_out_u64(o, 0);	 /* time */
		td_out_u64(o, t->t0_ns); /* offset */
		td_out_u64(o, 1);	 /* scaling */
	}
	for (unsigned c = 0; c < s->nr_cpus; c++)
		td_out_u64(o, 0); /* fraction bits */
}

static void write_headers(struct td_out *o, const struct sink *s, struct td_text *events,
			  const struct td_text *syms, const struct td_text *cmdlines)
{
	const struct td_sink *t = s->priv;
	size_t nk = t->nr_rprobes, nf = 0;

	td_out_begin(o, TD_PAGE_SIZE, header_page, strlen(header_page), header_event,
		     strlen(header_event));
	/* ftrace events */
	td_out_u32(o, 3);
	td_out_section(o, fmt_function, strlen(fmt_function), true);
	td_out_section(o, fmt_funcgraph_entry, strlen(fmt_funcgraph_entry), true);
	td_out_section(o, fmt_funcgraph_exit, strlen(fmt_funcgraph_exit), true);
	/* event systems: kprobes (and fprobes) */
	for (size_t i = 0; i < t->nr_events; i++)
		t->events[i].fprobe_style ? nf++ : nk++;
	td_out_u32(o, (nk > 0) + (nf > 0));
	for (int fp = 0; fp < 2; fp++) {
		if (!(fp ? nf : nk))
			continue;
		td_out_bytes(o, fp ? "fprobes" : "kprobes", 8);
		td_out_u32(o, (uint32_t)(fp ? nf : nk));
		for (size_t i = 0; i < t->nr_events + t->nr_rprobes; i++) {
			struct td_text one = {0};

			if (i < t->nr_events) {
				if (t->events[i].fprobe_style != !!fp)
					continue;
				event_format(&one, t, i);
			} else if (!fp) {
				rprobe_format(&one, t, i - t->nr_events);
			} else {
				continue;
			}
			events->oom |= one.oom;
			td_out_section(o, one.buf ? one.buf : "", one.len, true);
			free(one.buf);
		}
	}
	td_out_section(o, syms->buf ? syms->buf : "", syms->len, false); /* kallsyms */
	td_out_u32(o, 0);						 /* printk formats */
	td_out_section(o, cmdlines->buf ? cmdlines->buf : "", cmdlines->len, true);
	td_out_options_begin(o, s->nr_cpus);
	if (t->peer)
		peer_options(o, s);
}

/* One "pid comm" line; guest bytes that could break the line become '?'. */
static void add_cmdline(struct td_text *x, int pid, const char *name)
{
	char comm[VMI_COMM_LEN + 1];

	memcpy(comm, name, VMI_COMM_LEN);
	comm[VMI_COMM_LEN] = 0;
	for (char *c = comm; *c; c++)
		if ((unsigned char)*c < ' ' || (unsigned char)*c >= 127)
			*c = '?';
	text_add(x, "%d %s\n", pid, *comm ? comm : "<...>");
}

/* td_cpu_pages_fn over the sink's per-vCPU temporary files */
static FILE *cpu_pages(const void *ctx, unsigned cpu, uint64_t *pages)
{
	const struct td_sink *t = ctx;

	*pages = t->cpus[cpu].pages;
	return t->cpus[cpu].tmp;
}

void tracedat_headers_write(struct sink *s)
{
	struct td_sink *t = s->priv;
	struct td_text events = {0}, syms = {0}, cmdlines = {0};
	struct td_out o = {.f = s->out};

	for (size_t i = 0; s->syms && i < s->syms->nr; i++) {
		const struct vmi_sym *y = &s->syms->syms[i];

		if (!plain_name(y->name))
			continue;
		text_add(&syms, "%016" PRIx64 " t %s\n", y->addr, y->name);
		/* where the function ends, when the next symbol does not start there: readers
		 * take a symbol's size from the next one */
		if (y->size &&
		    (i + 1 == s->syms->nr || s->syms->syms[i + 1].addr > y->addr + y->size))
			text_add(&syms, "%016" PRIx64 " t %s.end\n", y->addr + y->size, y->name);
	}
	for (unsigned i = 0; i < TD_COMMS; i++)
		if (t->comms[i].used)
			add_cmdline(&cmdlines, t->comms[i].pid, t->comms[i].comm);
	/* pid 0 reads as "<idle>" everywhere: each vCPU's idle task name is kept at -(1 + cpu) */
	for (unsigned c = 0; c < s->nr_cpus; c++)
		if (t->cpus[c].idle_seen)
			add_cmdline(&cmdlines, -1 - (int)c, t->cpus[c].idle_comm);
	if (syms.oom || cmdlines.oom) {
		s->err = s->err ? s->err : ENOMEM;
		goto out;
	}
	o.err = s->err;
	write_headers(&o, s, &events, &syms, &cmdlines);
	if (events.oom && !o.err)
		o.err = ENOMEM;
	/* the per-CPU offsets and sizes, then the pages, each CPU's data page-aligned */
	td_out_flyrecord(&o, s->nr_cpus, TD_PAGE_SIZE, cpu_pages, t);
	s->err = o.err;
	sink_flush(s);
out:
	free(events.buf);
	free(syms.buf);
	free(cmdlines.buf);
}

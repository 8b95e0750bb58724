#include "host/out/sink.h"

#include <inttypes.h>
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
	if (ns > 1000000000ull)
		return '$';
	if (ns > 100000000ull)
		return '@';
	if (ns > 10000000ull)
		return '*';
	if (ns > 1000000ull)
		return '#';
	if (ns > 100000ull)
		return '!';
	if (ns > 10000ull)
		return '+';
	return ' ';
}

int sink_graph_duration(char *buf, size_t len, uint64_t ns)
{
	char us[24], frac[4];
	int n, w;

	n = snprintf(us, sizeof(us), "%" PRIu64, ns / 1000);
	/* at most 7 digits in all: as many nanosecond digits as fit */
	if (n < 7) {
		snprintf(frac, sizeof(frac), "%03" PRIu64, ns % 1000);
		frac[7 - n < 3 ? 7 - n : 3] = 0;
		w = snprintf(buf, len, "%c %s.%s us ", sink_graph_mark(ns), us, frac);
		n += (int)strlen(frac) + 1;
	} else {
		w = snprintf(buf, len, "%c %s us ", sink_graph_mark(ns), us);
	}
	for (; n < 8 && (size_t)w + 1 < len; n++)
		buf[w++] = ' ';
	buf[w] = 0;
	return w;
}

/* Writes the " N) " CPU column and the duration column ("" = filled with spaces). */
static int prefix(char *buf, size_t len, const struct sink *s, unsigned cpu, const uint64_t *dur)
{
	int n = snprintf(buf, len, " %*u) ", cpu_width(s->nr_cpus), cpu);

	if (dur)
		n += sink_graph_duration(buf + n, len - n, *dur);
	else
		n += snprintf(buf + n, len - n, "              ");
	return n + snprintf(buf + n, len - n, "|  ");
}

int sink_graph_format(char *buf, size_t len, const struct sink *s, const struct hvt_record *r,
		      const struct hvt_record *ret)
{
	char func[128];
	int n;

	sink_symbol_name(func, sizeof(func), r->ip, s->syms);
	if (r->type != HVT_REC_RETURN && !ret) {
		n = prefix(buf, len, s, r->cpu, NULL);
		return n + snprintf(buf + n, len - n, "%*s%s() {\n", 2 * r->depth, "", func);
	}
	if (r->type != HVT_REC_RETURN) {
		n = prefix(buf, len, s, r->cpu, &ret->duration);
		n += snprintf(buf + n, len - n, "%*s%s();", 2 * r->depth, "", func);
		if (s->graph_retval)
			n += snprintf(buf + n, len - n, " /* = 0x%" PRIx64 " */", ret->value);
		return n + snprintf(buf + n, len - n, "\n");
	}
	n = prefix(buf, len, s, r->cpu, &r->duration);
	n += snprintf(buf + n, len - n, "%*s}", 2 * r->depth, "");
	if (s->graph_retval)
		n += snprintf(buf + n, len - n, " /* %s = 0x%" PRIx64 " */", func, r->value);
	else if (s->graph_tail)
		n += snprintf(buf + n, len - n, " /* %s */", func);
	return n + snprintf(buf + n, len - n, "\n");
}

static void graph_begin(struct sink *s)
{
	sink_printf(s, "# tracer: function_graph\n"
		       "#\n"
		       "# CPU  DURATION                  FUNCTION CALLS\n"
		       "# |     |   |                     |   |   |   |\n");
}

/* Prints the "prev-pid => next-pid" comment line when the guest task on this vCPU changed. */
static void task_marker(struct sink *s, const struct hvt_record *r)
{
	struct graph_cpu *c = &((struct graph_cpu *)s->priv)[r->cpu];
	char line[160];
	int n;

	if (c->seen && (c->pid != r->pid || strncmp(c->comm, r->comm, VMI_COMM_LEN))) {
		n = prefix(line, sizeof(line), s, r->cpu, NULL);
		snprintf(line + n, sizeof(line) - n, "/* %.16s-%d => %.16s-%d */\n", c->comm, c->pid,
			 r->comm, r->pid);
		sink_write(s, line, strlen(line));
		s->task_switches++;
	}
	c->seen = true;
	c->pid = r->pid;
	memcpy(c->comm, r->comm, VMI_COMM_LEN);
}

static unsigned graph_record(struct sink *s, const struct hvt_record *r,
			     const struct hvt_record *next)
{
	char line[512];
	bool leaf = r->type != HVT_REC_RETURN && next && next->type == HVT_REC_RETURN &&
		    next->ip == r->ip && next->depth == r->depth && next->pid == r->pid;

	task_marker(s, r);
	sink_graph_format(line, sizeof(line), s, r, leaf ? next : NULL);
	sink_write(s, line, strlen(line));
	s->written += leaf ? 2 : 1;
	return leaf ? 2 : 1;
}

static void graph_end(struct sink *s)
{
	sink_printf(s, "# entries-written: %llu   lost: %llu\n", s->written, s->lost);
	sink_flush(s);
	free(s->priv);
	s->priv = NULL;
}

static const struct sink_ops graph_ops = {
	.begin = graph_begin,
	.record = graph_record,
	.end = graph_end,
	.lookahead = true,
};

int sink_graph_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus,
		    bool retval, bool tail)
{
	memset(s, 0, sizeof(*s));
	s->ops = &graph_ops;
	s->out = out;
	s->syms = syms;
	s->nr_cpus = nr_cpus;
	s->graph_retval = retval;
	s->graph_tail = tail;
	s->priv = calloc(nr_cpus, sizeof(struct graph_cpu));
	return s->priv ? 0 : -1;
}

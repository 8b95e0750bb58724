/* Collapsed stacks for flame graphs (Brendan Gregg's stackcollapse format, which flamegraph.pl,
 * speedscope and Perfetto read): one "frame;frame;frame N" line per distinct stack, sorted. The
 * first frame is the guest task's comm, as `perf script | stackcollapse-perf.pl` makes it (tasks of
 * one name share it; an empty comm is "<...>"), then the functions outermost first.
 *   - function_graph (returns known): N is the wall time in ns the task spent in that stack itself,
 *     from each of its records to its next one (time off the CPU included, as ftrace's durations
 *     include it), calls still open at the end up to the last timestamp. A return whose call began
 *     before the trace counts as a call from the comm itself.
 *   - otherwise (function tracer): N is the number of hits of "comm;caller;function".
 * Frame names are escaped as in every text output (host/trace/escape.h), and ';' as \x3b. */
#include "host/sink/sink.h"
#include "host/sink/sink_format.h"
#include "host/sink/task_table.h"
#include "host/trace/escape.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define FOLDED_MAX_TASKS 4096
#define FOLDED_MAX_NODES (1u << 22) /* distinct stacks kept; later ones count to their parent */
#define FOLDED_ROOT	 UINT32_MAX /* a root node's parent (its key: the comm's index) */

/* A stack: its innermost frame's function (key) under its parent stack. */
struct folded_node {
	uint64_t key;
	uint32_t parent;
	uint64_t weight;
};

struct folded_frame {
	uint64_t ip;
	uint32_t node;
	uint8_t depth;
};

/* The open calls of a task, innermost last. */
struct folded_task {
	bool seen;
	uint64_t last_ts;
	uint32_t root;
	unsigned nr;
	struct folded_frame f[SINK_GRAPH_MAX_DEPTH];
};

struct folded {
	bool graph;
	uint64_t last_ts;		/* of the whole stream */
	struct task_table tasks, comms; /* comms: keyed by comm alone (pid 0) */
	struct folded_task *task[FOLDED_MAX_TASKS + 1];
	struct folded_node *nodes;
	uint32_t nr_nodes, cap_nodes;
	uint32_t *hash; /* node index + 1, 0 = free; 2 * cap_nodes slots */
};

static uint32_t hash_of(uint32_t parent, uint64_t key)
{
	uint64_t h = (key ^ ((uint64_t)parent << 32 | parent)) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 32);
}

/* Doubles the node array and its hash. False without memory. */
static bool grow(struct folded *f)
{
	uint32_t cap = f->cap_nodes ? 2 * f->cap_nodes : 1024;
	struct folded_node *nodes = realloc(f->nodes, cap * sizeof(*nodes));
	uint32_t *hash;

	if (!nodes)
		return false;
	f->nodes = nodes;
	hash = calloc(2 * (size_t)cap, sizeof(*hash));
	if (!hash)
		return false;
	for (uint32_t i = 0; i < f->nr_nodes; i++) {
		uint32_t s = hash_of(f->nodes[i].parent, f->nodes[i].key) & (2 * cap - 1);

		while (hash[s])
			s = (s + 1) & (2 * cap - 1);
		hash[s] = i + 1;
	}
	free(f->hash);
	f->hash = hash;
	f->cap_nodes = cap;
	return true;
}

/* The node of stack @parent + @key, added when new; @parent itself when no more fit. */
static uint32_t child(struct folded *f, uint32_t parent, uint64_t key)
{
	uint32_t s;

	if (f->nr_nodes == f->cap_nodes && (f->nr_nodes >= FOLDED_MAX_NODES || !grow(f)))
		goto full;
	s = hash_of(parent, key) & (2 * f->cap_nodes - 1);
	for (;; s = (s + 1) & (2 * f->cap_nodes - 1)) {
		uint32_t i = f->hash[s];

		if (!i)
			break;
		if (f->nodes[i - 1].parent == parent && f->nodes[i - 1].key == key)
			return i - 1;
	}
	if (f->nr_nodes >= FOLDED_MAX_NODES)
		goto full;
	f->nodes[f->nr_nodes] = (struct folded_node){.key = key, .parent = parent};
	f->hash[s] = ++f->nr_nodes;
	return f->nr_nodes - 1;
full:
	/* a root cannot be left out: the first node exists once any task was seen */
	return parent == FOLDED_ROOT ? 0 : parent;
}

/* The function holding @addr (its start), so that every site of one function is one frame. */
static uint64_t frame_key(const struct sink *s, uint64_t addr)
{
	const struct vmi_sym *sym = vmi_symtab_lookup(s->syms, addr);

	return sym ? sym->addr : addr;
}

/* The state of @r's task, created with its root stack (its comm) when first seen. */
static struct folded_task *task_of(struct folded *f, const struct hvt_record *r)
{
	bool added;
	unsigned i = task_table_find(&f->tasks, r->pid, r->comm, &added);
	struct folded_task *t = f->task[i];
	unsigned c;

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	c = task_table_find(&f->comms, 0, added ? r->comm : "other tasks", &added);
	t->root = child(f, FOLDED_ROOT, c);
	f->task[i] = t;
	return t;
}

/* function_graph: entry (or return, @ret) @r of task @t. */
static void folded_graph(struct sink *s, struct folded_task *t, const struct hvt_record *r,
			 bool ret)
{
	struct folded *f = s->priv;
	uint64_t delta = t->seen && r->ts > t->last_ts ? r->ts - t->last_ts : 0;
	uint64_t key = frame_key(s, r->ip);
	unsigned i = t->nr;

	if (ret)
		for (; i > 0; i--)
			if (t->f[i - 1].ip == r->ip && t->f[i - 1].depth == r->depth)
				break;
	if (ret && !i && !t->nr) {
		/* a call that began before the trace (or whose entry was lost): its time since the
		 * task's last record, all of it when this is the first */
		uint64_t self = t->seen && delta < r->duration ? delta : r->duration;

		f->nodes[child(f, t->root, key)].weight += self;
	} else if (t->nr) {
		f->nodes[t->f[t->nr - 1].node].weight += delta;
	}
	if (ret && i)
		t->nr = i - 1;
	if (!ret && t->nr < SINK_GRAPH_MAX_DEPTH) {
		uint32_t parent = t->nr ? t->f[t->nr - 1].node : t->root;

		t->f[t->nr++] = (struct folded_frame){
		    .ip = r->ip, .node = child(f, parent, key), .depth = r->depth};
	}
	t->seen = true;
	if (r->ts > t->last_ts)
		t->last_ts = r->ts;
}

/* Every record moves the trace's end (the time open calls are closed at). */
static void folded_seen(struct sink *s, const struct hvt_record *r)
{
	struct folded *f = s->priv;

	if (r->ts > f->last_ts)
		f->last_ts = r->ts;
}

/* An entry (or a return, @ret) of a task: a frame pushed (popped) with function_graph, a hit of
 * "comm;caller;function" with the function tracer. */
static void folded_call(struct sink *s, const struct hvt_record *r, bool ret)
{
	struct folded *f = s->priv;
	struct folded_task *t;

	folded_seen(s, r);
	t = task_of(f, r);
	if (!t)
		return; /* no memory for a new task: its records are left out */
	if (f->graph) {
		folded_graph(s, t, r, ret);
	} else if (!ret) {
		uint32_t caller = child(f, t->root, frame_key(s, r->parent));

		f->nodes[child(f, caller, frame_key(s, r->ip))].weight++;
	}
	s->written++;
}

static unsigned folded_entry(struct sink *s, const struct sink_rec *rec,
			     const struct sink_rec *next)
{
	(void)next;
	folded_call(s, rec->r, false);
	return 1;
}

static void folded_ret(struct sink *s, const struct sink_rec *rec)
{
	folded_call(s, rec->r, true);
}

/* lost events (the stacks stay, returns are matched by function) and events alone (no call) */
static void folded_lost(struct sink *s, const struct hvt_record *r)
{
	folded_seen(s, r);
}

static void folded_event_alone(struct sink *s, const struct sink_rec *rec)
{
	folded_seen(s, rec->r);
}

static void folded_begin(struct sink *s)
{
	struct folded *f = s->priv;

	f->graph = sink_graph_tracer(s);
}

/* Appends @name escaped (';' too) to @line at @n, at most @len - 1 bytes. Returns the new length.
 */
static size_t add_frame(char *line, size_t len, size_t n, const char *name, size_t max)
{
	char e[512];
	size_t k = escape_str(e, sizeof(e), name, max);

	if (!k) {
		strcpy(e, "<...>");
		k = 5;
	}
	for (size_t i = 0; i < k && n + 5 < len; i++) {
		if (e[i] == ';') {
			memcpy(line + n, "\\x3b", 4);
			n += 4;
		} else {
			line[n++] = e[i];
		}
	}
	return n;
}

/* The "a;b;c" line of node @i (without its count) into @line. Returns its length. */
static size_t stack_line(const struct sink *s, const struct folded *f, uint32_t i, char *line,
			 size_t len)
{
	uint32_t path[SINK_GRAPH_MAX_DEPTH + 2];
	unsigned nr = 0;
	size_t n = 0;

	for (uint32_t k = i; k != FOLDED_ROOT && nr < SINK_GRAPH_MAX_DEPTH + 2;
	     k = f->nodes[k].parent)
		path[nr++] = k;
	while (nr--) {
		const struct folded_node *node = &f->nodes[path[nr]];
		const struct vmi_sym *sym;
		char hex[24];

		if (n && n + 1 < len)
			line[n++] = ';';
		if (node->parent == FOLDED_ROOT) {
			n = add_frame(line, len, n, f->comms.comm[node->key], VMI_COMM_LEN);
		} else if ((sym = vmi_symtab_lookup(s->syms, node->key))) {
			n = add_frame(line, len, n, sym->name, SIZE_MAX);
		} else {
			snprintf(hex, sizeof(hex), "0x%" PRIx64, node->key);
			n = add_frame(line, len, n, hex, sizeof(hex));
		}
	}
	line[n] = 0;
	return n;
}

static int by_text(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void folded_end(struct sink *s)
{
	struct folded *f = s->priv;
	char **lines = calloc(f->nr_nodes ? f->nr_nodes : 1, sizeof(*lines));
	size_t nr = 0;

	/* calls still open: their stacks' time up to the end of the trace */
	for (unsigned i = 0; i <= FOLDED_MAX_TASKS; i++) {
		struct folded_task *t = f->task[i];

		if (t && t->nr && f->last_ts > t->last_ts)
			f->nodes[t->f[t->nr - 1].node].weight += f->last_ts - t->last_ts;
	}
	if (!lines && f->nr_nodes)
		s->err = s->err ? s->err : ENOMEM;
	for (uint32_t i = 0; lines && i < f->nr_nodes; i++) {
		char line[SINK_GRAPH_MAX_DEPTH * 160];
		size_t n;

		if (!f->nodes[i].weight)
			continue;
		n = stack_line(s, f, i, line, sizeof(line) - 24);
		snprintf(line + n, sizeof(line) - n, " %" PRIu64 "\n", f->nodes[i].weight);
		lines[nr] = strdup(line);
		if (!lines[nr]) {
			s->err = s->err ? s->err : ENOMEM;
			break;
		}
		nr++;
	}
	qsort(lines, nr, sizeof(*lines), by_text);
	for (size_t i = 0; i < nr; i++) {
		sink_write(s, lines[i], strlen(lines[i]));
		free(lines[i]);
	}
	free(lines);
	sink_flush(s);
	for (unsigned i = 0; i <= FOLDED_MAX_TASKS; i++)
		free(f->task[i]);
	task_table_free(&f->tasks);
	task_table_free(&f->comms);
	free(f->nodes);
	free(f->hash);
	free(f);
	s->priv = NULL;
}

static const struct sink_ops folded_ops = {
    .begin = folded_begin,
    .entry = folded_entry,
    .event_alone = folded_event_alone,
    .ret = folded_ret,
    .lost = folded_lost,
    .end = folded_end,
};

int sink_folded_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus)
{
	struct folded *f;

	sink_setup(s, &folded_ops, out, syms, nr_cpus);
	f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	if (task_table_init(&f->tasks, FOLDED_MAX_TASKS) < 0 ||
	    task_table_init(&f->comms, FOLDED_MAX_TASKS + 1) < 0 || !grow(f)) {
		task_table_free(&f->tasks);
		task_table_free(&f->comms);
		free(f->nodes);
		free(f);
		return -1;
	}
	s->priv = f;
	return 0;
}

static int folded_make(struct sink *s, const struct sink_config *cfg)
{
	if (sink_folded_init(s, cfg->out, cfg->syms, cfg->nr_cpus) < 0)
		return -ENOMEM;
	s->tracer = cfg->tracer;
	return 0;
}

const struct sink_format sink_format_folded = {"folded", folded_make, NULL, folded_make};

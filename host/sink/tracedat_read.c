/* trace.dat -> records (see tracedat_read.h). libtracecmd parses the file; this file bounds every
 * field it takes from a record and every spec it rebuilds from an event format. */
#include "host/sink/tracedat_read.h"
#include "host/sink/writer.h"
#include "host/trace/ring.h"

#include <trace-cmd.h>
#include <event-parse.h>

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TDR_MAX_SPECS 256 /* probe events in one file */
#define TDR_MAX_CPUS  256
#define TDR_RING      4096u	   /* records per CPU between the reader and the writer */
#define TDR_MAP	      1024	   /* functions with probe events seen (ip -> spec) */
#define TDR_ADDRS     (1u << 16)   /* distinct function starts named */
#define TDR_MAX_TS    (1ull << 62) /* ns: 146 years */

enum tdr_role {
	ROLE_NONE,
	ROLE_FUNCTION,
	ROLE_GRAPH_ENT,
	ROLE_GRAPH_EXIT,
	ROLE_PROBE,
	ROLE_RPROBE
};

struct tdr_spec {
	struct fe_spec spec;
	struct tep_format_field *field[FE_MAX_FIELDS];
	struct tep_format_field *ip, *ret_ip, *duration, *fault, *parent, *arg1;
	unsigned nth;	/* p_<func>_<nth> */
	bool ret, bare; /* a return probe; one without typed fields */
};

struct tdr_role_of {
	int id;
	enum tdr_role role;
	struct tdr_spec *spec;
};

struct tdr_cpu {
	struct ring *ring; /* pass 2 */
	bool pending;
	struct hvt_record rec;
	const struct tdr_spec *parts[FE_MAX_CHAIN]; /* probe events merged into @rec */
	unsigned nr_parts;
	size_t len; /* payload bytes */
	uint8_t payload[WRITER_PAYLOAD_MAX];
};

struct tdr_map {
	uint64_t ip;
	const struct fe_spec *spec;
};

struct tdr {
	const char *path;
	struct tracecmd_input *h;
	struct tep_handle *tep;
	unsigned nr_cpus;
	struct tdr_spec *specs;
	size_t nr_specs;
	struct tdr_role_of *roles;
	size_t nr_roles;
	struct tep_format_field *fn_ip, *fn_parent, *ent_func, *ent_depth, *ex_func, *ex_retval,
	    *ex_depth, *ex_calltime, *ex_rettime;
	struct tdr_cpu *cpus;
	struct ring *rings; /* one per CPU, the writer's input */
	unsigned nr_rings;
	struct tdr_map events[TDR_MAP], rets[TDR_MAP];
	/* pass state */
	bool replay;
	struct vmi_symtab *syms;
	uint64_t *named; /* function starts added to @syms (open addressing, 0 = free) */
	struct tdr_summary *sum;
	struct writer w;
	_Atomic uint64_t horizon;
	uint64_t max_ts;
	unsigned long long lost;
	int err;
	char *errbuf;
	size_t errlen;
};

/* ---- the specs ------------------------------------------------------------------------------ */

static int fail(struct tdr *r, char *err, size_t errlen, const char *fmt, const char *a,
		const char *b)
{
	char what[512];

	snprintf(what, sizeof(what), fmt, a, b);
	snprintf(err, errlen, "%s: %s", r->path, what);
	return -EINVAL;
}

/* The print fmt's conversion for field @name ("name=%d", "name={0x%x,..."). */
static int conversion(const struct tep_event *ev, const char *name, enum fe_kind *kind)
{
	const char *fmt = ev->print_fmt.format;
	char key[FE_NAME_LEN + 2];
	const char *p;

	if (!fmt)
		return -1;
	snprintf(key, sizeof(key), " %s=", name);
	p = strstr(fmt, key);
	if (!p)
		return -1;
	p += strlen(key);
	if (*p == '{')
		p++;
	if (!strncmp(p, "%pS", 3))
		*kind = FE_SYMBOL;
	else if (!strncmp(p, "0x%", 3))
		*kind = FE_HEX;
	else if (!strncmp(p, "%Ld", 3) || !strncmp(p, "%d", 2) || !strncmp(p, "%lld", 4))
		*kind = FE_SIGNED;
	else if (!strncmp(p, "%Lu", 3) || !strncmp(p, "%u", 2) || !strncmp(p, "%llu", 4))
		*kind = FE_UNSIGNED;
	else
		return -1;
	return 0;
}

static bool elem_size(unsigned size)
{
	return size == 1 || size == 2 || size == 4 || size == 8;
}

/* The size of a kprobe fetch type ("u16", "s32", "x64", "char"; libtraceevent may have appended the
 * brackets: "u16[]"), 0 if none. */
static unsigned type_size(const char *type)
{
	char t[8];
	size_t n = strcspn(type, "[ ");

	if (n >= sizeof(t))
		return 0;
	memcpy(t, type, n);
	t[n] = 0;
	if (!strcmp(t, "char") || !strcmp(t, "u8") || !strcmp(t, "s8") || !strcmp(t, "x8"))
		return 1;
	if (n != 3 || !strchr("usx", t[0]))
		return 0;
	return !strcmp(t + 1, "16") ? 2 : !strcmp(t + 1, "32") ? 4 : !strcmp(t + 1, "64") ? 8 : 0;
}

/* One field of a probe event into @f. */
static int rebuild_field(struct tdr *r, const struct tep_event *ev, struct tep_format_field *tf,
			 struct fe_field *f, char *err, size_t errlen)
{
	char where[200];

	snprintf(where, sizeof(where), "%.60s/%.80s", ev->system, ev->name);
	memset(f, 0, sizeof(*f));
	if (!tf->name || !tf->type)
		return fail(r, err, errlen, "event %s: a field without name or type", where, NULL);
	if (strlen(tf->name) >= FE_NAME_LEN)
		return fail(r, err, errlen, "event %s: a field name is too long", where, NULL);
	strcpy(f->name, tf->name);
	if (tf->flags & TEP_FIELD_IS_DYNAMIC) {
		if (tf->size != 4 || !strstr(tf->type, "char"))
			return fail(r, err, errlen, "event %s: field %s: not a string", where,
				    f->name);
		f->kind = FE_STRING;
		f->size = 1;
		f->memory = true;
		return 0;
	}
	if ((tf->flags & TEP_FIELD_IS_ARRAY) && !strncmp(tf->type, "char", 4)) {
		if (!tf->arraylen || tf->arraylen > FE_MAX_STRING || tf->size != (int)tf->arraylen)
			return fail(r, err, errlen, "event %s: field %s: bad char array", where,
				    f->name);
		f->kind = FE_CHARS;
		f->size = 1;
		f->count = tf->arraylen;
		f->memory = true;
		return 0;
	}
	if (conversion(ev, f->name, &f->kind) < 0)
		return fail(r, err, errlen, "event %s: field %s: no conversion in the print fmt",
			    where, f->name);
	if (tf->flags & TEP_FIELD_IS_ARRAY) {
		/* "u16 arr[4]" (ours), or "u16 arr[]" of the whole size (the kernel's) */
		unsigned elem = tf->arraylen ? tf->elementsize : type_size(tf->type);
		unsigned count = tf->arraylen		? tf->arraylen
				 : elem && tf->size > 0 ? (unsigned)tf->size / elem
							: 0;

		if (!count || count > FE_MAX_ARRAY || !elem_size(elem) ||
		    tf->size != (int)(count * elem))
			return fail(r, err, errlen, "event %s: field %s: bad array", where,
				    f->name);
		f->count = count;
		f->size = f->kind == FE_SYMBOL ? 8 : elem;
		f->memory = true;
		return 0;
	}
	if (!elem_size((unsigned)tf->size))
		return fail(r, err, errlen, "event %s: field %s: bad size", where, f->name);
	f->size = (unsigned)tf->size;
	return 0;
}

/* The function and position in an event name: p_<func>_<n>, r_<func>_<n>, <func>__entry_<n>. */
static int probe_name(const char *name, bool fprobe, char *func, size_t len, unsigned *nth)
{
	const char *start = name, *end = strrchr(name, '_');
	char *tail;
	unsigned long n;

	if (!end || !end[1])
		return -1;
	n = strtoul(end + 1, &tail, 10);
	if (*tail || n > 1000)
		return -1;
	if (fprobe) {
		if (end - name < 8 || strncmp(end - 7, "__entry", 7))
			return -1;
		end -= 7;
	} else {
		if (strncmp(name, "p_", 2) && strncmp(name, "r_", 2))
			return -1;
		start += 2;
	}
	if (end <= start || (size_t)(end - start) >= len)
		return -1;
	memcpy(func, start, (size_t)(end - start));
	func[end - start] = 0;
	*nth = (unsigned)n;
	return 0;
}

static int rebuild_spec(struct tdr *r, struct tep_event *ev, struct tdr_spec *t, char *err,
			size_t errlen)
{
	bool fprobe = !strcmp(ev->system, "fprobes");
	unsigned n = 0;

	memset(t, 0, sizeof(*t));
	t->ret = !strncmp(ev->name, "r_", 2);
	if (probe_name(ev->name, fprobe, t->spec.func, sizeof(t->spec.func), &t->nth) < 0)
		return 1; /* not a probe event of ours: ignored */
	t->spec.fprobe_style = fprobe;
	for (struct tep_format_field *f = ev->format.fields; f; f = f->next) {
		struct tep_format_field **known = !strcmp(f->name, "__probe_ip")       ? &t->ip
						  : !strcmp(f->name, "__probe_func")   ? &t->ip
						  : !strcmp(f->name, "__probe_ret_ip") ? &t->ret_ip
						  : !strcmp(f->name, "__hvt_duration")
						      ? &t->duration
						  : !strcmp(f->name, "__hvt_fault")  ? &t->fault
						  : !strcmp(f->name, "__hvt_parent") ? &t->parent
										     : NULL;

		if (known) {
			*known = f;
			continue;
		}
		if (n == FE_MAX_FIELDS)
			return fail(r, err, errlen, "event %s: more than %s fields", ev->name,
				    "16");
		if (rebuild_field(r, ev, f, &t->spec.fields[n], err, errlen) < 0)
			return -EINVAL;
		t->field[n++] = f;
	}
	t->spec.nr_fields = n;
	t->spec.nr_args = n;
	if (!t->ip || (t->ret && !t->ret_ip))
		return fail(r, err, errlen, "event %s: no %s field", ev->name,
			    t->ip ? "__probe_ret_ip" : "__probe_ip / __probe_func");
	if (t->ret && n == 1 && !strcmp(t->spec.fields[0].name, "arg1")) {
		t->bare = true;
		t->arg1 = t->field[0];
	}
	return 0;
}

static struct tep_format_field *need_field(struct tep_event *ev, const char *name, int *missing)
{
	struct tep_format_field *f = ev ? tep_find_field(ev, name) : NULL;

	if (ev && !f)
		(*missing)++;
	return f;
}

/* Links each function's p_ events into a chain in <n> order; a chain of more than FE_MAX_CHAIN is
 * refused (run never writes one). */
static int link_chains(struct tdr *r, char *err, size_t errlen)
{
	for (size_t i = 0; i < r->nr_specs; i++) {
		struct tdr_spec *a = &r->specs[i];
		unsigned len = 1;

		if (a->ret)
			continue;
		for (size_t j = 0; j < r->nr_specs; j++) {
			struct tdr_spec *b = &r->specs[j];

			if (b->ret || strcmp(a->spec.func, b->spec.func) || b == a)
				continue;
			if (b->nth == a->nth)
				return fail(r, err, errlen, "two events of %s numbered %s",
					    a->spec.func, "alike");
			if (b->nth == a->nth + 1)
				a->spec.next = &b->spec;
			len++;
		}
		if (len > FE_MAX_CHAIN)
			return fail(r, err, errlen, "%s: more than 3 events of function %s", "",
				    a->spec.func);
	}
	return 0;
}

static int no_record(struct tracecmd_input *h, struct tep_record *rec, int cpu, void *data)
{
	(void)h;
	(void)rec;
	(void)cpu;
	(void)data;
	return 0;
}

/* libtracecmd reads the whole of @path in a child first (10 minutes at most): the library itself
 * has crashed on bad files (Debian's 3.1.6, on the error path of tracecmd_open), and it reads the
 * same bytes the same way again in this process only once that went well. 0, or -EINVAL with @err.
 */
static int try_in_child(const char *path, char *err, size_t errlen)
{
	int st = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "%s: fork: %s", path, strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		struct tracecmd_input *h;
		int ret;

		/* a crash is the child's plain death, seen by the parent (no sanitizer's handler)
		 */
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGFPE, SIG_DFL);
		signal(SIGILL, SIG_DFL);
		alarm(600); /* nor may it loop for ever */
		h = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
		if (!h)
			_exit(2);
		ret = tracecmd_iterate_events(h, NULL, 0, no_record, NULL);
		tracecmd_close(h);
		_exit(ret < 0 ? 3 : 0);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFSIGNALED(st))
		snprintf(err, errlen, "%s: libtracecmd crashed reading it (signal %d): a bad file",
			 path, WTERMSIG(st));
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
		snprintf(err, errlen, "%s: its event data cannot be read", path);
	else
		snprintf(err, errlen, "%s: not a trace.dat libtracecmd can read (bad or truncated)",
			 path);
	return -EINVAL;
}

struct tdr *tdr_open(const char *path, char *err, size_t errlen)
{
	struct tdr *r = calloc(1, sizeof(*r));
	struct tep_event **evs;
	int missing = 0, n;

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->path = path;
	tracecmd_set_loglevel(TEP_LOG_NONE);
	tep_set_loglevel(TEP_LOG_NONE);
	if (access(path, R_OK) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		free(r);
		return NULL;
	}
	if (try_in_child(path, err, errlen) < 0) {
		free(r);
		return NULL;
	}
	r->h = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!r->h) {
		snprintf(err, errlen, "%s: not a trace.dat libtracecmd can read (bad or truncated)",
			 path);
		free(r);
		return NULL;
	}
	r->tep = tracecmd_get_tep(r->h);
	n = tep_get_cpus(r->tep);
	if (n < 1 || n > TDR_MAX_CPUS) {
		snprintf(err, errlen, "%s: %d CPUs (expected 1 to %d)", path, n, TDR_MAX_CPUS);
		goto bad;
	}
	r->nr_cpus = (unsigned)n;
	n = tep_get_events_count(r->tep);
	evs = tep_list_events(r->tep, TEP_EVENT_SORT_ID);
	r->roles = calloc((size_t)(n > 0 ? n : 1), sizeof(*r->roles));
	r->specs = calloc(TDR_MAX_SPECS, sizeof(*r->specs));
	r->cpus = calloc(r->nr_cpus, sizeof(*r->cpus));
	if (!r->roles || !r->specs || !r->cpus) {
		snprintf(err, errlen, "out of memory");
		goto bad;
	}
	for (int i = 0; evs && i < n && evs[i]; i++) {
		struct tep_event *ev = evs[i];
		struct tdr_role_of *ro = &r->roles[r->nr_roles];

		if (!ev->system || !ev->name)
			continue;
		ro->id = ev->id;
		if (!strcmp(ev->system, "ftrace")) {
			if (!strcmp(ev->name, "function")) {
				ro->role = ROLE_FUNCTION;
				r->fn_ip = need_field(ev, "ip", &missing);
				r->fn_parent = need_field(ev, "parent_ip", &missing);
			} else if (!strcmp(ev->name, "funcgraph_entry")) {
				ro->role = ROLE_GRAPH_ENT;
				r->ent_func = need_field(ev, "func", &missing);
				r->ent_depth = need_field(ev, "depth", &missing);
			} else if (!strcmp(ev->name, "funcgraph_exit")) {
				ro->role = ROLE_GRAPH_EXIT;
				r->ex_func = need_field(ev, "func", &missing);
				r->ex_retval = tep_find_field(ev, "retval"); /* before 6.5: none */
				r->ex_depth = need_field(ev, "depth", &missing);
				r->ex_calltime = need_field(ev, "calltime", &missing);
				r->ex_rettime = need_field(ev, "rettime", &missing);
			}
		} else if (!strcmp(ev->system, "kprobes") || !strcmp(ev->system, "fprobes")) {
			int ret;

			if (r->nr_specs == TDR_MAX_SPECS) {
				snprintf(err, errlen, "%s: more than %d probe events", path,
					 TDR_MAX_SPECS);
				goto bad;
			}
			ret = rebuild_spec(r, ev, &r->specs[r->nr_specs], err, errlen);
			if (ret < 0)
				goto bad;
			if (ret == 0) {
				ro->spec = &r->specs[r->nr_specs++];
				ro->role = ro->spec->ret ? ROLE_RPROBE : ROLE_PROBE;
			}
		}
		if (ro->role != ROLE_NONE)
			r->nr_roles++;
	}
	if (missing) {
		snprintf(err, errlen,
			 "%s: an ftrace function or function_graph event lacks its fields", path);
		goto bad;
	}
	if (link_chains(r, err, errlen) < 0)
		goto bad;
	return r;
bad:
	tdr_close(r);
	return NULL;
}

void tdr_close(struct tdr *r)
{
	if (!r)
		return;
	if (r->h)
		tracecmd_close(r->h);
	free(r->roles);
	free(r->specs);
	free(r->cpus);
	for (unsigned k = 0; k < r->nr_rings; k++)
		ring_free(&r->rings[k]);
	free(r->rings);
	free(r->named);
	free(r);
}

/* ---- the records ---------------------------------------------------------------------------- */

/* An unsigned field of @rec, bounded by the record; 0 when absent or out of it. */
static uint64_t num(const struct tep_format_field *f, const struct tep_record *rec)
{
	uint64_t v = 0;

	if (!f || f->offset < 0 || !elem_size((unsigned)f->size) || f->offset + f->size > rec->size)
		return 0;
	memcpy(&v, (const uint8_t *)rec->data + f->offset, (size_t)f->size);
	return v;
}

static size_t slot_size(const struct fe_field *f)
{
	return f->kind == FE_STRING  ? FE_MAX_STRING
	       : f->kind == FE_CHARS ? f->count
	       : f->count	     ? (size_t)f->count * f->size
				     : 8;
}

/* The payload part of @t's event (fe_capture's layout) from @rec, into @out (fe_event_size). */
static void rebuild_payload(const struct tdr_spec *t, const struct tep_record *rec, uint8_t *out)
{
	uint32_t fault = (uint32_t)num(t->fault, rec);
	const uint8_t *data = rec->data;

	for (unsigned i = 0; i < t->spec.nr_fields; i++) {
		const struct fe_field *f = &t->spec.fields[i];
		const struct tep_format_field *tf = t->field[i];
		size_t size = slot_size(f);
		uint8_t *slot = out + 1;

		out[0] = (fault >> i) & 1;
		memset(slot, 0, size);
		if (f->kind == FE_STRING) {
			uint32_t loc = (uint32_t)num(tf, rec);
			size_t off = loc & 0xffff, len = loc >> 16;

			if (!len || off + len > (size_t)rec->size)
				out[0] = 1; /* the kernel's (fault): no data */
			else
				memcpy(slot, data + off,
				       len < FE_MAX_STRING - 1 ? len : FE_MAX_STRING - 1);
			slot[FE_MAX_STRING - 1] = 0;
		} else if (tf->offset >= 0 && tf->offset + tf->size <= rec->size) {
			size_t n = (size_t)tf->size < size ? (size_t)tf->size : size;

			memcpy(slot, data + tf->offset, n);
		} else {
			out[0] = 1;
		}
		out += 1 + size;
	}
}

static void map_put(struct tdr_map *m, uint64_t ip, const struct fe_spec *spec)
{
	uint64_t h = (ip * 0x9e3779b97f4a7c15ull >> 40) % TDR_MAP;

	for (unsigned k = 0; k < TDR_MAP; k++) {
		struct tdr_map *e = &m[(h + k) % TDR_MAP];

		if (e->spec && e->ip != ip)
			continue;
		e->ip = ip;
		e->spec = spec;
		return;
	}
}

static const struct fe_spec *map_get(const struct tdr_map *m, uint64_t ip)
{
	uint64_t h = (ip * 0x9e3779b97f4a7c15ull >> 40) % TDR_MAP;

	for (unsigned k = 0; k < TDR_MAP; k++) {
		const struct tdr_map *e = &m[(h + k) % TDR_MAP];

		if (!e->spec)
			return NULL;
		if (e->ip == ip)
			return e->spec;
	}
	return NULL;
}

static const struct fe_spec *report_event_of(void *ctx, uint64_t ip)
{
	return map_get(((struct tdr *)ctx)->events, ip);
}

static const struct fe_spec *report_ret_event_of(void *ctx, uint64_t ip)
{
	return map_get(((struct tdr *)ctx)->rets, ip);
}

/* Pass 1: the function holding @addr into the symbol table. */
static void name_addr(struct tdr *r, uint64_t addr)
{
	const char *name = NULL;
	unsigned long long start = 0;
	unsigned long size = 0;
	uint64_t h;

	/* 1 when found; 0 (the outputs untouched) when not */
	if (!addr || !r->named || tep_find_function_info(r->tep, addr, &name, &start, &size) != 1 ||
	    !name || !start)
		return;
	h = (start * 0x9e3779b97f4a7c15ull >> 32) % TDR_ADDRS;
	for (unsigned k = 0; k < 64; k++) {
		uint64_t *e = &r->named[(h + k) % TDR_ADDRS];

		if (*e == start)
			return;
		if (!*e) {
			*e = start;
			if (vmi_symtab_add(r->syms, start, size, name) < 0)
				r->err = -ENOMEM;
			return;
		}
	}
}

static void name_record(struct tdr *r, const struct hvt_record *rec, const struct tdr_cpu *c)
{
	name_addr(r, rec->ip);
	name_addr(r, rec->parent);
	/* symbol fields of the payload */
	const uint8_t *p = c->payload;

	for (unsigned k = 0; k < c->nr_parts; k++) {
		const struct fe_spec *s = &c->parts[k]->spec;

		for (unsigned i = 0; i < s->nr_fields; i++) {
			const struct fe_field *f = &s->fields[i];

			if (f->kind == FE_SYMBOL)
				for (unsigned e = 0; e < (f->count ? f->count : 1); e++) {
					uint64_t v;

					memcpy(&v, p + 1 + 8 * e, 8);
					name_addr(r, v);
				}
			p += 1 + slot_size(f);
		}
	}
}

static uint64_t horizon_of(void *ctx)
{
	return atomic_load(&((struct tdr *)ctx)->horizon);
}

/* Hands one record (and its payload) on: pass 1 names its addresses, pass 2 puts it in its CPU's
 * ring for the writer (waiting while the ring is full). */
static void deliver(struct tdr *r, struct tdr_cpu *c, const struct hvt_record *rec,
		    const uint8_t *payload, size_t len)
{
	uint64_t n = 1 + (payload ? hvt_record_payload_slots(len) : 0);

	if (!r->replay) {
		name_record(r, rec, c);
		return;
	}
	while (!ring_reserve_n(c->ring, n))
		usleep(200);
	*ring_slot(c->ring, 0) = *rec;
	if (payload)
		ring_put_payload(c->ring, payload, len);
	ring_commit_n(c->ring, n);
}

static void flush_pending(struct tdr *r, struct tdr_cpu *c)
{
	if (!c->pending)
		return;
	if (hvt_record_has_payload(&c->rec))
		c->rec.value = c->len;
	deliver(r, c, &c->rec, hvt_record_has_payload(&c->rec) ? c->payload : NULL, c->len);
	c->pending = false;
	c->nr_parts = 0;
	c->len = 0;
}

static void start_record(struct tdr_cpu *c, const struct tep_record *rec, int cpu, int pid,
			 const char *comm, uint8_t type)
{
	memset(&c->rec, 0, sizeof(c->rec));
	c->rec.ts = rec->ts;
	c->rec.cpu = (uint16_t)cpu;
	c->rec.pid = pid;
	c->rec.type = type;
	strncpy(c->rec.comm, comm, VMI_COMM_LEN);
	c->pending = true;
	c->nr_parts = 0;
	c->len = 0;
}

/* Appends @t's payload part from @rec. False if it does not fit (then it is dropped). */
static bool add_part(struct tdr_cpu *c, const struct tdr_spec *t, const struct tep_record *rec)
{
	size_t n = fe_event_size(&t->spec);

	if (c->nr_parts == FE_MAX_CHAIN || c->len + n > WRITER_PAYLOAD_MAX)
		return false;
	rebuild_payload(t, rec, c->payload + c->len);
	c->len += n;
	c->parts[c->nr_parts++] = t;
	return true;
}

static const struct tdr_role_of *role_of(const struct tdr *r, int id)
{
	for (size_t i = 0; i < r->nr_roles; i++)
		if (r->roles[i].id == id)
			return &r->roles[i];
	return NULL;
}

/* The name of @pid's task: the cmdlines, pid 0 per CPU from -(1 + cpu) (sink_tracedat.c). */
static const char *comm_of(struct tdr *r, int pid, int cpu)
{
	if (pid == 0) {
		int idle = -1 - cpu;

		return tep_is_pid_registered(r->tep, idle) ? tep_data_comm_from_pid(r->tep, idle)
							   : "<idle>";
	}
	return tep_data_comm_from_pid(r->tep, pid);
}

static int on_record(struct tracecmd_input *h, struct tep_record *rec, int cpu, void *data)
{
	struct tdr *r = data;
	const struct tdr_role_of *ro;
	const struct tdr_spec *t;
	struct tdr_cpu *c;
	int pid;
	uint64_t ip;

	(void)h;
	if (r->err)
		return 1;
	if (rec->ts > TDR_MAX_TS) {
		r->err = -ERANGE; /* the horizon below must stay above every timestamp */
		return 1;
	}
	if (cpu < 0 || (unsigned)cpu >= r->nr_cpus || rec->size < 8)
		return 0;
	c = &r->cpus[cpu];
	if (rec->ts > r->max_ts)
		r->max_ts = rec->ts;
	/* a pending record can merge only with records at its own time */
	for (unsigned k = 0; k < r->nr_cpus; k++)
		if (r->cpus[k].pending && r->cpus[k].rec.ts < rec->ts)
			flush_pending(r, &r->cpus[k]);
	if (rec->missed_events) {
		struct hvt_record lost = {
		    .ts = rec->ts, .cpu = (uint16_t)cpu, .type = HVT_REC_LOST};

		flush_pending(r, c);
		lost.value = rec->missed_events > 0 ? (uint64_t)rec->missed_events : 0;
		r->lost += lost.value;
		deliver(r, c, &lost, NULL, 0);
	}
	ro = role_of(r, tep_data_type(r->tep, rec));
	if (!ro)
		goto out;
	pid = tep_data_pid(r->tep, rec);
	t = ro->spec;
	switch (ro->role) {
	case ROLE_FUNCTION:
		flush_pending(r, c);
		start_record(c, rec, cpu, pid, comm_of(r, pid, cpu), HVT_REC_ENTRY);
		c->rec.ip = num(r->fn_ip, rec);
		c->rec.parent = num(r->fn_parent, rec);
		if (r->sum)
			r->sum->function = true;
		break;
	case ROLE_GRAPH_ENT:
		flush_pending(r, c);
		start_record(c, rec, cpu, pid, comm_of(r, pid, cpu), HVT_REC_ENTRY);
		c->rec.ip = num(r->ent_func, rec);
		c->rec.depth = (uint8_t)num(r->ent_depth, rec);
		if (r->sum)
			r->sum->graph = true;
		break;
	case ROLE_GRAPH_EXIT: {
		uint64_t call = num(r->ex_calltime, rec), ret = num(r->ex_rettime, rec);

		flush_pending(r, c);
		start_record(c, rec, cpu, pid, comm_of(r, pid, cpu), HVT_REC_RETURN);
		c->rec.ip = num(r->ex_func, rec);
		c->rec.value = num(r->ex_retval, rec);
		c->rec.depth = (uint8_t)num(r->ex_depth, rec);
		c->rec.duration = ret > call ? ret - call : 0;
		if (r->sum)
			r->sum->graph = true;
		break;
	}
	case ROLE_PROBE:
		ip = num(t->ip, rec);
		/* the graph entry of the same call, or the event before it in the chain */
		if (!(c->pending && c->rec.ts == rec->ts && c->rec.ip == ip &&
		      (c->rec.type == HVT_REC_ENTRY || c->rec.type == HVT_REC_EVENT) &&
		      (c->nr_parts ? c->parts[c->nr_parts - 1]->spec.next == &t->spec
				   : t->nth == 0))) {
			flush_pending(r, c);
			start_record(c, rec, cpu, pid, comm_of(r, pid, cpu), HVT_REC_EVENT);
			c->rec.ip = ip;
			c->rec.parent = num(t->parent, rec);
		}
		if (c->rec.type == HVT_REC_ENTRY && t->parent)
			c->rec.parent = num(t->parent, rec);
		c->rec.type = HVT_REC_EVENT;
		if (add_part(c, t, rec) && t->nth == 0)
			map_put(r->events, ip, &t->spec);
		break;
	case ROLE_RPROBE:
		ip = num(t->ip, rec);
		if (!(c->pending && c->rec.ts == rec->ts && c->rec.ip == ip &&
		      c->rec.type == HVT_REC_RETURN && !c->nr_parts)) {
			flush_pending(r, c);
			start_record(c, rec, cpu, pid, comm_of(r, pid, cpu), HVT_REC_RETURN);
			c->rec.ip = ip;
			c->rec.parent = num(t->ret_ip, rec);
			c->rec.duration = num(t->duration, rec);
			c->rec.value = t->bare ? num(t->arg1, rec) : 0;
		}
		c->rec.parent = num(t->ret_ip, rec); /* a graph exit has none of its own */
		if (!t->bare) {
			if (!add_part(c, t, rec))
				break;
			/* RAX: the typed field's raw value */
			memcpy(&c->rec.value, c->payload + 1, 8);
			c->rec.type = HVT_REC_RETURN_EVENT;
			map_put(r->rets, ip, &t->spec);
		}
		break;
	default:
		break;
	}
out:
	if (r->sum)
		r->sum->records++;
	/* every record at or before the latest time read may go: later ones come after it */
	atomic_store(&r->horizon, r->max_ts + 1);
	return 0;
}

static int iterate(struct tdr *r, char *err, size_t errlen)
{
	int ret;

	r->err = 0;
	r->max_ts = 0;
	ret = tracecmd_iterate_events(r->h, NULL, 0, on_record, r);
	for (unsigned k = 0; k < r->nr_cpus; k++)
		flush_pending(r, &r->cpus[k]);
	if (r->err == -ERANGE)
		snprintf(err, errlen, "%s: a record's timestamp is beyond 2^62 ns", r->path);
	else if (r->err)
		snprintf(err, errlen, "%s: %s", r->path, strerror(-r->err));
	if (r->err)
		return r->err == -ERANGE ? -EINVAL : r->err;
	if (ret < 0) {
		snprintf(err, errlen, "%s: its event data cannot be read", r->path);
		return -EINVAL;
	}
	return 0;
}

int tdr_scan(struct tdr *r, struct vmi_symtab *syms, struct tdr_summary *sum, char *err,
	     size_t errlen)
{
	int ret;

	memset(sum, 0, sizeof(*sum));
	sum->nr_cpus = r->nr_cpus;
	r->named = calloc(TDR_ADDRS, sizeof(*r->named));
	if (!r->named) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->replay = false;
	r->syms = syms;
	r->sum = sum;
	ret = iterate(r, err, errlen);
	r->sum = NULL;
	vmi_symtab_sort(syms);
	return ret;
}

int tdr_replay(struct tdr *r, struct sink *s, char *err, size_t errlen)
{
	int ret = 0;

	r->rings = calloc(r->nr_cpus, sizeof(*r->rings));
	if (!r->rings) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (unsigned k = 0; k < r->nr_cpus && !ret; k++) {
		ret = ring_init(&r->rings[k], TDR_RING);
		r->cpus[k].ring = &r->rings[k];
		r->nr_rings = k + 1;
	}
	if (ret) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->event_of = report_event_of;
	s->ret_event_of = report_ret_event_of;
	s->event_ctx = r;
	r->replay = true;
	r->lost = 0;
	atomic_store(&r->horizon, 0);
	ret = writer_start(&r->w, r->rings, r->nr_cpus, s, horizon_of, r);
	if (ret < 0) {
		snprintf(err, errlen, "writer thread: %s", strerror(-ret));
		return ret;
	}
	ret = iterate(r, err, errlen);
	writer_stop(&r->w, r->lost);
	writer_free(&r->w);
	return ret;
}

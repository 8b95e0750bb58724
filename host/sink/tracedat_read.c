/* trace.dat -> records (see tracedat_read.h), its first half: opening the file (libtracecmd parses
 * it) and rebuilding each probe event's spec from its format, bounded against the fe_spec limits;
 * the records are tracedat_replay.c's. */
#include "host/sink/tracedat_read.h"
#include "host/sink/tracedat_reader.h"
#include "vmi/vmi_file.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define HVT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HVT_SANITIZED 1
#endif
#endif
#ifndef HVT_SANITIZED
#define HVT_SANITIZED 0
#endif
#if HVT_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif

/* ---- the specs ------------------------------------------------------------------------------ */

static int fail(struct tdr *r, char *err, size_t errlen, const char *fmt, const char *a,
		const char *b)
{
	char what[512];

	snprintf(what, sizeof(what), fmt, a, b);
	msg_fmt(err, errlen, "%s: %s", r->path, what);
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

		if (!count || count > FE_MAX_ARRAY || !tdr_elem_size(elem) ||
		    tf->size != (int)(count * elem))
			return fail(r, err, errlen, "event %s: field %s: bad array", where,
				    f->name);
		f->count = count;
		f->size = f->kind == FE_SYMBOL ? 8 : elem;
		f->memory = true;
		return 0;
	}
	if (!tdr_elem_size((unsigned)tf->size))
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

/* trace.dat's identification, as trace-cmd writes it: magic, "tracing", then the version string */
static const char td_magic[10] = {0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'};
/* Page sizes a trace.dat may name: libtracecmd allocates (and maps) buffers of that size, and
 * loops on a size it cannot map; every kernel page size lies in between. */
#define TD_PAGE_MIN 4096u
#define TD_PAGE_MAX (1u << 20)

/* The fixed start of trace.dat @fd (@path in messages) before libtracecmd reads any of it:
 * magic, version, endianness and a page size it can allocate. 0 or -EINVAL with @err. */
static int check_header(int fd, const char *path, char *err, size_t errlen)
{
	uint8_t h[64];
	ssize_t n = pread(fd, h, sizeof(h), 0);
	size_t v = sizeof(td_magic);
	uint32_t page;

	if (n < (ssize_t)sizeof(td_magic) || memcmp(h, td_magic, sizeof(td_magic))) {
		msg_fmt(err, errlen, "%s: not a trace.dat (no trace-cmd magic at its start)",
			 path);
		return -EINVAL;
	}
	while (v < (size_t)n && v < 24 && h[v] >= '0' && h[v] <= '9')
		v++;
	/* the version's NUL, endianness (0 little, 1 big), sizeof(long), the page size */
	if (v == sizeof(td_magic) || v + 7 > (size_t)n || h[v] || h[v + 1] > 1) {
		msg_fmt(err, errlen, "%s: a trace.dat header that is cut short or malformed",
			 path);
		return -EINVAL;
	}
	page = h[v + 1] ? (uint32_t)h[v + 3] << 24 | h[v + 4] << 16 | h[v + 5] << 8 | h[v + 6]
			: (uint32_t)h[v + 6] << 24 | h[v + 5] << 16 | h[v + 4] << 8 | h[v + 3];
	if (page < TD_PAGE_MIN || page > TD_PAGE_MAX || (page & (page - 1))) {
		msg_fmt(err, errlen,
			 "%s: page size %u in its header (a power of two from %u to %u expected)",
			 path, page, TD_PAGE_MIN, TD_PAGE_MAX);
		return -EINVAL;
	}
	return 0;
}

/* In the pre-screen child: what libtracecmd may take, and where its words go. Its allocations are
 * bounded (RLIMIT_AS: what the process holds plus TD_CHILD_ALLOC; a size a file names beyond that
 * fails, as it would on a small host), and what it or a sanitizer would print about the file (an
 * allocation too big for ASan, a leak on its error path) goes to /dev/null: the verdict is the
 * parent's one line, and a sanitizer report there is not about our code. */
#define TD_CHILD_ALLOC (2ull << 30)
static void child_bounds(void)
{
	unsigned long long pages = 0;
	struct rlimit rl;
	FILE *f = fopen("/proc/self/statm", "re");
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (f) {
		if (fscanf(f, "%llu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	if (pages) {
		rl.rlim_cur = rl.rlim_max =
		    pages * (unsigned long long)sysconf(_SC_PAGESIZE) + TD_CHILD_ALLOC;
		setrlimit(RLIMIT_AS, &rl);
	}
	if (null >= 0) {
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
	}
#if HVT_SANITIZED
	__sanitizer_set_report_fd((void *)(intptr_t)STDERR_FILENO);
#endif
}

int tdr_try_in_child(const char *path, char *err, size_t errlen)
{
	int st = 0, fd;
	pid_t pid;

	/* a regular file (a FIFO would block libtracecmd's open), whose header asks for nothing
	 * absurd */
	fd = vmi_file_open(NULL, path, 0, NULL, err, errlen);
	if (fd < 0)
		return -EINVAL;
	st = check_header(fd, path, err, errlen);
	close(fd);
	if (st < 0)
		return st;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		msg_fmt(err, errlen, "%s: fork: %s", path, strerror(errno));
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
		child_bounds();
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
		msg_fmt(err, errlen, "%s: libtracecmd crashed reading it (signal %d): a bad file",
			path, WTERMSIG(st));
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
		msg_fmt(err, errlen, "%s: its event data cannot be read", path);
	else
		msg_fmt(err, errlen, "%s: not a trace.dat libtracecmd can read (bad or truncated)",
			path);
	return -EINVAL;
}

struct tdr *tdr_open(const char *path, char *err, size_t errlen)
{
	struct tdr *r = calloc(1, sizeof(*r));
	struct tep_event **evs;
	int missing = 0, n;

	if (!r) {
		msg_fmt(err, errlen, "out of memory");
		return NULL;
	}
	r->path = path;
	tracecmd_set_loglevel(TEP_LOG_NONE);
	tep_set_loglevel(TEP_LOG_NONE);
	if (tdr_try_in_child(path, err, errlen) < 0) {
		free(r);
		return NULL;
	}
	r->h = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!r->h) {
		msg_fmt(err, errlen, "%s: not a trace.dat libtracecmd can read (bad or truncated)",
			path);
		free(r);
		return NULL;
	}
	r->tep = tracecmd_get_tep(r->h);
	n = tep_get_cpus(r->tep);
	if (n < 1 || n > TDR_MAX_CPUS) {
		msg_fmt(err, errlen, "%s: %d CPUs (expected 1 to %d)", path, n, TDR_MAX_CPUS);
		goto bad;
	}
	r->nr_cpus = (unsigned)n;
	n = tep_get_events_count(r->tep);
	evs = tep_list_events(r->tep, TEP_EVENT_SORT_ID);
	r->roles = calloc((size_t)(n > 0 ? n : 1), sizeof(*r->roles));
	r->specs = calloc(TDR_MAX_SPECS, sizeof(*r->specs));
	r->cpus = calloc(r->nr_cpus, sizeof(*r->cpus));
	if (!r->roles || !r->specs || !r->cpus) {
		msg_fmt(err, errlen, "out of memory");
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
				msg_fmt(err, errlen, "%s: more than %d probe events", path,
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
		msg_fmt(err, errlen,
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

unsigned long long tdr_trace_id(struct tdr *r)
{
	return tracecmd_get_traceid(r->h);
}

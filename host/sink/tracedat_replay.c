/* trace.dat's records -> the record stream (see tracedat_read.h): pass 1 names the addresses,
 * pass 2 merges each function's events into one record per call and feeds them through a writer to
 * the sink. Every field read from the file is bounded against its record. */
#include "host/sink/tracedat_read.h"
#include "host/sink/tracedat_reader.h"
#include "host/sink/out_fail.h"
#include "host/sink/writer.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdatomic.h>

/* ---- the records ---------------------------------------------------------------------------- */

/* An unsigned field of @rec, bounded by the record; 0 when absent or out of it. */
static uint64_t num(const struct tep_format_field *f, const struct tep_record *rec)
{
	uint64_t v = 0;

	if (!f || f->offset < 0 || !tdr_elem_size((unsigned)f->size) ||
	    f->offset + f->size > rec->size)
		return 0;
	memcpy(&v, (const uint8_t *)rec->data + f->offset, (size_t)f->size);
	return v;
}

/* The payload part of @t's event (fe_capture's layout) from @rec, into @out (fe_event_size). */
static void rebuild_payload(const struct tdr_spec *t, const struct tep_record *rec, uint8_t *out)
{
	uint32_t fault = (uint32_t)num(t->fault, rec);
	const uint8_t *data = rec->data;

	for (unsigned i = 0; i < t->spec.nr_fields; i++) {
		const struct fe_field *f = &t->spec.fields[i];
		const struct tep_format_field *tf = t->field[i];
		size_t size = fe_field_data_size(f);
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

/* The writer's lookup (sink_lookup_fn) in a file read back: the spec of an event or a typed return
 * from the formats of the file's -e and -r events, no probe. */
static void report_lookup(const void *ctx, struct sink_rec *rec)
{
	const struct tdr *r = ctx;

	rec->probe = NULL;
	if (rec->r->type == HVT_REC_EVENT || rec->r->type == HVT_REC_EVENT_ALONE)
		rec->spec = map_get(r->events, rec->r->ip);
	else if (rec->r->type == HVT_REC_RETURN_EVENT)
		rec->spec = map_get(r->rets, rec->r->ip);
	else
		rec->spec = NULL;
}

/* -e func+OFFSET: an event at an instruction inside a function is named p_<func>_<OFFSET>_<n>;
 * its first record's address says so (not a function's start), and the spec becomes
 * <func>+OFFSET. An address the file's symbols do not place leaves the name as it is. */
static void place_event(struct tdr *r, struct tdr_spec *t, uint64_t ip)
{
	const char *name = NULL;
	unsigned long long start = 0;
	unsigned long size = 0;
	char suffix[24];
	size_t n, k;

	if (t->placed)
		return;
	t->placed = true;
	if (tep_find_function_info(r->tep, ip, &name, &start, &size) != 1 || !name || !start ||
	    ip <= start || ip - start > FE_MAX_INSIDE)
		return;
	n = strlen(t->spec.func);
	k = (size_t)snprintf(suffix, sizeof(suffix), "_%llu", ip - start);
	if (n <= k || strcmp(t->spec.func + n - k, suffix) ||
	    strncmp(t->spec.func, name, n - k) || name[n - k])
		return;
	t->spec.func[n - k] = 0;
	t->spec.offset = (uint32_t)(ip - start);
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
			p += 1 + fe_field_data_size(f);
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
	if (!r->replay) {
		name_record(r, rec, c);
		return;
	}
	/* the writer drains the ring: wait for room rather than lose a record of the file */
	while (!ring_emit(c->ring, rec, payload, payload ? len : 0))
		usleep(200);
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
	if (r->replay && out_fail_raised()) {
		/* the output failed: the rest is not read (the sink's error is the line) */
		writer_cut(&r->w);
		return 1;
	}
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
		struct hvt_record lost;

		flush_pending(r, c);
		hvt_record_lost(&lost, rec->ts, (unsigned)cpu,
				rec->missed_events > 0 ? (uint64_t)rec->missed_events : 0);
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
		place_event(r, ro->spec, ip);
		/* the graph entry of the same call, or the event before it in the chain */
		if (!(c->pending && c->rec.ts == rec->ts && c->rec.ip == ip &&
		      (c->rec.type == HVT_REC_ENTRY || c->rec.type == HVT_REC_EVENT ||
		       c->rec.type == HVT_REC_EVENT_ALONE) &&
		      (c->nr_parts ? c->parts[c->nr_parts - 1]->spec.next == &t->spec
				   : t->nth == 0))) {
			flush_pending(r, c);
			/* in a function_graph trace, with no graph entry: a call the graph
			 * did not trace */
			start_record(c, rec, cpu, pid, comm_of(r, pid, cpu),
				     r->graph ? HVT_REC_EVENT_ALONE : HVT_REC_EVENT);
			c->rec.ip = ip;
			c->rec.parent = num(t->parent, rec);
		}
		if (c->rec.type == HVT_REC_ENTRY && t->parent)
			c->rec.parent = num(t->parent, rec);
		if (c->rec.type == HVT_REC_ENTRY)
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
		msg_fmt(err, errlen, "%s: a record's timestamp is beyond 2^62 ns", r->path);
	else if (r->err)
		msg_fmt(err, errlen, "%s: %s", r->path, strerror(-r->err));
	if (r->err)
		return r->err == -ERANGE ? -EINVAL : r->err;
	if (ret < 0) {
		msg_fmt(err, errlen, "%s: its event data cannot be read", r->path);
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
		msg_fmt(err, errlen, "out of memory");
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

int tdr_replay(struct tdr *r, struct sink *s, bool graph, char *err, size_t errlen)
{
	int ret = 0;

	r->rings = calloc(r->nr_cpus, sizeof(*r->rings));
	if (!r->rings) {
		msg_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (unsigned k = 0; k < r->nr_cpus && !ret; k++) {
		ret = ring_init(&r->rings[k], TDR_RING);
		r->cpus[k].ring = &r->rings[k];
		r->nr_rings = k + 1;
	}
	if (ret) {
		msg_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->w.lookup = report_lookup;
	r->w.lookup_ctx = r;
	r->replay = true;
	r->graph = graph;
	r->lost = 0;
	atomic_store(&r->horizon, 0);
	ret = writer_start(&r->w, r->rings, r->nr_cpus, s, horizon_of, r);
	if (ret < 0) {
		msg_fmt(err, errlen, "writer thread: %s", strerror(-ret));
		return ret;
	}
	ret = iterate(r, err, errlen);
	writer_stop(&r->w, r->lost);
	writer_free(&r->w);
	return ret;
}

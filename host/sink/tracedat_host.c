#include "host/sink/tracedat_host.h"
#include "host/sink/tracedat_read.h"
#include "host/util/msg_fmt.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>
#include <trace-cmd.h>

struct reading {
	struct host_side *h;
	struct tep_event *sw, *exit, *entry, *uexit, *ioctl; /* NULL: not in the file */
	struct tep_format_field *prev_pid, *next_pid, *reason, *rip, *ureason, *cmd;
	int err;
};

static bool grow(void **v, size_t *cap, size_t nr, size_t size)
{
	void *n;
	size_t c;

	if (nr < *cap)
		return true;
	if (nr >= HOST_SIDE_MAX_EVENTS)
		return false;
	c = *cap ? *cap * 2 : 1024;
	n = realloc(*v, c * size);
	if (!n)
		return false;
	*v = n;
	*cap = c;
	return true;
}

static int vcpu_of(const struct host_side *h, int tid)
{
	for (unsigned i = 0; i < h->nr_vcpus; i++)
		if (h->v[i].tid == tid)
			return (int)i;
	return -1;
}

static void go_away(struct hs_vcpu *v, uint64_t ts)
{
	if (!v->is_away) {
		v->is_away = true;
		v->away_since = ts;
	}
}

static bool come_back(struct reading *rd, struct hs_vcpu *v, uint64_t ts)
{
	if (!v->is_away)
		return true;
	v->is_away = false;
	if (ts <= v->away_since)
		return true;
	if (!grow((void **)&v->away, &v->cap_away, v->nr_away, sizeof(*v->away))) {
		rd->err = E2BIG;
		return false;
	}
	v->away[v->nr_away++] = (struct hs_span){v->away_since, ts};
	return true;
}

static unsigned long long field(struct tep_format_field *f, struct tep_record *rec, bool *ok)
{
	unsigned long long val = 0;

	if (!f || (unsigned)f->offset + (unsigned)f->size > (unsigned)rec->size ||
	    tep_read_number_field(f, rec->data, &val) < 0)
		*ok = false;
	return val;
}

bool host_side_reason_from_info(const char *info, char *name, size_t len)
{
	const char *p = strstr(info, "reason ");
	size_t n = 0;
	bool digits = true;

	if (!p || !len)
		return false;
	for (p += 7; (isalnum((unsigned char)p[n]) || p[n] == '_') && n + 1 < len; n++)
		digits = digits && isxdigit((unsigned char)p[n]);
	if (!n || isalnum((unsigned char)p[n]) || p[n] == '_' || digits ||
	    (n > 2 && p[0] == '0' && p[1] == 'x'))
		return false;
	memcpy(name, p, n);
	name[n] = 0;
	return true;
}

/* The index of @reason in h->names, or h->nr_names when it has none: O(1) for the reasons of VMX
 * and SVM (one lookup an exit record), a scan of at most HOST_SIDE_NAMES for any other number. */
static unsigned name_index(const struct host_side *h, uint32_t reason)
{
	unsigned i;

	if (reason < HOST_SIDE_INDEXED)
		return h->named[reason] ? h->named[reason] - 1u : h->nr_names;
	for (i = 0; i < h->nr_names && h->names[i].reason != reason; i++)
		;
	return i;
}

const char *host_side_reason_name(const struct host_side *h, uint32_t reason)
{
	unsigned i = name_index(h, reason);

	return i < h->nr_names && h->names[i].name[0] ? h->names[i].name : NULL;
}

/* The first exit of a reason: its name from the record printed by the file's own format. */
bool host_side_learns(const struct host_side *h, uint32_t reason)
{
	return name_index(h, reason) == h->nr_names && h->nr_names < HOST_SIDE_NAMES;
}

void host_side_learn(struct host_side *h, uint32_t reason, const char *info)
{
	unsigned i = h->nr_names;

	if (!host_side_learns(h, reason))
		return;
	h->names[i].reason = reason;
	h->names[i].name[0] = 0;
	h->nr_names++;
	if (reason < HOST_SIDE_INDEXED)
		h->named[reason] = (uint8_t)(i + 1);
	if (info)
		host_side_reason_from_info(info, h->names[i].name, sizeof(h->names[i].name));
}

static void learn_name(struct host_side *h, struct tep_handle *tep, struct tep_record *rec,
		       uint32_t reason)
{
	struct trace_seq seq;

	if (!host_side_learns(h, reason))
		return;
	trace_seq_init(&seq);
	tep_print_event(tep, &seq, rec, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&seq);
	host_side_learn(h, reason,
			seq.state == TRACE_SEQ__GOOD && seq.buffer ? seq.buffer : NULL);
	trace_seq_destroy(&seq);
}

/* In time order: a vCPU thread is away from its guest from its switch out (or kvm_exit) until it
 * shows it runs guest code again: kvm_entry where the host has kvm events for it, else its switch
 * in or any event it is the task of (a host may miss a switch in). A host whose KVM fires no
 * kvm_exit / kvm_entry (PVM) has its vCPU threads' kvm_userspace_exit as the exits (by KVM_EXIT_
 * reason) and their ioctl(KVM_RUN) as the way back. */
#define KVM_RUN_IOCTL 0xae80u
static int one(struct tracecmd_input *handle, struct tep_record *rec, int cpu, void *data)
{
	struct reading *rd = data;
	struct host_side *h = rd->h;
	struct tep_handle *tep = tracecmd_get_tep(handle);
	struct tep_event *ev = tep_find_event_by_record(tep, rec);
	int pid = tep_data_pid(tep, rec), v;
	bool ok = true;

	(void)cpu;
	h->events++;
	if (!ev)
		return 0;
	if (ev == rd->sw) {
		int prev = (int)field(rd->prev_pid, rec, &ok),
		    next = (int)field(rd->next_pid, rec, &ok);

		if (!ok)
			return 0;
		if ((v = vcpu_of(h, next)) >= 0 && !h->v[v].kvm_seen &&
		    !come_back(rd, &h->v[v], rec->ts))
			return -1;
		if ((v = vcpu_of(h, prev)) >= 0)
			go_away(&h->v[v], rec->ts);
		return 0;
	}
	if ((v = vcpu_of(h, pid)) < 0)
		return 0;
	if (ev == rd->exit || (ev == rd->uexit && !h->v[v].hw_seen)) {
		struct hs_vcpu *c = &h->v[v];
		uint32_t reason = (uint32_t)field(ev == rd->exit ? rd->reason : rd->ureason, rec, &ok);

		c->kvm_seen = h->kvm = true;
		c->hw_seen |= ev == rd->exit;
		if (!grow((void **)&c->exits, &c->cap_exits, c->nr_exits, sizeof(*c->exits))) {
			rd->err = E2BIG;
			return -1;
		}
		bool rip_ok = ev == rd->exit;
		uint64_t rip = ev == rd->exit ? field(rd->rip, rec, &rip_ok) : 0;

		c->exits[c->nr_exits++] =
		    (struct hs_exit){rec->ts, rip_ok ? rip : 0, ok ? reason : UINT32_MAX, rip_ok};
		if (ok)
			learn_name(h, tep, rec, reason);
		go_away(c, rec->ts);
		return 0;
	}
	if (ev == rd->entry) {
		h->v[v].kvm_seen = h->v[v].hw_seen = true;
		return come_back(rd, &h->v[v], rec->ts) ? 0 : -1;
	}
	if (ev == rd->uexit)
		return 0; /* KVM_RUN back in the VMM after a kvm_exit, counted there */
	if (ev == rd->ioctl) {
		if (field(rd->cmd, rec, &ok) != KVM_RUN_IOCTL || !ok || h->v[v].hw_seen)
			return 0;
		h->v[v].kvm_seen = true; /* a host without kvm_entry: KVM_RUN is the way back */
		return come_back(rd, &h->v[v], rec->ts) ? 0 : -1;
	}
	if (!h->v[v].kvm_seen && !come_back(rd, &h->v[v], rec->ts))
		return -1;
	return 0;
}

int host_side_read(struct host_side *h, const char *path, unsigned long long guest_id, char *err,
		   size_t errlen)
{
	struct tracecmd_input *handle;
	struct reading rd = {.h = h};
	const char *name = NULL;
	const int *pids = NULL;
	int n = 0, ret;
	struct tep_handle *tep;

	memset(h, 0, sizeof(*h));
	if (tdr_try_in_child(path, err, errlen) < 0)
		return -EINVAL;
	handle = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!handle) {
		msg_fmt(err, errlen, "%s: not a trace.dat libtracecmd can read", path);
		return -EINVAL;
	}
	if (!guest_id || tracecmd_get_guest_cpumap(handle, guest_id, &name, &n, &pids) < 0 ||
	    !pids || n < 1 || n > HOST_SIDE_MAX_VCPUS) {
		msg_fmt(err, errlen,
			"%s: no GUEST option for this guest's trace id 0x%llx (record it with "
			"record --host)",
			path, guest_id);
		tracecmd_close(handle);
		return -EINVAL;
	}
	snprintf(h->guest, sizeof(h->guest), "%s", name ? name : "?");
	h->nr_vcpus = (unsigned)n;
	for (int i = 0; i < n; i++)
		h->v[i].tid = pids[i];
	tep = tracecmd_get_tep(handle);
	rd.sw = tep_find_event_by_name(tep, "sched", "sched_switch");
	rd.exit = tep_find_event_by_name(tep, "kvm", "kvm_exit");
	rd.entry = tep_find_event_by_name(tep, "kvm", "kvm_entry");
	rd.uexit = tep_find_event_by_name(tep, "kvm", "kvm_userspace_exit");
	rd.ioctl = tep_find_event_by_name(tep, "syscalls", "sys_enter_ioctl");
	if (rd.sw) {
		rd.prev_pid = tep_find_field(rd.sw, "prev_pid");
		rd.next_pid = tep_find_field(rd.sw, "next_pid");
	}
	if (rd.exit) {
		rd.reason = tep_find_field(rd.exit, "exit_reason");
		rd.rip = tep_find_field(rd.exit, "guest_rip");
	}
	if (rd.uexit)
		rd.ureason = tep_find_field(rd.uexit, "reason");
	if (rd.ioctl)
		rd.cmd = tep_find_field(rd.ioctl, "cmd");
	ret = tracecmd_iterate_events(handle, NULL, 0, one, &rd);
	tracecmd_close(handle);
	if (ret < 0 || rd.err) {
		msg_fmt(err, errlen, "%s: %s", path,
			rd.err == E2BIG ? "more kvm events per vCPU than hvtrace reads (16M)"
					: "its event data cannot be read");
		host_side_free(h);
		return -EINVAL;
	}
	for (unsigned i = 0; i < h->nr_vcpus; i++) /* away at the end: until the end of time */
		if (h->v[i].is_away && !come_back(&rd, &h->v[i], UINT64_MAX))
			break;
	/* a vCPU whose exits were all kvm_userspace_exits (one before its first kvm_exit, a KVM_RUN
	 * that never entered, does not make a host without kvm_exit, nor counts as an exit) */
	for (unsigned i = 0; i < h->nr_vcpus; i++) {
		struct hs_vcpu *v = &h->v[i];
		size_t k = 0;

		h->user_exits |= v->nr_exits && !v->hw_seen;
		for (size_t j = 0; v->hw_seen && j < v->nr_exits; j++) /* those KVM_RUNs' own */
			if (v->exits[j].hw)
				v->exits[k++] = v->exits[j];
		if (v->hw_seen)
			v->nr_exits = k;
	}
	return 0;
}

/* The first of @n spans (sorted, disjoint) that ends after @t. */
static size_t first_after(const struct hs_span *s, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid].to <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint64_t host_side_away(const struct host_side *h, unsigned cpu, uint64_t from, uint64_t to,
			uint64_t *away_ns, uint64_t *by_reason, unsigned nr_reasons,
			uint64_t *other)
{
	const struct hs_vcpu *v;
	uint64_t exits = 0;
	size_t lo, hi;

	*away_ns = 0;
	if (cpu >= h->nr_vcpus || to <= from)
		return 0;
	v = &h->v[cpu];
	for (size_t i = first_after(v->away, v->nr_away, from);
	     i < v->nr_away && v->away[i].from < to; i++) {
		uint64_t a = v->away[i].from > from ? v->away[i].from : from;
		uint64_t b = v->away[i].to < to ? v->away[i].to : to;

		*away_ns += b - a;
	}
	lo = 0;
	hi = v->nr_exits;
	while (lo < hi) { /* the first exit at or after @from */
		size_t mid = lo + (hi - lo) / 2;

		if (v->exits[mid].ts < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < v->nr_exits && v->exits[i].ts < to; i++, exits++) {
		if (v->exits[i].reason < nr_reasons)
			by_reason[v->exits[i].reason]++;
		else
			(*other)++;
	}
	return exits;
}

bool host_side_exit_of(const struct host_side *h, unsigned cpu, uint64_t t, uint64_t *exit_ts,
		       uint64_t *rip)
{
	const struct hs_vcpu *v;
	const struct hs_exit *e;
	size_t lo = 0, hi, a;

	if (cpu >= h->nr_vcpus)
		return false;
	v = &h->v[cpu];
	hi = v->nr_exits;
	while (lo < hi) { /* the first exit after @t */
		size_t mid = lo + (hi - lo) / 2;

		if (v->exits[mid].ts <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	e = &v->exits[lo - 1];
	a = first_after(v->away, v->nr_away, t); /* the stretch away that holds @t, if one does */
	if (!e->hw || a == v->nr_away || v->away[a].from > t || e->ts < v->away[a].from)
		return false;
	*exit_ts = e->ts;
	*rip = e->rip;
	return true;
}

void host_side_free(struct host_side *h)
{
	for (unsigned i = 0; i < HOST_SIDE_MAX_VCPUS; i++) {
		free(h->v[i].away);
		free(h->v[i].exits);
		h->v[i].away = NULL;
		h->v[i].exits = NULL;
	}
}

/* `report --exits`: for each traced function of a function_graph recording made with --host, its
 * calls and the time they took, split into guest time and host time (the call's vCPU thread away
 * from the guest meanwhile: descheduled on the host, or in host mode between a kvm_exit and the
 * next kvm_entry), and the VM exits in its calls by exit reason, from the paired host file
 * (tracedat_host.c). A call counts for its function inclusively (its callees' time is in it), as
 * ftrace's function profiler counts. Sorted by host time, then total time. */
#include "host/sink/sink_exits.h"
#include "host/trace/escape.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define EXITS_MAX_FUNCS (1u << 20)
#define EXITS_REASONS	1100 /* exit reasons counted by number: VMX's and SVM's (0x400s) fit */
#define EXITS_TOP	4    /* reasons named per function; the rest summed */

struct ex_func {
	uint64_t ip, calls, total, away, exits;
	uint32_t reason[EXITS_TOP];
	uint64_t reason_n[EXITS_TOP];
	uint64_t reason_other;
};

struct exits {
	const struct host_side *hs;
	struct ex_func *f;
	uint32_t nr, cap;
	uint32_t *hash;		/* index + 1, 0 = free; 2 * cap slots */
	uint64_t calls_outside; /* calls of vCPUs the host file does not map */
	uint64_t *by_reason;	/* scratch, EXITS_REASONS */
	bool oom;
};

static uint32_t slot_of(uint64_t ip, uint32_t slots)
{
	return (uint32_t)((ip * 0x9e3779b97f4a7c15ull) >> 32) % slots;
}

static bool rehash(struct exits *x, uint32_t cap)
{
	struct ex_func *f = realloc(x->f, (size_t)cap * sizeof(*f));
	uint32_t *h = calloc(2 * (size_t)cap, sizeof(*h));

	if (!f || !h) {
		free(h);
		if (f)
			x->f = f;
		return false;
	}
	x->f = f;
	free(x->hash);
	x->hash = h;
	x->cap = cap;
	for (uint32_t i = 0; i < x->nr; i++) {
		uint32_t k = slot_of(f[i].ip, 2 * cap);

		while (h[k])
			k = (k + 1) % (2 * cap);
		h[k] = i + 1;
	}
	return true;
}

static struct ex_func *func_of(struct exits *x, uint64_t ip)
{
	uint32_t k;

	if (x->cap) {
		for (k = slot_of(ip, 2 * x->cap); x->hash[k]; k = (k + 1) % (2 * x->cap))
			if (x->f[x->hash[k] - 1].ip == ip)
				return &x->f[x->hash[k] - 1];
	}
	if (x->nr == EXITS_MAX_FUNCS ||
	    (x->nr == x->cap && !rehash(x, x->cap ? 2 * x->cap : 1024))) {
		x->oom = true;
		return NULL;
	}
	for (k = slot_of(ip, 2 * x->cap); x->hash[k]; k = (k + 1) % (2 * x->cap))
		;
	x->hash[k] = x->nr + 1;
	memset(&x->f[x->nr], 0, sizeof(x->f[0]));
	x->f[x->nr].ip = ip;
	return &x->f[x->nr++];
}

static void add_reasons(struct ex_func *f, const uint64_t *by, uint64_t other)
{
	f->reason_other += other;
	for (uint32_t r = 0; r < EXITS_REASONS; r++) {
		unsigned k;

		if (!by[r])
			continue;
		for (k = 0; k < EXITS_TOP && f->reason_n[k] && f->reason[k] != r; k++)
			;
		if (k < EXITS_TOP) {
			f->reason[k] = r;
			f->reason_n[k] += by[r];
		} else {
			f->reason_other += by[r];
		}
	}
}

static void begin(struct sink *s)
{
	(void)s;
}

/* A return: its call's time and the host's spans of its vCPU meanwhile. */
static void ret(struct sink *s, const struct sink_rec *rec)
{
	struct exits *x = s->priv;
	const struct hvt_record *r = rec->r;
	struct ex_func *f;
	uint64_t from, away, other = 0, n;

	if (r->cpu >= x->hs->nr_vcpus) {
		x->calls_outside++;
		return;
	}
	f = func_of(x, r->ip);
	if (!f)
		return;
	from = r->duration < r->ts ? r->ts - r->duration : 0;
	memset(x->by_reason, 0, EXITS_REASONS * sizeof(*x->by_reason));
	n = host_side_away(x->hs, r->cpu, from, r->ts, &away, x->by_reason, EXITS_REASONS, &other);
	f->calls++;
	f->total += r->duration;
	f->away += away < r->duration ? away : r->duration;
	f->exits += n;
	if (n)
		add_reasons(f, x->by_reason, other);
}

static int by_host_time(const void *a, const void *b)
{
	const struct ex_func *x = a, *y = b;

	if (x->away != y->away)
		return x->away < y->away ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

static void us(char *buf, size_t len, uint64_t ns)
{
	snprintf(buf, len, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
}

/* Appends @word to the space-separated list @buf of @cap bytes (@used so far), cut at its end. */
static void append(char *buf, size_t cap, size_t *used, const char *word)
{
	int n;

	if (*used + 1 >= cap)
		return;
	n = snprintf(buf + *used, cap - *used, "%s%s", *used ? " " : "", word);
	*used = n < 0 ? cap : *used + (size_t)n >= cap ? cap - 1 : *used + (size_t)n;
}

static void end(struct sink *s)
{
	struct exits *x = s->priv;
	const struct host_side *hs = x->hs;
	char line[1024];

	qsort(x->f, x->nr, sizeof(*x->f), by_host_time);
	snprintf(
	    line, sizeof(line),
	    "# report --exits: guest %.64s, %u vCPUs, %llu host events; host time is the vCPU's "
	    "thread away from the guest during the call (%s)\n",
	    hs->guest, hs->nr_vcpus, hs->events,
	    hs->user_exits ? "descheduled, or from a return of KVM_RUN to the VMM to the next "
			     "KVM_RUN: this host's KVM fires no kvm_exit"
	    : hs->kvm	   ? "descheduled, or between kvm_exit and kvm_entry"
			   : "descheduled; no kvm_exit in the host file: no VM exits counted");
	sink_write(s, line, strlen(line));
	snprintf(line, sizeof(line), "#%-39s %8s %14s %14s %14s %8s  %s\n", " function", "calls",
		 "total(us)", "guest(us)", "host(us)", "exits", "by reason");
	sink_write(s, line, strlen(line));
	for (uint32_t i = 0; i < x->nr; i++) {
		const struct ex_func *f = &x->f[i];
		const struct vmi_sym *sym = vmi_symtab_lookup(s->syms, f->ip);
		char name[ESCAPE_SIZE(64)], tot[32], gst[32], hst[32], reasons[256] = "", one[64];
		size_t used = 0;

		if (sym)
			escape_str(name, sizeof(name), sym->name, 64);
		else
			snprintf(name, sizeof(name), "0x%" PRIx64, f->ip);
		us(tot, sizeof(tot), f->total);
		us(gst, sizeof(gst), f->total - f->away);
		us(hst, sizeof(hst), f->away);
		for (unsigned k = 0; k < EXITS_TOP && f->reason_n[k]; k++) {
			const char *rn = host_side_reason_name(x->hs, f->reason[k]);

			if (rn)
				snprintf(one, sizeof(one), "%s:%" PRIu64, rn, f->reason_n[k]);
			else
				snprintf(one, sizeof(one), "%u:%" PRIu64, f->reason[k],
					 f->reason_n[k]);
			append(reasons, sizeof(reasons), &used, one);
		}
		if (f->reason_other) {
			snprintf(one, sizeof(one), "other:%" PRIu64, f->reason_other);
			append(reasons, sizeof(reasons), &used, one);
		}
		snprintf(line, sizeof(line),
			 "  %-38s %8" PRIu64 " %14s %14s %14s %8" PRIu64 "  %s\n", name, f->calls,
			 tot, gst, hst, f->exits, reasons);
		sink_write(s, line, strlen(line));
	}
	if (x->calls_outside) {
		snprintf(line, sizeof(line),
			 "# %llu calls on vCPUs the host file does not map: not counted\n",
			 (unsigned long long)x->calls_outside);
		sink_write(s, line, strlen(line));
	}
	if (x->oom) {
		snprintf(line, sizeof(line), "# out of memory: some functions not counted\n");
		sink_write(s, line, strlen(line));
	}
}

static const struct sink_ops exits_ops = {.begin = begin, .ret = ret, .end = end};

int sink_exits_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus,
		    const struct host_side *hs)
{
	struct exits *x = calloc(1, sizeof(*x));

	memset(s, 0, sizeof(*s));
	if (!x || !(x->by_reason = calloc(EXITS_REASONS, sizeof(*x->by_reason)))) {
		free(x);
		return -ENOMEM;
	}
	x->hs = hs;
	sink_setup(s, &exits_ops, out, syms, nr_cpus);
	s->priv = x;
	return 0;
}

void sink_exits_free(struct sink *s)
{
	struct exits *x = s->priv;

	if (!x)
		return;
	free(x->f);
	free(x->hash);
	free(x->by_reason);
	free(x);
	s->priv = NULL;
}

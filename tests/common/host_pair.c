#include "tests/common/host_pair.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MAX_VCPUS 8

unsigned hv_guest_threads(const char *opt, int *tids, unsigned max)
{
	unsigned nv = 0;

	for (const char *p = opt; (p = strstr(p, " [guest cpu, host pid]")); p++) {
		const char *line = p;
		unsigned v;
		int tid;

		while (line > opt && line[-1] != '\n')
			line--;
		assert_int_equal(sscanf(line, " %u %d", &v, &tid), 2);
		assert_true(v == nv && tid > 0 && nv < max);
		tids[nv++] = tid;
	}
	return nv;
}

struct vcpu_walk {
	bool out, in_guest, kvm;
	/* no kvm_exit seen: its kvm_userspace_exits are the exits, KVM_RUN the way back */
	bool run;
	unsigned long long since, last_exit;
	unsigned long long (*away)[2];
	size_t naway;
	unsigned long long *exits;
	size_t nexits;
};

struct call {
	size_t f;
	unsigned cpu;
	unsigned long long from, to;
};

static void go_out(struct vcpu_walk *v, unsigned long long ts)
{
	if (!v->out) {
		v->out = true;
		v->since = ts;
	}
}

static void come_back(struct vcpu_walk *v, unsigned long long ts)
{
	if (v->out && ts > v->since) {
		v->away = realloc(v->away, (v->naway + 1) * sizeof(*v->away));
		assert_non_null(v->away);
		v->away[v->naway][0] = v->since;
		v->away[v->naway++][1] = ts;
	}
	v->out = false;
}

/* The task pid of a report line: the digits after the last '-' before the spaces before '['. */
static int task_pid(const char *l, const char *bracket)
{
	const char *d = bracket;

	while (d > l && d[-1] == ' ')
		d--;
	while (d > l && d[-1] >= '0' && d[-1] <= '9')
		d--;
	return d > l && d[-1] == '-' && d < bracket ? atoi(d) : -1;
}

static int vcpu_of(const int *tids, unsigned nv, int pid)
{
	for (unsigned v = 0; v < nv; v++)
		if (tids[v] == pid)
			return (int)v;
	return -1;
}

static void host_line(const char *l, int pid, unsigned long long ts, const int *tids, unsigned nv,
		      struct vcpu_walk *vw, struct hv_pair *w)
{
	const char *p;
	int v = vcpu_of(tids, nv, pid);

	if (strstr(l, " sched_switch:") && (p = strstr(l, "prev_pid="))) {
		int prev = atoi(p + 9), next = (p = strstr(l, "next_pid=")) ? atoi(p + 9) : -1;
		int vn = vcpu_of(tids, nv, next), vp = vcpu_of(tids, nv, prev);

		if (vn >= 0 && !vw[vn].kvm && !vw[vn].run)
			come_back(&vw[vn], ts);
		if (vp >= 0)
			go_out(&vw[vp], ts);
		return;
	}
	if (v < 0)
		return;
	if (strstr(l, " kvm_exit:")) {
		vw[v].kvm = true;
		vw[v].in_guest = false;
		vw[v].last_exit = ts;
		vw[v].exits = realloc(vw[v].exits, (vw[v].nexits + 1) * sizeof(*vw[v].exits));
		assert_non_null(vw[v].exits);
		vw[v].exits[vw[v].nexits++] = ts;
		w->exits_total++;
		go_out(&vw[v], ts);
	} else if (strstr(l, " kvm_entry:")) {
		vw[v].kvm = vw[v].in_guest = true;
		come_back(&vw[v], ts);
	} else if (strstr(l, " kvm_userspace_exit:")) {
		/* KVM_RUN returned to the VMM: its kvm_exit, where traced, came first and counted;
		 * where the host fires none (PVM) this is the exit */
		if (!vw[v].kvm) {
			vw[v].run = true;
			vw[v].in_guest = false;
			vw[v].last_exit = ts;
			vw[v].exits =
			    realloc(vw[v].exits, (vw[v].nexits + 1) * sizeof(*vw[v].exits));
			assert_non_null(vw[v].exits);
			vw[v].exits[vw[v].nexits++] = ts;
			w->exits_total++;
			go_out(&vw[v], ts);
		}
	} else if (strstr(l, " sys_enter_ioctl:")) {
		if (!vw[v].kvm && strstr(l, " cmd=0x0000ae80")) {
			vw[v].run = vw[v].in_guest = true;
			come_back(&vw[v], ts);
		}
	} else if (!vw[v].kvm && !vw[v].run) {
		come_back(&vw[v], ts);
	}
}

void hv_pair_walk(const char *raw, const char *host_label, const int *tids, unsigned nv,
		  struct hv_pair *w)
{
	char *copy = strdup(raw), *save = NULL;
	struct vcpu_walk vw[MAX_VCPUS];
	struct call *calls = NULL;
	size_t ncalls = 0;

	assert_true(nv <= MAX_VCPUS);
	memset(vw, 0, sizeof(vw));
	memset(w, 0, sizeof(*w));
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		const char *b = strstr(l, "] "), *p;
		unsigned long long sec, ns, ts;
		int cpu;

		if (!b || sscanf(b + 2, "%llu.%llu:", &sec, &ns) != 2)
			continue;
		ts = sec * 1000000000ull + ns;
		for (p = b; p > l && *p != '['; p--)
			;
		cpu = atoi(p + 1);
		if (!strncmp(l + strspn(l, " "), host_label, strlen(host_label))) {
			host_line(l, task_pid(l, p), ts, tids, nv, vw, w);
			continue;
		}
		if (!strstr(l, " funcgraph_"))
			continue;
		w->guest_events++;
		assert_true(cpu >= 0 && (unsigned)cpu < nv);
		if (vw[cpu].kvm && !vw[cpu].in_guest) {
			double us = (double)(ts - vw[cpu].last_exit) / 1000.0;

			w->outside++;
			if (us > w->worst_us)
				w->worst_us = us;
		}
		if ((p = strstr(l, " funcgraph_exit: "))) {
			const char *c = strstr(p, "calltime="), *t = strstr(p, "rettime="),
				   *fn = strstr(p, "func=");
			char name[64];
			unsigned long long call, ret;
			size_t f;

			assert_true(fn && c && t && sscanf(fn + 5, "%63s", name) == 1);
			call = strtoull(c + 9, NULL, 16);
			ret = strtoull(t + 8, NULL, 16);
			for (f = 0; f < w->nfn && strcmp(w->fn[f].name, name); f++)
				;
			if (f == w->nfn) {
				assert_true(w->nfn < HV_PAIR_FUNCS);
				snprintf(w->fn[w->nfn++].name, sizeof(w->fn[0].name), "%s", name);
			}
			calls = realloc(calls, (ncalls + 1) * sizeof(*calls));
			assert_non_null(calls);
			calls[ncalls++] = (struct call){f, (unsigned)cpu, ts - (ret - call), ts};
			w->fn[f].calls++;
			w->fn[f].total += ret - call;
		}
	}
	for (unsigned v = 0; v < nv; v++)
		if (vw[v].out)
			come_back(&vw[v], ~0ull);
	for (size_t i = 0; i < ncalls; i++) {
		const struct call *c = &calls[i];
		const struct vcpu_walk *v = &vw[c->cpu];

		for (size_t k = 0; k < v->nexits; k++)
			w->fn[c->f].exits += v->exits[k] >= c->from && v->exits[k] < c->to;
		for (size_t k = 0; k < v->naway; k++) {
			unsigned long long lo = v->away[k][0] > c->from ? v->away[k][0] : c->from;
			unsigned long long hi = v->away[k][1] < c->to ? v->away[k][1] : c->to;

			if (hi > lo)
				w->fn[c->f].away += hi - lo;
		}
	}
	for (unsigned v = 0; v < nv; v++) {
		free(vw[v].away);
		free(vw[v].exits);
	}
	free(calls);
	free(copy);
}

static void us3(char *buf, size_t len, unsigned long long ns)
{
	snprintf(buf, len, "%llu.%03llu", ns / 1000, ns % 1000);
}

void hv_pair_check_exits(const char *rep, const struct hv_pair *w)
{
	for (size_t f = 0; f < w->nfn; f++) {
		const struct hv_pair_fn *fn = &w->fn[f];
		size_t n = strlen(fn->name);
		const char *line = rep;
		char tot[32], gst[32], hst[32], et[32], eg[32], eh[32];
		long calls, exits;

		/* "  NAME   calls ..." */
		while ((line = strstr(line, fn->name)) &&
		       !(line >= rep + 2 && line[-1] == ' ' && line[-2] == ' ' && line[n] == ' '))
			line++;
		if (!line)
			fail_msg("report --exits has no line for %s:\n%s", fn->name, rep);
		assert_int_equal(
		    sscanf(line + n, "%ld %31s %31s %31s %ld", &calls, tot, gst, hst, &exits), 5);
		us3(et, sizeof(et), fn->total);
		us3(eg, sizeof(eg), fn->total - fn->away);
		us3(eh, sizeof(eh), fn->away);
		if (calls != fn->calls || exits != fn->exits || strcmp(tot, et) ||
		    strcmp(gst, eg) || strcmp(hst, eh))
			fail_msg("%s: report --exits says calls %ld total %s guest %s host %s "
				 "exits %ld; "
				 "trace-cmd's view: calls %ld total %s guest %s host %s exits %ld",
				 fn->name, calls, tot, gst, hst, exits, fn->calls, et, eg, eh,
				 fn->exits);
	}
}

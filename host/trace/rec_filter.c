#include "host/trace/rec_filter.h"

#include "host/trace/filter.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rec_filter_add_pid(struct rec_filter *f, const char *arg, char *err, size_t errlen)
{
	int32_t *v;
	char *end;
	long pid;

	errno = 0;
	pid = strtol(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || arg[0] == '+' || pid > (1l << 30)) {
		msg_fmt(err, errlen, "-P '%s': expected a guest pid (0 to %ld)", arg, 1l << 30);
		return -EINVAL;
	}
	v = realloc(f->pids, (f->nr_pids + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	f->pids = v;
	v[f->nr_pids++] = (int32_t)pid;
	return 0;
}

int rec_filter_add_comm(struct rec_filter *f, const char *glob, char *err, size_t errlen)
{
	char **v, *copy;

	if (!glob[0] || strlen(glob) >= VMI_COMM_LEN * 4) {
		msg_fmt(err, errlen,
			"--comm '%s': expected a task name or glob (1 to %d characters)", glob,
			VMI_COMM_LEN * 4 - 1);
		return -EINVAL;
	}
	v = realloc(f->comms, (f->nr_comms + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	f->comms = v;
	copy = strdup(glob);
	if (!copy)
		return -ENOMEM;
	v[f->nr_comms++] = copy;
	return 0;
}

/* A CPU number at *@p (decimal, below REC_FILTER_MAX_CPUS); advances *@p. */
static int cpu_number(const char **p, unsigned *out)
{
	unsigned n = 0;
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return -1;
	while (*s >= '0' && *s <= '9') {
		n = n * 10 + (unsigned)(*s++ - '0');
		if (n >= REC_FILTER_MAX_CPUS)
			return -1;
	}
	*p = s;
	*out = n;
	return 0;
}

int rec_filter_add_cpus(struct rec_filter *f, const char *list, char *err, size_t errlen)
{
	uint64_t add[REC_FILTER_MAX_CPUS / 64] = {0};
	const char *p = list, *at;
	const char *why;
	unsigned lo, hi;

	for (;;) {
		at = p;
		why = "expected a CPU number (0 to 1023)";
		if (cpu_number(&p, &lo) < 0)
			goto bad;
		hi = lo;
		if (*p == '-') {
			p++;
			at = p;
			if (cpu_number(&p, &hi) < 0)
				goto bad;
			why = "a range must ascend";
			if (hi < lo)
				goto bad;
		}
		for (unsigned c = lo; c <= hi; c++)
			add[c / 64] |= 1ull << (c % 64);
		if (!*p)
			break;
		at = p;
		why = "expected ',' or '-'";
		if (*p++ != ',')
			goto bad;
	}
	for (unsigned i = 0; i < REC_FILTER_MAX_CPUS / 64; i++)
		f->cpus[i] |= add[i];
	f->by_cpu = true;
	return 0;
bad:
	msg_fmt(err, errlen, "--cpu '%s': %s at column %zu", list, why, (size_t)(at - list) + 1);
	return -EINVAL;
}

int rec_filter_check_cpus(const struct rec_filter *f, unsigned nr_cpus, char *err, size_t errlen)
{
	if (!f->by_cpu)
		return 0;
	for (unsigned c = nr_cpus; c < REC_FILTER_MAX_CPUS; c++)
		if (f->cpus[c / 64] & (1ull << (c % 64))) {
			if (nr_cpus == 1)
				msg_fmt(err, errlen, "--cpu: CPU %u: the guest has 1 vCPU (0)", c);
			else
				msg_fmt(err, errlen, "--cpu: CPU %u: the guest has %u vCPUs (0-%u)",
					c, nr_cpus, nr_cpus - 1);
			return -EINVAL;
		}
	return 0;
}

int rec_filter_add_event(struct rec_filter *f, uint64_t ip, const struct ef_filter *ef)
{
	struct rec_event_filter *v = realloc(f->events, (f->nr_events + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	f->events = v;
	v[f->nr_events++] = (struct rec_event_filter){.ip = ip, .ef = ef};
	return 0;
}

bool rec_filter_active(const struct rec_filter *f)
{
	return f && (f->nr_pids || f->nr_comms || f->by_cpu || f->nr_events);
}

bool rec_filter_keep(const struct rec_filter *f, const struct hvt_record *r, const void *payload,
		     size_t len)
{
	char comm[VMI_COMM_LEN];

	if (r->type == HVT_REC_LOST || r->type == HVT_REC_SNAPSHOT)
		return true;
	if (r->type == HVT_REC_EVENT || r->type == HVT_REC_EVENT_ALONE)
		for (size_t i = 0; i < f->nr_events; i++)
			if (f->events[i].ip == r->ip && !ef_match(f->events[i].ef, payload, len))
				return false;
	if (f->by_cpu &&
	    (r->cpu >= REC_FILTER_MAX_CPUS || !(f->cpus[r->cpu / 64] >> (r->cpu % 64) & 1)))
		return false;
	if (!f->nr_pids && !f->nr_comms)
		return true;
	for (size_t i = 0; i < f->nr_pids; i++)
		if (r->pid == f->pids[i])
			return true;
	if (!f->nr_comms)
		return false;
	/* the comm as recorded: NUL-terminated by vmi_task_current, bounded here all the same */
	memcpy(comm, r->comm, VMI_COMM_LEN);
	comm[VMI_COMM_LEN - 1] = 0;
	for (size_t i = 0; i < f->nr_comms; i++)
		if (filter_glob_match(f->comms[i], comm))
			return true;
	return false;
}

void rec_filter_free_events(struct rec_filter *f)
{
	free(f->events);
	f->events = NULL;
	f->nr_events = 0;
}

void rec_filter_free(struct rec_filter *f)
{
	free(f->events);
	for (size_t i = 0; i < f->nr_comms; i++)
		free(f->comms[i]);
	free(f->comms);
	free(f->pids);
	memset(f, 0, sizeof(*f));
}

#include "host/hosttrace/host_rec.h"
#include "host/tracedat/le_bytes.h"
#include "host/tracedat/tracedat_write.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <tracefs.h>

#define READ_PERIOD_NS                                                                             \
	50000000L /* the reader thread takes what the ring buffers hold this often                 \
		   */
#define BUFFER_KB_PER_CPU "4096"

int host_rec_path(const char *guest_path, char *out, size_t len)
{
	const char *base = strrchr(guest_path, '/');
	const char *dot;
	int n;

	base = base ? base + 1 : guest_path;
	dot = strrchr(base, '.');
	if (!dot || dot == base) /* no extension (a leading dot names a hidden file) */
		n = snprintf(out, len, "%s-host", guest_path);
	else
		n = snprintf(out, len, "%.*s-host%s", (int)(dot - guest_path), guest_path, dot);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* "system:event" split into @sys and @ev (each a C identifier). */
static bool split_event(const char *name, char *sys, size_t slen, char *ev, size_t elen)
{
	const char *colon = strchr(name, ':');
	size_t a, b;

	if (!colon)
		return false;
	a = (size_t)(colon - name);
	b = strlen(colon + 1);
	if (!a || !b || a >= slen || b >= elen)
		return false;
	for (const char *c = name; *c; c++)
		if (c != colon && !(*c == '_' || (*c >= '0' && *c <= '9') ||
				    (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
			return false;
	memcpy(sys, name, a);
	sys[a] = 0;
	memcpy(ev, colon + 1, b + 1);
	return true;
}

bool host_rec_event_name_ok(const char *name)
{
	char sys[48], ev[48];

	return split_event(name, sys, sizeof(sys), ev, sizeof(ev));
}

/* The one line for a host without a usable tracefs. */
static int no_tracefs(char *err, size_t errlen)
{
	snprintf(
	    err, errlen,
	    "--host: the host's tracefs is not mounted and cannot be (as root: mount -t tracefs "
	    "nodev /sys/kernel/tracing)");
	return -ENOENT;
}

int host_rec_check(const char *const *extra, size_t nr_extra, char *err, size_t errlen)
{
	if (!tracefs_tracing_dir())
		return no_tracefs(err, errlen);
	for (size_t i = 0; i < nr_extra; i++) {
		char sys[48], ev[48];

		if (!split_event(extra[i], sys, sizeof(sys), ev, sizeof(ev))) {
			msg_fmt(err, errlen, "--host-event %s: expected SYSTEM:EVENT", extra[i]);
			return -EINVAL;
		}
		if (!tracefs_event_file_exists(NULL, sys, ev, "format")) {
			msg_fmt(err, errlen,
				"--host-event %s: the host's tracefs has no such event", extra[i]);
			return -ENOENT;
		}
	}
	return 0;
}

/* Whether @name is "hvtrace-PID" or tsc_follow's "hvtrace-PID-tsc" of a process that is gone, or
 * "hvtrace-PID" of this process where @own (host_rec_start's sweep: left by an earlier process of
 * this pid, as this one has not made it yet). A live process keeps its instance whatever it is: a
 * pid reused by another program only delays the sweep until it ends. */
static bool orphan_instance(const char *name, bool own)
{
	char *end;
	long pid;

	if (strncmp(name, "hvtrace-", 8) || !name[8])
		return false;
	errno = 0;
	pid = strtol(name + 8, &end, 10);
	if ((*end && strcmp(end, "-tsc")) || errno || pid <= 0 || pid > INT32_MAX)
		return false;
	if (pid == getpid())
		return own && !*end;
	return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

struct sweep {
	unsigned n;
	bool own;
};

static int sweep_one(const char *name, void *ctx)
{
	struct sweep *w = ctx;
	struct tracefs_instance *old;

	if (!orphan_instance(name, w->own) || !(old = tracefs_instance_alloc(NULL, name)))
		return 0;
	if (tracefs_instance_destroy(old) == 0) {
		fprintf(stderr,
			"hvtrace: --host: removed the tracefs instance %s, left by an hvtrace "
			"that was killed\n",
			name);
		w->n++;
	}
	tracefs_instance_free(old);
	return 0;
}

unsigned host_rec_sweep(void)
{
	struct sweep w = {.own = true};

	tracefs_instances_walk(sweep_one, &w);
	return w.n;
}

unsigned host_rec_sweep_dead(void)
{
	struct sweep w = {.own = false};

	tracefs_instances_walk(sweep_one, &w);
	return w.n;
}

/* An unlinked temporary file in @dir (or $TMPDIR, /tmp). */
static FILE *temp_file(const char *dir)
{
	char path[4096];
	int fd;
	FILE *f;

	if (!dir || !*dir)
		dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	if (snprintf(path, sizeof(path), "%s/.hvtrace-host-XXXXXX", dir) >= (int)sizeof(path))
		return NULL;
	fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	unlink(path);
	f = fdopen(fd, "w+");
	if (!f)
		close(fd);
	return f;
}

/* KVM_RUN's ioctl number (_IO(KVMIO, 0x80)), as sys_enter_ioctl's cmd holds it. */
#define KVM_RUN_CMD 0xae80u

/* Whether @name is among the @n --host-events @extra. */
static bool asked_for(const char *const *extra, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(extra[i], name))
			return true;
	return false;
}

int host_rec_tid_filter(const char *const *fields, size_t nf, const int *tids, unsigned n,
			char *out, size_t len)
{
	size_t used = 0;

	out[0] = 0;
	for (size_t f = 0; f < nf; f++)
		for (unsigned i = 0; i < n; i++) {
			int k = snprintf(out + used, len - used, "%s%s==%d", used ? "||" : "",
					 fields[f], tids[i]);

			if (k < 0 || (size_t)k >= len - used)
				return -ENOSPC;
			used += (size_t)k;
		}
	return 0;
}

/* Enables @name ("system:event") in h's instance with @filter (NULL: none). */
static int enable_event(struct host_rec *h, const char *name, const char *filter, char *err,
			size_t errlen)
{
	char sys[48], ev[48];

	if (!split_event(name, sys, sizeof(sys), ev, sizeof(ev))) {
		msg_fmt(err, errlen, "--host-event %s: expected SYSTEM:EVENT", name);
		return -EINVAL;
	}
	if (!tracefs_event_file_exists(NULL, sys, ev, "format")) {
		msg_fmt(err, errlen, "--host-event %s: the host's tracefs has no such event", name);
		return -ENOENT;
	}
	for (size_t i = 0; i < h->nr_events; i++)
		if (!strcmp(h->events[i], name))
			return 0;
	if (h->nr_events == HOST_REC_MAX_EVENTS) {
		msg_fmt(err, errlen, "--host-event %s: more than %d host events", name,
			HOST_REC_MAX_EVENTS);
		return -E2BIG;
	}
	if (filter && tracefs_event_file_write(h->inst, sys, ev, "filter", filter) < 0) {
		msg_fmt(err, errlen, "--host: the host refused the filter of %s: %s", name,
			strerror(errno));
		return -EIO;
	}
	if (tracefs_event_enable(h->inst, sys, ev) < 0) {
		msg_fmt(err, errlen, "--host: cannot enable the host's %s: %s", name,
			strerror(errno));
		return -EIO;
	}
	snprintf(h->events[h->nr_events++], sizeof(h->events[0]), "%s", name);
	return 0;
}

/* Copies the pages @c's ring buffer holds now to its file: while recording (!@flush) only full
 * ones, through a pipe (splice; a partly written page read as it fills loses events), at the end
 * (@flush) the rest too. Reader thread, or the owner after it. */
static void take_pages(struct host_rec *h, struct host_rec_cpu *c, void *page, bool flush)
{
	int n;

	if (!c->tcpu)
		return;
	while ((n = flush ? tracefs_cpu_flush(c->tcpu, page)
			  : tracefs_cpu_buffered_read(c->tcpu, page, true)) > 0) {
		if (n < h->page_size)
			memset((char *)page + n, 0, (size_t)(h->page_size - n));
		if (fwrite(page, (size_t)h->page_size, 1, c->tmp) != 1) {
			if (!h->err)
				h->err = errno ? errno : EIO;
			return;
		}
		c->pages++;
	}
}

static void *reader(void *arg)
{
	struct host_rec *h = arg;
	void *page = malloc((size_t)h->page_size);

	if (!page) {
		h->err = ENOMEM;
		return NULL;
	}
	while (!atomic_load(&h->stop)) {
		struct timespec ts = {0, READ_PERIOD_NS};

		for (unsigned i = 0; i < h->nr_cpus; i++)
			take_pages(h, &h->cpus[i], page, false);
		nanosleep(&ts, NULL);
	}
	free(page);
	return NULL;
}

int host_rec_start(struct host_rec *h, const int *tids, unsigned nr_tids, const char *const *extra,
		   size_t nr_extra, const char *tmpdir, char *err, size_t errlen)
{
	static const char *const switch_fields[] = {"prev_pid", "next_pid"};
	static const char *const wakeup_fields[] = {"pid"};
	static const char *const task_fields[] = {"common_pid"};
	char name[64], filter[4096];
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	int ret = -EIO;

	memset(h, 0, sizeof(*h));
	if (!nr_tids || nr_tids > HOST_REC_MAX_VCPUS) {
		msg_fmt(err, errlen, "--host: %u vCPU threads (1 to %d)", nr_tids,
			HOST_REC_MAX_VCPUS);
		return -EINVAL;
	}
	memcpy(h->tids, tids, nr_tids * sizeof(*tids));
	h->nr_vcpus = nr_tids;
	if (!tracefs_tracing_dir())
		return no_tracefs(err, errlen);
	if (getrandom(&h->trace_id, sizeof(h->trace_id), 0) != sizeof(h->trace_id))
		h->trace_id = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
	snprintf(name, sizeof(name), "hvtrace-%d", (int)getpid());
	host_rec_sweep();
	h->inst = tracefs_instance_create(name);
	if (!h->inst) {
		msg_fmt(err, errlen, "--host: cannot make a tracefs instance %s: %s (as root?)",
			name, strerror(errno));
		return -EACCES;
	}
	tracefs_trace_off(h->inst);
	if (tracefs_instance_file_write(h->inst, "trace_clock", "mono") < 0) {
		snprintf(
		    err, errlen,
		    "--host: the host's trace clock cannot be mono (CLOCK_MONOTONIC, the guest "
		    "trace's clock): %s",
		    strerror(errno));
		goto fail;
	}
	tracefs_instance_file_write(h->inst, "buffer_size_kb", BUFFER_KB_PER_CPU);
	if (host_rec_tid_filter(switch_fields, 2, tids, nr_tids, filter, sizeof(filter)) ||
	    (ret = enable_event(h, "sched:sched_switch", filter, err, errlen)))
		goto fail;
	host_rec_tid_filter(wakeup_fields, 1, tids, nr_tids, filter, sizeof(filter));
	if ((ret = enable_event(h, "sched:sched_wakeup", filter, err, errlen)))
		goto fail;
	host_rec_tid_filter(task_fields, 1, tids, nr_tids, filter, sizeof(filter));
	if (tracefs_event_file_exists(NULL, "kvm", "kvm_entry", "format") &&
	    tracefs_event_file_exists(NULL, "kvm", "kvm_exit", "format") &&
	    ((ret = enable_event(h, "kvm:kvm_entry", filter, err, errlen)) ||
	     (ret = enable_event(h, "kvm:kvm_exit", filter, err, errlen))))
		goto fail;
	/* each return of KVM_RUN to the VMM: where a trap probe's event is handled (a breakpoint is
	 * one, KVM_EXIT_DEBUG, or KVM_EXIT_INTERNAL_ERROR on PVM, whose kvm_exit is never traced)
	 */
	if (tracefs_event_file_exists(NULL, "kvm", "kvm_userspace_exit", "format") &&
	    (ret = enable_event(h, "kvm:kvm_userspace_exit", filter, err, errlen)))
		goto fail;
	/* the vCPU threads' ioctl(KVM_RUN): where they go back towards the guest, the only sign of
	 * it on a host whose KVM never fires kvm_entry (PVM) (an --host-event of the same,
	 * unfiltered, serves as well) */
	if (tracefs_event_file_exists(NULL, "kvm", "kvm_userspace_exit", "format") &&
	    tracefs_event_file_exists(NULL, "syscalls", "sys_enter_ioctl", "format") &&
	    !asked_for(extra, nr_extra, "syscalls:sys_enter_ioctl")) {
		char run[4096 + 32];

		if ((size_t)snprintf(run, sizeof(run), "(%s)&&cmd==%u", filter, KVM_RUN_CMD) >=
			sizeof(run) ||
		    (ret = enable_event(h, "syscalls:sys_enter_ioctl", run, err, errlen))) {
			if (!ret) {
				msg_fmt(err, errlen, "--host: too many vCPU threads for a filter");
				ret = -ENOSPC;
			}
			goto fail;
		}
	}
	for (size_t i = 0; i < nr_extra; i++)
		if ((ret = enable_event(h, extra[i], NULL, err, errlen)))
			goto fail;
	h->nr_cpus = cpus > 0 ? (unsigned)cpus : 1;
	h->cpus = calloc(h->nr_cpus, sizeof(*h->cpus));
	if (!h->cpus) {
		msg_fmt(err, errlen, "--host: out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	h->page_size = getpagesize();
	for (unsigned i = 0; i < h->nr_cpus; i++) {
		struct host_rec_cpu *c = &h->cpus[i];

		c->tcpu = tracefs_cpu_open(h->inst, (int)i, true); /* NULL: an offline CPU */
		if (c->tcpu && tracefs_cpu_read_size(c->tcpu) > h->page_size)
			h->page_size = tracefs_cpu_read_size(c->tcpu);
		c->tmp = temp_file(tmpdir);
		if (!c->tmp) {
			msg_fmt(err, errlen, "--host: temporary files in %s: %s",
				tmpdir ? tmpdir : "$TMPDIR", strerror(errno));
			ret = -EIO;
			goto fail;
		}
	}
	if (tracefs_trace_on(h->inst) < 0) {
		msg_fmt(err, errlen, "--host: cannot turn the host's tracing on: %s",
			strerror(errno));
		ret = -EIO;
		goto fail;
	}
	if (pthread_create(&h->thread, NULL, reader, h)) {
		msg_fmt(err, errlen, "--host: cannot start the reader thread");
		ret = -EAGAIN;
		goto fail;
	}
	h->thread_running = true;
	return 0;
fail:
	host_rec_close(h);
	return ret < 0 ? ret : -EIO;
}

void host_rec_stop(struct host_rec *h)
{
	void *page;

	if (!h->inst)
		return;
	tracefs_trace_off(h->inst);
	atomic_store(&h->stop, true);
	if (h->thread_running) {
		pthread_join(h->thread, NULL);
		h->thread_running = false;
	}
	page = malloc((size_t)h->page_size);
	for (unsigned i = 0; page && i < h->nr_cpus; i++)
		take_pages(h, &h->cpus[i], page, true);
	free(page);
}

/* ---- the file ------------------------------------------------------------------------------- */

/* The event formats, by system, in the order they were enabled. */
static int put_formats(struct td_out *o, const struct host_rec *h)
{
	char systems[HOST_REC_MAX_EVENTS][48];
	size_t nsys = 0;

	for (size_t i = 0; i < h->nr_events; i++) {
		size_t k = strcspn(h->events[i], ":");
		bool seen = false;

		for (size_t s = 0; s < nsys; s++)
			seen |= strlen(systems[s]) == k && !strncmp(systems[s], h->events[i], k);
		if (!seen)
			snprintf(systems[nsys++], sizeof(systems[0]), "%.*s", (int)k, h->events[i]);
	}
	td_out_u32(o, (uint32_t)nsys);
	for (size_t s = 0; s < nsys; s++) {
		uint32_t n = 0;
		size_t k = strlen(systems[s]);

		td_out_bytes(o, systems[s], k + 1);
		for (size_t i = 0; i < h->nr_events; i++)
			n += !strncmp(h->events[i], systems[s], k) && h->events[i][k] == ':';
		td_out_u32(o, n);
		for (size_t i = 0; i < h->nr_events; i++) {
			char *text;
			int size = 0;

			if (strncmp(h->events[i], systems[s], k) || h->events[i][k] != ':')
				continue;
			text = tracefs_event_file_read(NULL, systems[s], h->events[i] + k + 1,
						       "format", &size);
			if (!text)
				return -EIO;
			td_out_section(o, text, (size_t)size, true);
			free(text);
		}
	}
	return 0;
}

/* saved_cmdlines, and each vCPU thread's name (they are the tasks this file is about). */
static void put_cmdlines(struct td_out *o, const struct host_rec *h)
{
	int size = 0;
	char *saved = tracefs_instance_file_read(NULL, "saved_cmdlines", &size);
	char extra[HOST_REC_MAX_VCPUS * 40];
	size_t used = 0;

	for (unsigned i = 0; i < h->nr_vcpus; i++) {
		char path[64], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", h->tids[i]);
		f = fopen(path, "r");
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = 0;
			fclose(f);
		}
		comm[strcspn(comm, "\n")] = 0;
		if (comm[0])
			used += (size_t)snprintf(extra + used, sizeof(extra) - used, "%d %s\n",
						 h->tids[i], comm);
	}
	td_out_u64(o, (uint64_t)(saved ? (size_t)size : 0) + used);
	if (saved)
		td_out_bytes(o, saved, (size_t)size);
	td_out_bytes(o, extra, used);
	free(saved);
}

/* The GUEST option: the guest's name, its file's trace id, the vCPU count, per vCPU {vCPU, host
 * thread}. Returns its size in @buf. */
static uint32_t guest_option(uint8_t *buf, const struct host_rec *h, const char *guest_name,
			     size_t glen, uint64_t guest_trace_id)
{
	memcpy(buf, guest_name, glen);
	le_put64(buf + glen, guest_trace_id);
	le_put32(buf + glen + 8, h->nr_vcpus);
	for (unsigned i = 0; i < h->nr_vcpus; i++) {
		le_put32(buf + glen + 12 + 8 * i, i);
		le_put32(buf + glen + 16 + 8 * i, (uint32_t)h->tids[i]);
	}
	return (uint32_t)(glen + 12 + 8 * h->nr_vcpus);
}

/* td_cpu_pages_fn over the host's per-CPU temporary files */
static FILE *cpu_pages(const void *ctx, unsigned cpu, uint64_t *pages)
{
	const struct host_rec *h = ctx;

	*pages = h->cpus[cpu].pages;
	return h->cpus[cpu].tmp;
}

int host_rec_write(struct host_rec *h, const char *path, const char *guest_name,
		   uint64_t guest_trace_id, char *err, size_t errlen)
{
	struct td_out o = {0};
	uint8_t guest[256 + 16 + 8 * HOST_REC_MAX_VCPUS];
	size_t glen = strlen(guest_name) + 1;
	char *clock, *hpage = NULL, *hevent = NULL;
	int clock_size = 0, page_len = 0, event_len = 0;

	if (!h->inst || glen > 256)
		return -EINVAL;
	if (h->err) {
		msg_fmt(err, errlen, "--host: writing the host's pages: %s", strerror(h->err));
		return -h->err;
	}
	hpage = tracefs_instance_file_read(NULL, "events/header_page", &page_len);
	hevent = tracefs_instance_file_read(NULL, "events/header_event", &event_len);
	if (!hpage || !hevent) {
		free(hpage);
		free(hevent);
		msg_fmt(err, errlen, "--host: cannot read the host's tracefs formats");
		return -EIO;
	}
	o.f = fopen(path, "w");
	if (!o.f) {
		msg_fmt(err, errlen, "--host: %s: %s", path, strerror(errno));
		free(hpage);
		free(hevent);
		return -errno;
	}
	td_out_begin(&o, (uint32_t)h->page_size, hpage, (size_t)page_len, hevent,
		     (size_t)event_len);
	free(hpage);
	free(hevent);
	td_out_u32(&o, 0); /* ftrace's own events: none */
	if (put_formats(&o, h))
		goto bad_tracefs;
	td_out_u32(&o, 0); /* kallsyms: the host's are not the guest's business */
	td_out_u32(&o, 0); /* printk formats */
	put_cmdlines(&o, h);
	td_out_options_begin(&o, h->nr_cpus);
	clock = tracefs_instance_file_read(h->inst, "trace_clock", &clock_size);
	if (clock) {
		td_out_option(&o, TD_OPT_TRACECLOCK, clock, (uint32_t)clock_size);
		free(clock);
	}
	td_out_option_u32(&o, TD_OPT_CPUCOUNT, h->nr_cpus);
	td_out_option_u64(&o, TD_OPT_TRACEID, h->trace_id);
	td_out_option(&o, TD_OPT_GUEST, guest,
		      guest_option(guest, h, guest_name, glen, guest_trace_id));
	td_out_flyrecord(&o, h->nr_cpus, (uint32_t)h->page_size, cpu_pages, h);
	if (fclose(o.f) || o.err) {
		msg_fmt(err, errlen, "--host: writing %s failed", path);
		return o.err == ENOMEM ? -ENOMEM : -EIO;
	}
	return 0;
bad_tracefs:
	fclose(o.f);
	msg_fmt(err, errlen, "--host: cannot read the host's tracefs formats");
	return -EIO;
}

void host_rec_close(struct host_rec *h)
{
	host_rec_stop(h);
	for (unsigned i = 0; h->cpus && i < h->nr_cpus; i++) {
		if (h->cpus[i].tcpu)
			tracefs_cpu_close(h->cpus[i].tcpu);
		if (h->cpus[i].tmp)
			fclose(h->cpus[i].tmp);
	}
	free(h->cpus);
	h->cpus = NULL;
	if (h->inst) {
		tracefs_instance_destroy(h->inst);
		tracefs_instance_free(h->inst);
		h->inst = NULL;
	}
}

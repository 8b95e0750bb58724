#include "host/hosttrace/tsc_follow.h"
#include "host/hosttrace/host_rec.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <x86intrin.h>

#include <event-parse.h>
#include <kbuffer.h>
#include <tracefs.h>

#define FOLLOW_BUFFER_KB "1024" /* per host CPU: 32-byte events, thousands a second at most */
#define FOLLOW_BATCH	 8192u	/* moves sorted together per update (more: in several sorts) */
/* An update reads a CPU's pages until one holds a move this many host TSC ticks past the update's
 * start (about 2 ms at 2 GHz; more than the host CPUs' TSCs differ by) */
#define FOLLOW_PAST_TICKS (1ull << 22)

struct follow_move {
	uint64_t ts; /* host TSC */
	uint64_t offset;
	uint32_t vcpu;
};

struct tsc_follow {
	struct tracefs_instance *inst;
	struct tep_handle *tep;
	struct kbuffer *kb;
	struct tracefs_cpu **cpus;
	unsigned nr_cpus;
	int page_size;
	void *page;
	int id; /* kvm_write_tsc_offset's event id */
	struct tep_format_field *f_vcpu, *f_next;
	struct follow_move *batch;
	unsigned nr_batch;
	struct tsc_segs segs;
	uint64_t moves, host_lost;
};

bool tsc_follow_wanted(void)
{
	const char *env = getenv("HVTRACE_TSC_FOLLOW");
	char cs[64] = "";
	FILE *f;

	if (env && (!strcmp(env, "0") || !strcmp(env, "1")))
		return env[0] == '1';
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (!f)
		return false;
	if (!fgets(cs, sizeof(cs), f))
		cs[0] = 0;
	fclose(f);
	cs[strcspn(cs, "\n")] = 0;
	return cs[0] && strcmp(cs, "tsc") != 0;
}

int tsc_follow_start(struct tsc_follow **out, const int *tids, unsigned nr_tids, unsigned nr_vcpus,
		     char *err, size_t errlen)
{
	static const char *const pid_field[] = {"common_pid"};
	struct tsc_follow *f = calloc(1, sizeof(*f));
	char name[64], filter[4096], *fmt;
	int fmt_len = 0;
	struct tep_event *ev;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int ret = -EIO;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	if (!tracefs_tracing_dir()) {
		msg_fmt(err, errlen, "the host's tracefs is not mounted (as root: mount -t tracefs "
				     "nodev /sys/kernel/tracing)");
		ret = -ENOENT;
		goto fail;
	}
	if (!tracefs_event_file_exists(NULL, "kvm", "kvm_write_tsc_offset", "format")) {
		msg_fmt(err, errlen, "the host's tracefs has no kvm:kvm_write_tsc_offset");
		ret = -ENOENT;
		goto fail;
	}
	if ((ret = tsc_segs_init(&f->segs, nr_vcpus)) < 0) {
		msg_fmt(err, errlen, "%u vCPUs: %s", nr_vcpus, strerror(-ret));
		goto fail;
	}
	ret = -EIO;
	/* the one event's format (all of kvm's would be parsed by tracefs_local_events_system,
	 * and libtraceevent 1.7 leaks on some of them) */
	fmt = tracefs_event_file_read(NULL, "kvm", "kvm_write_tsc_offset", "format", &fmt_len);
	f->tep = tep_alloc();
	if (f->tep && fmt && fmt_len > 0)
		tep_parse_event(f->tep, fmt, (unsigned long)fmt_len, "kvm");
	free(fmt);
	ev = f->tep ? tep_find_event_by_name(f->tep, "kvm", "kvm_write_tsc_offset") : NULL;
	if (!ev || !(f->f_vcpu = tep_find_field(ev, "vcpu_id")) ||
	    !(f->f_next = tep_find_field(ev, "next_tsc_offset")) || f->f_next->size != 8 ||
	    f->f_vcpu->size > 8) {
		msg_fmt(err, errlen, "kvm:kvm_write_tsc_offset's format has no vcpu_id and 8-byte "
				     "next_tsc_offset");
		goto fail;
	}
	f->id = ev->id;
	f->kb = kbuffer_alloc(KBUFFER_LSIZE_SAME_AS_HOST, KBUFFER_ENDIAN_SAME_AS_HOST);
	f->batch = calloc(FOLLOW_BATCH, sizeof(*f->batch));
	if (!f->kb || !f->batch || ncpu <= 0) {
		ret = -ENOMEM;
		msg_fmt(err, errlen, "out of memory");
		goto fail;
	}
	snprintf(name, sizeof(name), "hvtrace-%d-tsc", (int)getpid());
	host_rec_sweep_dead();
	f->inst = tracefs_instance_create(name);
	if (!f->inst) {
		msg_fmt(err, errlen, "cannot make a tracefs instance %s: %s (as root?)", name,
			strerror(errno));
		ret = -EACCES;
		goto fail;
	}
	tracefs_trace_off(f->inst);
	if (tracefs_instance_file_write(f->inst, "trace_clock", "x86-tsc") < 0) {
		msg_fmt(err, errlen, "the host's trace clock cannot be x86-tsc: %s",
			strerror(errno));
		goto fail;
	}
	tracefs_instance_file_write(f->inst, "buffer_size_kb", FOLLOW_BUFFER_KB);
	if (host_rec_tid_filter(pid_field, 1, tids, nr_tids, filter, sizeof(filter)) < 0 ||
	    tracefs_event_file_write(f->inst, "kvm", "kvm_write_tsc_offset", "filter", filter) < 0 ||
	    tracefs_event_enable(f->inst, "kvm", "kvm_write_tsc_offset") < 0) {
		msg_fmt(err, errlen, "cannot enable kvm:kvm_write_tsc_offset for %u threads: %s",
			nr_tids, strerror(errno));
		goto fail;
	}
	f->cpus = calloc((size_t)ncpu, sizeof(*f->cpus));
	if (!f->cpus) {
		ret = -ENOMEM;
		msg_fmt(err, errlen, "out of memory");
		goto fail;
	}
	f->nr_cpus = (unsigned)ncpu;
	for (unsigned i = 0; i < f->nr_cpus; i++) {
		f->cpus[i] = tracefs_cpu_open(f->inst, (int)i, true); /* NULL: offline */
		if (f->cpus[i] && !f->page_size)
			f->page_size = tracefs_cpu_read_size(f->cpus[i]);
	}
	if (f->page_size <= 0 || !(f->page = malloc((size_t)f->page_size))) {
		msg_fmt(err, errlen, "cannot read the host's ring buffers of %s", name);
		goto fail;
	}
	if (tracefs_trace_on(f->inst) < 0) {
		msg_fmt(err, errlen, "cannot turn tracing on in %s: %s", name, strerror(errno));
		goto fail;
	}
	*out = f;
	return 0;
fail:
	tsc_follow_close(f);
	return ret;
}

void tsc_follow_seed(struct tsc_follow *f, unsigned vcpu, uint64_t offset)
{
	tsc_segs_add(&f->segs, vcpu, 0, offset);
}

static int by_ts(const void *a, const void *b)
{
	const struct follow_move *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Adds the batch's moves in the host's time order (the pages of several CPUs come one CPU at a
 * time); a move a later update brings that is older than one added already is put in its place. */
static void flush_batch(struct tsc_follow *f)
{
	qsort(f->batch, f->nr_batch, sizeof(*f->batch), by_ts);
	for (unsigned i = 0; i < f->nr_batch; i++)
		tsc_segs_add(&f->segs, f->batch[i].vcpu, f->batch[i].ts, f->batch[i].offset);
	f->moves += f->nr_batch;
	f->nr_batch = 0;
}

/* The moves of the page in f->page. Returns the page's last event time (host TSC), 0 if none. */
static uint64_t take_page(struct tsc_follow *f)
{
	uint64_t last = 0;
	unsigned long long ts, vcpu, next;
	void *data;
	int missed;

	if (kbuffer_load_subbuffer(f->kb, f->page) < 0)
		return 0;
	missed = kbuffer_missed_events(f->kb);
	if (missed > 0)
		f->host_lost += (uint64_t)missed;
	for (data = kbuffer_read_event(f->kb, &ts); data; data = kbuffer_next_event(f->kb, &ts)) {
		unsigned size = kbuffer_event_size(f->kb);
		uint16_t type;

		last = ts;
		if (size < 2 || f->f_vcpu->offset + f->f_vcpu->size > (int)size ||
		    f->f_next->offset + 8 > (int)size)
			continue;
		memcpy(&type, data, 2);
		if (type != f->id || tep_read_number_field(f->f_vcpu, data, &vcpu) < 0 ||
		    tep_read_number_field(f->f_next, data, &next) < 0)
			continue;
		if (f->nr_batch == FOLLOW_BATCH)
			flush_batch(f);
		f->batch[f->nr_batch++] =
		    (struct follow_move){.ts = ts, .offset = next, .vcpu = (uint32_t)vcpu};
	}
	return last;
}

void tsc_follow_update(struct tsc_follow *f)
{
	/* every move made before now, and not much more: the host writes moves while they are read
	 * (two at each return of a vCPU to the guest), and a reader no faster than that writer
	 * would otherwise never leave */
	uint64_t enough = __rdtsc() + FOLLOW_PAST_TICKS;

	for (unsigned i = 0; i < f->nr_cpus; i++) {
		if (!f->cpus[i])
			continue;
		while (tracefs_cpu_read(f->cpus[i], f->page, true) > 0)
			if (take_page(f) > enough)
				break;
	}
	flush_batch(f);
}

bool tsc_follow_host(struct tsc_follow *f, unsigned vcpu, uint64_t guest, uint64_t *host)
{
	return tsc_segs_host(&f->segs, vcpu, guest, host);
}

void tsc_follow_counts(const struct tsc_follow *f, uint64_t *moves, uint64_t *host_lost,
		       uint64_t *too_old)
{
	*moves = f->moves;
	*host_lost = f->host_lost;
	*too_old = f->segs.dropped;
}

void tsc_follow_close(struct tsc_follow *f)
{
	if (!f)
		return;
	for (unsigned i = 0; f->cpus && i < f->nr_cpus; i++)
		if (f->cpus[i])
			tracefs_cpu_close(f->cpus[i]);
	free(f->cpus);
	if (f->inst) {
		tracefs_trace_off(f->inst);
		tracefs_instance_destroy(f->inst);
		tracefs_instance_free(f->inst);
	}
	if (f->kb)
		kbuffer_free(f->kb);
	if (f->tep)
		tep_free(f->tep);
	free(f->page);
	free(f->batch);
	tsc_segs_free(&f->segs);
	free(f);
}

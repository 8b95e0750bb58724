/* Following each vCPU's guest TSC offset (issue 40's clock): the per-vCPU segment table against a
 * model of what KVM does to an unstable host's vCPU (its offset set back at each vcpu_load to where
 * the guest's TSC stood when it left, then caught up), moves read out of order, a table that
 * overflows and hostile numbers; and, on the host's real tracefs and /dev/kvm (root; skipped
 * without), tsc_follow reading the host's kvm_write_tsc_offset events of offsets this test sets. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/hosttrace/tsc_follow.h"
#include "host/hosttrace/tsc_segs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <tracefs.h>
#include <unistd.h>

/* One vCPU under KVM with an unstable host TSC: it runs guest code over host TSC [a, b) with some
 * offset, leaves; at its next vcpu_load the offset is set back so that the guest's TSC continues
 * from where it stood at the exit, and caught up by @catchup ticks before it enters again. Records
 * are guest TSC values read while it ran; the table must give each one's host TSC exactly. */
struct model {
	uint64_t host, offset; /* now, and the offset in force */
	uint64_t last_guest;   /* guest TSC at the last exit */
};

static void model_run(struct tsc_segs *s, struct model *m, uint64_t len, uint64_t *rec_guest,
		      uint64_t *rec_host, unsigned *nr)
{
	for (uint64_t t = 1; t < len; t += len / 3 + 1) {
		rec_host[*nr] = m->host + t;
		rec_guest[*nr] = m->host + t + m->offset;
		++*nr;
	}
	m->host += len;
	m->last_guest = m->host + m->offset;
	(void)s;
}

static void model_load(struct tsc_segs *s, struct model *m, uint64_t away, uint64_t catchup)
{
	m->host += away;		     /* out of guest mode: in user space, preempted */
	m->offset = m->last_guest - m->host; /* back to where the guest stood */
	tsc_segs_add(s, 0, m->host, m->offset);
	m->host += 50;
	m->offset += catchup; /* kvm_guest_time_update's catch-up, forward only */
	if (catchup)
		tsc_segs_add(s, 0, m->host, m->offset);
	m->host += 50;
}

static void test_segs_model(void **state)
{
	enum { RUNS = 300 };
	static uint64_t g[RUNS * 4], h[RUNS * 4];
	struct tsc_segs s;
	struct model m = {.host = 1000000, .offset = (uint64_t)-123456789};
	unsigned nr = 0;
	uint64_t host;

	(void)state;
	assert_int_equal(tsc_segs_init(&s, 2), 0);
	tsc_segs_add(&s, 0, 0, m.offset); /* the seed */
	for (unsigned i = 0; i < RUNS; i++) {
		model_run(&s, &m, 1000 + (i * 7919) % 5000, g, h, &nr);
		/* away from 10 us to 20 ms; caught up by less than, as much as and more than that */
		model_load(&s, &m, 20000 + (i * 104729) % 40000000,
			   i % 3 == 0 ? 0 : i % 3 == 1 ? 5000 : 60000000);
	}
	/* in order, as the drain takes them */
	for (unsigned i = 0; i < nr; i++) {
		assert_true(tsc_segs_host(&s, 0, g[i], &host));
		assert_int_equal(host, h[i]);
	}
	/* and backwards: the cursor goes back as far as it needs */
	for (unsigned i = nr; i-- > 0;) {
		assert_true(tsc_segs_host(&s, 0, g[i], &host));
		assert_int_equal(host, h[i]);
	}
	assert_int_equal(s.dropped, 0);
	/* a vCPU with no segment is not followed; one out of range neither */
	assert_false(tsc_segs_host(&s, 1, g[0], &host));
	assert_false(tsc_segs_host(&s, 7, g[0], &host));
	tsc_segs_add(&s, 9, 1, 2);
	assert_int_equal(s.bad_vcpu, 1);
	tsc_segs_free(&s);
	tsc_segs_free(&s); /* twice is fine */
}

/* Moves read from two CPUs' pages, the later CPU's first: each goes in its place. */
static void test_segs_late_move(void **state)
{
	struct tsc_segs s;
	uint64_t host;

	(void)state;
	assert_int_equal(tsc_segs_init(&s, 1), 0);
	tsc_segs_add(&s, 0, 0, 1000);
	tsc_segs_add(&s, 0, 3000, 500000); /* read first */
	tsc_segs_add(&s, 0, 2000, 9000);   /* older, read after */
	assert_true(tsc_segs_host(&s, 0, 1500 + 1000, &host));
	assert_int_equal(host, 1500);
	assert_true(tsc_segs_host(&s, 0, 2500 + 9000, &host));
	assert_int_equal(host, 2500);
	assert_true(tsc_segs_host(&s, 0, 3500 + 500000, &host));
	assert_int_equal(host, 3500);
	tsc_segs_free(&s);
}

/* More moves than the table keeps: a record older than all of them takes the oldest kept, counted;
 * the newest still convert exactly. Lookups of wild values (a hostile guest's TSC) end. */
static void test_segs_overflow(void **state)
{
	struct tsc_segs s;
	uint64_t host, n = TSC_SEGS_KEEP * 3 + 5;

	(void)state;
	assert_int_equal(tsc_segs_init(&s, 1), 0);
	for (uint64_t i = 0; i < n; i++)
		tsc_segs_add(&s, 0, i * 100, i * 1000);
	assert_true(tsc_segs_host(&s, 0, 5 + 1000, &host)); /* segment 1: long gone */
	assert_int_equal(s.dropped, 1);
	assert_int_equal(host, 5 + 1000 - (n - TSC_SEGS_KEEP) * 1000);
	assert_true(tsc_segs_host(&s, 0, (n - 1) * 100 + 7 + (n - 1) * 1000, &host));
	assert_int_equal(host, (n - 1) * 100 + 7);
	assert_true(tsc_segs_host(&s, 0, UINT64_MAX, &host));
	assert_true(tsc_segs_host(&s, 0, 0, &host));
	tsc_segs_free(&s);
	assert_int_equal(tsc_segs_init(&s, 0), -EINVAL);
	assert_int_equal(tsc_segs_init(&s, 1025), -EINVAL);
	tsc_segs_free(&s);
}

/* The real path: this thread sets a vCPU's TSC offset (KVM_VCPU_TSC_OFFSET), the host traces the
 * move, tsc_follow reads it from its own instance and converts with it. */
static void test_follow_real(void **state)
{
	struct kvm_device_attr a = {.group = KVM_VCPU_TSC_CTRL, .attr = KVM_VCPU_TSC_OFFSET};
	const uint64_t want[2] = {0x123456789ull, (uint64_t)-987654321ll};
	struct tsc_follow *f;
	char err[256];
	int tid = gettid(), kvm, vm = -1, vcpu[2] = {-1, -1};
	uint64_t off, host, moves, lost, old;

	(void)state;
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0 || geteuid() != 0 || !tracefs_tracing_dir() ||
	    !tracefs_event_file_exists(NULL, "kvm", "kvm_write_tsc_offset", "format")) {
		if (kvm >= 0)
			close(kvm);
		skip(); /* needs root, /dev/kvm and the host's tracefs */
	}
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	assert_true(vm >= 0);
	for (int i = 0; i < 2; i++) {
		vcpu[i] = ioctl(vm, KVM_CREATE_VCPU, i);
		assert_true(vcpu[i] >= 0);
	}
	a.addr = (uintptr_t)&off;
	if (ioctl(vcpu[0], KVM_HAS_DEVICE_ATTR, &a) < 0) {
		close(vcpu[0]), close(vcpu[1]), close(vm), close(kvm);
		skip(); /* before Linux 5.16 */
	}
	assert_int_equal(tsc_follow_start(&f, &tid, 1, 2, err, sizeof(err)), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ioctl(vcpu[i], KVM_GET_DEVICE_ATTR, &a), 0);
		tsc_follow_seed(f, (unsigned)i, off);
	}
	for (int i = 0; i < 2; i++) {
		off = want[i];
		assert_int_equal(ioctl(vcpu[i], KVM_SET_DEVICE_ATTR, &a), 0);
	}
	tsc_follow_update(f);
	tsc_follow_counts(f, &moves, &lost, &old);
	assert_true(moves >= 2);
	assert_int_equal(lost, 0);
	/* a guest TSC read now on each vCPU: its host TSC through the offset this thread set */
	for (int i = 0; i < 2; i++) {
		uint64_t g = __builtin_ia32_rdtsc() + want[i];

		assert_true(tsc_follow_host(f, (unsigned)i, g, &host));
		assert_int_equal(host, g - want[i]);
	}
	assert_false(tsc_follow_host(f, 2, 1, &host));
	tsc_follow_close(f);
	/* the instance is gone with it */
	{
		char name[64];
		struct tracefs_instance *inst;

		snprintf(name, sizeof(name), "hvtrace-%d-tsc", (int)getpid());
		assert_false(tracefs_instance_exists(name));
		(void)inst;
	}
	close(vcpu[0]), close(vcpu[1]), close(vm), close(kvm);
}

/* HVTRACE_TSC_FOLLOW says yes or no whatever the clocksource. */
static void test_wanted_env(void **state)
{
	(void)state;
	setenv("HVTRACE_TSC_FOLLOW", "1", 1);
	assert_true(tsc_follow_wanted());
	setenv("HVTRACE_TSC_FOLLOW", "0", 1);
	assert_false(tsc_follow_wanted());
	unsetenv("HVTRACE_TSC_FOLLOW");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_segs_model),	  cmocka_unit_test(test_segs_late_move),
	    cmocka_unit_test(test_segs_overflow), cmocka_unit_test(test_follow_real),
	    cmocka_unit_test(test_wanted_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* KVM integration at the library level: attach to a running guest, detach while calls are in flight,
 * and check that the guest is left as it was found (every patched byte restored) and keeps running. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"
#include "arch/x86/x86_insn.h"
#include "host/kvm/guest_image.h"
#include "host/sink/sink.h"
#include "host/kvm/target_kvm.h"
#include "host/trace/tracer.h"
#include "host/kvm/vcpu.h"
#include "host/kvm/vm.h"
#include "host/sink/writer.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sleep_sec(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};

	nanosleep(&ts, NULL);
}

static uint64_t ring_heads(struct tracer *tr)
{
	unsigned nr;
	struct ring *rings = tracer_rings(tr, &nr);
	uint64_t n = 0;

	for (unsigned i = 0; i < nr; i++)
		n += atomic_load(&rings[i].head);
	return n;
}

static struct tracer_stats stats_of(const struct tracer *tr)
{
	struct tracer_stats st;

	tracer_stats(tr, &st);
	return st;
}

/* One attach, run and detach of @guest; with @returns, whether a call was in flight at the detach
 * (a return handed back). Everything else is asserted here. */
static bool detach_in_flight_once(const char *guest, bool returns, bool stub)
{
	struct kvm_fixture f;
	struct sink sink;
	struct writer w = {0};
	char err[256];
	const struct vmi_sym *iters;
	uint64_t before, after, events;
	sigset_t sigs;
	bool in_flight;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	kvm_fixture_boot(&f, guest, returns, stub);
	iters = vmi_symtab_find(&f.g.elf.objects, "loop_iterations");
	assert_non_null(iters);

	assert_int_equal(tracer_attach(f.tr, err, sizeof(err)), 0);
	size_t jmps = 0;

	for (size_t i = 0; i < f.g.sites.nr; i++) {
		uint8_t b = *(uint8_t *)vm_gpa_ptr(&f.vm, f.sel[i]->addr, 1);

		/* without fentry sites a stub probe is a detour's JMP rel32, or stays an INT3
		 * where the first bytes cannot move */
		if (stub && f.g.no_fentry && b == X86_INT3)
			continue;
		assert_int_equal(b, !stub	       ? X86_INT3
				    : f.g.no_fentry ? 0xe9 /* JMP rel32 into a detour */
						    : 0xe8 /* CALL rel32 */);
		jmps += b == 0xe9;
	}
	assert_true(!stub || !f.g.no_fentry || jmps > 10);
	assert_int_equal(stats_of(f.tr).stub_probes, !stub	     ? 0
						     : f.g.no_fentry ? jmps
								     : f.g.sites.nr);
	if (returns)
		assert_int_equal(sink_graph_init(&sink, f.devnull, &f.g.elf.funcs, 2, true, false), 0);
	else
		sink_function_init(&sink, f.devnull, &f.g.elf.funcs, 2);
	unsigned nr_rings;
	struct ring *rings = tracer_rings(f.tr, &nr_rings);

	assert_int_equal(writer_start(&w, rings, nr_rings, &sink, tracer_horizon, f.tr), 0);
	assert_int_equal(vcpu_start_all(&f.vm, err, sizeof(err)), 0);

	/* trace until the guest is in its endless loop of traced calls */
	for (int i = 0; i < 200 && !*(volatile uint64_t *)vm_gpa_ptr(&f.vm, iters->addr, 8); i++)
		sleep_sec(0.05);
	assert_true(*(volatile uint64_t *)vm_gpa_ptr(&f.vm, iters->addr, 8) > 0);
	assert_int_equal(tracer_detach(f.tr), 0);
	assert_true(kvm_sites_pristine(&f));
	in_flight = stats_of(f.tr).restored_slots > 0;
	if (returns) {
		assert_memory_equal(vm_gpa_ptr(&f.vm, f.vm.stub_gpa, 1), "\xc3", 1);
		assert_int_equal(stats_of(f.tr).orphan_returns, 0);
	}
	/* the stub's memory is gone from the guest: a return into it would end the VM below */
	assert_false(stats_of(f.tr).stub_mapped);
	events = ring_heads(f.tr);
	assert_true(events > 0);

	/* the guest runs on untraced: it progresses, records stop, and no fault ends it */
	before = *(volatile uint64_t *)vm_gpa_ptr(&f.vm, iters->addr, 8);
	sleep_sec(0.3);
	after = *(volatile uint64_t *)vm_gpa_ptr(&f.vm, iters->addr, 8);
	assert_true(after > before);
	assert_int_equal(f.vm.end, VM_END_NONE);
	assert_int_equal(ring_heads(f.tr), events);

	vcpu_join_all(&f.vm);
	writer_stop(&w, tracer_lost(f.tr));
	assert_int_equal(tracer_lost(f.tr), 0);
	assert_int_equal(sink.written, events);
	writer_free(&w);
	kvm_fixture_free(&f);
	return in_flight;
}

/* The loop spends nearly all its time inside tree_root, so calls are in flight when the tracer
 * detaches: with @returns, some return is handed back. Not always: with trap probes the VM stops
 * for the detach at an exit, and one exit in about 24 of an iteration (tree_root's return taken,
 * its next entry not yet) leaves no call open (make test once saw it). Such a run is made again, up
 * to 4 times; each one's other checks hold all the same. */
static void detach_in_flight_of(const char *guest, bool returns, bool stub)
{
	for (int again = 0; !detach_in_flight_once(guest, returns, stub) && returns; again++) {
		if (again == 4)
			fail_msg("%s: no call in flight at the detach in 5 runs", guest);
		printf("%s (%s probes): no call was in flight at the detach: once more\n", guest,
		       stub ? "stub" : "trap");
	}
}

static void detach_in_flight(bool returns, bool stub)
{
	detach_in_flight_of(hv_guest("loop"), returns, stub);
}

/* The guest built without -pg (issue 25): every function an entry probe (INT3 whose instruction
 * runs out of line, or a stub detour's JMP), detached in flight with returns hooked; the text is
 * as loaded, the guest runs on. */
static void test_detach_in_flight_nopg(void **state)
{
	(void)state;
	if (needs_int3_exits(__func__))
		detach_in_flight_of("build/guest/guest-nopg-loop.elf", true, false);
	detach_in_flight_of("build/guest/guest-nopg-loop.elf", true, true);
}

static void test_detach_in_flight(void **state)
{
	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	detach_in_flight(false, false);
}

/* With return hooks: every slot holding the trampoline is written back before the guest resumes. */
static void test_detach_in_flight_returns(void **state)
{
	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	detach_in_flight(true, false);
}

/* The same with stub probes: every CALL is put back, every slot holding the stub's return routine gets
 * its address back from the guest-memory shadow stacks, and the stub's memory is unmapped. */
static void test_detach_in_flight_stub(void **state)
{
	(void)state;
	detach_in_flight(false, true);
}

static void test_detach_in_flight_stub_returns(void **state)
{
	(void)state;
	detach_in_flight(true, true);
}

/* A site that is not a NOP5 in guest memory: refused, and nothing at all is left patched. */
static void test_attach_refuses_bad_site(void **state)
{
	struct kvm_fixture f;
	char err[256], want[256];
	uint8_t *p;

	(void)state;
	kvm_fixture_boot(&f, hv_guest(NULL), false, false);
	p = vm_gpa_ptr(&f.vm, f.sel[f.g.sites.nr - 1]->addr, X86_NOP5_LEN);
	memcpy(p, "\xe8\x00\x00\x00\x00", X86_NOP5_LEN);
	memcpy(f.pristine[f.g.sites.nr - 1], p, X86_NOP5_LEN);
	assert_int_equal(tracer_attach(f.tr, err, sizeof(err)), -EILSEQ);
	snprintf(want, sizeof(want), "%s: site 0x%lx holds e8 00 00 00 00, not a NOP5",
		 f.sel[f.g.sites.nr - 1]->func->name, (unsigned long)f.sel[f.g.sites.nr - 1]->addr);
	assert_string_equal(err, want);
	assert_true(kvm_sites_pristine(&f));
	kvm_fixture_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detach_in_flight),
		cmocka_unit_test(test_detach_in_flight_nopg),
		cmocka_unit_test(test_detach_in_flight_returns),
		cmocka_unit_test(test_detach_in_flight_stub),
		cmocka_unit_test(test_detach_in_flight_stub_returns),
		cmocka_unit_test(test_attach_refuses_bad_site),
	};

	kvm_require();
	return cmocka_run_group_tests_name("kvm_detach", tests, NULL, NULL);
}

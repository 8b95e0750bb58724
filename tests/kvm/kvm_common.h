/* Helpers for the embedded-VMM integration tests: the test guest's paths, its own counts on the
 * console, and whether /dev/kvm is there. Running hvtrace itself: tests/common/hv_run.h. */
#ifndef HVT_KVM_COMMON_H
#define HVT_KVM_COMMON_H

#include "arch/x86/x86_insn.h"
#include "host/kvm/guest_image.h"
#include "host/kvm/vm.h"
#include "host/trace/tracer.h"
#include "tests/common/hv_run.h"
#include "tests/common/skip.h"

#include <stdbool.h>
#include <stdio.h>

/* Path of a guest ELF (variant NULL, "loop" or "fault"), from $GUEST. */
const char *hv_guest(const char *variant);

/* Fails the running test, with hvtrace's status and stderr, unless @r exited 0 and the guest said
 * "hvt-guest: ok" on its console. */
void assert_ran(const struct hv_result *r);
/* The guest's "hvt-guest: count F cpu C = N" value (0 when absent). */
long guest_count(const struct hv_result *r, const char *func, unsigned cpu);
/* Total over vCPUs of the guest's count for @func. */
long guest_count_all(const struct hv_result *r, const char *func, unsigned nr_cpus);
/* Whether this host's KVM offers its guests RDTSCP (KVM_GET_SUPPORTED_CPUID 0x80000001 EDX bit
 * 27), asked independently of hvtrace. Fails the test if /dev/kvm cannot answer. */
bool kvm_offers_rdtscp(void);
/* Returns if /dev/kvm can be opened; if not, prints "SKIPPED: <why>" and exits HVT_SKIP_EXIT (the
 * whole binary is skipped). Call it from main. */
void kvm_require(void);
/* The same for one cmocka test of a binary whose other tests need no /dev/kvm: prints "SKIPPED: @what:
 * <why>" and skip()s the running test. */
void kvm_require_test(const char *what);

/* Whether trap probes work here (the INT3 check); if not, prints the one line "SKIPPED: @what:
 * needs INT3 exits (trap probes): INT3 in a guest does not exit on this host's KVM (WHY)" and
 * returns false: the caller then skip()s. For the tests of trap probes themselves (the nested AMD
 * lane has none). */
bool needs_int3_exits(const char *what);
/* The --probe a test asks for when it only needs some probe: $HVTRACE_TEST_PROBE, else "trap". */
const char *test_probe(void);

/* A guest booted in this process (2 vCPUs, 64 MiB, console to /dev/null), not started, with a tracer
 * over every site, not attached; the sites' bytes as loaded are kept. */
struct kvm_fixture {
	struct guest_image g;
	struct vm vm;
	struct target tgt;
	struct tracer *tr;
	const struct vmi_site **sel;
	FILE *devnull;
	uint8_t (*pristine)[X86_NOP5_LEN];
};

/* Boots @guest into @f with a tracer hooking every return when @returns, with stub probes when
 * @stub (a guest built without -pg: its workloads' functions, entry probes with their out-of-line
 * copies, detours with stub probes). Fails the test on any error. */
void kvm_fixture_boot(struct kvm_fixture *f, const char *guest, bool returns, bool stub);
void kvm_fixture_free(struct kvm_fixture *f);
/* Whether every site holds the bytes it held when loaded. */
bool kvm_sites_pristine(struct kvm_fixture *f);

#endif

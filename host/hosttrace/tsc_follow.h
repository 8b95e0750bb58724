/* Following each vCPU's guest TSC offset while the VM runs (issue 40's clock): the host kernel's
 * kvm:kvm_write_tsc_offset events of hvtrace's own threads, read live from a tracefs instance of
 * their own ("hvtrace-PID-tsc") on the x86-tsc clock, so that a move's time and the offsets are
 * in host TSC ticks and a guest TSC value converts to the host TSC exactly (tsc_segs). Wanted where
 * the host's TSC is unstable (KVM then moves a vCPU's offset at each vcpu_load: a nested KVM, a
 * host whose clocksource is not the TSC) and with record --host. One owner thread starts and closes
 * it; tsc_follow_update and tsc_follow_host are the drain thread's. */
#ifndef HVT_TSC_FOLLOW_H
#define HVT_TSC_FOLLOW_H

#include "host/hosttrace/tsc_segs.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tsc_follow;

/* Whether the host's TSC can move under a vCPU: its clocksource is not "tsc" (Linux marked it
 * unstable, or it was never good), read from sysfs; HVTRACE_TSC_FOLLOW=1 or 0 says yes or no
 * instead. Any thread. */
bool tsc_follow_wanted(void);

/* Starts following the vCPUs of the host threads @tids (the threads that run or touch them: vCPU
 * threads and the caller's), @nr_vcpus vCPUs numbered as KVM's vcpu_id. Call before the vCPUs
 * first run, then tsc_follow_seed each. *@out, or a negative errno with one line in @err (nothing
 * left behind): no tracefs, no x86-tsc clock, no kvm:kvm_write_tsc_offset. */
int tsc_follow_start(struct tsc_follow **out, const int *tids, unsigned nr_tids, unsigned nr_vcpus,
		     char *err, size_t errlen);

/* vCPU @vcpu's offset as read now (KVM_VCPU_TSC_OFFSET): its first segment, from the start. */
void tsc_follow_seed(struct tsc_follow *f, unsigned vcpu, uint64_t offset);

/* Takes in the moves the host has recorded up to now (non-blocking reads). Drain thread. */
void tsc_follow_update(struct tsc_follow *f);

/* The host TSC at which vCPU @vcpu's guest read @guest; false: not followed (no segment).
 * Drain thread. */
bool tsc_follow_host(struct tsc_follow *f, unsigned vcpu, uint64_t guest, uint64_t *host);

/* Moves taken in, events the host said it lost, and lookups older than the table. */
void tsc_follow_counts(const struct tsc_follow *f, uint64_t *moves, uint64_t *host_lost,
		       uint64_t *too_old);

/* Removes the instance and frees everything. NULL is fine. Owner thread, once the drain is done. */
void tsc_follow_close(struct tsc_follow *f);

#endif

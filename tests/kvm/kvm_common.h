/* Helpers for the embedded-VMM integration tests: the test guest's paths, its own counts on the
 * console, and whether /dev/kvm is there. Running hvtrace itself: tests/common/hv_run.h. */
#ifndef HVT_KVM_COMMON_H
#define HVT_KVM_COMMON_H

#include "tests/common/hv_run.h"

#include <stdbool.h>

/* Path of a guest ELF (variant NULL, "loop" or "fault"), from $GUEST. */
const char *hv_guest(const char *variant);

/* The guest's "hvt-guest: count F cpu C = N" value (0 when absent). */
long guest_count(const struct hv_result *r, const char *func, unsigned cpu);
/* Total over vCPUs of the guest's count for @func. */
long guest_count_all(const struct hv_result *r, const char *func, unsigned nr_cpus);
/* Whether /dev/kvm can be opened; prints the skip line if not. */
bool kvm_available(void);

#endif

/* The host clock, in one place: CLOCK_MONOTONIC as the session clock (ns, read without a syscall
 * through the vDSO) and for deadlines (ms, s), the host TSC rate, and TSC values converted to that
 * clock. */
#ifndef HVT_CLOCK_H
#define HVT_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic nanoseconds: the session clock. Any thread, the hit path included. */
static inline uint64_t clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The same clock in whole milliseconds (truncated), for deadlines. Any thread. */
int64_t clock_now_ms(void);

/* The same clock in seconds. Any thread. */
double clock_now_s(void);

/* The host's TSC rate in kHz, measured against the monotonic clock over 20 ms (sleeps that long).
 * Any thread. */
uint64_t clock_host_tsc_khz(void);

/* Nanoseconds after @origin (0 if before it) of the monotonic time at which a TSC running at @khz
 * read
 * @tsc, given that it read @tsc_ref at monotonic ns @ns_ref (@tsc may be before @tsc_ref). @khz
 * must not be 0. Pure. */
uint64_t clock_tsc_to_ns(uint64_t tsc, uint64_t tsc_ref, uint64_t ns_ref, uint64_t khz,
			 uint64_t origin);

#endif

/* The session clock: monotonic nanoseconds, read without a syscall (vDSO). */
#ifndef HVT_CLOCK_H
#define HVT_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif

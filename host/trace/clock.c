#include "host/trace/clock.h"

#include <unistd.h>
#include <x86intrin.h>

#define NS_PER_S  1000000000ull
#define NS_PER_MS 1000000ull

int64_t clock_now_ms(void)
{
	return (int64_t)(clock_now_ns() / NS_PER_MS);
}

double clock_now_s(void)
{
	uint64_t ns = clock_now_ns();

	return (double)(ns / NS_PER_S) + (double)(ns % NS_PER_S) / 1e9;
}

uint64_t clock_host_tsc_khz(void)
{
	uint64_t n0 = clock_now_ns(), c0 = __rdtsc(), n1, c1;

	usleep(20000);
	n1 = clock_now_ns();
	c1 = __rdtsc();
	return (c1 - c0) * 1000000ull / (n1 - n0);
}

uint64_t clock_tsc_to_ns(uint64_t tsc, uint64_t tsc_ref, uint64_t ns_ref, uint64_t khz,
			 uint64_t origin)
{
	__int128 d = (__int128)(int64_t)(tsc - tsc_ref) * 1000000 / (__int128)khz;
	__int128 ns = (__int128)ns_ref + d - (__int128)origin;

	return ns < 0 ? 0 : (uint64_t)ns;
}

/* Instrumented loop for `make bench`: each vCPU calls bench_leaf BENCH_CALLS times. */
#include "tests/guest/guest.h"

/* A leaf with a frame in every build: without -pg (bench-nopg.elf) gcc would leave a bare
 * LEA; RET, which no detour can displace, where -pg keeps the frame. The same body either way. */
noinline long bench_leaf(long x)
{
	volatile long v = x;

	return v + 1;
}

noinline long bench_loop(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s += bench_leaf(i);
	return s;
}

/* Instrumented loop for `make bench`: each vCPU calls bench_leaf BENCH_CALLS times. */
#include "tests/guest/guest.h"

noinline long bench_leaf(long x)
{
	return x + 1;
}

noinline long bench_loop(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s += bench_leaf(i);
	return s;
}

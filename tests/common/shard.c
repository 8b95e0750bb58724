#include "shard.h"

#include <stdio.h>
#include <stdlib.h>

bool hv_shard_keeps(size_t index)
{
	const char *v = getenv("HVT_TEST_SHARD");
	unsigned k, n;
	char end;

	if (!v || !*v)
		return true;
	if (sscanf(v, "%u/%u%c", &k, &n, &end) != 2 || n == 0 || k >= n) {
		fprintf(stderr, "HVT_TEST_SHARD=%s: K/N with 0 <= K < N, e.g. 0/2\n", v);
		exit(2);
	}
	return index % n == k;
}

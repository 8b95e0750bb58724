#include "host/trace/ring.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int ring_init(struct ring *r, uint64_t nr)
{
	uint64_t n = 2;

	memset(r, 0, sizeof(*r));
	if (nr > (UINT64_MAX / 2) / sizeof(*r->buf))
		return -ENOMEM;
	while (n < nr)
		n <<= 1;
	r->buf = aligned_alloc(64, n * sizeof(*r->buf));
	if (!r->buf)
		return -ENOMEM;
	r->mask = n - 1;
	return 0;
}

void ring_free(struct ring *r)
{
	free(r->buf);
	r->buf = NULL;
}

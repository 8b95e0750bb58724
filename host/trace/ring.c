#include "host/trace/ring.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int ring_init(struct ring *r, uint64_t nr)
{
	uint64_t n = 2;

	memset(r, 0, sizeof(*r));
	if (nr > (UINT64_MAX / 2) / sizeof(*r->buf))
		return -ENOMEM;
	while (n < nr)
		n <<= 1;
	/* reserved, not committed: a page is only taken when a record first lands in it, so a large
	 * --buffer-size-kb costs what the trace uses (and never fails up-front on overcommit) */
	r->buf = mmap(NULL, n * sizeof(*r->buf), PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r->buf == MAP_FAILED) {
		r->buf = NULL;
		return -ENOMEM;
	}
	r->mask = n - 1;
	return 0;
}

void ring_free(struct ring *r)
{
	if (r->buf)
		munmap(r->buf, (r->mask + 1) * sizeof(*r->buf));
	r->buf = NULL;
}

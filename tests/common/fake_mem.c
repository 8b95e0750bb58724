#include "tests/common/fake_mem.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

void fake_mem_init(struct fake_mem *m)
{
	memset(m, 0, sizeof(*m));
}

void fake_mem_map(struct fake_mem *m, uint64_t base, void *buf, size_t size)
{
	if (m->nr == FAKE_MEM_REGIONS)
		__builtin_trap(); /* a test bug: raise FAKE_MEM_REGIONS */
	m->r[m->nr++] = (struct fake_region){.base = base, .buf = buf, .size = size};
}

uint8_t *fake_mem_at(struct fake_mem *m, uint64_t addr, size_t len)
{
	for (unsigned i = 0; i < m->nr; i++) {
		const struct fake_region *r = &m->r[i];

		if (addr >= r->base && addr - r->base <= r->size &&
		    len <= r->size - (addr - r->base))
			return r->buf + (addr - r->base);
	}
	return NULL;
}

/* Counts a read callback; false if it is the one chosen to fail. */
static bool count_read(struct fake_mem *m)
{
	m->reads++;
	return m->reads != m->fail_read;
}

int fake_mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake_mem *m = ctx;
	const uint8_t *p;

	if (!count_read(m) || !(p = fake_mem_at(m, addr, len)))
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

int fake_mem_read_pte(void *ctx, uint64_t gpa, uint64_t *pte)
{
	struct fake_mem *m = ctx;
	const uint8_t *p;

	if (!count_read(m) || gpa % 8 || !(p = fake_mem_at(m, gpa, 8)))
		return -EIO;
	memcpy(pte, p, 8);
	return 0;
}

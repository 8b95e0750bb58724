#include "tests/common/fake_target.h"

#include <errno.h>
#include <string.h>

void fake_target_init(struct fake_target *f, const struct target_ops *ops, unsigned nr_cpus)
{
	memset(f, 0, sizeof(*f));
	f->t.ops = ops;
	f->t.name = "fake";
	f->t.nr_cpus = nr_cpus;
	fake_mem_init(&f->mem);
}

struct fake_target *fake_target_of(struct target *t)
{
	return (struct fake_target *)t;
}

int fake_target_read_virt(struct target *t, unsigned cpu, uint64_t gva, void *buf, size_t len)
{
	(void)cpu;
	return fake_target_read_phys(t, gva, buf, len);
}

int fake_target_write_virt(struct target *t, unsigned cpu, uint64_t gva, const void *buf,
			   size_t len)
{
	(void)cpu;
	return fake_target_write_phys(t, gva, buf, len);
}

int fake_target_read_phys(struct target *t, uint64_t gpa, void *buf, size_t len)
{
	uint8_t *p = fake_mem_at(&fake_target_of(t)->mem, gpa, len);

	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

int fake_target_write_phys(struct target *t, uint64_t gpa, const void *buf, size_t len)
{
	uint8_t *p = fake_mem_at(&fake_target_of(t)->mem, gpa, len);

	if (!p)
		return -EFAULT;
	memcpy(p, buf, len);
	return 0;
}

int fake_target_translate(struct target *t, unsigned cpu, uint64_t gva, uint64_t *gpa)
{
	(void)cpu;
	if (!fake_mem_at(&fake_target_of(t)->mem, gva, 1))
		return -EFAULT;
	*gpa = gva;
	return 0;
}

/* The byte at @gpa becomes @to if it is @from. */
static int swap_byte(struct fake_target *f, uint64_t gpa, uint8_t from, uint8_t to)
{
	uint8_t *p = fake_mem_at(&f->mem, gpa, 1);

	if (!p)
		return -EFAULT;
	if (*p != from)
		return -ESTALE;
	*p = to;
	return 0;
}

int fake_target_insert_bp(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig)
{
	struct fake_target *f = fake_target_of(t);

	f->inserts++;
	if (gva == f->fail_insert_at)
		return -EIO;
	return swap_byte(f, gpa, orig, 0xcc);
}

int fake_target_remove_bp(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig)
{
	struct fake_target *f = fake_target_of(t);

	(void)gva;
	f->removes++;
	return swap_byte(f, gpa, 0xcc, orig);
}

int fake_target_write_text(struct target *t, uint64_t gpa, const void *expect, const void *buf,
			   size_t len)
{
	uint8_t now[16];

	if (len > sizeof(now) || fake_target_read_phys(t, gpa, now, len) < 0)
		return -EFAULT;
	if (memcmp(now, expect, len))
		return -ESTALE;
	return fake_target_write_phys(t, gpa, buf, len);
}

int fake_target_kernel_gpa(struct target *t, uint64_t gva, uint64_t *gpa)
{
	return fake_target_translate(t, 0, gva, gpa);
}

int fake_target_pause(struct target *t)
{
	(void)t;
	return 0;
}

void fake_target_resume(struct target *t)
{
	(void)t;
}

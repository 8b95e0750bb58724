/* arch/arch_tlb.h: the translation cache and the page-by-page virtual copy. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/arch_tlb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PG(n) ((uint64_t)(n)*ARCH_TLB_PAGE)

/* ---- arch_tlb_translate and arch_copy_virt --------------------------------------------------- */

#define SPACE_PAGES 4 /* guest-virtual pages of the fake address space */
#define PHYS_PAGES  8 /* guest-physical pages behind it */

/* Guest-virtual page n < SPACE_PAGES at guest-physical page map[n] (0: not mapped). */
struct fake_space {
	uint64_t map[SPACE_PAGES];
	uint8_t mem[PHYS_PAGES * ARCH_TLB_PAGE];
	struct arch_tlb tlb;
	uint64_t cr3;
	unsigned walks;	 /* fake_walk calls */
	unsigned copies; /* fake_copy calls */
	size_t lens[8];	 /* their lengths */
	int copy_err;	 /* fake_copy fails with this if not 0 */
};

static struct fake_space *space_new(void)
{
	struct fake_space *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	for (size_t i = 0; i < sizeof(s->mem); i++)
		s->mem[i] = (uint8_t)(i * 7 + i / ARCH_TLB_PAGE);
	s->cr3 = 0x1000;
	return s;
}

static int fake_walk(void *ctx, uint64_t gva, uint64_t *gpa)
{
	struct fake_space *s = ctx;
	uint64_t n = gva / ARCH_TLB_PAGE;

	s->walks++;
	if (n >= SPACE_PAGES || !s->map[n])
		return -EFAULT;
	*gpa = PG(s->map[n]) | (gva & (ARCH_TLB_PAGE - 1));
	return 0;
}

static int fake_translate(void *ctx, uint64_t gva, uint64_t *gpa)
{
	struct fake_space *s = ctx;

	return arch_tlb_translate(&s->tlb, s->cr3, gva, fake_walk, s, gpa);
}

static int fake_copy(void *ctx, uint64_t gpa, void *buf, size_t len, bool write)
{
	struct fake_space *s = ctx;

	if (s->copies < 8)
		s->lens[s->copies] = len;
	s->copies++;
	if (s->copy_err)
		return s->copy_err;
	if (gpa >= sizeof(s->mem) || len > sizeof(s->mem) - gpa)
		return -EIO;
	if (write)
		memcpy(s->mem + gpa, buf, len);
	else
		memcpy(buf, s->mem + gpa, len);
	return 0;
}

/* A zeroed cache holds nothing; a walked page is then answered from the cache at any offset, under
 * the same CR3 only; every answer is counted as a hit or a walk. */
static void test_tlb_hit_and_miss(void **state)
{
	struct fake_space *s = space_new();
	uint64_t gpa = 0;

	(void)state;
	s->cr3 = 0;
	assert_int_equal(fake_translate(s, 0x0, &gpa), -EFAULT); /* not a hit on the zeroed entry */
	assert_int_equal(s->walks, 1);
	s->cr3 = 0x1000;
	s->map[1] = 5;
	s->map[2] = 3;
	assert_int_equal(fake_translate(s, 0x1234, &gpa), 0);
	assert_int_equal(gpa, 0x5234);
	assert_int_equal(fake_translate(s, 0x1ff8, &gpa), 0);
	assert_int_equal(gpa, 0x5ff8);
	assert_int_equal(fake_translate(s, 0x2010, &gpa), 0);
	assert_int_equal(gpa, 0x3010);
	assert_int_equal(fake_translate(s, 0x1000, &gpa), 0);
	assert_int_equal(gpa, 0x5000);
	assert_int_equal(s->walks, 3);
	assert_int_equal(s->tlb.walks, 3);
	assert_int_equal(s->tlb.hits, 2);

	/* another CR3 is another address space */
	s->cr3 = 0x9000;
	s->map[1] = 6;
	assert_int_equal(fake_translate(s, 0x1234, &gpa), 0);
	assert_int_equal(gpa, 0x6234);
	assert_int_equal(s->walks, 4);
	free(s);
}

/* Cached translations outlive a change of the page tables until the cache is invalidated; the
 * counters survive invalidation. */
static void test_tlb_invalidate(void **state)
{
	struct fake_space *s = space_new();
	uint64_t gpa = 0;

	(void)state;
	s->map[1] = 5;
	assert_int_equal(fake_translate(s, 0x1234, &gpa), 0);
	s->map[1] = 6;
	assert_int_equal(fake_translate(s, 0x1234, &gpa), 0);
	assert_int_equal(gpa, 0x5234); /* stale, as it should be until invalidated */
	arch_tlb_invalidate(&s->tlb);
	assert_int_equal(fake_translate(s, 0x1234, &gpa), 0);
	assert_int_equal(gpa, 0x6234);
	assert_int_equal(s->tlb.hits, 1);
	assert_int_equal(s->tlb.walks, 2);
	free(s);
}

/* A failed walk returns its error and caches nothing. */
static void test_tlb_walk_error(void **state)
{
	struct fake_space *s = space_new();
	uint64_t gpa = 0;

	(void)state;
	assert_int_equal(fake_translate(s, 0x3008, &gpa), -EFAULT);
	s->map[3] = 7;
	assert_int_equal(fake_translate(s, 0x3008, &gpa), 0);
	assert_int_equal(gpa, 0x7008);
	assert_int_equal(s->walks, 2);
	assert_int_equal(s->tlb.hits, 0);
	free(s);
}

/* Reads and writes that cross pages go page by page to wherever each page is mapped. */
static void test_copy_virt_pages(void **state)
{
	struct fake_space *s = space_new();
	uint8_t buf[0x1010], want[0x1010];

	(void)state;
	s->map[1] = 5;
	s->map[2] = 3;
	s->map[3] = 6;
	assert_int_equal(arch_copy_virt(0x1ff0, buf, 32, false, fake_translate, fake_copy, s), 0);
	assert_memory_equal(buf, s->mem + 0x5ff0, 16);
	assert_memory_equal(buf + 16, s->mem + 0x3000, 16);
	assert_int_equal(s->copies, 2);
	assert_int_equal(s->lens[0], 16);
	assert_int_equal(s->lens[1], 16);
	/* the same again: both pages from the cache */
	assert_int_equal(arch_copy_virt(0x1ff0, buf, 32, false, fake_translate, fake_copy, s), 0);
	assert_int_equal(s->walks, 2);
	assert_int_equal(s->tlb.hits, 2);

	/* a write over three pages: 8 bytes, a whole page, 8 bytes */
	for (size_t i = 0; i < sizeof(want); i++)
		want[i] = (uint8_t)(0xa5 ^ i);
	s->copies = 0;
	assert_int_equal(
	    arch_copy_virt(0x1ff8, want, sizeof(want), true, fake_translate, fake_copy, s), 0);
	assert_int_equal(s->copies, 3);
	assert_int_equal(s->lens[0], 8);
	assert_int_equal(s->lens[1], ARCH_TLB_PAGE);
	assert_int_equal(s->lens[2], 8);
	assert_memory_equal(s->mem + 0x5ff8, want, 8);
	assert_memory_equal(s->mem + 0x3000, want + 8, ARCH_TLB_PAGE);
	assert_memory_equal(s->mem + 0x6000, want + 8 + ARCH_TLB_PAGE, 8);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(
	    arch_copy_virt(0x1ff8, buf, sizeof(buf), false, fake_translate, fake_copy, s), 0);
	assert_memory_equal(buf, want, sizeof(want));

	/* nothing to copy: no callback */
	s->copies = s->walks = 0;
	assert_int_equal(arch_copy_virt(0x1000, buf, 0, false, fake_translate, fake_copy, s), 0);
	assert_int_equal(s->copies + s->walks, 0);
	free(s);
}

/* A page that does not translate is -EFAULT, a failed copy its own error; the copy stops there. */
static void test_copy_virt_errors(void **state)
{
	struct fake_space *s = space_new();
	uint8_t buf[32];

	(void)state;
	s->map[1] = 5;
	memset(buf, 0, sizeof(buf));
	assert_int_equal(arch_copy_virt(0x1ff0, buf, 32, false, fake_translate, fake_copy, s),
			 -EFAULT);
	assert_int_equal(s->copies, 1); /* the first page was copied */
	assert_memory_equal(buf, s->mem + 0x5ff0, 16);

	s->copy_err = -EIO;
	s->copies = 0;
	assert_int_equal(arch_copy_virt(0x1000, buf, 8, false, fake_translate, fake_copy, s), -EIO);
	assert_int_equal(s->copies, 1);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tlb_hit_and_miss), cmocka_unit_test(test_tlb_invalidate),
	    cmocka_unit_test(test_tlb_walk_error),   cmocka_unit_test(test_copy_virt_pages),
	    cmocka_unit_test(test_copy_virt_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

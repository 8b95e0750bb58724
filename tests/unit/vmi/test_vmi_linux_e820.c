/* The check of the guest's own E820 table that proves the kernel did reserve the RAM range memmap=
 * asked for, and finds one the guest's command line reserved (vmi/vmi_linux_e820.c), against
 * tables as hostile as a guest can write them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "vmi/vmi_linux_e820.h"

#include <string.h>

#define MIB (1ull << 20)

/* An E820 table image: count, then packed {addr, size, type}. */
static size_t table(uint8_t *buf, uint32_t count, const uint64_t (*e)[3], unsigned n)
{
	memcpy(buf, &count, 4);
	for (unsigned i = 0; i < n; i++) {
		uint32_t t = (uint32_t)e[i][2];

		memcpy(buf + 4 + i * 20, &e[i][0], 8);
		memcpy(buf + 4 + i * 20 + 8, &e[i][1], 8);
		memcpy(buf + 4 + i * 20 + 16, &t, 4);
	}
	return 4 + n * 20;
}

static void test_e820(void **state)
{
	/* the Debian guest's table with memmap=12288K$0xf000000 (its console's "user:" lines) */
	static const uint64_t booted[][3] = {
	    {0, 0x9fc00, 1},	      {0x9fc00, 0x400, 2},	{0xf0000, 0x10000, 2},
	    {0x100000, 0xef00000, 1}, {0xf000000, 0xc00000, 2}, {0xfc00000, 0x3e0000, 1},
	    {0xffe0000, 0x20000, 2},  {0xfffc0000, 0x40000, 2},
	};
	static const uint64_t split[][3] = {{0xf000000, 0x600000, 2}, {0xf600000, 0x600000, 2}};
	static const uint64_t overlap[][3] = {{0xe000000, 0x2000000, 2}, {0xf800000, 0x1000, 1}};
	static const uint64_t wrap[][3] = {{0xfffffffffffff000ull, 0x2000, 2}};
	uint8_t buf[4 + 16 * 20];
	size_t len;

	(void)state;
	len = table(buf, 8, booted, 8);
	assert_true(vmi_linux_e820_covers(buf, len, 0xf000000, 12 * MIB, VMI_E820_RESERVED));
	assert_false(vmi_linux_e820_covers(buf, len, 0xf000000, 12 * MIB, VMI_E820_RAM));
	/* one byte more, or less in front: partly RAM */
	assert_false(vmi_linux_e820_covers(buf, len, 0xf000000, 12 * MIB + 1, VMI_E820_RESERVED));
	assert_false(vmi_linux_e820_covers(buf, len, 0xefff000, 12 * MIB, VMI_E820_RESERVED));
	assert_false(vmi_linux_e820_covers(buf, len, 0xf000000, 0, VMI_E820_RESERVED));
	/* the count says fewer entries than there are: the reserved one is not read */
	len = table(buf, 4, booted, 8);
	assert_false(vmi_linux_e820_covers(buf, len, 0xf000000, 12 * MIB, VMI_E820_RESERVED));
	/* the count says more than the bytes hold: only what is there */
	len = table(buf, 0xffffffffu, booted, 5);
	assert_true(vmi_linux_e820_covers(buf, len, 0xf000000, 12 * MIB, VMI_E820_RESERVED));
	assert_false(vmi_linux_e820_covers(buf, 3, 0xf000000, 12 * MIB, VMI_E820_RESERVED));
	/* two reserved halves: no single entry covers it (the kernel merges adjacent ones) */
	len = table(buf, 2, split, 2);
	assert_false(vmi_linux_e820_covers(buf, len, 0xf000000, 12 * MIB, VMI_E820_RESERVED));
	/* covered, but RAM overlapping part of it too */
	len = table(buf, 2, overlap, 2);
	assert_false(vmi_linux_e820_covers(buf, len, 0xf000000, 12 * MIB, VMI_E820_RESERVED));
	/* an entry wrapping past 2^64 is taken up to the end only; a range reaching 2^64 is none */
	len = table(buf, 1, wrap, 1);
	assert_true(
	    vmi_linux_e820_covers(buf, len, 0xfffffffffffff000ull, 0x800, VMI_E820_RESERVED));
	assert_false(
	    vmi_linux_e820_covers(buf, len, 0xfffffffffffff000ull, 0x1000, VMI_E820_RESERVED));
}

/* attach: a range the guest's own command line reserved is RAM in the firmware's table and reserved
 * in the kernel's; firmware-reserved ones, ones below 1 MiB and ones under 2 MiB after trimming to
 * 2 MiB boundaries are not taken; the largest is. */
static void test_e820_user_reserved(void **state)
{
	static const uint64_t fw[][3] = {{0, 0x9fc00, 1},
					 {0x9fc00, 0x400, 2},
					 {0x100000, 0xfee0000, 1},
					 {0xffe0000, 0x20000, 2}};
	static const uint64_t cur[][3] = {
	    {0, 0x1000, 2},	       /* below 1 MiB (the kernel trims the first page) */
	    {0x9fc00, 0x400, 2},       /* the firmware's */
	    {0x2000000, 0x1ff000, 2},  /* under 2 MiB once trimmed */
	    {0x4100000, 0x500000, 2},  /* 0x4200000..0x4600000 once trimmed */
	    {0xe000000, 0x1000000, 2}, /* the largest: taken */
	    {0xffe0000, 0x20000, 2},   /* the firmware's */
	};
	static const uint64_t none[][3] = {{0xffe0000, 0x20000, 2}};
	uint8_t c[4 + 8 * 20], f[4 + 8 * 20];
	size_t nc = table(c, 6, cur, 6), nf = table(f, 4, fw, 4);
	uint64_t gpa = 0, size = 0;

	(void)state;
	assert_true(vmi_linux_e820_user_reserved(c, nc, f, nf, &gpa, &size));
	assert_int_equal(gpa, 0xe000000);
	assert_int_equal(size, 16 * MIB);
	/* without the largest: the trimmed one */
	nc = table(c, 4, cur, 4);
	assert_true(vmi_linux_e820_user_reserved(c, nc, f, nf, &gpa, &size));
	assert_int_equal(gpa, 0x4200000);
	assert_int_equal(size, 4 * MIB);
	/* the firmware's own reserved ranges only: none */
	nc = table(c, 1, none, 1);
	assert_false(vmi_linux_e820_user_reserved(c, nc, f, nf, &gpa, &size));
	/* a firmware table that does not say RAM there (the guest rewrote it): none */
	nc = table(c, 6, cur, 6);
	nf = table(f, 2, fw, 2);
	assert_false(vmi_linux_e820_user_reserved(c, nc, f, nf, &gpa, &size));
	assert_false(vmi_linux_e820_user_reserved(c, 3, f, nf, &gpa, &size));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_e820),
	    cmocka_unit_test(test_e820_user_reserved),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

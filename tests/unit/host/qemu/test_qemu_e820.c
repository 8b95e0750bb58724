/* Where `run --qemu` puts the stub's rings: the RAM range memmap= asks the kernel to reserve
 * (host/qemu/qemu_launch.c: below the initrd QEMU loads at the top of low RAM, above the kernel the
 * decompressor places at 16 MiB), the kernel parameter that asks for it, the reservation's size,
 * and the check of the guest's own E820 table that proves the kernel did reserve it
 * (host/qemu/qemu_e820.c), against tables as hostile as a guest can write them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/qemu/qemu_e820.h"
#include "host/qemu/qemu_launch.h"
#include "host/qemu/target_qemu.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1ull << 20)

static char kernel[64], initrd[64];

/* A bzImage header: "HdrS", boot protocol @version, init_size @init_size; an initrd of @isize
 * bytes. */
static void files(uint16_t version, uint32_t init_size, size_t isize)
{
	uint8_t h[0x264] = {0};
	int fd;

	snprintf(kernel, sizeof(kernel), "/tmp/rings-test-kernel-%d", getpid());
	snprintf(initrd, sizeof(initrd), "/tmp/rings-test-initrd-%d", getpid());
	memcpy(h + 0x202, "HdrS", 4);
	memcpy(h + 0x206, &version, 2);
	memcpy(h + 0x260, &init_size, 4);
	fd = open(kernel, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, h, sizeof(h)), sizeof(h));
	close(fd);
	fd = open(initrd, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)isize), 0);
	close(fd);
}

static int teardown(void **state)
{
	(void)state;
	unlink(kernel);
	unlink(initrd);
	return 0;
}

static void test_reserve_place(void **state)
{
	struct qemu_launch_cfg cfg = {.kernel = kernel, .initrd = initrd, .mem_mb = 256};
	uint64_t gpa = 0;
	char why[160] = "";

	(void)state;
	/* Debian's cloud kernel: init_size 0x2a6d000 (42.4 MiB); a 1,042,548-byte initrd */
	files(0x20f, 0x2a6d000, 1042548);
	assert_int_equal(qemu_launch_reserve(&cfg, 12 * MIB, &gpa, why, sizeof(why)), 0);
	/* 256 MiB - 160 KiB (ACPI) - 1020 KiB (initrd) - 2 MiB - 12 MiB, down to 2 MiB */
	assert_int_equal(gpa, 0xf000000);
	/* 4 GiB of RAM: only the 2 GiB below every machine type's PCI hole are sure */
	cfg.mem_mb = 4096;
	assert_int_equal(qemu_launch_reserve(&cfg, 12 * MIB, &gpa, why, sizeof(why)), 0);
	assert_int_equal(gpa, 0x7f000000);
	/* no initrd: just below the ACPI room */
	cfg.initrd = NULL;
	cfg.mem_mb = 256;
	assert_int_equal(qemu_launch_reserve(&cfg, 2 * MIB, &gpa, why, sizeof(why)), 0);
	assert_int_equal(gpa, 0xfa00000);
}

static void test_reserve_refused(void **state)
{
	struct qemu_launch_cfg cfg = {.kernel = kernel, .initrd = initrd, .mem_mb = 64};
	uint64_t gpa = 0x1234;
	char why[160] = "";

	(void)state;
	files(0x20f, 0x2a6d000, 1042548);
	/* 64 MiB: the kernel alone takes 16 + 44 MiB */
	assert_int_equal(qemu_launch_reserve(&cfg, 12 * MIB, &gpa, why, sizeof(why)), -ENOSPC);
	assert_string_equal(why, "12288 KiB do not fit between the kernel and the initrd in 64 MiB "
				 "of RAM");
	assert_int_equal(gpa, 0x1234);
	/* not a multiple of 2 MiB */
	cfg.mem_mb = 256;
	assert_int_equal(qemu_launch_reserve(&cfg, 3 * MIB, &gpa, why, sizeof(why)), -ENOSPC);
	/* boot protocol 2.09 has no init_size */
	files(0x209, 0x2a6d000, 10);
	assert_int_equal(qemu_launch_reserve(&cfg, 2 * MIB, &gpa, why, sizeof(why)), -ENOEXEC);
	assert_string_equal(why, "the kernel is no bzImage of boot protocol 2.10 or later");
	/* no kernel file */
	cfg.kernel = "/nonexistent/rings-kernel";
	assert_int_equal(qemu_launch_reserve(&cfg, 2 * MIB, &gpa, why, sizeof(why)), -EIO);
	assert_string_equal(why, "cannot read the kernel's boot header");
}

static void test_memmap_argument(void **state)
{
	struct qemu_launch_cfg cfg = {.kernel = "K", .qmp_path = "/tmp/q", .append = "nokaslr"};
	const char *argv[64];
	char buf[1024];
	int n;

	(void)state;
	n = qemu_launch_argv(&cfg, argv, 64, buf, sizeof(buf));
	assert_true(n > 2);
	assert_string_equal(argv[n - 1], "console=ttyS0 panic=-1 nokaslr");
	cfg.reserve_gpa = 0xf000000;
	cfg.reserve_size = 12 * MIB;
	n = qemu_launch_argv(&cfg, argv, 64, buf, sizeof(buf));
	assert_string_equal(argv[n - 1], "console=ttyS0 panic=-1 memmap=12288K$0xf000000 nokaslr");
	cfg.append = NULL;
	n = qemu_launch_argv(&cfg, argv, 64, buf, sizeof(buf));
	assert_string_equal(argv[n - 1], "console=ttyS0 panic=-1 memmap=12288K$0xf000000");
}

static void test_reserve_size(void **state)
{
	(void)state;
	assert_int_equal(target_qemu_stub_reserve(1), 2 * MIB);
	assert_int_equal(target_qemu_stub_reserve(2 * MIB), 2 * MIB);
	assert_int_equal(target_qemu_stub_reserve(0x3000 + 2 * 4 * MIB + 2 * MIB), 12 * MIB);
}

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
	assert_true(qemu_e820_covers(buf, len, 0xf000000, 12 * MIB, QEMU_E820_RESERVED));
	assert_false(qemu_e820_covers(buf, len, 0xf000000, 12 * MIB, QEMU_E820_RAM));
	/* one byte more, or less in front: partly RAM */
	assert_false(qemu_e820_covers(buf, len, 0xf000000, 12 * MIB + 1, QEMU_E820_RESERVED));
	assert_false(qemu_e820_covers(buf, len, 0xefff000, 12 * MIB, QEMU_E820_RESERVED));
	assert_false(qemu_e820_covers(buf, len, 0xf000000, 0, QEMU_E820_RESERVED));
	/* the count says fewer entries than there are: the reserved one is not read */
	len = table(buf, 4, booted, 8);
	assert_false(qemu_e820_covers(buf, len, 0xf000000, 12 * MIB, QEMU_E820_RESERVED));
	/* the count says more than the bytes hold: only what is there */
	len = table(buf, 0xffffffffu, booted, 5);
	assert_true(qemu_e820_covers(buf, len, 0xf000000, 12 * MIB, QEMU_E820_RESERVED));
	assert_false(qemu_e820_covers(buf, 3, 0xf000000, 12 * MIB, QEMU_E820_RESERVED));
	/* two reserved halves: no single entry covers it (the kernel merges adjacent ones) */
	len = table(buf, 2, split, 2);
	assert_false(qemu_e820_covers(buf, len, 0xf000000, 12 * MIB, QEMU_E820_RESERVED));
	/* covered, but RAM overlapping part of it too */
	len = table(buf, 2, overlap, 2);
	assert_false(qemu_e820_covers(buf, len, 0xf000000, 12 * MIB, QEMU_E820_RESERVED));
	/* an entry wrapping past 2^64 is taken up to the end only; a range reaching 2^64 is none */
	len = table(buf, 1, wrap, 1);
	assert_true(qemu_e820_covers(buf, len, 0xfffffffffffff000ull, 0x800, QEMU_E820_RESERVED));
	assert_false(qemu_e820_covers(buf, len, 0xfffffffffffff000ull, 0x1000, QEMU_E820_RESERVED));
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
	assert_true(qemu_e820_user_reserved(c, nc, f, nf, &gpa, &size));
	assert_int_equal(gpa, 0xe000000);
	assert_int_equal(size, 16 * MIB);
	/* without the largest: the trimmed one */
	nc = table(c, 4, cur, 4);
	assert_true(qemu_e820_user_reserved(c, nc, f, nf, &gpa, &size));
	assert_int_equal(gpa, 0x4200000);
	assert_int_equal(size, 4 * MIB);
	/* the firmware's own reserved ranges only: none */
	nc = table(c, 1, none, 1);
	assert_false(qemu_e820_user_reserved(c, nc, f, nf, &gpa, &size));
	/* a firmware table that does not say RAM there (the guest rewrote it): none */
	nc = table(c, 6, cur, 6);
	nf = table(f, 2, fw, 2);
	assert_false(qemu_e820_user_reserved(c, nc, f, nf, &gpa, &size));
	assert_false(qemu_e820_user_reserved(c, 3, f, nf, &gpa, &size));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_reserve_place, teardown),
	    cmocka_unit_test_teardown(test_reserve_refused, teardown),
	    cmocka_unit_test(test_memmap_argument),
	    cmocka_unit_test(test_reserve_size),
	    cmocka_unit_test(test_e820),
	    cmocka_unit_test(test_e820_user_reserved),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

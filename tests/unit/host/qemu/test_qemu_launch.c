/* Where `run --qemu` puts the stub's rings: the RAM range memmap= asks the kernel to reserve
 * (host/qemu/qemu_launch.c: below the initrd QEMU loads at the top of low RAM, above the kernel the
 * decompressor places at 16 MiB), the kernel parameter that asks for it, the reservation's size,
 * and the stub region's reservation size (host/vmm/stub_map.c). The check of the guest's own
 * E820 table that proves the kernel did reserve it is tests/unit/vmi/test_vmi_linux_e820.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

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

/* arm64 has no memmap=: the stub's RAM is the top of virt's RAM (from 1 GiB), 2 MiB aligned, and
 * the kernel is told to keep below it with mem=, last on its command line (the kernel takes the
 * last one: a user's --append cannot undo it); only virt's RAM is known. */
static void test_arm64_reserve(void **state)
{
	struct qemu_launch_cfg cfg = {.kernel = "Image", .qmp_path = "/tmp/q", .append = "mem=1G",
				      .isa = arch_get(ARCH_ARM64), .mem_mb = 256};
	const char *argv[64];
	char buf[1024], why[200] = "";
	uint64_t gpa = 0;
	int n;

	(void)state;
	assert_int_equal(qemu_launch_reserve(&cfg, 10 * MIB, &gpa, why, sizeof(why)), 0);
	assert_int_equal(gpa, 0x40000000 + 256 * MIB - 10 * MIB);
	cfg.reserve_gpa = gpa;
	cfg.reserve_size = 10 * MIB;
	n = qemu_launch_argv(&cfg, argv, 64, buf, sizeof(buf));
	assert_string_equal(argv[n - 1], "console=ttyAMA0 panic=-1 mem=1G mem=251904K");
	/* no room beside the kernel, an odd size, another machine */
	assert_int_equal(qemu_launch_reserve(&cfg, 200 * MIB, &gpa, why, sizeof(why)), -ENOSPC);
	assert_string_equal(why, "204800 KiB do not fit beside the kernel in 256 MiB of RAM");
	assert_int_equal(qemu_launch_reserve(&cfg, 3 * MIB, &gpa, why, sizeof(why)), -ENOSPC);
	cfg.machine = "sbsa-ref";
	assert_int_equal(qemu_launch_reserve(&cfg, 10 * MIB, &gpa, why, sizeof(why)), -ENOTSUP);
	assert_string_equal(why, "hvtrace knows the RAM of -M virt only, not of -M sbsa-ref");
}

/* An arm64 guest: QEMU's aarch64 emulator, virt, pauth-impdef under TCG, the PL011 console. */
static void test_arm64_argv(void **state)
{
	struct qemu_launch_cfg cfg = {.kernel = "Image", .qmp_path = "/tmp/q",
				      .isa = arch_get(ARCH_ARM64)};
	const char *argv[64];
	char buf[1024], other[64];
	int n;

	(void)state;
	unsetenv("HVTRACE_QEMU_AARCH64");
	n = qemu_launch_argv(&cfg, argv, 64, buf, sizeof(buf));
	assert_true(n > 8);
	assert_string_equal(argv[0], "qemu-system-aarch64");
	assert_string_equal(argv[4], "virt");
	assert_string_equal(argv[6], "max,pauth-impdef=on");
	assert_string_equal(argv[n - 1], "console=ttyAMA0 panic=-1");
	cfg.accel = "kvm";
	n = qemu_launch_argv(&cfg, argv, 64, buf, sizeof(buf));
	assert_string_equal(argv[6], "host");
	setenv("HVTRACE_QEMU_AARCH64", "/opt/q/qemu-system-aarch64", 1);
	assert_string_equal(qemu_launch_binary(arch_get(ARCH_ARM64)), "/opt/q/qemu-system-aarch64");
	unsetenv("HVTRACE_QEMU_AARCH64");

	/* the other ISA's emulator, by its name; a name that says nothing passes */
	assert_true(qemu_launch_other_isa("/usr/bin/qemu-system-x86_64", arch_get(ARCH_ARM64), other,
					  sizeof(other)));
	assert_string_equal(other, "qemu-system-x86_64");
	assert_true(qemu_launch_other_isa("qemu-system-aarch64", arch_get(ARCH_X86_64), other,
					  sizeof(other)));
	assert_false(qemu_launch_other_isa("qemu-system-aarch64", arch_get(ARCH_ARM64), other,
					   sizeof(other)));
	assert_false(qemu_launch_other_isa("/cache/qemu/11/qemu-system-x86_64", arch_get(ARCH_X86_64),
					   other, sizeof(other)));
	assert_false(qemu_launch_other_isa("my-qemu", arch_get(ARCH_ARM64), other, sizeof(other)));
}

static void test_reserve_size(void **state)
{
	(void)state;
	assert_int_equal(target_qemu_stub_reserve(1), 2 * MIB);
	assert_int_equal(target_qemu_stub_reserve(2 * MIB), 2 * MIB);
	assert_int_equal(target_qemu_stub_reserve(0x3000 + 2 * 4 * MIB + 2 * MIB), 12 * MIB);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_reserve_place, teardown),
	    cmocka_unit_test_teardown(test_reserve_refused, teardown),
	    cmocka_unit_test(test_memmap_argument),
	    cmocka_unit_test(test_reserve_size),
	    cmocka_unit_test(test_arm64_argv),
	    cmocka_unit_test(test_arm64_reserve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Guest RAM through a VMM process's memory (host/vmm/proc_mem.c), with this process standing in for
 * the VMM: guest-physical reads and writes across regions through /proc/self/mem, the scan, host
 * reads, and opening a process that is not there. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/vmm/proc_mem.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define GiB (1ull << 30)

/* [0, 8K) at a, [8K, 16K) at b (contiguous in guest-physical space), [4 GiB, +8K) at c */
static uint8_t a[8192], b[8192], c[8192];

static void open_self(struct proc_mem *m)
{
	char err[128] = "";

	assert_int_equal(proc_mem_open(m, getpid(), err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(m->nr, 0);
	m->nr = 3;
	m->region[0] = (struct proc_mem_region){0, 8192, (uint64_t)(uintptr_t)a};
	m->region[1] = (struct proc_mem_region){8192, 8192, (uint64_t)(uintptr_t)b};
	m->region[2] = (struct proc_mem_region){4 * GiB, 8192, (uint64_t)(uintptr_t)c};
}

static void test_read_write_regions(void **state)
{
	struct proc_mem m;
	uint8_t buf[64];

	(void)state;
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	memset(c, 0, sizeof(c));
	open_self(&m);
	memset(buf, 0x77, sizeof(buf));
	/* across a and b: split */
	assert_int_equal(proc_mem_write(&m, 8192 - 8, buf, 16), 0);
	assert_int_equal(a[8191], 0x77);
	assert_int_equal(b[7], 0x77);
	assert_int_equal(b[8], 0);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(proc_mem_read(&m, 8192 - 8, buf, 16), 0);
	assert_int_equal(buf[0], 0x77);
	assert_int_equal(buf[15], 0x77);
	/* above 4 GiB */
	assert_int_equal(proc_mem_write(&m, 4 * GiB + 100, "hi", 2), 0);
	assert_memory_equal(c + 100, "hi", 2);
	/* past b into the hole: nothing written */
	assert_int_equal(proc_mem_write(&m, 16384 - 4, buf, 8), -EFAULT);
	assert_int_equal(b[8191], 0);
	assert_int_equal(proc_mem_read(&m, 16384, buf, 1), -EFAULT);
	assert_int_equal(proc_mem_read(&m, 4 * GiB + 8192 - 1, buf, 2), -EFAULT);
	assert_int_equal(proc_mem_read(&m, 4 * GiB - 1, buf, 2), -EFAULT);
	assert_int_equal(proc_mem_read(&m, UINT64_MAX - 1, buf, 8), -EFAULT);
	assert_int_equal(proc_mem_read(&m, 4 * GiB + 8191, buf, 1), 0);
	proc_mem_close(&m);
	assert_int_equal(m.fd, -1);
	assert_int_equal(proc_mem_read(&m, 0, buf, 1), -EFAULT);
	assert_int_equal(proc_mem_write(&m, 0, buf, 1), -EFAULT);
	proc_mem_close(&m); /* idempotent */
}

/* A host address of the process, not a guest-physical one. */
static void test_host_read(void **state)
{
	struct proc_mem m;
	uint8_t buf[4];

	(void)state;
	open_self(&m);
	memcpy(b + 40, "vmm!", 4);
	assert_int_equal(proc_mem_host_read(&m, (uint64_t)(uintptr_t)(b + 40), buf, 4), 0);
	assert_memory_equal(buf, "vmm!", 4);
	/* guest-physical 40 is a's, not b's */
	assert_int_equal(proc_mem_read(&m, 40, buf, 4), 0);
	assert_memory_not_equal(buf, "vmm!", 4);
	assert_int_equal(proc_mem_host_read(&m, 0, buf, 4), -EFAULT);
	proc_mem_close(&m);
}

struct scan_ctx {
	uint64_t v[8], next[8];
	unsigned n, stop_at;
};

static bool scan_hit(void *ctx, uint64_t v, uint64_t next)
{
	struct scan_ctx *s = ctx;

	if (s->n < 8) {
		s->v[s->n] = v;
		s->next[s->n] = next;
	}
	return ++s->n == s->stop_at;
}

static void test_scan(void **state)
{
	struct proc_mem m;
	struct scan_ctx s = {.stop_at = 0};
	uint64_t v;

	(void)state;
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	memset(c, 0, sizeof(c));
	open_self(&m);
	v = 0x1234;
	memcpy(a + 16, &v, 8);
	v = 0x99;
	memcpy(a + 24, &v, 8);
	v = 0x1500;
	memcpy(b + 8184, &v, 8); /* the last word of b: 0 after it (a region's end) */
	v = 0x1600;
	memcpy(c + 8, &v, 8);
	v = 0x7777; /* outside [lo, hi]: never offered */
	memcpy(c + 16, &v, 8);
	assert_int_equal(proc_mem_scan(&m, 0x1000, 0x1fff, scan_hit, &s), 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.v[0], 0x1234);
	assert_int_equal(s.next[0], 0x99);
	assert_int_equal(s.v[1], 0x1500);
	assert_int_equal(s.next[1], 0);
	assert_int_equal(s.v[2], 0x1600);
	assert_int_equal(s.next[2], 0x7777);
	/* stops at the hit that says so */
	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	assert_int_equal(proc_mem_scan(&m, 0x1000, 0x1fff, scan_hit, &s), 1);
	assert_int_equal(s.n, 2);
	proc_mem_close(&m);
	assert_int_equal(proc_mem_scan(&m, 0, UINT64_MAX, scan_hit, &s), -EFAULT);
}

static void test_open_no_process(void **state)
{
	struct proc_mem m;
	char err[128];

	(void)state;
	/* pid_max is at most 2^22: this pid is never a process */
	assert_int_equal(proc_mem_open(&m, 1 << 23, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "pid 8388608: /proc/8388608/mem: No such file or directory");
	assert_int_equal(m.fd, -1);
	assert_int_equal(m.nr, 0);
	proc_mem_close(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_write_regions),
	    cmocka_unit_test(test_host_read),
	    cmocka_unit_test(test_scan),
	    cmocka_unit_test(test_open_no_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

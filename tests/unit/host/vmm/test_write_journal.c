/* host/vmm/write_journal: the patch hold's undo log and its guardian. In memory: writes undone
 * newest first (a page-table entry written twice comes back as it was), one never made or changed
 * since left alone, memory taken (the stub's pages) put back whatever it holds, a full journal
 * refusing. Across processes: a stand-in "hvtrace" holds a busy
 * child (the VMM) by ptrace and patches 5 of its 8 "sites" (NOP5 -> CALL), each logged first, then
 * is SIGKILLed in the hold: with the guardian (forked before the hold, sharing the journal) the
 * child runs on, untraced, with its 8 sites as they were; without it, the kernel lets the child go
 * with the 5 CALLs left in (what the guardian is for). No /dev/kvm needed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/vmm/write_journal.h"
#include "host/vmm/guardian.h"
#include "host/vmm/ptrace_inject.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint8_t mem[512]; /* the "guest" of the in-memory test */

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr > sizeof(mem) || len > sizeof(mem) - addr)
		return -EFAULT;
	memcpy(buf, mem + addr, len);
	return 0;
}

static int mem_write(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	(void)ctx;
	if (addr > sizeof(mem) || len > sizeof(mem) - addr)
		return -EFAULT;
	memcpy(mem + addr, buf, len);
	return 0;
}

/* Logs, then writes (as target_vmmpid does). */
static void patch(struct write_journal *j, uint64_t addr, const void *new, size_t len)
{
	assert_int_equal(write_journal_note(j, addr, mem + addr, new, len), 0);
	memcpy(mem + addr, new, len);
}

static const uint8_t nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
static const uint8_t call[5] = {0xe8, 0x11, 0x22, 0x33, 0x44};

static void test_undo_newest_first(void **state)
{
	struct write_journal j;
	uint8_t orig[sizeof(mem)];
	uint64_t pte_x = 0x8000000000001063ull, pte_y = 0x1234063, pte_z = 0x1234061;
	uint8_t q[5] = {9, 9, 9, 9, 9};
	size_t left = 99;
	char why[128];

	(void)state;
	for (size_t i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)(i * 7);
	memcpy(mem, nop5, 5);
	memcpy(mem + 100, &pte_x, 8);
	memcpy(orig, mem, sizeof(mem));
	assert_int_equal(write_journal_open(&j, 4096), 0);
	patch(&j, 0, call, 5);	   /* a site */
	patch(&j, 100, &pte_y, 8); /* a page-table entry, */
	patch(&j, 100, &pte_z, 8); /* written again (protect) */
	/* logged, never made (hvtrace died between the two) */
	assert_int_equal(write_journal_note(&j, 200, mem + 200, q, 5), 0);
	patch(&j, 300, call, 5);
	mem[302] = 0xcc; /* changed since by someone else: left as it is */
	assert_int_equal(write_journal_count(&j), 5);
	assert_int_equal(write_journal_undo(&j, mem_read, mem_write, NULL, &left, why, sizeof(why)),
			 3);
	assert_string_equal(why, "0x12c (5 bytes) holds e8.., hvtrace wrote e8, was 34");
	assert_int_equal(left, 1); /* 300; 200, never made, holds its old bytes: nothing to undo */
	orig[302] = 0xcc;
	for (int k = 0; k < 5; k++) /* 300's other bytes still hvtrace's: only a whole match is */
		if (k != 2)
			orig[300 + k] = call[k];
	assert_memory_equal(mem, orig, sizeof(mem));

	/* bounds: a write of 0 or more than a page, a journal that is full */
	assert_int_equal(write_journal_note(&j, 0, mem, mem, 0), -EINVAL);
	write_journal_clear(&j);
	assert_int_equal(write_journal_count(&j), 0);
	assert_int_equal(write_journal_undo(&j, mem_read, mem_write, NULL, &left, why, sizeof(why)),
			 0);
	assert_string_equal(why, "");
	static uint8_t page[WRITE_JOURNAL_WRITE_MAX + 1];
	assert_int_equal(write_journal_note(&j, 0, page, page, sizeof(page)), -EINVAL);
	/* 4096 bytes: 16 of head, then 40-byte entries of 5 bytes (16 + 16 + 8): 102 fit */
	int n = 0;
	while (write_journal_note(&j, 0, nop5, call, 5) == 0)
		n++;
	assert_int_equal(n, (4096 - 16) / 40);
	assert_int_equal(write_journal_note(&j, 0, nop5, call, 5), -ENOSPC);
	write_journal_close(&j);
	assert_int_equal(write_journal_note(&j, 0, nop5, call, 5), -EINVAL);
}

/* Memory taken (the stub's pages): its old bytes back whatever it holds, after every newer entry
 * (a write into it, then one over a site); a write into it logged before it was taken, as any. */
static void test_taken(void **state)
{
	struct write_journal j;
	uint8_t orig[sizeof(mem)], code[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	size_t left = 99;
	char why[128];

	(void)state;
	for (size_t i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)(i * 3 + 1);
	memcpy(mem + 8, nop5, 5);
	memcpy(orig, mem, sizeof(mem));
	assert_int_equal(write_journal_open(&j, 4096), 0);
	assert_int_equal(write_journal_note_taken(&j, 256, mem + 256, 256), 0);
	memset(mem + 256, 0, 256); /* the stub's writes there: not logged */
	memcpy(mem + 256, code, sizeof(code));
	patch(&j, 300, call, 5); /* a detour written into it: logged */
	patch(&j, 8, call, 5);	 /* a site calling it */
	mem[400] = 0x77;	 /* the guest's stub wrote its ring */
	mem[302] = 0x55;	 /* and over the detour's bytes */
	assert_int_equal(write_journal_count(&j), 3);
	assert_int_equal(write_journal_undo(&j, mem_read, mem_write, NULL, &left, why, sizeof(why)),
			 2);
	assert_int_equal(left, 1); /* the detour, changed since: the taken range puts it back */
	assert_memory_equal(mem, orig, sizeof(mem));
	/* taken memory that cannot be written: left, said */
	write_journal_clear(&j);
	assert_int_equal(write_journal_note_taken(&j, 500, mem, 64), 0);
	assert_int_equal(write_journal_undo(&j, mem_read, mem_write, NULL, &left, why, sizeof(why)),
			 0);
	assert_int_equal(left, 1);
	assert_string_equal(why, "0x1f4 (64 bytes) unwritable (memory hvtrace took)");
	assert_int_equal(write_journal_note_taken(&j, 0, mem, 0), -EINVAL);
	write_journal_close(&j);
}

/* ---- across processes ---- */

#define SITES 8
#define MADE  5

static uint8_t sites[SITES][8]; /* the child's "text": the same address in every fork */

struct shared {
	_Atomic uint64_t counter; /* the child's progress */
	_Atomic int patched;	  /* the stand-in hvtrace's sites written, in its hold */
	_Atomic int took_over;	  /* the guardian's: 1 + undone, or -1 */
	_Atomic int left;
};

static struct shared *sh;
static struct ptrace_inject pi; /* large: not on the stack */
static struct write_journal journal;
static pid_t victim;

static int proc_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return ptrace_inject_read(ctx, addr, buf, len);
}

static int proc_write(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	return ptrace_inject_write(ctx, addr, buf, len);
}

static void takeover(void *ctx)
{
	size_t undone, left;
	char err[256];

	(void)ctx;
	if (write_journal_takeover(&journal, &pi, victim, proc_read, proc_write, &pi, &undone,
				   &left, err, sizeof(err)) < 0) {
		fprintf(stderr, "guardian: %s\n", err);
		atomic_store(&sh->took_over, -1);
		return;
	}
	atomic_store(&sh->left, (int)left);
	atomic_store(&sh->took_over, 1 + (int)undone);
}

/* The stand-in hvtrace: the journal, a guardian if @guarded, the hold, MADE sites patched, then it
 * waits in the hold to be killed. */
static void fake_hvtrace(bool guarded)
{
	struct guardian g;
	char err[256];

	if (write_journal_open(&journal, 1 << 16) < 0)
		_exit(3);
	if (guarded && guardian_start(&g, takeover, NULL) < 0)
		_exit(4);
	if (ptrace_inject_attach(&pi, victim, 0, err, sizeof(err)) < 0) {
		fprintf(stderr, "hold: %s\n", err);
		_exit(5);
	}
	for (int i = 0; i < MADE; i++) {
		uint64_t at = (uint64_t)(uintptr_t)sites[i];

		if (write_journal_note(&journal, at, nop5, call, 5) < 0 ||
		    ptrace_inject_write(&pi, at, call, 5) < 0)
			_exit(6);
	}
	atomic_store(&sh->patched, MADE);
	for (;;)
		pause();
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* TracerPid of @pid and whether it is stopped, from /proc/PID/status. */
static int tracer_of(pid_t pid, bool *stopped)
{
	char path[64], buf[4096], *tp, *st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	tp = strstr(buf, "TracerPid:");
	st = strstr(buf, "State:");
	assert_non_null(tp);
	assert_non_null(st);
	*stopped = st[7] == 'T' || st[7] == 't'; /* "State:\tT (stopped)", t: tracing stop */
	return atoi(tp + 10);
}

/* The child's sites as they are now, read through /proc/PID/mem (the test is its parent). */
static void read_sites(pid_t pid, uint8_t out[SITES][8])
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fseeko(f, (off_t)(uintptr_t)sites, SEEK_SET), 0);
	assert_int_equal(fread(out, 1, sizeof(sites), f), sizeof(sites));
	fclose(f);
}

static void killed_in_hold(bool guarded)
{
	uint8_t now[SITES][8];
	pid_t h;
	uint64_t c0, t0;
	bool stopped;
	int st;

	for (int i = 0; i < SITES; i++)
		memcpy(sites[i], nop5, 5);
	memset(sh, 0, sizeof(*sh));
	victim = fork();
	assert_true(victim >= 0);
	if (victim == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives a failed test */
		for (;;)
			atomic_fetch_add(&sh->counter, 1);
	}
	h = fork();
	assert_true(h >= 0);
	if (h == 0)
		fake_hvtrace(guarded);
	for (t0 = now_ms(); atomic_load(&sh->patched) != MADE && now_ms() - t0 < 5000;)
		usleep(1000);
	assert_int_equal(atomic_load(&sh->patched), MADE);
	/* in the hold: stopped, traced by the stand-in hvtrace, MADE sites patched */
	assert_int_equal(tracer_of(victim, &stopped), h);
	read_sites(victim, now);
	for (int i = 0; i < SITES; i++)
		assert_memory_equal(now[i], i < MADE ? call : nop5, 5);
	kill(h, SIGKILL);
	assert_int_equal(waitpid(h, &st, 0), h);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	if (guarded) {
		for (t0 = now_ms(); !atomic_load(&sh->took_over) && now_ms() - t0 < 5000;)
			usleep(1000);
		assert_int_equal(atomic_load(&sh->took_over), 1 + MADE);
		assert_int_equal(atomic_load(&sh->left), 0);
	} else {
		usleep(100 * 1000); /* nothing would come */
	}
	/* let go: no tracer, not stopped, running */
	for (t0 = now_ms(); tracer_of(victim, &stopped) && now_ms() - t0 < 5000;)
		usleep(1000);
	assert_int_equal(tracer_of(victim, &stopped), 0);
	assert_false(stopped);
	c0 = atomic_load(&sh->counter);
	usleep(50 * 1000);
	assert_true(atomic_load(&sh->counter) > c0);
	read_sites(victim, now);
	for (int i = 0; i < SITES; i++) /* the guardian put them back; the kernel alone did not */
		assert_memory_equal(now[i], guarded || i >= MADE ? nop5 : call, 5);
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
}

static void test_killed_in_hold_guarded(void **state)
{
	(void)state;
	killed_in_hold(true);
}

static void test_killed_in_hold_unguarded(void **state)
{
	(void)state;
	killed_in_hold(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_undo_newest_first),
	    cmocka_unit_test(test_taken),
	    cmocka_unit_test(test_killed_in_hold_guarded),
	    cmocka_unit_test(test_killed_in_hold_unguarded),
	};

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}

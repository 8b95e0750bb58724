/* guest-stub/x86's code executed: the stub's bytes copied into an executable mapping of this
 * process (a lower-half address, as a freestanding guest's text and stub are), with a header as the
 * host writes it for such a guest (no preempt count, so no profiler short path: H_FAST 0), the CPU
 * number read at %gs (this thread's GS base pointed at a word holding 0), and the privileged
 * instructions the stub uses at ring 0, CLI and STI, skipped by a SIGSEGV handler (IF is the only
 * state they touch, and nothing here interrupts). A site is a CALL rel32 into an entry or counting
 * routine followed by a function body; the test calls it and reads the records, shadow stacks and
 * aggregation table the routines wrote. Any other fault in the stub fails the test with its offset.
 * x86-64 hosts only (skipped elsewhere). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/skip.h"

#if defined(__x86_64__)
#include "guest-stub/stub_abi.h"

#include <asm/prctl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

extern const uint8_t hvt_stub_start[], hvt_stub_end[], hvt_stub_entry_ret[], hvt_stub_ret[],
    hvt_stub_count_ret[];

/* The region: the stub's layout (stub_abi.h) for one CPU, then a page of sites. */
#define NR_RECS	  64
#define NR_STACKS 2
#define AGG_ENTS  64
#define RINGS	  0x4000
#define STACKS	  (RINGS + NR_RECS * STUB_REC_SIZE)
#define AGG	  (STACKS + NR_STACKS * STUB_STACK_SIZE)
#define SITES	  (AGG + AGG_ENTS * STUB_AGG_SIZE)
#define SIZE	  (SITES + 0x1000)
#define GS_CPU	  8 /* H_CPU_GS_OFF: the CPU number is the u32 at %gs:8 */

static uint8_t *region;
static uint64_t gs_area[4];
static sigjmp_buf fault_jmp;
static volatile uint64_t fault_rip;
static volatile int fault_sig;

static uint64_t base(void)
{
	return (uint64_t)(uintptr_t)region;
}

static uint64_t *hdr(unsigned field)
{
	return (uint64_t *)(region + STUB_HDR_OFF + field);
}

static uint64_t routine(const uint8_t *sym)
{
	return base() + (uint64_t)(sym - hvt_stub_start);
}

/* CLI and STI (0xfa, 0xfb) are stepped over; any other fault ends the call in progress. */
static void on_fault(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint8_t *rip = (uint8_t *)uc->uc_mcontext.gregs[REG_RIP];

	(void)si;
	if (sig == SIGSEGV && (*rip == 0xfa || *rip == 0xfb)) {
		uc->uc_mcontext.gregs[REG_RIP]++;
		return;
	}
	fault_rip = (uint64_t)(uintptr_t)rip;
	fault_sig = sig;
	siglongjmp(fault_jmp, 1);
}

/* Writes at site offset @off: CALL rel32 to @target, then `lea 1(%rdi), %rax; ret`. Returns the
 * site's address. */
static uint64_t put_site(unsigned off, uint64_t target)
{
	uint8_t *p = region + SITES + off;
	uint64_t site = base() + SITES + off;
	int32_t rel = (int32_t)(target - (site + 5));
	const uint8_t body[] = {0x48, 0x8d, 0x47, 0x01, 0xc3};

	p[0] = 0xe8;
	memcpy(p + 1, &rel, 4);
	memcpy(p + 5, body, sizeof(body));
	return site;
}

/* Installs on_fault for @sigs (and saves what was there in @old), or puts @old back. */
static void handlers(bool on, struct sigaction old[3])
{
	static const int sigs[3] = {SIGSEGV, SIGILL, SIGBUS};
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	for (unsigned i = 0; i < 3; i++)
		sigaction(sigs[i], on ? &sa : &old[i], on ? &old[i] : NULL);
}

/* Calls the function at @fn with @arg (with the stack's red zone stepped over), CLI and STI
 * stepped over; *@ra = the return address its CALL pushed. A fault in it fails the test, naming
 * its offset in the stub. (cmocka puts its own handlers back around each test and fixture.) */
static long call_site(uint64_t fn, long arg, uint64_t *ra)
{
	struct sigaction old[3];
	long ret;
	uint64_t r;

	handlers(true, old);
	if (sigsetjmp(fault_jmp, 1)) {
		handlers(false, old);
		uint64_t off = fault_rip - base();

		fail_msg("signal %d at %s+0x%" PRIx64, fault_sig,
			 off < STUB_CODE_SIZE ? "stub" : "region", off);
	}
	__asm__ volatile("subq $128, %%rsp\n\t"
			 "leaq 1f(%%rip), %[ra]\n\t"
			 "call *%[fn]\n"
			 "1:\taddq $128, %%rsp"
			 : [ra] "=&r"(r), "=a"(ret), "+D"(arg)
			 : [fn] "r"(fn)
			 : "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "memory", "cc");
	handlers(false, old);
	*ra = r;
	return ret;
}

static const struct stub_rec *rec(unsigned i)
{
	return (const struct stub_rec *)(region + RINGS + i * STUB_REC_SIZE);
}

static uint64_t ring_head(void)
{
	return *(uint64_t *)(region + STUB_RINGHDR_OFF + RH_HEAD);
}

/* The stack keys still claimed (a shadow stack is freed when it empties). */
static unsigned stacks_claimed(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < NR_STACKS; i++)
		n += *(uint64_t *)(region + STACKS + i * STUB_STACK_SIZE + S_KEY) != 0;
	return n;
}

static int setup(void **state)
{
	(void)state;
	region = mmap(NULL, SIZE, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	assert_true(region != MAP_FAILED);
	assert_true((size_t)(hvt_stub_end - hvt_stub_start) <= STUB_CODE_SIZE);
	memcpy(region, hvt_stub_start, (size_t)(hvt_stub_end - hvt_stub_start));
	/* the header of a guest without a preempt count (a freestanding one): what stub.c's
	 * put_header writes for it, the CPU number from %gs */
	*hdr(H_MAGIC) = STUB_MAGIC;
	*(uint32_t *)hdr(H_NR_CPUS) = 1;
	*hdr(H_RING_MASK) = NR_RECS - 1;
	*hdr(H_CPU_GS_OFF) = GS_CPU;
	*hdr(H_RINGS) = base() + RINGS;
	*hdr(H_STACKS) = base() + STACKS;
	*hdr(H_STACKS_MASK) = NR_STACKS - 1;
	*hdr(H_STACK_SHIFT) = 20;
	*hdr(H_RET) = routine(hvt_stub_ret);
	*hdr(H_MAX_DEPTH) = STUB_STACK_DEPTH;
	*hdr(H_AGG) = base() + AGG;
	*hdr(H_AGG_MASK) = AGG_ENTS - 1;
	*hdr(H_NS_MULT) = 1ull << 32; /* 1 ns per tick */
	*hdr(H_NS_SHIFT) = 32;
	memset(gs_area, 0, sizeof(gs_area)); /* CPU 0 */
	assert_int_equal(syscall(SYS_arch_prctl, ARCH_SET_GS, (unsigned long)gs_area), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	syscall(SYS_arch_prctl, ARCH_SET_GS, 0ul);
	munmap(region, SIZE);
	return 0;
}

/* A record of the one call at depth 0 on CPU 0, no flags: its sequence number and type, the
 * site and the return address. */
static void check_rec(const struct stub_rec *x, uint64_t seq, unsigned type, uint64_t site,
		      uint64_t ra)
{
	assert_int_equal(x->seq, seq);
	assert_int_equal(x->type, type);
	assert_int_equal(x->depth, 0);
	assert_int_equal(x->cpu, 0);
	assert_int_equal(x->flags, 0);
	assert_int_equal(x->ip, site);
	assert_int_equal(x->parent, ra);
}

/* A hooked return at a lower-half site (a freestanding guest's): the function's value comes back
 * to its caller, and the ring holds its entry and its return, exactly. */
static void test_hooked_return_low_site(void **state)
{
	uint64_t site = put_site(0, routine(hvt_stub_entry_ret)), ra;
	const struct stub_rec *e = rec(0), *r = rec(1);

	(void)state;
	assert_true(site >> 63 == 0);
	assert_int_equal(call_site(site, 41, &ra), 42);
	assert_int_equal(ring_head(), 2);
	check_rec(e, 1, STUB_REC_ENTRY, site, ra);
	assert_int_equal(e->task, 0);
	check_rec(r, 2, STUB_REC_RETURN, site, ra);
	assert_int_equal(r->rax, 42);
	assert_int_equal(r->t0, e->tsc);
	assert_true(r->tsc >= r->t0);
	assert_int_equal(stacks_claimed(), 0);
	assert_int_equal(*hdr(H_NO_STACK), 0);
}

/* The table entry of @site and @bucket (its pid not keyed), or NULL. */
static const struct stub_agg_ent *agg_find(uint64_t site, uint32_t bucket)
{
	for (unsigned i = 0; i < AGG_ENTS; i++) {
		const struct stub_agg_ent *a =
		    (const struct stub_agg_ent *)(region + AGG + i * STUB_AGG_SIZE);

		if (a->ip == site && a->pid == STUB_AGG_NOPID && a->bucket == bucket)
			return a;
	}
	return NULL;
}

/* A counted call and its hooked return at a lower-half site (the general counting path, H_FAST 0):
 * one call in bucket 0, one return in bucket 1, and nothing recorded. */
static void test_counted_return_low_site(void **state)
{
	uint64_t site = put_site(0x40, routine(hvt_stub_count_ret)), ra;
	const struct stub_agg_ent *calls, *rets;
	unsigned used = 0;

	(void)state;
	assert_int_equal(call_site(site, 6, &ra), 7);
	calls = agg_find(site, 0);
	rets = agg_find(site, 1);
	assert_non_null(calls);
	assert_non_null(rets);
	assert_int_equal(calls->hits, 1);
	assert_int_equal(rets->hits, 1);
	assert_int_equal(rets->max, rets->sum);
	for (unsigned i = 0; i < AGG_ENTS; i++)
		used += ((const struct stub_agg_ent *)(region + AGG + i * STUB_AGG_SIZE))->ip != 0;
	assert_int_equal(used, 2);
	assert_int_equal(ring_head(), 0);
	assert_int_equal(stacks_claimed(), 0);
	assert_int_equal(*(uint64_t *)(region + STUB_RINGHDR_OFF + RH_AGG_DROP), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_hooked_return_low_site, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_counted_return_low_site, setup, teardown),
	};

	return cmocka_run_group_tests_name("stub_x86_exec", tests, NULL, NULL);
}
#else
int main(void)
{
	hv_skip_binary("the x86-64 stub runs on an x86-64 host only");
}
#endif

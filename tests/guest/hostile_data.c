/* A hostile freestanding guest (issue #10): it lies to hvtrace through every value hvtrace reads
 * from its memory, and must neither crash hvtrace nor get a line forged into the trace.
 *
 * On vCPU 0 (vCPU 1 halts at once):
 * - it runs a traced function as a task named "x\n[000] forged\x1b[2J" (pid 66);
 * - with stub probes (it finds the stub through the CALL at one of its own sites): it writes 255
 * into the stub header's depth bound, then recurses HD_DEPTH deep; it forges ring records (a return
 *   at depth 255, an entry of CPU 7, an unknown type), leaves one reserved record uncommitted ahead
 *   of its next calls' records, and wraps the rings' lost counters (their sum is 2^64);
 * - without stubs (trap probes) it recurses as deep;
 * - it ends inside a traced function whose return is hooked, after (stub) scribbling its shadow
 *   stack: a huge frame count, frames whose slots are its text, a word of another stack region that
 *   holds the return routine's address (hd_decoy_other), an unmapped address, and a word of its own
 *   stack that holds it too (hd_decoy_same, the one slot hvtrace may write).
 * It exits with status 0 when its own results were right, 1 otherwise. Built with the test guest's
 * start.S only (tests/guest/guest.ld); everything but the hd_* workload is notrace. */
#include "guest-stub/stub_abi.h"

#include <stdint.h>

#define notrace	 __attribute__((no_instrument_function))
#define noinline __attribute__((noinline))

#define MSR_GS_BASE 0xc0000101
#define HD_DEPTH    250		/* hd_deep frames: deeper than any depth hvtrace accepts (128) */
#define HD_AFTER    4		/* hd_after calls once the gap is left */
#define LOST_CPU0   (0ull - 16) /* the two rings' lost counters: a wrapping sum would be 0 */
#define LOST_CPU1   16ull
#define UNMAPPED    0xdead00000000ull

/* The task ABI hvtrace reads: pid at offset 0, comm at 4 (16 bytes read; this name is longer). */
struct hd_task {
	int32_t pid;
	char comm[28];
};

struct percpu {
	struct percpu *self;
	uint32_t cpu;
};

struct hd_task *volatile hvtrace_current[2];
const unsigned long hvtrace_cpu_gs = __builtin_offsetof(struct percpu, cpu);
static struct percpu percpu[2];
static struct hd_task idle[2] = {{0, "cpu0"}, {0, "cpu1"}};
static struct hd_task evil = {66, "x\n[000] forged\x1b[2J"};

/* Read by the KVM test after the run: the words hvtrace must (not) have written. */
volatile uint64_t hd_decoy_other;
volatile uint64_t hd_decoy_same_addr;
static volatile uint8_t *stub; /* the stub region, 0 without stub probes */
static int bad;

notrace static void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

notrace static void putstr(const char *s)
{
	while (*s)
		outb(0xe9, (uint8_t)*s++);
}

notrace static void guest_exit(uint32_t code)
{
	__asm__ volatile("outl %0, %1" : : "a"(code), "Nd"((uint16_t)0xf4));
	for (;;)
		__asm__ volatile("cli; hlt");
}

notrace static uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

notrace static volatile uint64_t *hdr(unsigned off)
{
	return (volatile uint64_t *)(stub + STUB_HDR_OFF + off);
}

notrace static volatile uint64_t *ringhdr(unsigned cpu, unsigned off)
{
	return (volatile uint64_t *)(stub + STUB_RINGHDR_OFF + cpu * STUB_RINGHDR_SIZE + off);
}

/* start.S's task entry calls it; this guest has no tasks to start. */
notrace void task_main(void *t)
{
	(void)t;
	guest_exit(1);
}

/* ---- the traced workload ----------------------------------------------------------------------
 */

void hd_final(void);

noinline long hd_leaf(long x)
{
	return x + 1;
}

noinline long hd_named(void)
{
	return hd_leaf(0x65);
}

noinline long hd_deep(long n)
{
	return n ? 1 + hd_deep(n - 1) : 0;
}

noinline long hd_after(long i)
{
	return 2 * i;
}

/* The shadow stack of the guest stack holding @slot, or 0. */
notrace static volatile uint8_t *shadow_of(uint64_t slot)
{
	uint64_t key = (slot >> *hdr(H_STACK_SHIFT)) + 1;

	for (uint64_t i = 0; i <= *hdr(H_STACKS_MASK); i++) {
		volatile uint8_t *s = (volatile uint8_t *)(*hdr(H_STACKS) + i * STUB_STACK_SIZE);

		if (*(volatile uint64_t *)(s + S_KEY) == key)
			return s;
	}
	return 0;
}

notrace static void frame(volatile uint8_t *s, unsigned k, uint64_t slot, uint64_t orig)
{
	volatile uint64_t *e = (volatile uint64_t *)(s + S_E + 32 * k);

	e[E_SLOT / 8] = slot;
	e[E_ORIG / 8] = orig;
	e[E_IP / 8] = (uint64_t)hd_final;
}

/* Ends the run from inside a hooked call, its shadow stack scribbled first. */
noinline void hd_final(void)
{
	volatile uint64_t same = 0;

	/* with its return hooked (function_graph): the stub's return routine is in its slot */
	if (stub && (uint64_t)__builtin_return_address(0) == *hdr(H_RET)) {
		volatile uint8_t *s = shadow_of((uint64_t)&same);

		if (!s || *(volatile uint64_t *)(s + S_NR) != 1) {
			putstr("hvt-hostile: no shadow frame of hd_final\n");
			bad = 1;
		} else {
			same = hd_decoy_other = *hdr(H_RET);
			hd_decoy_same_addr = (uint64_t)&same;
			frame(s, 0, (uint64_t)hd_leaf, 0x4141);
			frame(s, 1, (uint64_t)&hd_decoy_other, 0x4242);
			frame(s, 2, UNMAPPED, 0x4343);
			frame(s, 3, (uint64_t)&same, 0x4444);
			*(volatile uint64_t *)(s + S_NR) = ~0ull;
		}
	}
	putstr(bad ? "hvt-hostile: FAILED\n" : "hvt-hostile: ok\n");
	guest_exit(bad);
}

/* ---- lies -------------------------------------------------------------------------------------
 */

/* Reserves a record on CPU 0's ring as the stub does and fills it; committed unless @gap. */
notrace static void forge(uint8_t type, uint16_t cpu, uint8_t depth, int gap)
{
	uint64_t idx = __atomic_fetch_add(ringhdr(0, RH_HEAD), 1, __ATOMIC_ACQ_REL);
	uint64_t mask = *hdr(H_RING_MASK);
	volatile struct stub_rec *r =
	    (volatile struct stub_rec *)(*hdr(H_RINGS) + (idx & mask) * STUB_REC_SIZE);

	r->type = type;
	r->cpu = cpu;
	r->depth = depth;
	r->flags = 0;
	r->tsc = r->t0 = rdtsc();
	r->ip = (uint64_t)hd_leaf;
	r->parent = (uint64_t)hd_named;
	r->task = 0;
	r->rax = 0x2a;
	__atomic_store_n(&r->seq, gap ? 0u : (uint32_t)(idx + 1), __ATOMIC_RELEASE);
}

/* The stub's region, found through the CALL rel32 at hd_leaf's site (0 if that is no CALL). */
notrace static volatile uint8_t *find_stub(void)
{
	const volatile uint8_t *site = (const volatile uint8_t *)hd_leaf;
	int32_t rel = 0;
	uint64_t base;

	if (site[0] != 0xe8)
		return 0;
	for (int i = 0; i < 4; i++)
		rel |= (int32_t)((uint32_t)site[1 + i] << (8 * i));
	base = ((uint64_t)site + 5 + (int64_t)rel) & ~0xfffull;
	if (*(volatile uint64_t *)(base + STUB_HDR_OFF + H_MAGIC) != STUB_MAGIC)
		return 0;
	return (volatile uint8_t *)base;
}

notrace void guest_entry(uint64_t cpu, uint64_t ncpus)
{
	uint64_t base = (uint64_t)&percpu[cpu & 1];

	(void)ncpus;
	percpu[cpu & 1].self = &percpu[cpu & 1];
	percpu[cpu & 1].cpu = (uint32_t)cpu;
	__asm__ volatile("wrmsr"
			 :
			 : "c"(MSR_GS_BASE), "a"((uint32_t)base), "d"((uint32_t)(base >> 32)));
	hvtrace_current[cpu & 1] = &idle[cpu & 1];
	if (cpu != 0)
		return; /* halts */
	stub = find_stub();
	putstr(stub ? "hvt-hostile: stub found\n" : "hvt-hostile: no stub\n");

	hvtrace_current[0] = &evil;
	if (hd_named() != 0x66)
		bad = 1;
	hvtrace_current[0] = &idle[0];

	if (stub)
		*hdr(H_MAX_DEPTH) = 255;
	if (hd_deep(HD_DEPTH - 1) != HD_DEPTH - 1)
		bad = 1;
	if (stub) {
		forge(STUB_REC_RETURN, 0, 255, 0);
		forge(STUB_REC_ENTRY, 7, 0, 0);
		forge(0x77, 0, 0, 0);
		forge(STUB_REC_ENTRY, 0, 0, 1);
	}
	for (long i = 0; i < HD_AFTER; i++)
		if (hd_after(i) != 2 * i)
			bad = 1;
	if (stub) {
		*ringhdr(0, RH_LOST) = LOST_CPU0;
		*ringhdr(1, RH_LOST) = LOST_CPU1;
	}
	hd_final();
}

/* A freestanding test guest with a .irqentry.text (issue 12): hvtrace's function_graph prints the
 * kernel's "==========>" before a call into it and "<==========" after its return, the section found
 * by the __irqentry_text_start and __irqentry_text_end symbols as in Linux.
 *
 * vCPU 0 (vCPU 1 halts at once) calls ie_outer IE_ROUNDS times: ie_outer calls ie_irq (in the
 * section, nested: it calls ie_leaf), ie_leaf (outside) and ie_irq_leaf (in the section, a leaf).
 * It exits with status 0 when the results were right, 1 otherwise. Built with the test guest's
 * start.S only (tests/guest/guest.ld sorts .irqentry.text.* by name, so the two bounds, in
 * .irqentry.text.0 and .irqentry.text.9, bracket the section's functions in .irqentry.text.5). */
#include <stdint.h>

#define notrace	    __attribute__((no_instrument_function))
#define noinline    __attribute__((noinline))
#define irqentry    __attribute__((section(".irqentry.text.5")))
#define MSR_GS_BASE 0xc0000101
#define IE_ROUNDS   3

/* The task ABI hvtrace reads: pid at offset 0, comm at 4. */
struct ie_task {
	int32_t pid;
	char comm[16];
};

struct percpu {
	struct percpu *self;
	uint32_t cpu;
};

struct ie_task *volatile hvtrace_current[2];
const unsigned long hvtrace_cpu_gs = __builtin_offsetof(struct percpu, cpu);
static struct percpu percpu[2];
static struct ie_task idle[2] = {{0, "cpu0"}, {0, "cpu1"}};

/* The section's bounds: functions, as the ELF loader takes function symbols. */
__attribute__((section(".irqentry.text.0"), used)) notrace void __irqentry_text_start(void)
{
}

__attribute__((section(".irqentry.text.9"), used)) notrace void __irqentry_text_end(void)
{
}

noinline long ie_leaf(long x)
{
	return x + 1;
}

irqentry noinline long ie_irq(long x)
{
	return ie_leaf(x) * 2;
}

irqentry noinline long ie_irq_leaf(long x)
{
	return x - 1;
}

noinline long ie_outer(long x)
{
	return ie_irq(x) + ie_leaf(x) + ie_irq_leaf(x);
}

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

/* start.S's task trampoline calls it; this guest has no tasks. */
notrace void task_main(void *t)
{
	(void)t;
	guest_exit(1);
}

notrace void guest_entry(uint64_t cpu, uint64_t ncpus)
{
	uint64_t base = (uint64_t)&percpu[cpu & 1];
	int bad = 0;

	(void)ncpus;
	percpu[cpu & 1].self = &percpu[cpu & 1];
	percpu[cpu & 1].cpu = (uint32_t)cpu;
	__asm__ volatile("wrmsr"
			 :
			 : "c"(MSR_GS_BASE), "a"((uint32_t)base), "d"((uint32_t)(base >> 32)));
	hvtrace_current[cpu & 1] = &idle[cpu & 1];
	if (cpu != 0)
		return; /* halts */
	for (long i = 0; i < IE_ROUNDS; i++)
		if (ie_outer(i) != 2 * (i + 1) + (i + 1) + (i - 1))
			bad = 1;
	putstr(bad ? "hvt-irqentry: FAILED\n" : "hvt-irqentry: ok\n");
	guest_exit((uint32_t)bad);
}

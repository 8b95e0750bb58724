/* A hostile test guest (issue #10): vCPU 0 builds its own page tables in which the text's addresses
 * map a copy of the text (its sites holding another NOP5 form) and vCPU 1's stack maps a decoy,
 * switches CR3 to them while hvtrace is attached, and rewrites one patched site of the real text
 * itself; vCPU 1 keeps calling traced functions on the real text. hvtrace must patch and restore
 * by guest-physical address: after its detach (--duration) the real text is byte-identical to the
 * ELF (but for the site the guest rewrote), the copy and the decoy were never written, and vCPU 1
 * runs on through the restored sites. vCPU 0 checks all that itself and exits (port 0xf4) with 0,
 * or with one of the HC_* statuses below after a line naming what differs.
 *
 * Needs 2 vCPUs and the boot contract's identity map; built with -pg, its text is everything from
 * 1 MiB to the end of __mcount_loc (the guest has no initialised writable data, which would share
 * those pages: the Makefile checks there is no .data). */
#include "tests/guest/guest.h"

#define HC_LAYOUT  10 /* the guest's own layout does not fit its plan (not 2 vCPUs, past 2 MiB) */
#define HC_LATE	   11 /* hvtrace had not patched the sites when vCPU 0 took its copy */
#define HC_DIFFERS 12 /* real text, copy or decoy not as they must be after the detach */
#define HC_WRONG   13 /* vCPU 1 computed a wrong result */

#define PAGE	     4096ull
#define PTE_P	     0x1ull
#define PTE_RW	     0x2ull
#define PTE_PS	     0x80ull
#define PTE_ADDR     0x000ffffffffff000ull
#define TEXT_MAX     (64 * 1024)
#define STACK_SIZE   65536	   /* boot contract: 64 KiB-aligned 64 KiB stacks */
#define ALIAS	     0x3fe00000ull /* vCPU 0's tables map physical [0, 2 MiB) here too */
#define DECOY_BYTE   0x5a
#define AFTER_ROUNDS 64 /* calls vCPU 1 makes through the restored sites */
#define MSR_GS_BASE  0xc0000101

static const uint8_t gcc_nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00}; /* -mnop-mcount's */
static const uint8_t alt_nop5[5] = {0x66, 0x66, 0x90, 0x66, 0x90};

extern char _start[];
extern const uint64_t __start___mcount_loc[], __stop___mcount_loc[];

struct percpu {
	struct percpu *self;
	int cpu;
};

static struct percpu percpu[2];
/* hvtrace's stub probes find the CPU number at %gs:hvtrace_cpu_gs (docs/guest-contract.md). */
const unsigned long hvtrace_cpu_gs = __builtin_offsetof(struct percpu, cpu);

static uint64_t pml4[512] __attribute__((aligned(4096)));
static uint64_t pdpt[512] __attribute__((aligned(4096)));
static uint64_t pd0[512] __attribute__((aligned(4096)));
static uint64_t pt0[512] __attribute__((aligned(4096)));
static uint8_t text_copy[TEXT_MAX] __attribute__((aligned(4096))); /* what vCPU 0 executes */
static uint8_t text_ref[TEXT_MAX];				   /* what the copy must hold */
static uint8_t text_want[TEXT_MAX]; /* what the real text must hold after the detach */
static uint8_t cpu1_stack[STACK_SIZE] __attribute__((aligned(STACK_SIZE)));
static uint8_t decoy[STACK_SIZE] __attribute__((aligned(4096))); /* vCPU 1's stack, for vCPU 0 */

static int switched, detached, cpu1_done;
static long cpu1_bad, cpu1_after;
static uint64_t boot_cr3;

/* ---- traced: only these are instrumented ------------------------------------------------------
 */

noinline long hc_leaf(long x)
{
	return x * 3 + 1;
}

noinline long hc_mid(long x)
{
	return hc_leaf(x) + hc_leaf(x + 1);
}

noinline long hc_top(long x)
{
	return hc_mid(x) * 2;
}

/* Never called: the guest rewrites its site in the real text while hvtrace has it patched. */
noinline long hc_rewritten(long x)
{
	return x - 1;
}

/* ---- the runtime, not traced --------------------------------------------------------------------
 */

static notrace void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static notrace void putstr(const char *s)
{
	while (*s)
		outb(0xe9, *s++);
}

static notrace void puthex(uint64_t v)
{
	putstr("0x");
	for (int i = 60; i >= 0; i -= 4)
		if (v >> i || !i)
			outb(0xe9, "0123456789abcdef"[(v >> i) & 15]);
}

static notrace __attribute__((noreturn)) void guest_exit(uint32_t code)
{
	__asm__ volatile("outl %0, %1" : : "a"(code), "Nd"(0xf4));
	for (;;)
		__asm__ volatile("cli; hlt");
}

static notrace void relax(void)
{
	__asm__ volatile("pause" ::: "memory");
}

static notrace void copy(void *dst, const void *src, uint64_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	while (n--)
		*d++ = *s++;
}

/* Index of the first byte where @a and @b differ, or @n. */
static notrace uint64_t differ(const void *a, const void *b, uint64_t n)
{
	const uint8_t *x = a, *y = b;
	uint64_t i = 0;

	while (i + 8 <= n && *(const uint64_t *)(x + i) == *(const uint64_t *)(y + i))
		i += 8;
	while (i < n && x[i] == y[i])
		i++;
	return i;
}

static notrace uint64_t text_lo(void)
{
	return (uint64_t)_start & ~(PAGE - 1);
}

static notrace uint64_t text_hi(void)
{
	return ((uint64_t)__stop___mcount_loc + PAGE - 1) & ~(PAGE - 1);
}

static notrace uint64_t nr_sites(void)
{
	return (uint64_t)(__stop___mcount_loc - __start___mcount_loc);
}

static notrace uint64_t site_of(void *func)
{
	for (uint64_t i = 0; i < nr_sites(); i++)
		if (__start___mcount_loc[i] - (uint64_t)func < 16)
			return __start___mcount_loc[i];
	return 0;
}

static notrace uint64_t read_cr3(void)
{
	uint64_t v;

	__asm__ volatile("mov %%cr3, %0" : "=r"(v));
	return v;
}

static notrace void write_cr3(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr3" : : "r"(v) : "memory");
}

/* The real text of guest-physical @pa as vCPU 0 sees it once switched. */
static notrace uint8_t *real(uint64_t pa)
{
	return (uint8_t *)(ALIAS + pa);
}

/* Page tables like the boot identity map but for [0, 2 MiB): 4 KiB pages, the text's mapping the
 * copy, vCPU 1's stack's the decoy; and physical [0, 2 MiB) once more at ALIAS. */
static notrace void build_tables(void)
{
	uint64_t *boot_pml4 = (uint64_t *)(boot_cr3 & PTE_ADDR);
	uint64_t *boot_pdpt = (uint64_t *)(boot_pml4[0] & PTE_ADDR);
	uint64_t *boot_pd0 = (uint64_t *)(boot_pdpt[0] & PTE_ADDR);
	uint64_t stack = (uint64_t)cpu1_stack;

	for (uint64_t i = 0; i < 512; i++) {
		uint64_t pa = i * PAGE, to = pa;

		if (pa >= text_lo() && pa < text_hi())
			to = (uint64_t)text_copy + (pa - text_lo());
		else if (pa >= stack && pa < stack + STACK_SIZE)
			to = (uint64_t)decoy + (pa - stack);
		pt0[i] = to | PTE_P | PTE_RW;
		pd0[i] = boot_pd0[i];
		pdpt[i] = boot_pdpt[i];
		pml4[i] = boot_pml4[i];
	}
	pd0[0] = (uint64_t)pt0 | PTE_P | PTE_RW;
	pd0[ALIAS >> 21] = 0 | PTE_P | PTE_RW | PTE_PS;
	pdpt[0] = (uint64_t)pd0 | PTE_P | PTE_RW;
	pml4[0] = (uint64_t)pdpt | PTE_P | PTE_RW;
}

/* The text as it must be: @buf from the text as it is now, every site holding @nop. */
static notrace void text_with_sites(uint8_t *buf, const uint8_t *nop)
{
	copy(buf, (const void *)text_lo(), text_hi() - text_lo());
	for (uint64_t i = 0; i < nr_sites(); i++)
		copy(buf + (__start___mcount_loc[i] - text_lo()), nop, 5);
}

static notrace int decoy_touched(void)
{
	for (uint64_t i = 0; i < STACK_SIZE; i++)
		if (decoy[i] != DECOY_BYTE)
			return 1;
	return 0;
}

/* Every site but @skip holds the compiler's NOP5 again in the real text: hvtrace has detached. */
static notrace int real_sites_restored(uint64_t skip)
{
	for (uint64_t i = 0; i < nr_sites(); i++) {
		uint64_t s = __start___mcount_loc[i];

		if (s != skip && differ(real(s), gcc_nop5, 5) < 5)
			return 0;
	}
	return 1;
}

static notrace void cpu0_main(void)
{
	uint64_t len = text_hi() - text_lo(), rewritten = site_of(hc_rewritten), at;
	int bad = 0;

	if (text_hi() > (2ull << 20) || len > TEXT_MAX || !rewritten ||
	    (uint64_t)decoy + STACK_SIZE > (2ull << 20) ||
	    (uint64_t)cpu1_stack + STACK_SIZE > (2ull << 20)) {
		putstr("hvt-hostile: layout does not fit\n");
		guest_exit(HC_LAYOUT);
	}
	for (uint64_t i = 0; i < nr_sites(); i++) {
		uint8_t b = *(volatile uint8_t *)__start___mcount_loc[i];

		if (b != 0xcc && b != 0xe8) {
			putstr("hvt-hostile: site ");
			puthex(__start___mcount_loc[i]);
			putstr(" is not patched: hvtrace is not attached\n");
			guest_exit(HC_LATE);
		}
	}
	for (uint64_t i = 0; i < STACK_SIZE; i++)
		decoy[i] = DECOY_BYTE;
	text_with_sites(text_copy, alt_nop5);
	copy(text_ref, text_copy, len);
	boot_cr3 = read_cr3();
	build_tables();
	write_cr3((uint64_t)pml4);
	/* the console write exits to the host, which then knows this vCPU's new CR3 */
	putstr("hvt-hostile: cpu0 runs a copy of the text\n");
	copy(real(rewritten), alt_nop5, 5); /* over hvtrace's patch */
	__atomic_store_n(&switched, 1, __ATOMIC_RELEASE);

	/* until hvtrace detaches: the real text restored, or a write that went astray */
	for (long x = 0;; x++) {
		if (hc_top(x & 7) != ((x & 7) * 6 + 5) * 2)
			guest_exit(HC_WRONG);
		if (real_sites_restored(rewritten) || differ(text_copy, text_ref, len) < len ||
		    decoy_touched())
			break;
	}
	__atomic_store_n(&detached, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&cpu1_done, __ATOMIC_ACQUIRE))
		relax();
	write_cr3(boot_cr3);

	/* the real text: the ELF's bytes, but the site the guest rewrote itself */
	copy(text_want, text_ref, len);
	for (uint64_t i = 0; i < nr_sites(); i++)
		copy(text_want + (__start___mcount_loc[i] - text_lo()), gcc_nop5, 5);
	copy(text_want + (rewritten - text_lo()), alt_nop5, 5);
	at = differ((const void *)text_lo(), text_want, len);
	if (at < len) {
		putstr("hvt-hostile: real text differs at ");
		puthex(text_lo() + at);
		putstr("\n");
		bad = 1;
	}
	at = differ(text_copy, text_ref, len);
	if (at < len) {
		putstr("hvt-hostile: the copy was written at ");
		puthex(text_lo() + at);
		putstr("\n");
		bad = 1;
	}
	if (decoy_touched()) {
		putstr("hvt-hostile: the decoy of cpu1's stack was written\n");
		bad = 1;
	}
	if (cpu1_bad) {
		putstr("hvt-hostile: cpu1 computed wrong results\n");
		guest_exit(HC_WRONG);
	}
	putstr("hvt-hostile: cpu1 calls after the detach ");
	puthex((uint64_t)cpu1_after);
	putstr("\n");
	putstr(bad ? "hvt-hostile: FAILED\n" : "hvt-hostile: ok\n");
	guest_exit(bad ? HC_DIFFERS : 0);
}

/* On its own stack (the one vCPU 0 maps to the decoy): traced calls until AFTER_ROUNDS after the
 * detach. */
notrace __attribute__((noreturn)) void cpu1_main(void)
{
	while (!__atomic_load_n(&switched, __ATOMIC_ACQUIRE))
		relax();
	for (long x = 0;; x++) {
		if (hc_top(x & 7) != ((x & 7) * 6 + 5) * 2)
			cpu1_bad++;
		if (__atomic_load_n(&detached, __ATOMIC_ACQUIRE) && ++cpu1_after == AFTER_ROUNDS)
			break;
	}
	__atomic_store_n(&cpu1_done, 1, __ATOMIC_RELEASE);
	for (;;)
		__asm__ volatile("cli; hlt");
}

notrace void guest_entry(uint64_t cpu, uint64_t ncpus)
{
	uint64_t base = (uint64_t)&percpu[cpu & 1];

	if (ncpus != 2) {
		if (cpu == 0) {
			putstr("hvt-hostile: needs 2 vCPUs\n");
			guest_exit(HC_LAYOUT);
		}
		for (;;)
			__asm__ volatile("cli; hlt");
	}
	percpu[cpu].self = &percpu[cpu];
	percpu[cpu].cpu = (int)cpu;
	__asm__ volatile("wrmsr"
			 :
			 : "c"(MSR_GS_BASE), "a"((uint32_t)base), "d"((uint32_t)(base >> 32)));
	if (cpu == 0)
		cpu0_main();
	__asm__ volatile("mov %0, %%rsp\n\tcall cpu1_main\n\tud2"
			 :
			 : "r"(cpu1_stack + STACK_SIZE)
			 : "memory");
	__builtin_unreachable();
}

/* Entry per the boot contract: RDI = vCPU index, RSI = vCPU count, RSP = top of this vCPU's stack.
 */
__asm__(".section .text.entry, \"ax\"\n"
	".globl _start\n"
	"_start:\n"
	"	andq $-16, %rsp\n"
	"	call guest_entry\n"
	"1:	cli\n"
	"	hlt\n"
	"	jmp 1b\n"
	".previous\n");

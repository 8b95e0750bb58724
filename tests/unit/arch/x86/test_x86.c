/* arch/x86: NOP5 recognition, byte formatting, register arguments, the page-table walk over a fake
 * guest memory, the translation cache and the page-by-page virtual copy, and the identity map the
 * VMM builds for freestanding guests. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/x86_insn.h"
#include "arch/x86/x86_longmode.h"
#include "arch/x86/x86_pagewalk.h"
#include "arch/x86/x86_regs.h"
#include "arch/x86/x86_tlb.h"
#include "tests/common/fake_mem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- x86_is_nop5 ---------------------------------------------------------------------------- */

/* Each of the four NOP5 forms is recognised. */
static void test_nop5_forms(void **state)
{
	static const uint8_t forms[][5] = {
	    {0x0f, 0x1f, 0x44, 0x00, 0x00}, /* P6 nopl 0(%rax,%rax,1): gcc -mnop-mcount, Linux */
	    {0x66, 0x66, 0x66, 0x66, 0x90}, /* K8 */
	    {0x66, 0x66, 0x90, 0x66, 0x90}, /* generic */
	    {0x3e, 0x8d, 0x74, 0x26, 0x00}, /* ds leal 0(%esi,%eiz,1) */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		assert_true(x86_is_nop5(forms[i]));
}

/* CALL rel32, INT3 over a NOP5, a 4-byte NOP followed by another instruction, near misses. */
static void test_nop5_rejects(void **state)
{
	static const uint8_t others[][5] = {
	    {0xe8, 0x12, 0x34, 0x56, 0x78}, /* call rel32 (a patched stub probe) */
	    {0xe8, 0x00, 0x00, 0x00, 0x00},
	    {0xcc, 0x1f, 0x44, 0x00, 0x00}, /* INT3 already over the first byte */
	    {0xcc, 0xcc, 0xcc, 0xcc, 0xcc},
	    {0x0f, 0x1f, 0x40, 0x00, 0x90}, /* nopl 0(%rax) (NOP4) + nop */
	    {0x0f, 0x1f, 0x40, 0x00, 0x00},
	    {0x0f, 0x1f, 0x44, 0x00, 0x01}, /* last byte differs */
	    {0x66, 0x0f, 0x1f, 0x44, 0x00}, /* first 5 bytes of the NOP6 */
	    {0x90, 0x90, 0x90, 0x90, 0x90}, /* five 1-byte NOPs: not one instruction */
	    {0x66, 0x66, 0x66, 0x66, 0x66},
	    {0x3e, 0x8d, 0x74, 0x26, 0x01},
	    {0x00, 0x00, 0x00, 0x00, 0x00},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		assert_false(x86_is_nop5(others[i]));
}

/* ---- x86_format_bytes ----------------------------------------------------------------------- */

/* Lower-case hex pairs separated by single spaces; writes exactly 3*n bytes (incl. the NUL). */
static void test_format_bytes(void **state)
{
	static const uint8_t nop[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
	static const uint8_t call[5] = {0xe8, 0xab, 0xCD, 0xef, 0xff};
	char buf[32];

	(void)state;
	memset(buf, 'X', sizeof(buf));
	assert_ptr_equal(x86_format_bytes(nop, 5, buf), buf);
	assert_string_equal(buf, "0f 1f 44 00 00");
	assert_int_equal(buf[15], 'X'); /* nothing written past 3*n */

	assert_string_equal(x86_format_bytes(call, 5, buf), "e8 ab cd ef ff");
	assert_string_equal(x86_format_bytes(call, 1, buf), "e8");
	assert_string_equal(x86_format_bytes(call, 0, buf), "");
}

/* ---- x86_reg_arg ---------------------------------------------------------------------------- */

/* SysV: rdi, rsi, rdx, rcx, r8, r9; the 7th argument is on the stack (0 here). */
static void test_reg_arg(void **state)
{
	struct x86_regs r = {.rdi = 1,
			     .rsi = 2,
			     .rdx = 3,
			     .rcx = 4,
			     .r8 = 5,
			     .r9 = 6,
			     .rax = 100,
			     .rbx = 101,
			     .r10 = 102,
			     .rsp = 103};

	(void)state;
	for (unsigned n = 0; n < X86_NR_REG_ARGS; n++)
		assert_int_equal(x86_reg_arg(&r, n), n + 1);
	assert_int_equal(x86_reg_arg(&r, 6), 0);
	assert_int_equal(x86_reg_arg(&r, 1000), 0);
}

/* ---- x86_translate over a fake guest-physical memory ---------------------------------------- */

/* Guest-physical [0, FAKE_PAGES * 4 KiB) backed by a host buffer (the one region of a fake_mem);
 * every other address fails to read. */
#define FAKE_PAGES 16

static int fake_setup(void **state)
{
	struct fake_mem *f = calloc(1, sizeof(*f));
	void *pages = calloc(FAKE_PAGES, X86_PAGE_SIZE);

	if (!f || !pages) {
		free(f);
		free(pages);
		return -1;
	}
	fake_mem_init(f);
	fake_mem_map(f, 0, pages, FAKE_PAGES * X86_PAGE_SIZE);
	*state = f;
	return 0;
}

static int fake_teardown(void **state)
{
	struct fake_mem *f = *state;

	free(f->r[0].buf);
	free(f);
	return 0;
}

/* Sets entry @idx of the table in guest-physical page @page. */
static void set_pte(struct fake_mem *f, unsigned page, unsigned idx, uint64_t val)
{
	((uint64_t *)f->r[0].buf)[page * 512 + idx] = val;
}

#define PG(n)		((uint64_t)(n)*X86_PAGE_SIZE)
#define IDX(gva, level) ((unsigned)(((gva) >> (12 + 9 * ((level)-1))) & 511))
#define PRW		(X86_PTE_P | X86_PTE_RW)

/* 4-level paging, 4 KiB page: flag bits (NX, US, available bits) never leak into the address, and
 * the low CR3 bits (PWT/PCD) are ignored. */
static void test_translate_4level_4k(void **state)
{
	struct fake_mem *f = *state;
	const uint64_t gva = 0xffffffff81234abcull;
	uint64_t gpa = 0;

	set_pte(f, 1, IDX(gva, 4), PG(2) | PRW);
	set_pte(f, 2, IDX(gva, 3), PG(3) | PRW | X86_PTE_US);
	set_pte(f, 3, IDX(gva, 2), PG(4) | PRW);
	set_pte(f, 4, IDX(gva, 1), 0x123456000ull | PRW | X86_PTE_NX | (7ull << 9));

	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1) | 0x18, false, gva, &gpa), 0);
	assert_int_equal(gpa, 0x123456abcull);
	assert_int_equal(f->reads, 4);

	/* the first and last byte of the same page */
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva & ~0xfffull, &gpa),
			 0);
	assert_int_equal(gpa, 0x123456000ull);
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva | 0xfff, &gpa), 0);
	assert_int_equal(gpa, 0x123456fffull);

	/* the next page has no PTE */
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva + 0x1000, &gpa),
			 -EFAULT);
}

/* A 2 MiB page at the PD level: the low 21 bits come from the address; the PAT bit (12) of a
 * large-page entry is not part of the frame. */
static void test_translate_2m(void **state)
{
	struct fake_mem *f = *state;
	const uint64_t gva = 0x00007f0012345678ull;
	uint64_t gpa = 0;

	set_pte(f, 1, IDX(gva, 4), PG(2) | PRW);
	set_pte(f, 2, IDX(gva, 3), PG(3) | PRW);
	set_pte(f, 3, IDX(gva, 2), 0x40000000ull | PRW | X86_PTE_PS | (1ull << 12));

	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), 0);
	assert_int_equal(gpa, 0x40000000ull | (gva & 0x1fffff));
	assert_int_equal(gpa, 0x40145678ull);
	assert_int_equal(f->reads, 3);
}

/* A 1 GiB page at the PDPT level: the low 30 bits come from the address. */
static void test_translate_1g(void **state)
{
	struct fake_mem *f = *state;
	const uint64_t gva = 0xffff888012345678ull;
	uint64_t gpa = 0;

	set_pte(f, 1, IDX(gva, 4), PG(2) | PRW);
	set_pte(f, 2, IDX(gva, 3), 0x1c0000000ull | PRW | X86_PTE_PS | X86_PTE_NX);

	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), 0);
	assert_int_equal(gpa, 0x1c0000000ull | (gva & 0x3fffffff));
	assert_int_equal(gpa, 0x1d2345678ull);
	assert_int_equal(f->reads, 2);
}

/* 5-level paging: bits 48..56 index the PML5; the same tables walked 4-level resolve differently.
 */
static void test_translate_5level(void **state)
{
	struct fake_mem *f = *state;
	const uint64_t gva = 0x00ab008012345678ull; /* PML5 index 0xab */
	uint64_t gpa = 0;

	assert_int_equal(IDX(gva, 5), 0xab);
	set_pte(f, 1, IDX(gva, 5), PG(2) | PRW);
	set_pte(f, 2, IDX(gva, 4), PG(3) | PRW);
	set_pte(f, 3, IDX(gva, 3), PG(4) | PRW);
	set_pte(f, 4, IDX(gva, 2), PG(5) | PRW);
	set_pte(f, 5, IDX(gva, 1), 0xabcdef000ull | PRW);

	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), true, gva, &gpa), 0);
	assert_int_equal(gpa, 0xabcdef678ull);
	assert_int_equal(f->reads, 5);

	/* walked 4-level, PML4 index (gva >> 39) & 511 = 1 is not present in page 1 */
	assert_int_equal(IDX(gva, 4), 1);
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), -EFAULT);
}

/* 5-level with a 2 MiB page under it. */
static void test_translate_5level_2m(void **state)
{
	struct fake_mem *f = *state;
	const uint64_t gva = 0x0001000000345678ull; /* PML5 1, PML4 0, PDPT 0, PD 1 */
	uint64_t gpa = 0;

	set_pte(f, 1, IDX(gva, 5), PG(2) | PRW);
	set_pte(f, 2, IDX(gva, 4), PG(3) | PRW);
	set_pte(f, 3, IDX(gva, 3), PG(4) | PRW);
	set_pte(f, 4, IDX(gva, 2), 0x7e00000ull | PRW | X86_PTE_PS);

	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), true, gva, &gpa), 0);
	assert_int_equal(gpa, 0x7f45678ull);
}

/* A not-present entry at each level gives -EFAULT, even if the other bits look like a valid entry.
 */
static void test_translate_not_present(void **state)
{
	struct fake_mem *f = *state;
	const uint64_t gva = 0x0000123456789abcull;
	uint64_t gpa = 0xdead;

	/* empty PML4 */
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), -EFAULT);

	/* PML4 present, PDPT entry has every bit but P */
	set_pte(f, 1, IDX(gva, 4), PG(2) | PRW);
	set_pte(f, 2, IDX(gva, 3), PG(3) | X86_PTE_RW | X86_PTE_PS);
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), -EFAULT);

	/* down to a not-present PTE */
	set_pte(f, 2, IDX(gva, 3), PG(3) | PRW);
	set_pte(f, 3, IDX(gva, 2), PG(4) | PRW);
	set_pte(f, 4, IDX(gva, 1), 0x5000ull | X86_PTE_RW);
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), -EFAULT);

	/* making it present completes the walk */
	set_pte(f, 4, IDX(gva, 1), 0x5000ull | PRW);
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), 0);
	assert_int_equal(gpa, 0x5abcull);
}

/* A table that cannot be read (outside the fake memory) gives -EFAULT. */
static void test_translate_read_error(void **state)
{
	struct fake_mem *f = *state;
	uint64_t gpa = 0;

	assert_int_equal(
	    x86_translate(fake_mem_read_pte, f, PG(FAKE_PAGES + 4), false, 0x1000, &gpa), -EFAULT);
	/* PML4 entry points outside the fake memory */
	set_pte(f, 1, 0, PG(FAKE_PAGES + 1) | PRW);
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, 0x1000, &gpa), -EFAULT);
}

/* Cyclic tables (a hostile guest's): the walk reads exactly one entry per level and ends, here in
 * the recursive mapping's defined result, the table's own page. */
static void test_translate_self_reference(void **state)
{
	struct fake_mem *f = *state;
	const uint64_t gva = 0x0000123456789abcull;
	uint64_t gpa = 0, pde = 0;

	for (unsigned i = 0; i < 512; i++)
		set_pte(f, 1, i, PG(1) | PRW); /* every entry of the PML4 points at the PML4 */
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), 0);
	assert_int_equal(gpa, PG(1) | 0xabc);
	assert_int_equal(f->reads, 4);
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), true, gva, &gpa), 0);
	assert_int_equal(gpa, PG(1) | 0xabc);
	assert_int_equal(f->reads, 4 + 5);
	assert_int_equal(x86_pde_addr(fake_mem_read_pte, f, PG(1), false, gva, &pde), 0);
	assert_int_equal(pde, PG(1) + IDX(gva, 2) * 8);
	assert_int_equal(f->reads, 4 + 5 + 2);

	/* two tables pointing at each other: the same bound */
	for (unsigned i = 0; i < 512; i++) {
		set_pte(f, 1, i, PG(2) | PRW);
		set_pte(f, 2, i, PG(1) | PRW);
	}
	f->reads = 0;
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), 0);
	assert_int_equal(gpa, PG(1) | 0xabc);
	assert_int_equal(f->reads, 4);
	/* and a cycle that never reaches a present leaf ends in -EFAULT */
	set_pte(f, 2, IDX(gva, 1), PG(1));
	assert_int_equal(x86_translate(fake_mem_read_pte, f, PG(1), false, gva, &gpa), -EFAULT);
	assert_int_equal(f->reads, 8);
}

/* ---- x86_tlb_translate and x86_copy_virt ---------------------------------------------------- */

#define SPACE_PAGES 4 /* guest-virtual pages of the fake address space */
#define PHYS_PAGES  8 /* guest-physical pages behind it */

/* Guest-virtual page n < SPACE_PAGES at guest-physical page map[n] (0: not mapped). */
struct fake_space {
	uint64_t map[SPACE_PAGES];
	uint8_t mem[PHYS_PAGES * X86_PAGE_SIZE];
	struct x86_tlb tlb;
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
		s->mem[i] = (uint8_t)(i * 7 + i / X86_PAGE_SIZE);
	s->cr3 = 0x1000;
	return s;
}

static int fake_walk(void *ctx, uint64_t gva, uint64_t *gpa)
{
	struct fake_space *s = ctx;
	uint64_t n = gva / X86_PAGE_SIZE;

	s->walks++;
	if (n >= SPACE_PAGES || !s->map[n])
		return -EFAULT;
	*gpa = PG(s->map[n]) | (gva & (X86_PAGE_SIZE - 1));
	return 0;
}

static int fake_translate(void *ctx, uint64_t gva, uint64_t *gpa)
{
	struct fake_space *s = ctx;

	return x86_tlb_translate(&s->tlb, s->cr3, gva, fake_walk, s, gpa);
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
	x86_tlb_invalidate(&s->tlb);
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
	assert_int_equal(x86_copy_virt(0x1ff0, buf, 32, false, fake_translate, fake_copy, s), 0);
	assert_memory_equal(buf, s->mem + 0x5ff0, 16);
	assert_memory_equal(buf + 16, s->mem + 0x3000, 16);
	assert_int_equal(s->copies, 2);
	assert_int_equal(s->lens[0], 16);
	assert_int_equal(s->lens[1], 16);
	/* the same again: both pages from the cache */
	assert_int_equal(x86_copy_virt(0x1ff0, buf, 32, false, fake_translate, fake_copy, s), 0);
	assert_int_equal(s->walks, 2);
	assert_int_equal(s->tlb.hits, 2);

	/* a write over three pages: 8 bytes, a whole page, 8 bytes */
	for (size_t i = 0; i < sizeof(want); i++)
		want[i] = (uint8_t)(0xa5 ^ i);
	s->copies = 0;
	assert_int_equal(
	    x86_copy_virt(0x1ff8, want, sizeof(want), true, fake_translate, fake_copy, s), 0);
	assert_int_equal(s->copies, 3);
	assert_int_equal(s->lens[0], 8);
	assert_int_equal(s->lens[1], X86_PAGE_SIZE);
	assert_int_equal(s->lens[2], 8);
	assert_memory_equal(s->mem + 0x5ff8, want, 8);
	assert_memory_equal(s->mem + 0x3000, want + 8, X86_PAGE_SIZE);
	assert_memory_equal(s->mem + 0x6000, want + 8 + X86_PAGE_SIZE, 8);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(
	    x86_copy_virt(0x1ff8, buf, sizeof(buf), false, fake_translate, fake_copy, s), 0);
	assert_memory_equal(buf, want, sizeof(want));

	/* nothing to copy: no callback */
	s->copies = s->walks = 0;
	assert_int_equal(x86_copy_virt(0x1000, buf, 0, false, fake_translate, fake_copy, s), 0);
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
	assert_int_equal(x86_copy_virt(0x1ff0, buf, 32, false, fake_translate, fake_copy, s),
			 -EFAULT);
	assert_int_equal(s->copies, 1); /* the first page was copied */
	assert_memory_equal(buf, s->mem + 0x5ff0, 16);

	s->copy_err = -EIO;
	s->copies = 0;
	assert_int_equal(x86_copy_virt(0x1000, buf, 8, false, fake_translate, fake_copy, s), -EIO);
	assert_int_equal(s->copies, 1);
	free(s);
}

/* ---- x86_build_identity_map ----------------------------------------------------------------- */

/* The identity map's tables as the guest sees them: at guest-physical tables_gpa. */
struct idmap_mem {
	const uint64_t *tables;
	uint64_t tables_gpa;
	unsigned pages;
};

static int idmap_read_pte(void *ctx, uint64_t gpa, uint64_t *pte)
{
	struct idmap_mem *m = ctx;

	if (gpa < m->tables_gpa || gpa >= m->tables_gpa + m->pages * X86_PAGE_SIZE)
		return -EIO;
	*pte = m->tables[(gpa - m->tables_gpa) / 8];
	return 0;
}

/* Every address below @gib GiB translates to itself through 2 MiB pages; the next GiB is not
 * mapped. */
static void test_identity_map(void **state)
{
	const unsigned gib = 4;
	const uint64_t tables_gpa = 0x9000;
	static const uint64_t addrs[] = {
	    0,		0x1234,	    0x1fffff,	0x200000,   0x200005,	0x3fffffff,
	    0x40000000, 0x87654321, 0xc0000000, 0xfee00000, 0xffffffff,
	};
	uint64_t *tables = aligned_alloc(4096, X86_IDMAP_PAGES(gib) * X86_PAGE_SIZE);
	struct idmap_mem m = {tables, tables_gpa, X86_IDMAP_PAGES(gib)};
	uint64_t gpa;

	(void)state;
	assert_non_null(tables);
	memset(tables, 0xff, X86_IDMAP_PAGES(gib) * X86_PAGE_SIZE); /* garbage must be cleared */
	assert_int_equal(X86_IDMAP_PAGES(gib), 6);
	assert_int_equal(x86_build_identity_map(tables, tables_gpa, gib), tables_gpa);

	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		gpa = ~0ull;
		assert_int_equal(
		    x86_translate(idmap_read_pte, &m, tables_gpa, false, addrs[i], &gpa), 0);
		assert_int_equal(gpa, addrs[i]);
	}
	/* 4 GiB and above, and the upper half, are not mapped */
	assert_int_equal(x86_translate(idmap_read_pte, &m, tables_gpa, false, 0x100000000ull, &gpa),
			 -EFAULT);
	assert_int_equal(
	    x86_translate(idmap_read_pte, &m, tables_gpa, false, 0xffffffff80000000ull, &gpa),
	    -EFAULT);
	/* the mappings are 2 MiB pages: the PML4 and PDPT entries point at the next table pages */
	assert_int_equal(tables[0], (tables_gpa + 0x1000) | X86_PTE_P | X86_PTE_RW);
	assert_int_equal(tables[512 + 3], (tables_gpa + 0x5000) | X86_PTE_P | X86_PTE_RW);
	assert_int_equal(tables[1024 + 1], 0x200000 | X86_PTE_P | X86_PTE_RW | X86_PTE_PS);
	free(tables);
}

/* ---- x86_build_gdt -------------------------------------------------------------------------- */

/* null, 64-bit code (L=1, DPL0, present), flat data. */
static void test_gdt(void **state)
{
	uint64_t gdt[X86_GDT_ENTRIES];

	(void)state;
	memset(gdt, 0xff, sizeof(gdt));
	x86_build_gdt(gdt);
	assert_int_equal(gdt[0], 0);
	assert_int_equal(gdt[X86_SEL_CODE64 / 8], 0x00209b0000000000ull);
	assert_int_equal(gdt[X86_SEL_DATA / 8], 0x00cf93000000ffffull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nop5_forms),
	    cmocka_unit_test(test_nop5_rejects),
	    cmocka_unit_test(test_format_bytes),
	    cmocka_unit_test(test_reg_arg),
	    cmocka_unit_test_setup_teardown(test_translate_4level_4k, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_translate_2m, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_translate_1g, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_translate_5level, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_translate_5level_2m, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_translate_not_present, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_translate_read_error, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_translate_self_reference, fake_setup,
					    fake_teardown),
	    cmocka_unit_test(test_tlb_hit_and_miss),
	    cmocka_unit_test(test_tlb_invalidate),
	    cmocka_unit_test(test_tlb_walk_error),
	    cmocka_unit_test(test_copy_virt_pages),
	    cmocka_unit_test(test_copy_virt_errors),
	    cmocka_unit_test(test_identity_map),
	    cmocka_unit_test(test_gdt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

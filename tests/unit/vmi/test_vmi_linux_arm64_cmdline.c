/* vmi/vmi_linux_arm64.h, vmi_linux_arm64_cmdline and vmi_linux_arm64_modules: saved_command_line
 * learned from the code of cmdline_proc_show, and the `modules` list head from m_next's, in a kernel
 * whose kallsyms lack data symbols (Debian's 6.1 arm64), over a fake guest memory holding that
 * function as such a kernel compiles it (ftrace's NOPs, PACIASP, the frame, then ADRP and LDR of the
 * pointer, or ADRP and ADD of the list's address); and every shape that must leave it unknown. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "vmi/vmi_linux_arm64.h"
#include "vmi/vmi_symtab.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define IMAGE	  0xffff800008000000ull /* the image's start */
#define IMAGE_SZ  (64ull << 20)
#define FN	  (IMAGE + 0x3a1230) /* cmdline_proc_show */
#define NOP	  0xd503201fu
#define PACIASP	  0xd503233fu
#define MOV_X9_30 0xaa1e03e9u
#define STP_FRAME 0xa9bf7bfdu /* stp x29, x30, [sp, #-16]! */
#define MOV_FP	  0x910003fdu /* mov x29, sp */

static uint32_t code[32];
static uint64_t code_at = FN;
static uint64_t head[2], head_at; /* the module list's head, where vmi_linux_arm64_modules reads it */

static int rd(void *ctx, uint64_t gva, void *buf, size_t len)
{
	(void)ctx;
	if (head_at && gva == head_at && len == sizeof(head)) {
		memcpy(buf, head, len);
		return 0;
	}
	if (gva < code_at || gva - code_at > sizeof(code) || len > sizeof(code) - (gva - code_at))
		return -EFAULT;
	memcpy(buf, (const uint8_t *)code + (gva - code_at), len);
	return 0;
}

/* ADRP x@rd of the page holding @target, at @pc. */
static uint32_t adrp(unsigned rd_, uint64_t pc, uint64_t target)
{
	int64_t pages = (int64_t)((target & ~0xfffull) - (pc & ~0xfffull)) / 4096;
	uint32_t imm = (uint32_t)pages & 0x1fffff;

	return 0x90000000u | (imm & 3) << 29 | (imm >> 2) << 5 | rd_;
}

/* LDR x@rt, [x@rn, #(@target's offset in its page)] */
static uint32_t ldr(unsigned rt, unsigned rn, uint64_t target)
{
	return 0xf9400000u | (uint32_t)((target & 0xfff) / 8) << 10 | rn << 5 | rt;
}

/* 6.1's shape with the pointer at @ptr: nop; mov x9, x30 (ftrace's, converted); paciasp; the
 * frame; adrp x1; ldr x1, [x1]; bl seq_puts (a BL's word, never looked at). */
static void fn_61(uint64_t ptr)
{
	memset(code, 0, sizeof(code));
	code[0] = NOP;
	code[1] = MOV_X9_30;
	code[2] = PACIASP;
	code[3] = STP_FRAME;
	code[4] = MOV_FP;
	code[5] = adrp(1, FN + 20, ptr);
	code[6] = ldr(1, 1, ptr);
	code[7] = 0x94000000u | 0x1234;
}

typedef void learn_fn(struct vmi_symtab *objects, const struct vmi_symtab *funcs,
		      vmi_read_fn read, void *ctx, uint64_t base, uint64_t size);

/* What @learner finds from the code of function @fn (at FN when @with_fn, a neighbour after it
 * always): the address of @object, 0 for none; @object already known at @known when @already. */
static uint64_t learn_by(learn_fn *learner, const char *fn, const char *object, uint64_t known,
			 bool with_fn, bool already)
{
	struct vmi_symtab objects = {0}, funcs = {0};
	const struct vmi_sym *s;
	uint64_t at;

	if (with_fn)
		assert_int_equal(vmi_symtab_add(&funcs, FN, 64, fn), 0);
	assert_int_equal(vmi_symtab_add(&funcs, FN + 64, 64, "a_neighbour"), 0);
	vmi_symtab_sort(&funcs);
	if (already)
		assert_int_equal(vmi_symtab_add(&objects, known, 8, object), 0);
	learner(&objects, &funcs, rd, NULL, IMAGE, IMAGE_SZ);
	s = vmi_symtab_find(&objects, object);
	at = s ? s->addr : 0;
	vmi_symtab_free(&objects);
	vmi_symtab_free(&funcs);
	return at;
}

/* What vmi_linux_arm64_cmdline finds: the address of saved_command_line, 0 for none. */
static uint64_t learn(bool with_fn, bool already)
{
	return learn_by(vmi_linux_arm64_cmdline, "cmdline_proc_show", "saved_command_line", 0x1000,
			with_fn, already);
}

/* The pointer in .data after the text (pages ahead of the code) and before it (a negative ADRP). */
static void test_found(void **state)
{
	uint64_t ptr = IMAGE + 0x1c52a48;

	(void)state;
	fn_61(ptr);
	assert_true(learn(true, false) == ptr);
	/* past the range kallsyms gave (6.1: its text alone), within the image's data */
	ptr = IMAGE + IMAGE_SZ + 0x19f0020;
	fn_61(ptr);
	assert_true(learn(true, false) == ptr);
	ptr = IMAGE + 0x10; /* before the function: ADRP's offset negative */
	fn_61(ptr);
	assert_true(learn(true, false) == ptr);
	/* another register pair, an instruction between the two */
	ptr = IMAGE + 0x1c52a48;
	fn_61(ptr);
	code[5] = adrp(8, FN + 20, ptr);
	code[6] = MOV_FP;
	code[7] = ldr(0, 8, ptr);
	assert_true(learn(true, false) == ptr);
}

/* Left unknown: a kallsyms that has it already (untouched), no such function, no ADRP, an LDR from
 * another register, the LDR more than four instructions later, a target outside the image, a
 * function that cannot be read. */
static void test_unknown(void **state)
{
	uint64_t ptr = IMAGE + 0x1c52a48;

	(void)state;
	fn_61(ptr);
	assert_true(learn(true, true) == 0x1000);
	assert_true(learn(false, false) == 0);
	fn_61(ptr);
	code[5] = NOP;
	assert_true(learn(true, false) == 0);
	fn_61(ptr);
	code[6] = ldr(1, 2, ptr);
	assert_true(learn(true, false) == 0);
	fn_61(ptr);
	code[6] = NOP;
	code[10] = ldr(1, 1, ptr);
	assert_true(learn(true, false) == 0);
	fn_61(IMAGE - 0x1000); /* before the image */
	assert_true(learn(true, false) == 0);
	fn_61(IMAGE + (1ull << 30)); /* a GiB past its start */
	assert_true(learn(true, false) == 0);
	fn_61(ptr);
	code_at = FN + 4;
	assert_true(learn(true, false) == 0);
	code_at = FN;
}

/* ADD x@rd_, x@rn, #@imm */
static uint32_t add(unsigned rd_, unsigned rn, unsigned imm)
{
	return 0x91000000u | (imm & 0xfff) << 10 | rn << 5 | rd_;
}

#define MODULE_A 0xffff80000a012008ull /* a module's list member */
#define MODULE_B 0xffff80000a3c1008ull

/* 6.1's m_next with the list at @list, its head {@next, @prev}: mov x9, x30; nop; paciasp; the
 * frame; mov x0, x1; mov x29, sp; adrp x1; add x1, x1, #off; bl seq_list_next (never looked at). */
static void m_next_61(uint64_t list, uint64_t next, uint64_t prev)
{
	memset(code, 0, sizeof(code));
	code[0] = MOV_X9_30;
	code[1] = NOP;
	code[2] = PACIASP;
	code[3] = STP_FRAME;
	code[4] = 0xaa0103e0u; /* mov x0, x1 */
	code[5] = MOV_FP;
	code[6] = adrp(1, FN + 24, list);
	code[7] = add(1, 1, list & 0xfff);
	code[8] = 0x94000000u | 0x4321;
	head_at = list;
	head[0] = next;
	head[1] = prev;
}

/* What vmi_linux_arm64_modules finds: the address of `modules`, 0 for none. */
static uint64_t learn_modules(bool with_fn, bool already)
{
	return learn_by(vmi_linux_arm64_modules, "m_next", "modules", 0x2000, with_fn, already);
}

/* 6.1's shape (ADD's offset 0x610, as Debian's 6.1.176 has it), with two modules, and empty. */
static void test_modules_found(void **state)
{
	uint64_t list = IMAGE + 0x1d0c610;

	(void)state;
	m_next_61(list, MODULE_A, MODULE_B);
	assert_true(learn_modules(true, false) == list);
	m_next_61(list, list, list);
	assert_true(learn_modules(true, false) == list);
	/* past the range kallsyms gave, an instruction between ADRP and ADD */
	list = IMAGE + IMAGE_SZ + 0x1000;
	m_next_61(list, MODULE_A, MODULE_A);
	code[7] = MOV_FP;
	code[8] = add(1, 1, list & 0xfff);
	assert_true(learn_modules(true, false) == list);
	head_at = 0;
}

/* Left unknown: already known (untouched), no m_next, ADRP into another register than x1, an ADD
 * into another register or from another one, a target outside the image or not 8-byte aligned, a
 * head that cannot be read, pointers that are no kernel addresses, a head half pointing at itself. */
static void test_modules_unknown(void **state)
{
	uint64_t list = IMAGE + 0x1d0c610;

	(void)state;
	m_next_61(list, MODULE_A, MODULE_B);
	assert_true(learn_modules(true, true) == 0x2000);
	assert_true(learn_modules(false, false) == 0);
	code[6] = adrp(2, FN + 24, list);
	code[7] = add(2, 2, list & 0xfff);
	assert_true(learn_modules(true, false) == 0);
	m_next_61(list, MODULE_A, MODULE_B);
	code[7] = add(2, 1, list & 0xfff);
	assert_true(learn_modules(true, false) == 0);
	code[7] = add(1, 2, list & 0xfff);
	assert_true(learn_modules(true, false) == 0);
	m_next_61(IMAGE - 0x1000, MODULE_A, MODULE_B);
	assert_true(learn_modules(true, false) == 0);
	m_next_61(list + 4, MODULE_A, MODULE_B);
	assert_true(learn_modules(true, false) == 0);
	m_next_61(list, MODULE_A, MODULE_B);
	head_at = list + 8;
	assert_true(learn_modules(true, false) == 0);
	m_next_61(list, 0x007faaaa12340000ull, MODULE_B); /* TTBR0's half */
	assert_true(learn_modules(true, false) == 0);
	m_next_61(list, MODULE_A, MODULE_B + 4);
	assert_true(learn_modules(true, false) == 0);
	m_next_61(list, list, MODULE_B);
	assert_true(learn_modules(true, false) == 0);
	head_at = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_found),
	    cmocka_unit_test(test_unknown),
	    cmocka_unit_test(test_modules_found),
	    cmocka_unit_test(test_modules_unknown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

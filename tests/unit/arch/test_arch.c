/* arch/arch.c: the ISA tables by id and by ELF machine, and register names. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/arch.h"
#include "arch/x86/x86_regs.h"

#include <elf.h>

/* Register names as a user writes them, and the tables by id and by ELF machine. */
static void test_names_and_tables(void **state)
{
	const struct arch *a = arch_get(ARCH_X86_64);

	(void)state;
	assert_non_null(a);
	assert_ptr_equal(arch_of_elf(EM_X86_64), a);
	assert_ptr_equal(arch_of_elf(EM_AARCH64), arch_get(ARCH_ARM64));
	assert_string_equal(arch_get(ARCH_ARM64)->name, "arm64");
	assert_ptr_equal(arch_default(), a);
	assert_null(arch_get(ARCH_NR_ISAS));
	assert_int_equal(arch_reg_index(a, "rax"), X86_RAX);
	assert_int_equal(arch_reg_index(a, "rflags"), X86_RFLAGS);
	assert_int_equal(arch_reg_index(a, "rip"), X86_RIP);
	assert_int_equal(arch_reg_index(a, "eax"), -1);
	assert_int_equal(a->regs.nr, X86_NR_REGS);
}

/* Every table names its ISA, its register map fits the set, and its hooks are all there. */
static void test_tables_complete(void **state)
{
	(void)state;
	for (unsigned i = 0; i < ARCH_NR_ISAS; i++) {
		const struct arch *a = arch_get((enum arch_isa)i);

		assert_non_null(a);
		assert_non_null(a->name);
		assert_true(a->regs.nr <= ARCH_REGS_MAX && a->regs.nr_args <= ARCH_REG_ARGS_MAX);
		assert_true(a->regs.ip < a->regs.nr && a->regs.sp < a->regs.nr &&
			    a->regs.ret < a->regs.nr);
		assert_true(a->bp_len && a->bp_len <= ARCH_PATCH_MAX);
		assert_true(a->site_len && a->site_len <= ARCH_PATCH_MAX);
		assert_true(a->jmp_len && a->jmp_len <= ARCH_PATCH_MAX);
		assert_true(a->call_before_len <= ARCH_PATCH_MAX);
		assert_non_null(a->is_site_nop);
		assert_non_null(a->entry_pad_len);
		assert_non_null(a->encode_branch);
		assert_non_null(a->direct_branch);
		assert_non_null(a->call_precedes);
		assert_non_null(a->reloc_plan);
		assert_non_null(a->reloc_emit);
		assert_non_null(a->reloc_kernel_safe);
		assert_non_null(a->reloc_detour_check);
		assert_non_null(a->reloc_scan_body);
		assert_non_null(a->scan_branch_to);
		assert_non_null(a->scan_insn_start);
		assert_non_null(a->insn_waits);
		assert_non_null(a->detour_code);
		assert_non_null(a->translate);
		assert_non_null(a->walk_root);
		assert_non_null(a->gdb);
		assert_ptr_equal(arch_of_elf(a->elf_machine), a);
	}
}

/* x86's per-CPU base: the GS base slot a backend filled, when it is a kernel address; 0 (not there)
 * when the slot is empty or holds a user-space base (a vCPU stopped in user mode, or before the
 * kernel set its GS). arm64 keeps `current` in SP_EL0 instead. */
static void test_x86_percpu_base(void **state)
{
	const struct arch *a = arch_of_elf(EM_X86_64);
	struct arch_regs r = {{0}};

	(void)state;
	assert_non_null(a->percpu_base);
	assert_int_equal(a->percpu_base(&r), 0);
	r.r[X86_GS_BASE_SLOT] = 0xffff88807dc00000ull;
	assert_int_equal(a->percpu_base(&r), 0xffff88807dc00000ull);
	r.r[X86_GS_BASE_SLOT] = 0x7f1234560000ull;
	assert_int_equal(a->percpu_base(&r), 0);
	assert_null(arch_of_elf(EM_AARCH64)->percpu_base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names_and_tables),
	    cmocka_unit_test(test_tables_complete),
	    cmocka_unit_test(test_x86_percpu_base),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

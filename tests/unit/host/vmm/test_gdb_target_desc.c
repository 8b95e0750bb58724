/* The target description's parts hvtrace reads: the <architecture>, a system register's regnum;
 * from QEMU's real layouts and from hostile ones (unterminated, a name that only starts the same,
 * a regnum that is no number or is huge). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/vmm/gdb_target_desc.h"

#include <string.h>

/* QEMU 7.2's aarch64 system-registers.xml, cut down: the shape of every line. */
static const char sysregs[] =
    "<?xml version=\"1.0\"?><!DOCTYPE target SYSTEM \"gdb-target.dtd\">"
    "<feature name=\"org.qemu.gdb.arm.sys.regs\">"
    "<reg name=\"TTBR1_EL1x\" bitsize=\"64\" regnum=\"1\"/>"
    "<reg name=\"SP_EL0\" bitsize=\"64\" regnum=\"138\" group=\"cp_regs\"/>"
    "<reg name=\"TTBR1_EL1\" bitsize=\"64\" regnum=\"175\" group=\"cp_regs\"/>"
    "<reg name=\"TCR_EL1\" bitsize=\"64\" regnum=\"174\"/>"
    "</feature>";

static void test_regnum(void **state)
{
	(void)state;
	assert_int_equal(gdb_desc_regnum(sysregs, "SP_EL0"), 138);
	assert_int_equal(gdb_desc_regnum(sysregs, "TTBR1_EL1"), 175); /* not TTBR1_EL1x's */
	assert_int_equal(gdb_desc_regnum(sysregs, "TCR_EL1"), 174);
	assert_int_equal(gdb_desc_regnum(sysregs, "TPIDR_EL1"), -1);
	assert_int_equal(gdb_desc_regnum(sysregs, "TTBR1"), -1);
}

static void test_regnum_hostile(void **state)
{
	(void)state;
	/* no regnum: the numbering would follow the order, which hvtrace does not guess */
	assert_int_equal(gdb_desc_regnum("<reg name=\"SP_EL0\" bitsize=\"64\"/>", "SP_EL0"), -1);
	/* the regnum of the next element is not this one's */
	assert_int_equal(
	    gdb_desc_regnum("<reg name=\"SP_EL0\"/><reg name=\"X\" regnum=\"5\"/>", "SP_EL0"), -1);
	assert_int_equal(gdb_desc_regnum("<reg name=\"SP_EL0\" regnum=\"x1\"/>", "SP_EL0"), -1);
	assert_int_equal(gdb_desc_regnum("<reg name=\"SP_EL0\" regnum=\"12a\"/>", "SP_EL0"), -1);
	assert_int_equal(
	    gdb_desc_regnum("<reg name=\"SP_EL0\" regnum=\"99999999999999999999\"/>", "SP_EL0"),
	    -1);
	assert_int_equal(gdb_desc_regnum("<reg name=\"SP_EL0\" regnum=\"4095\"/>", "SP_EL0"), 4095);
	/* unterminated element, empty text */
	assert_int_equal(gdb_desc_regnum("<reg name=\"SP_EL0\" regnum=\"7\"", "SP_EL0"), -1);
	assert_int_equal(gdb_desc_regnum("", "SP_EL0"), -1);
}

static void test_arch(void **state)
{
	char out[16];

	(void)state;
	gdb_desc_arch("<target><architecture>aarch64</architecture></target>", out, sizeof(out));
	assert_string_equal(out, "aarch64");
	gdb_desc_arch("<target><architecture>i386:x86-64</architecture>", out, sizeof(out));
	assert_string_equal(out, "i386:x86-64");
	gdb_desc_arch("<target/>", out, sizeof(out));
	assert_string_equal(out, "");
	gdb_desc_arch("<architecture>aarch64", out, sizeof(out)); /* unterminated */
	assert_string_equal(out, "");
	/* longer than the room: cut, never past it */
	gdb_desc_arch("<architecture>a-very-long-architecture-name</architecture>", out,
		      sizeof(out));
	assert_int_equal(strlen(out), sizeof(out) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_regnum),
	    cmocka_unit_test(test_regnum_hostile),
	    cmocka_unit_test(test_arch),
	};

	return cmocka_run_group_tests_name("gdb_target_desc", tests, NULL, NULL);
}

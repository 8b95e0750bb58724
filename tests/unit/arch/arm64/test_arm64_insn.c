/* arch/arm64/arm64_insn.h: B/BL encoded and decoded at the +-128 MiB edges, the calls a return
 * address follows, entry pads, the site NOP, the waiting words. Words from aarch64-linux-gnu-as. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/arch.h"
#include "arch/arm64/arm64_insn.h"
#include "vmi/vmi_sites.h"

#include <errno.h>
#include <string.h>

#define KTEXT 0xffff800080010000ull
#define MIB   (1ull << 20)

static void le(uint8_t *p, uint32_t w)
{
	arm64_put_word(p, w);
}

static uint32_t encode(uint64_t at, uint64_t to, bool call, int *ret)
{
	uint8_t b[4] = {0};

	*ret = arm64_encode_branch(at, to, call, b);
	return arm64_word(b);
}

/* ---- encode / decode ------------------------------------------------------------------------- */

/* The assembler's words: b .+0x7fffffc, bl .-0x8000000, bl .+4, b ., bl .-4. */
static void test_encode_matches_as(void **state)
{
	int ret;

	(void)state;
	assert_int_equal(encode(KTEXT, KTEXT + 128 * MIB - 4, false, &ret), 0x15ffffffu);
	assert_int_equal(ret, 0);
	assert_int_equal(encode(KTEXT, KTEXT - 128 * MIB, true, &ret), 0x96000000u);
	assert_int_equal(ret, 0);
	assert_int_equal(encode(KTEXT, KTEXT + 4, true, &ret), 0x94000001u);
	assert_int_equal(encode(KTEXT, KTEXT, false, &ret), 0x14000000u);
	assert_int_equal(encode(KTEXT, KTEXT - 4, true, &ret), 0x97ffffffu);
	assert_int_equal(ret, 0);
}

/* One word past either edge is -ERANGE, and nothing is written; unaligned addresses -EINVAL. */
static void test_encode_edges(void **state)
{
	uint8_t b[4] = {0xaa, 0xbb, 0xcc, 0xdd};

	(void)state;
	assert_int_equal(arm64_encode_branch(KTEXT, KTEXT + 128 * MIB, false, b), -ERANGE);
	assert_int_equal(arm64_encode_branch(KTEXT, KTEXT - 128 * MIB - 4, true, b), -ERANGE);
	assert_int_equal(arm64_encode_branch(KTEXT, KTEXT + (1ull << 40), true, b), -ERANGE);
	assert_int_equal(arm64_encode_branch(KTEXT, 0x1000, true, b), -ERANGE); /* other half */
	assert_int_equal(arm64_word(b), 0xddccbbaau);
	assert_int_equal(arm64_encode_branch(KTEXT + 2, KTEXT + 8, true, b), -EINVAL);
	assert_int_equal(arm64_encode_branch(KTEXT, KTEXT + 9, false, b), -EINVAL);
	assert_int_equal(arm64_word(b), 0xddccbbaau);
	/* across address 0 (wrapping arithmetic) */
	assert_int_equal(arm64_encode_branch(0xfffffffffffffffcull, 4, false, b), 0);
	assert_int_equal(arm64_word(b), 0x14000002u);
}

/* Decoding gives back what was encoded at both edges, and BL/B are told apart. */
static void test_direct_branch_roundtrip(void **state)
{
	static const int64_t offs[] = {0,	 4,	 -4, 128 * MIB - 4, -(int64_t)(128 * MIB),
				       0x123454, -0x5678};
	uint8_t b[4];
	uint64_t to;

	(void)state;
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		for (int call = 0; call < 2; call++) {
			assert_int_equal(
			    arm64_encode_branch(KTEXT, KTEXT + (uint64_t)offs[i], call, b), 0);
			to = 0;
			assert_int_equal(arm64_direct_branch(b, 4, KTEXT, true, &to), 4);
			assert_true(to == KTEXT + (uint64_t)offs[i]);
			assert_int_equal(arm64_direct_branch(b, 4, KTEXT, false, &to),
					 call ? 4 : 0);
		}
	}
}

/* Too few bytes, and words that are no B/BL (B.cond, CBZ, BLR, NOP). */
static void test_direct_branch_rejects(void **state)
{
	static const uint32_t others[] = {0x54000040u, 0xb4000040u, 0xd63f0060u,
					  ARM64_NOP,   0xd65f03c0u, 0x00000000u};
	uint8_t b[4];
	uint64_t to = 7;

	(void)state;
	le(b, 0x94000001u);
	assert_int_equal(arm64_direct_branch(b, 3, KTEXT, true, &to), 0);
	assert_int_equal(arm64_direct_branch(b, 0, KTEXT, true, &to), 0);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		le(b, others[i]);
		assert_int_equal(arm64_direct_branch(b, 4, KTEXT, true, &to), 0);
	}
	assert_int_equal(to, 7);
}

/* ---- call_precedes --------------------------------------------------------------------------- */

static void test_call_precedes(void **state)
{
	static const uint32_t calls[] = {
	    0x94000001u, 0x97ffffffu, 0x96000000u, /* bl */
	    0xd63f0060u, 0xd63f03c0u,		   /* blr x3, blr x30 */
	    0xd73f0822u, 0xd63f08bfu,		   /* blraa x1, x2; blraaz x5 */
	    0xd73f0c3fu, 0xd63f0cffu,		   /* blrab x1, sp; blrabz x7 */
	};
	static const uint32_t others[] = {
	    0x14000000u, 0x15ffffffu, /* b */
	    0xd61f0060u, 0xd71f0822u, /* br x3, braa x1, x2 */
	    0xd65f03c0u, 0xd65f0bffu, /* ret, retaa */
	    0x54000040u, 0xb4000040u, /* b.eq, cbz */
	    ARM64_NOP,	 0xd503245fu, 0xaa1e03e9u, 0xd503233fu,
	    0x00000000u, 0xffffffffu, 0xd63f0061u, /* blr x3 with a nonzero low field: unallocated
						    */
	};
	uint8_t b[4];

	(void)state;
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		le(b, calls[i]);
		assert_true(arm64_call_precedes(b));
	}
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		le(b, others[i]);
		assert_false(arm64_call_precedes(b));
	}
}

/* ---- entry words ----------------------------------------------------------------------------- */

static size_t pad_of(uint32_t w0, uint32_t w1)
{
	uint8_t b[8];

	le(b, w0);
	le(b + 4, w1);
	return arm64_entry_pad_len(b);
}

/* `bti c` + `mov x9, x30` is 8, either alone 4, `bti jc` counts as `bti c`, anything else 0. */
static void test_entry_pad_len(void **state)
{
	(void)state;
	assert_int_equal(pad_of(ARM64_BTI_C, ARM64_MOV_X9_X30), 8);
	assert_int_equal(pad_of(ARM64_BTI_JC, ARM64_MOV_X9_X30), 8);
	assert_int_equal(pad_of(ARM64_BTI_C, ARM64_NOP), 4);
	assert_int_equal(pad_of(ARM64_MOV_X9_X30, ARM64_NOP), 4);
	assert_int_equal(pad_of(ARM64_NOP, ARM64_NOP), 0);
	assert_int_equal(pad_of(ARM64_PACIASP, 0xd10283ffu), 0);    /* __schedule's */
	assert_int_equal(pad_of(0xd503249fu, ARM64_MOV_X9_X30), 0); /* bti j: no call lands */
	assert_int_equal(pad_of(ARM64_MOV_X9_X30, ARM64_MOV_X9_X30), 4);
	assert_int_equal(pad_of(0xaa1e03eau, ARM64_NOP), 0); /* mov x10, x30 */
}

/* The site NOP is the NOP alone; a BL over it, a BRK, the mov are not. */
static void test_site_nop(void **state)
{
	static const uint32_t others[] = {0x94000001u, ARM64_BRK0,  ARM64_MOV_X9_X30,
					  0xd503203fu, ARM64_BTI_C, 0x00000000u};
	uint8_t b[4];

	(void)state;
	le(b, ARM64_NOP);
	assert_true(arm64_is_site_nop(b));
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		le(b, others[i]);
		assert_false(arm64_is_site_nop(b));
	}
}

/* A site is the NOP after ftrace's `mov x9, x30` (a `bti c` before it or not), as vmi_site_entry
 * finds it: a function that merely opens with a NOP (caches_clean_inval_pou's alternative slot,
 * `nop; nop` before ftrace's boot-time rewrite), or a `bti c; nop`, is none. */
static void test_site_entry(void **state)
{
	static const struct {
		uint32_t w[3];
		bool ok;
		uint64_t off;
	} c[] = {
	    {{ARM64_MOV_X9_X30, ARM64_NOP, ARM64_PACIASP}, true, 4},
	    {{ARM64_BTI_C, ARM64_MOV_X9_X30, ARM64_NOP}, true, 8},
	    {{ARM64_NOP, ARM64_NOP, 0xaa0003e2u}, false, 0}, /* caches_clean_inval_pou */
	    {{ARM64_BTI_C, ARM64_NOP, ARM64_NOP}, false, 0},
	    {{ARM64_MOV_X9_X30, 0x94000001u, ARM64_PACIASP}, false, 0}, /* a BL already there */
	    {{ARM64_PACIASP, 0xd10283ffu, 0}, false, 0},		/* __schedule */
	};
	const struct arch *a = arch_get(ARCH_ARM64);

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint8_t b[12];
		uint64_t site = 0;

		le(b, c[i].w[0]);
		le(b + 4, c[i].w[1]);
		le(b + 8, c[i].w[2]);
		assert_int_equal(vmi_site_entry(a, b, 0xffff800080010000ull, &site), c[i].ok);
		if (c[i].ok)
			assert_true(site == 0xffff800080010000ull + c[i].off);
	}
	assert_false(arm64_site_entry_ok((const uint8_t *)"\x1f\x20\x03\xd5", 0));
}

/* WFI, WFE, WFIT x3, WFET x4 wait; YIELD, SEV, NOP, and too few bytes do not. */
static void test_insn_waits(void **state)
{
	static const uint32_t waits[] = {0xd503207fu, 0xd503205fu, 0xd5031023u, 0xd5031004u};
	static const uint32_t others[] = {0xd503203fu, 0xd503209fu, ARM64_NOP, 0xd5031043u};
	const struct arch *a = arch_get(ARCH_ARM64);
	uint8_t b[4];

	(void)state;
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		le(b, waits[i]);
		assert_true(arm64_insn_waits(b, 4));
		assert_true(a->insn_waits(b, 4));
		assert_false(arm64_insn_waits(b, 3));
	}
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		le(b, others[i]);
		assert_false(arm64_insn_waits(b, 4));
	}
}

/* The table's patch encodings are the words above. */
static void test_table(void **state)
{
	const struct arch *a = arch_get(ARCH_ARM64);

	(void)state;
	assert_non_null(a);
	assert_int_equal(arm64_word(a->bp), ARM64_BRK0);
	assert_int_equal(arm64_word(a->pad), ARM64_BTI_C);
	assert_int_equal(a->site_len, 4);
	assert_int_equal(a->jmp_len, 4);
	assert_non_null(a->reloc_plan);
	assert_non_null(a->reloc_emit);
	assert_non_null(a->reloc_kernel_safe);
	assert_non_null(a->reloc_detour_check);
	assert_non_null(a->reloc_scan_body);
	assert_non_null(a->scan_branch_to);
	assert_non_null(a->detour_code);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_encode_matches_as),
	    cmocka_unit_test(test_encode_edges),
	    cmocka_unit_test(test_direct_branch_roundtrip),
	    cmocka_unit_test(test_direct_branch_rejects),
	    cmocka_unit_test(test_call_precedes),
	    cmocka_unit_test(test_entry_pad_len),
	    cmocka_unit_test(test_site_nop),
	    cmocka_unit_test(test_site_entry),
	    cmocka_unit_test(test_insn_waits),
	    cmocka_unit_test(test_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

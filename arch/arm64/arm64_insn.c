#include "arch/arm64/arm64_insn.h"

#include <errno.h>

bool arm64_is_site_nop(const uint8_t *p)
{
	return arm64_word(p) == ARM64_NOP;
}

bool arm64_site_entry_ok(const uint8_t *p, size_t skip)
{
	return skip >= ARM64_INSN_LEN && arm64_word(p + skip - ARM64_INSN_LEN) == ARM64_MOV_X9_X30;
}

size_t arm64_entry_pad_len(const uint8_t *p)
{
	size_t n = 0;
	uint32_t w = arm64_word(p);

	if (w == ARM64_BTI_C || w == ARM64_BTI_JC) {
		n = ARM64_INSN_LEN;
		w = arm64_word(p + n);
	}
	if (w == ARM64_MOV_X9_X30)
		n += ARM64_INSN_LEN;
	return n;
}

int arm64_encode_branch(uint64_t at, uint64_t to, bool call, uint8_t *out)
{
	int64_t off = (int64_t)(to - at);

	if ((at | to) & 3)
		return -EINVAL;
	if (off < -(int64_t)ARM64_BRANCH_REACH || off >= (int64_t)ARM64_BRANCH_REACH)
		return -ERANGE;
	arm64_put_word(out,
		       (call ? 0x94000000u : 0x14000000u) | ((uint32_t)(off >> 2) & 0x3ffffffu));
	return 0;
}

size_t arm64_direct_branch(const uint8_t *p, size_t n, uint64_t at, bool jumps, uint64_t *to)
{
	uint32_t w, op;
	int64_t imm;

	if (n < ARM64_INSN_LEN)
		return 0;
	w = arm64_word(p);
	op = w & 0xfc000000u;
	if (op != 0x94000000u && !(jumps && op == 0x14000000u))
		return 0;
	imm = (int64_t)((uint64_t)(w & 0x3ffffffu) << 38) >> 36; /* sign-extended, times 4 */
	*to = at + (uint64_t)imm;
	return ARM64_INSN_LEN;
}

bool arm64_call_precedes(const uint8_t *b)
{
	uint32_t w = arm64_word(b);

	return (w & 0xfc000000u) == 0x94000000u || /* BL */
	       (w & 0xfffffc1fu) == 0xd63f0000u || /* BLR Xn */
	       (w & 0xfffff81fu) == 0xd63f081fu || /* BLRAAZ, BLRABZ */
	       (w & 0xfffff800u) == 0xd73f0800u;   /* BLRAA, BLRAB */
}

bool arm64_insn_waits(const uint8_t *p, size_t n)
{
	uint32_t w = n >= ARM64_INSN_LEN ? arm64_word(p) : 0;

	return w == 0xd503207fu || w == 0xd503205fu || (w & 0xffffffc0u) == 0xd5031000u;
}

/* An arm64 detour slot's words (arm64_detour.h). */
#include "arch/arm64/arm64_detour.h"
#include "arch/arm64/arm64_insn.h"
#include "arch/arm64/arm64_reloc.h"
#include "arch/arm64/arm64_reloc_scan.h"

#include <errno.h>
#include <stdio.h>

/* One copy of the displaced words at slot offset @off (up to @end): LDP, the words, B back. */
static int put_copy(const struct arch_reloc_plan *plan, uint64_t at, uint8_t *code, size_t off,
		    size_t end, size_t *n, char *why, size_t whylen)
{
	arm64_put_word(code + off, ARM64_DT_LDP_X9_X30);
	off += ARM64_INSN_LEN;
	return arm64_reloc_emit(plan, plan->bytes, plan->code_addr, at + off, code + off, end - off,
				n, why, whylen);
}

int arm64_detour_code(const struct arch_reloc_plan *plan, const struct arch_detour_slot *slot,
		      uint64_t at, uint64_t entry, uint8_t *code, size_t *len, char *why,
		      size_t whylen)
{
	uint64_t back = plan->code_addr + plan->pad_len + plan->len;
	size_t n = 0, sti = slot->sti_off;
	int pushed, ret;

	*len = 0;
	if ((at & 3) || (sti & 3) || (slot->size & 3) || sti < ARM64_DT_UNMASKED + 12 ||
	    sti + 2 * ARM64_INSN_LEN > slot->size) {
		snprintf(why, whylen,
			 "detour slot %u: its layout has no room for arm64's copies "
			 "and way back",
			 slot->idx);
		return -EINVAL;
	}
	ret = arm64_reloc_detour_check(plan, &pushed, why, whylen);
	if (ret < 0)
		return ret;
	for (size_t off = 0; off < slot->size; off += ARM64_INSN_LEN)
		arm64_put_word(code + off, ARM64_BRK0);
	arm64_put_word(code, ARM64_DT_STP_X9_X30);
	if (arm64_encode_branch(at + 4, entry, true, code + 4) < 0) {
		snprintf(why, whylen, "no detour slot %u within BL's reach of the stub", slot->idx);
		return -ERANGE;
	}
	ret = put_copy(plan, at, code, ARM64_DT_MASKED, ARM64_DT_UNMASKED, &n, why, whylen);
	if (ret == 0)
		ret = put_copy(plan, at, code, ARM64_DT_UNMASKED, sti, &n, why, whylen);
	if (ret < 0)
		return ret;
	/* the second copy's B back gives way to a B to the way back that unmasks interrupts */
	n += ARM64_DT_UNMASKED; /* the LDP before the copy, the B back at its end */
	arm64_put_word(code + sti, ARM64_DAIFCLR_I);
	if (arm64_encode_branch(at + n, at + sti, false, code + n) < 0 ||
	    arm64_encode_branch(at + sti + 4, back, false, code + sti + 4) < 0) {
		snprintf(why, whylen, "the way back is out of B's reach from detour slot %u",
			 slot->idx);
		return -ERANGE;
	}
	*len = sti + 2 * ARM64_INSN_LEN;
	return 0;
}

/* An x86 detour slot's bytes (x86_detour.h): CALL rel32 to the stub's detour routine, the
 * displaced instructions relocated, JMP *(pushed - scratch)(%rsp), then the two ways back (with
 * and without STI), each behind an ENDBR64. */
#include "arch/x86/x86_detour.h"
#include "arch/x86/x86_insn.h"
#include "arch/x86/x86_reloc.h"
#include "arch/x86/x86_reloc_scan.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const uint8_t endbr64[X86_ENDBR64_LEN] = {0xf3, 0x0f, 0x1e, 0xfa};

/* Puts JMP rel32 from @code + @at (slot address @slot) to @to; false when out of reach. */
static bool put_jmp(uint8_t *code, size_t at, uint64_t slot, uint64_t to)
{
	return x86_encode_rel32(slot + at, to, false, code + at) == 0;
}

int x86_detour_code(const struct arch_reloc_plan *plan, const struct arch_detour_slot *slot,
		    uint64_t at, uint64_t entry, uint8_t *code, size_t *len, char *why,
		    size_t whylen)
{
	uint64_t back = plan->code_addr + plan->pad_len + plan->len;
	int32_t disp;
	size_t n = 0;
	int pushed, ret;

	if (slot->nosti_off + X86_ENDBR64_LEN + X86_JMP_REL32_LEN > slot->size ||
	    slot->sti_off + X86_ENDBR64_LEN + 1 + X86_JMP_REL32_LEN > slot->nosti_off) {
		snprintf(why, whylen, "detour slot %u: its layout has no room for the ways back",
			 slot->idx);
		return -EINVAL;
	}
	ret = x86_reloc_detour_check(plan, &pushed, why, whylen);
	if (ret < 0)
		return ret;
	memset(code, X86_INT3, slot->size);
	if (x86_encode_rel32(at, entry, true, code) < 0) {
		snprintf(why, whylen, "no detour slot %u within reach of the stub", slot->idx);
		return -ERANGE;
	}
	ret = x86_reloc_emit(plan, plan->bytes, plan->code_addr, at + X86_NOP5_LEN,
			     code + X86_NOP5_LEN,
			     slot->sti_off - X86_NOP5_LEN - 7 + X86_JMP_REL32_LEN, &n, why, whylen);
	if (ret < 0)
		return ret;
	/* the relocator's JMP back gives way to JMP *(pushed - SCRATCH)(%rsp): ff a4 24 disp32 */
	n += X86_NOP5_LEN - X86_JMP_REL32_LEN;
	disp = pushed - slot->scratch;
	code[n] = 0xff;
	code[n + 1] = 0xa4;
	code[n + 2] = 0x24;
	memcpy(code + n + 3, &disp, 4);
	memcpy(code + slot->sti_off, endbr64, X86_ENDBR64_LEN);
	code[slot->sti_off + 4] = 0xfb; /* STI: its shadow covers the JMP */
	memcpy(code + slot->nosti_off, endbr64, X86_ENDBR64_LEN);
	if (!put_jmp(code, slot->sti_off + 5, at, back) ||
	    !put_jmp(code, slot->nosti_off + 4, at, back)) {
		snprintf(why, whylen, "the way back is out of reach of detour slot %u", slot->idx);
		return -ERANGE;
	}
	*len = slot->nosti_off + X86_ENDBR64_LEN + X86_JMP_REL32_LEN;
	return 0;
}

/* libFuzzer harness for out-of-line relocation (arch/x86/x86_reloc.c): the input is a header of
 * 20 bytes (code address, detour address, patch size, room for the copy, an address to test
 * against the patch) and then a function's first bytes as read from the guest, in a buffer of
 * exactly their size (ASan: the plan reads nothing past it). What a plan accepts is emitted into
 * exactly the room given (nothing written past it) and decoded back: every instruction reaches
 * what the original reached, and the copy ends with a JMP back. */
#include "arch/x86/x86_reloc.h"
#include "arch/x86/x86_reloc_scan.h"

#include <errno.h>

#include <Zydis/Zydis.h>
#include <stdlib.h>
#include <string.h>

#define HDR 20

/* Decodes one instruction at @ip; its branch target or RIP-relative address in *@t (0 if none). */
static size_t decode(const uint8_t *p, size_t n, uint64_t ip, ZydisMnemonic *mn, uint64_t *t)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	if (ZYAN_FAILED(ZydisDecoderDecodeFull(&dec, p, n, &in, ops)))
		abort();
	*t = 0;
	*mn = in.mnemonic;
	for (unsigned i = 0; i < in.operand_count; i++)
		if ((ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[i].imm.is_relative) ||
		    (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		     ops[i].mem.base == ZYDIS_REGISTER_RIP))
			if (ZYAN_FAILED(ZydisCalcAbsoluteAddress(&in, &ops[i], ip, t)))
				abort();
	return in.length;
}

static void check_copy(const struct arch_reloc_plan *plan, const uint8_t *code, uint64_t code_addr,
		       const uint8_t *out, size_t len, uint64_t dest)
{
	size_t o = 0, n;
	ZydisMnemonic om, nm;
	uint64_t ot, nt;

	for (size_t i = 0; i < plan->nr; i++) {
		const struct arch_reloc_insn *ri = &plan->insn[i];

		decode(code + ri->off, ri->len, code_addr + ri->off, &om, &ot);
		if (ri->kind == X86_RELOC_CALL)
			o += 5; /* push imm32 */
		else if (ri->kind == X86_RELOC_LOOP)
			o += 4; /* op +2; jmp +5 */
		if (o >= len)
			abort();
		n = decode(out + o, len - o, dest + o, &nm, &nt);
		if (nt != ot)
			abort();
		if ((ri->kind == X86_RELOC_COPY || ri->kind == X86_RELOC_RIPREL) &&
		    (n != ri->len || nm != om))
			abort();
		if (ri->kind == X86_RELOC_COPY && memcmp(out + o, code + ri->off, n))
			abort();
		o += n;
	}
	if (o + X86_JMP_REL32_LEN != len || out[o] != 0xe9)
		abort();
	decode(out + o, len - o, dest + o, &nm, &nt);
	if (nt != code_addr + plan->pad_len + plan->len)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t code_addr, dest, probe;
	struct arch_reloc_plan plan;
	size_t need, cap, len = 0, code_len;
	uint8_t *code, *out;
	char why[256];
	int err;

	if (size < HDR)
		return 0;
	memcpy(&code_addr, data, 8);
	memcpy(&dest, data + 8, 8);
	need = data[16] % (X86_RELOC_MAX_NEED + 2); /* 0 and MAX + 1: refused */
	cap = data[17] % (X86_RELOC_OUT_MAX + 8);
	probe = code_addr + (int8_t)data[18];
	/* half the time a near detour, so that emit gets past the rel32 checks */
	if (data[19] & 1)
		dest = code_addr + (int32_t)(dest & 0x3fffffff) - 0x20000000;
	code_len = size - HDR;
	code = malloc(code_len ? code_len : 1);
	out = malloc(cap ? cap : 1);
	if (!code || !out)
		abort();
	memcpy(code, data + HDR, code_len);
	err = x86_reloc_plan(code, code_len, code_addr, need, &plan, why, sizeof(why));
	if (!memchr(why, 0, sizeof(why)) || (err && !why[0]))
		abort(); /* a reason, NUL-terminated, for each refusal */
	if (!err) {
		size_t end = plan.pad_len + plan.len;

		if (end > code_len || plan.len < need || !plan.nr ||
		    plan.nr > X86_RELOC_MAX_INSNS ||
		    plan.insn[plan.nr - 1].off + plan.insn[plan.nr - 1].len != end)
			abort();
		if (x86_reloc_hits_patch(&plan, code_addr + plan.pad_len, 1) ||
		    (plan.len > 1 && !x86_reloc_hits_patch(&plan, code_addr + end - 1, 1)))
			abort();
		x86_reloc_hits_patch(&plan, probe, data[19]);
		/* the detour's checks over the same plan, and the whole input as the function */
		{
			int pushed = 0, e1 = x86_reloc_kernel_safe(&plan, why, sizeof(why));
			int e2 = x86_reloc_detour_check(&plan, &pushed, why, sizeof(why));
			int e3 = x86_reloc_scan_body(&plan, code, code_len, code_addr, why,
						     sizeof(why));

			if ((e1 && e1 != -EOPNOTSUPP) || (e2 && e2 != -EOPNOTSUPP) ||
			    (e3 && e3 != -EOPNOTSUPP && e3 != -EILSEQ) ||
			    (!e2 && (pushed > X86_DETOUR_STACK_MAX || pushed < -X86_DETOUR_STACK_MAX)))
				abort();
		}
		err =
		    x86_reloc_emit(&plan, code, code_addr, dest, out, cap, &len, why, sizeof(why));
		if (len > cap || x86_reloc_emit_len(&plan) > X86_RELOC_OUT_MAX)
			abort();
		if (!err) {
			if (len != x86_reloc_emit_len(&plan))
				abort();
			check_copy(&plan, code, code_addr, out, len, dest);
		} else if (len || !why[0]) {
			abort();
		}
	}
	free(code);
	free(out);
	return 0;
}

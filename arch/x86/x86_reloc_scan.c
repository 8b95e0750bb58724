/* Checks around a relocation plan: the function's other branches, and what a kernel rewrites
 * (x86_reloc_scan.h). */
#include "arch/x86/x86_reloc_scan.h"
#include "arch/x86/x86_insn.h"

#include <Zydis/Zydis.h>
#include <errno.h>
#include <stdio.h>

#define MAX_INSN_LEN ZYDIS_MAX_INSTRUCTION_LENGTH

/* "+OFF at ADDR (BYTES): REASON" into @why; returns @err. */
static int say(char *why, size_t whylen, int err, uint64_t base, uint64_t addr, const uint8_t *p,
	       size_t n, const char *reason, const char *name)
{
	char bytes[3 * MAX_INSN_LEN];

	if (why && whylen) {
		if (n > MAX_INSN_LEN)
			n = MAX_INSN_LEN;
		if (n)
			arch_format_bytes(p, n, bytes);
		else
			bytes[0] = 0;
		snprintf(why, whylen, "+%llu at 0x%llx (%s): %s%s%s",
			 (unsigned long long)(addr - base), (unsigned long long)addr, bytes,
			 name ? name : "", name ? ": " : "", reason);
	}
	return err;
}

static bool decoder(ZydisDecoder *dec)
{
	return ZYAN_SUCCESS(
	    ZydisDecoderInit(dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64));
}

/* A memory operand a kernel cannot have an exception fixup for: the stack, per-CPU data, RIP. */
static bool plain_memory(const ZydisDecodedOperand *o)
{
	if (o->type != ZYDIS_OPERAND_TYPE_MEMORY || o->mem.type == ZYDIS_MEMOP_TYPE_AGEN)
		return true; /* not an access (LEA) */
	if (o->mem.segment == ZYDIS_REGISTER_GS)
		return true;
	if (o->mem.index != ZYDIS_REGISTER_NONE)
		return false;
	return o->mem.base == ZYDIS_REGISTER_RSP || o->mem.base == ZYDIS_REGISTER_RBP ||
	       o->mem.base == ZYDIS_REGISTER_RIP;
}

/* Decodes displaced instruction @i of @plan again (the checks need its operands); 0, or
 * -EOPNOTSUPP with @why when it does not decode as the plan says. */
static int decode_displaced(ZydisDecoder *dec, const struct arch_reloc_plan *plan, size_t i,
			    ZydisDecodedInstruction *in, ZydisDecodedOperand *ops, char *why,
			    size_t whylen)
{
	const struct arch_reloc_insn *ri = &plan->insn[i];
	const uint8_t *p = plan->bytes + ri->off;
	uint64_t at = plan->code_addr + ri->off;

	if ((size_t)ri->off + ri->len > sizeof(plan->bytes) ||
	    ZYAN_FAILED(ZydisDecoderDecodeFull(dec, p, ri->len, in, ops)))
		return say(why, whylen, -EOPNOTSUPP, plan->code_addr, at, p, ri->len,
			   "does not decode as planned", NULL);
	return 0;
}

/* One displaced instruction, decoded, as each check of a plan sees it. */
struct displaced {
	const ZydisDecodedInstruction *in;
	const ZydisDecodedOperand *ops;
	const uint8_t *p;  /* its bytes */
	uint64_t base, at; /* the plan's code_addr; the instruction's address */
	const char *name;  /* its mnemonic */
};

/* Refuses @d (returns a negative errno with @why) or lets it pass (0); @ctx is the check's. */
typedef int (*displaced_fn)(void *ctx, const struct displaced *d, char *why, size_t whylen);

/* Decodes each displaced instruction of @plan again and hands it to @check, stopping at the first
 * refusal: the loop both checks of a plan share. 0, or the first error (with @why). */
static int each_displaced(const struct arch_reloc_plan *plan, displaced_fn check, void *ctx,
			  char *why, size_t whylen)
{
	uint64_t base = plan->code_addr;
	ZydisDecoder dec;

	if (why && whylen)
		why[0] = 0;
	if (!decoder(&dec))
		return say(why, whylen, -EOPNOTSUPP, base, base, NULL, 0, "no x86-64 decoder",
			   NULL);
	for (size_t i = 0; i < plan->nr && i < X86_RELOC_MAX_INSNS; i++) {
		ZydisDecodedInstruction in;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		struct displaced d = {.in = &in,
				      .ops = ops,
				      .p = plan->bytes + plan->insn[i].off,
				      .base = base,
				      .at = base + plan->insn[i].off};
		int err = decode_displaced(&dec, plan, i, &in, ops, why, whylen);

		if (!err) {
			d.name = ZydisMnemonicGetString(in.mnemonic);
			err = check(ctx, &d, why, whylen);
		}
		if (err)
			return err;
	}
	return 0;
}

/* x86_reloc_kernel_safe's check of one instruction. */
static int kernel_safe_one(void *ctx, const struct displaced *d, char *why, size_t whylen)
{
	const ZydisDecodedInstruction *in = d->in;

	(void)ctx;
	if (in->mnemonic == ZYDIS_MNEMONIC_NOP)
		return say(why, whylen, -EOPNOTSUPP, d->base, d->at, d->p, in->length,
			   "a NOP the kernel may turn into a jump (jump label)", d->name);
	if (in->mnemonic == ZYDIS_MNEMONIC_JMP)
		return say(why, whylen, -EOPNOTSUPP, d->base, d->at, d->p, in->length,
			   "a jump the kernel may turn into a NOP (jump label)", d->name);
	if (in->meta.category == ZYDIS_CATEGORY_CALL)
		return say(why, whylen, -EOPNOTSUPP, d->base, d->at, d->p, in->length,
			   "a call the kernel may retarget (static call)", d->name);
	for (unsigned k = 0; k < in->operand_count_visible; k++)
		if (!plain_memory(&d->ops[k]))
			return say(why, whylen, -EOPNOTSUPP, d->base, d->at, d->p, in->length,
				   "a memory access that may fault and be fixed up by its address",
				   d->name);
	return 0;
}

int x86_reloc_kernel_safe(const struct arch_reloc_plan *plan, char *why, size_t whylen)
{
	return each_displaced(plan, kernel_safe_one, NULL, why, whylen);
}

static bool is_reg(const ZydisDecodedOperand *o, ZydisRegister r)
{
	return o->type == ZYDIS_OPERAND_TYPE_REGISTER && o->reg.value == r;
}

static bool writes_rsp(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
	for (unsigned k = 0; k < in->operand_count; k++)
		if ((is_reg(&ops[k], ZYDIS_REGISTER_RSP) || is_reg(&ops[k], ZYDIS_REGISTER_ESP) ||
		     is_reg(&ops[k], ZYDIS_REGISTER_SP)) &&
		    (ops[k].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			return true;
	return false;
}

/* x86_reloc_detour_check's check of one instruction; @ctx: the bytes pushed so far (int64_t). */
static int detour_one(void *ctx, const struct displaced *d, char *why, size_t whylen)
{
	const ZydisDecodedInstruction *in = d->in;
	const ZydisDecodedOperand *ops = d->ops;
	int64_t *delta = ctx;

	if (in->meta.branch_type != ZYDIS_BRANCH_TYPE_NONE ||
	    in->meta.category == ZYDIS_CATEGORY_RET ||
	    in->meta.category == ZYDIS_CATEGORY_COND_BR ||
	    in->meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
	    in->meta.category == ZYDIS_CATEGORY_CALL)
		return say(why, whylen, -EOPNOTSUPP, d->base, d->at, d->p, in->length,
			   "a branch would leave the detour with interrupts off", d->name);
	for (unsigned k = 0; k < in->operand_count_visible; k++) {
		const ZydisDecodedOperand *o = &ops[k];
		int64_t disp = o->mem.disp.has_displacement ? o->mem.disp.value : 0;

		if (o->type != ZYDIS_OPERAND_TYPE_MEMORY || o->mem.type == ZYDIS_MEMOP_TYPE_AGEN)
			continue;
		if (o->mem.segment == ZYDIS_REGISTER_GS || o->mem.base == ZYDIS_REGISTER_RIP)
			continue;
		if ((o->mem.base == ZYDIS_REGISTER_RSP && disp - *delta < -X86_DETOUR_STACK_MAX) ||
		    (o->mem.base == ZYDIS_REGISTER_RBP && disp < 0))
			return say(why, whylen, -EOPNOTSUPP, d->base, d->at, d->p, in->length,
				   "a stack operand below the return-address slot", d->name);
	}
	if (!writes_rsp(in, ops))
		return 0;
	if ((in->mnemonic == ZYDIS_MNEMONIC_PUSH || in->mnemonic == ZYDIS_MNEMONIC_POP) &&
	    in->operand_width == 64 && !is_reg(&ops[0], ZYDIS_REGISTER_RSP))
		*delta += in->mnemonic == ZYDIS_MNEMONIC_PUSH ? 8 : -8;
	else if ((in->mnemonic == ZYDIS_MNEMONIC_SUB || in->mnemonic == ZYDIS_MNEMONIC_ADD) &&
		 is_reg(&ops[0], ZYDIS_REGISTER_RSP) && ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
		*delta += (in->mnemonic == ZYDIS_MNEMONIC_SUB ? 1 : -1) * ops[1].imm.value.s;
	else
		return say(why, whylen, -EOPNOTSUPP, d->base, d->at, d->p, in->length,
			   "changes RSP in a way a detour does not follow", d->name);
	if (*delta > X86_DETOUR_STACK_MAX || *delta < -X86_DETOUR_STACK_MAX)
		return say(why, whylen, -EOPNOTSUPP, d->base, d->at, d->p, in->length,
			   "moves RSP further than a detour allows", d->name);
	return 0;
}

int x86_reloc_detour_check(const struct arch_reloc_plan *plan, int *pushed, char *why,
			   size_t whylen)
{
	int64_t delta = 0;
	int ret;

	*pushed = 0;
	ret = each_displaced(plan, detour_one, &delta, why, whylen);
	if (ret == 0)
		*pushed = (int)delta;
	return ret;
}

/* Decodes @body from its start and refuses the first relative branch (a CALL only with @calls)
 * whose target lies in [@lo, @hi), with @what in the line. See x86_reloc_scan_body. */
static int scan_branches(const uint8_t *body, size_t body_len, uint64_t body_addr, uint64_t lo,
			 uint64_t hi, bool calls, const char *what, char *why, size_t whylen)
{
	ZydisDecoder dec;
	size_t off = 0;

	if (why && whylen)
		why[0] = 0;
	if (!decoder(&dec))
		return say(why, whylen, -EOPNOTSUPP, body_addr, body_addr, NULL, 0,
			   "no x86-64 decoder", NULL);
	while (off < body_len) {
		size_t avail = body_len - off, n = avail < MAX_INSN_LEN ? avail : MAX_INSN_LEN;
		ZydisDecodedInstruction in;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		uint64_t at = body_addr + off, target;
		ZyanStatus st = ZydisDecoderDecodeFull(&dec, body + off, n, &in, ops);

		if (st == ZYDIS_STATUS_NO_MORE_DATA && n < MAX_INSN_LEN)
			break; /* cut at the end of what was read */
		if (ZYAN_FAILED(st) || !in.length || in.length > n)
			return say(why, whylen, -EILSEQ, body_addr, at, body + off, n,
				   "not a valid x86-64 instruction (the function's branches "
				   "cannot all be seen)",
				   NULL);
		for (unsigned k = 0; k < in.operand_count; k++) {
			const ZydisDecodedOperand *o = &ops[k];

			if (o->type != ZYDIS_OPERAND_TYPE_IMMEDIATE || !o->imm.is_relative ||
			    (!calls && in.mnemonic == ZYDIS_MNEMONIC_CALL))
				continue;
			if (ZYAN_FAILED(ZydisCalcAbsoluteAddress(&in, o, at, &target)))
				continue;
			if (target >= lo && target < hi)
				return say(why, whylen, -EOPNOTSUPP, body_addr, at, body + off,
					   in.length, what, ZydisMnemonicGetString(in.mnemonic));
		}
		off += in.length;
	}
	return 0;
}

int x86_reloc_scan_body(const struct arch_reloc_plan *plan, const uint8_t *body, size_t body_len,
			uint64_t body_addr, char *why, size_t whylen)
{
	uint64_t first = plan->code_addr + plan->pad_len;

	return scan_branches(body, body_len, body_addr, first + 1, first + plan->len, true,
			     "branches into the bytes a detour would replace", why, whylen);
}

int x86_scan_branch_to(const uint8_t *body, size_t body_len, uint64_t body_addr, uint64_t target,
		       char *why, size_t whylen)
{
	return scan_branches(body, body_len, body_addr, target, target + 1, false,
			     "jumps back to the function's first instruction", why, whylen);
}

int x86_scan_insn_start(const uint8_t *body, size_t body_len, size_t off, size_t *before,
			size_t *after)
{
	ZydisDecoder dec;
	size_t at = 0;

	*before = *after = 0;
	if (!decoder(&dec))
		return -EOPNOTSUPP;
	while (at < off) {
		size_t avail = body_len - at, n = avail < MAX_INSN_LEN ? avail : MAX_INSN_LEN;
		ZydisDecodedInstruction in;

		if (at >= body_len ||
		    ZYAN_FAILED(ZydisDecoderDecodeInstruction(&dec, NULL, body + at, n, &in)) ||
		    !in.length || in.length > n) {
			*before = at;
			return -EILSEQ;
		}
		*before = at;
		at += in.length;
	}
	*after = at;
	return at == off ? 0 : -EINVAL;
}

bool x86_insn_waits(const uint8_t *p, size_t n)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction in;

	if (!decoder(&dec) ||
	    ZYAN_FAILED(ZydisDecoderDecodeInstruction(&dec, NULL, p, n < MAX_INSN_LEN ? n : MAX_INSN_LEN,
						      &in)))
		return false;
	switch (in.mnemonic) {
	case ZYDIS_MNEMONIC_HLT:
	case ZYDIS_MNEMONIC_MWAIT:
	case ZYDIS_MNEMONIC_MWAITX:
	case ZYDIS_MNEMONIC_UMWAIT:
	case ZYDIS_MNEMONIC_TPAUSE:
		return true;
	default:
		return false;
	}
}

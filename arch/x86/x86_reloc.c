/* Out-of-line relocation of a function's first instructions: the plan (decode with Zydis, refuse
 * what cannot move) and the emitted detour bytes. Offsets are from code_addr; the patch starts at
 * P = code_addr + pad_len and covers [P, P + len). */
#include "arch/x86/x86_reloc.h"
#include "arch/x86/x86_insn.h"

#include <Zydis/Zydis.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>

static const uint8_t endbr64[X86_ENDBR64_LEN] = {0xf3, 0x0f, 0x1e, 0xfa};

#define MAX_INSN_LEN ZYDIS_MAX_INSTRUCTION_LENGTH

/* Writes "+OFF at ADDR (BYTES): REASON" into @why (arch_vsay); returns @err. */
static int refuse(char *why, size_t whylen, int err, uint64_t code_addr, size_t off,
		  const uint8_t *p, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	arch_vsay(why, whylen, code_addr, code_addr + off, p, n > MAX_INSN_LEN ? MAX_INSN_LEN : n,
		  fmt, ap);
	va_end(ap);
	return err;
}

static bool fits_rel32(uint64_t target, uint64_t next)
{
	int64_t d = (int64_t)(target - next);

	return d >= INT32_MIN && d <= INT32_MAX;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static int32_t get32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

/* Instructions that trap, leave the kernel, stop the CPU or whose handler looks at their address
 * (BUG()'s UD2, a foreign INT3, KVM rewriting a VMCALL in place): never displaced. */
static bool never_displaced(const ZydisDecodedInstruction *in)
{
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_INT:
	case ZYDIS_MNEMONIC_INT1:
	case ZYDIS_MNEMONIC_INT3:
	case ZYDIS_MNEMONIC_INTO:
	case ZYDIS_MNEMONIC_UD0:
	case ZYDIS_MNEMONIC_UD1:
	case ZYDIS_MNEMONIC_UD2:
	case ZYDIS_MNEMONIC_HLT:
	case ZYDIS_MNEMONIC_IRET:
	case ZYDIS_MNEMONIC_IRETD:
	case ZYDIS_MNEMONIC_IRETQ:
	case ZYDIS_MNEMONIC_SYSCALL:
	case ZYDIS_MNEMONIC_SYSENTER:
	case ZYDIS_MNEMONIC_SYSEXIT:
	case ZYDIS_MNEMONIC_SYSRET:
	case ZYDIS_MNEMONIC_VMCALL:
	case ZYDIS_MNEMONIC_VMMCALL:
	case ZYDIS_MNEMONIC_XBEGIN:
		return true;
	default:
		break;
	}
	switch (in->meta.category) {
	case ZYDIS_CATEGORY_INTERRUPT:
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_SYSRET:
	case ZYDIS_CATEGORY_SYSTEM:
	case ZYDIS_CATEGORY_VTX:
		return true;
	default:
		break;
	}
	return (in->attributes & ZYDIS_ATTRIB_IS_PRIVILEGED) ||
	       in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;
}

/* A relative branch in one of the forms re-encoded here, read from its bytes (after CS/DS
 * prefixes, ignored by branches in 64-bit mode, hints on Jcc): sets kind, op and target. */
static bool rel_branch(const uint8_t *p, size_t len, uint64_t next, struct arch_reloc_insn *ri)
{
	size_t k = 0;

	while (k < len && (p[k] == 0x2e || p[k] == 0x3e))
		k++;
	p += k;
	len -= k;
	if (len == 2 &&
	    (p[0] == 0xeb || (p[0] >= 0x70 && p[0] <= 0x7f) || (p[0] >= 0xe0 && p[0] <= 0xe3))) {
		ri->kind = p[0] == 0xeb	  ? X86_RELOC_JMP
			   : p[0] <= 0x7f ? X86_RELOC_JCC
					  : X86_RELOC_LOOP;
		ri->op = ri->kind == X86_RELOC_JCC ? (p[0] & 0xf) : p[0];
		ri->target = next + (int64_t)(int8_t)p[1];
		return true;
	}
	if (len == 5 && (p[0] == 0xe9 || p[0] == 0xe8)) {
		ri->kind = p[0] == 0xe9 ? X86_RELOC_JMP : X86_RELOC_CALL;
		ri->target = next + (int64_t)get32(p + 1);
		return true;
	}
	if (len == 6 && p[0] == 0x0f && (p[1] & 0xf0) == 0x80) {
		ri->kind = X86_RELOC_JCC;
		ri->op = p[1] & 0xf;
		ri->target = next + (int64_t)get32(p + 2);
		return true;
	}
	return false;
}

/* The relative immediate operand (a branch's), or NULL. */
static const ZydisDecodedOperand *rel_imm(const ZydisDecodedInstruction *in,
					  const ZydisDecodedOperand *ops)
{
	for (unsigned i = 0; i < in->operand_count; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[i].imm.is_relative)
			return &ops[i];
	return NULL;
}

static bool ip_based(const ZydisDecodedOperand *o)
{
	return o->type == ZYDIS_OPERAND_TYPE_MEMORY &&
	       (o->mem.base == ZYDIS_REGISTER_RIP || o->mem.base == ZYDIS_REGISTER_EIP ||
		o->mem.base == ZYDIS_REGISTER_IP);
}

/* Decides how one decoded instruction at offset @off moves, or refuses it. @last: it completes
 * the patch's bytes. */
static int classify(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops,
		    const uint8_t *code, uint64_t code_addr, size_t off, bool last,
		    struct arch_reloc_insn *ri, char *why, size_t whylen)
{
	const uint8_t *p = code + off;
	const char *name = ZydisMnemonicGetString(in->mnemonic);
	uint64_t ip = code_addr + off, next = ip + in->length;
	const ZydisDecodedOperand *imm = rel_imm(in, ops);
	uint64_t zt;
	bool rel = imm, mem = false;

#define REFUSE(...) refuse(why, whylen, -EOPNOTSUPP, code_addr, off, p, in->length, __VA_ARGS__)
	if (!name)
		name = "?";
	ri->kind = X86_RELOC_COPY;
	if (never_displaced(in))
		return REFUSE("%s: traps, is privileged or leaves the kernel: not run out of line",
			      name);
	for (unsigned i = 0; i < in->operand_count; i++)
		mem |= ip_based(&ops[i]);
	if ((in->attributes & ZYDIS_ATTRIB_IS_RELATIVE) && !rel && !mem)
		return REFUSE("%s: relative in a way not relocated", name);
	if (rel) {
		if (!rel_branch(p, in->length, next, ri))
			return REFUSE("%s: relative, in a form or with prefixes not relocated",
				      name);
		if (ZYAN_FAILED(ZydisCalcAbsoluteAddress(in, imm, ip, &zt)) || zt != ri->target)
			return REFUSE("%s: its target is read differently by the decoder", name);
	}
	if (in->meta.category == ZYDIS_CATEGORY_CALL) {
		if (ri->kind != X86_RELOC_CALL)
			return REFUSE("indirect %s: the callee would return into the detour", name);
		if (!last)
			return REFUSE("%s before the last displaced instruction: the callee would "
				      "return into the detour",
				      name);
	}
	if ((in->meta.category == ZYDIS_CATEGORY_RET ||
	     in->meta.category == ZYDIS_CATEGORY_UNCOND_BR) &&
	    !last)
		return REFUSE("%s: the function leaves before the patch's bytes are covered (they "
			      "would overwrite what follows)",
			      name);
	for (unsigned i = 0; i < in->operand_count; i++) {
		const ZydisDecodedOperand *o = &ops[i];
		int32_t disp;

		if (o->type != ZYDIS_OPERAND_TYPE_MEMORY)
			continue;
		if (o->mem.base == ZYDIS_REGISTER_EIP || o->mem.base == ZYDIS_REGISTER_IP)
			return REFUSE("%s: 32-bit RIP-relative addressing", name);
		if (o->mem.base != ZYDIS_REGISTER_RIP)
			continue;
		if (rel || ri->kind != X86_RELOC_COPY || in->raw.disp.size != 32 ||
		    in->raw.disp.offset == 0 || in->raw.disp.offset + 4u > in->length)
			return REFUSE("%s: a RIP-relative operand not relocated", name);
		disp = get32(p + in->raw.disp.offset);
		if (disp != in->raw.disp.value || o->mem.index != ZYDIS_REGISTER_NONE)
			return REFUSE("%s: a RIP-relative operand read differently by the decoder",
				      name);
		ri->kind = X86_RELOC_RIPREL;
		ri->field_off = in->raw.disp.offset;
		ri->target = next + (int64_t)disp;
	}
#undef REFUSE
	return 0;
}

int x86_reloc_plan(const uint8_t *code, size_t code_len, uint64_t code_addr, size_t need,
		   struct arch_reloc_plan *plan, char *why, size_t whylen)
{
	ZydisDecoder dec;
	size_t start, off;

	memset(plan, 0, sizeof(*plan));
	plan->code_addr = code_addr;
	if (why && whylen)
		why[0] = 0;
	if (need < 1 || need > X86_RELOC_MAX_NEED || (!code && code_len))
		return refuse(why, whylen, -EINVAL, code_addr, 0, NULL, 0,
			      "a patch of %zu bytes: 1 to %d can be planned", need,
			      X86_RELOC_MAX_NEED);
	if (ZYAN_FAILED(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return refuse(why, whylen, -EINVAL, code_addr, 0, NULL, 0, "no x86-64 decoder");
	start = code_len >= X86_ENDBR64_LEN && !memcmp(code, endbr64, X86_ENDBR64_LEN)
		    ? X86_ENDBR64_LEN
		    : 0;
	off = start;
	while (off - start < need) {
		ZydisDecodedInstruction in;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		size_t avail = code_len - off, n = avail < MAX_INSN_LEN ? avail : MAX_INSN_LEN;
		ZyanStatus st;
		int err;

		if (!avail)
			return refuse(why, whylen, -ENODATA, code_addr, off, NULL, 0,
				      "%zu bytes read, the patch needs %zu after +%zu", code_len,
				      need, start);
		st = ZydisDecoderDecodeFull(&dec, code + off, n, &in, ops);
		if (st == ZYDIS_STATUS_NO_MORE_DATA && n < MAX_INSN_LEN)
			return refuse(why, whylen, -ENODATA, code_addr, off, code + off, n,
				      "the instruction runs past the %zu bytes read", code_len);
		if (ZYAN_FAILED(st) || !in.length || in.length > n)
			return refuse(why, whylen, -EILSEQ, code_addr, off, code + off, n,
				      "not a valid x86-64 instruction");
		err = classify(&in, ops, code, code_addr, off, off + in.length - start >= need,
			       &plan->insn[plan->nr], why, whylen);
		if (err)
			return err;
		plan->insn[plan->nr].off = off;
		plan->insn[plan->nr].len = in.length;
		plan->nr++;
		off += in.length;
	}
	plan->pad_len = start;
	plan->len = off - start;
	memcpy(plan->bytes, code, off);
	/* Branches back into the displaced bytes: they would land in the patch's middle. */
	for (size_t i = 0; i < plan->nr; i++) {
		const struct arch_reloc_insn *ri = &plan->insn[i];

		if (ri->kind == X86_RELOC_COPY || ri->kind == X86_RELOC_RIPREL)
			continue;
		if (x86_reloc_hits_patch(plan, ri->target, 1))
			return refuse(why, whylen, -EOPNOTSUPP, code_addr, ri->off, code + ri->off,
				      ri->len,
				      "branches to 0x%llx (+%llu), inside the %zu displaced bytes",
				      (unsigned long long)ri->target,
				      (unsigned long long)(ri->target - code_addr), plan->len);
	}
	return 0;
}

bool x86_reloc_hits_patch(const struct arch_reloc_plan *plan, uint64_t addr, uint64_t n)
{
	uint64_t lo = plan->code_addr + plan->pad_len + 1;
	uint64_t span = plan->len > 1 ? plan->len - 1 : 0;

	/* [addr, addr + n) and [lo, lo + span) meet iff one starts inside the other (mod 2^64) */
	if (!n || !span)
		return false;
	return addr - lo < span || lo - addr < n;
}

static size_t emitted_len(const struct arch_reloc_insn *ri)
{
	switch (ri->kind) {
	case X86_RELOC_JMP:
		return 5;
	case X86_RELOC_JCC:
		return 6;
	case X86_RELOC_LOOP:
		return 9;
	case X86_RELOC_CALL:
		return 10;
	default:
		return ri->len;
	}
}

size_t x86_reloc_emit_len(const struct arch_reloc_plan *plan)
{
	size_t n = X86_JMP_REL32_LEN;

	for (size_t i = 0; i < plan->nr && i < X86_RELOC_MAX_INSNS; i++)
		n += emitted_len(&plan->insn[i]);
	return n;
}

/* Whether @plan is one x86_reloc_plan could have made: whole instructions, back to back. */
static bool plan_sane(const struct arch_reloc_plan *plan)
{
	size_t off = plan->pad_len;

	if ((plan->pad_len != 0 && plan->pad_len != X86_ENDBR64_LEN) || !plan->nr ||
	    plan->nr > X86_RELOC_MAX_INSNS || plan->len > X86_RELOC_MAX_BYTES - plan->pad_len)
		return false;
	for (size_t i = 0; i < plan->nr; i++) {
		const struct arch_reloc_insn *ri = &plan->insn[i];

		if (ri->off != off || !ri->len || ri->len > MAX_INSN_LEN ||
		    ri->kind > X86_RELOC_CALL ||
		    (ri->kind == X86_RELOC_RIPREL && ri->field_off + 4u > ri->len) ||
		    (ri->kind == X86_RELOC_CALL && i != plan->nr - 1))
			return false;
		off += ri->len;
	}
	return off == plan->pad_len + plan->len;
}

int x86_reloc_emit(const struct arch_reloc_plan *plan, const uint8_t *code, uint64_t code_addr,
		   uint64_t dest_addr, uint8_t *out, size_t out_cap, size_t *out_len, char *why,
		   size_t whylen)
{
	uint64_t back = code_addr + plan->pad_len + plan->len;
	size_t total, o = 0;

	*out_len = 0;
	if (why && whylen)
		why[0] = 0;
	if (!plan_sane(plan) || code_addr != plan->code_addr)
		return refuse(why, whylen, -EINVAL, code_addr, 0, NULL, 0,
			      "no plan for this address");
	if (!code || memcmp(code, plan->bytes, plan->pad_len + plan->len))
		return refuse(why, whylen, -EINVAL, code_addr, 0, code,
			      code ? plan->pad_len + plan->len : 0,
			      "not the bytes the plan was made from");
	total = x86_reloc_emit_len(plan);
	if (total > out_cap)
		return refuse(why, whylen, -ENOSPC, code_addr, plan->pad_len, NULL, 0,
			      "the detour's copy needs %zu bytes, %zu given", total, out_cap);
	for (size_t i = 0; i < plan->nr; i++) {
		const struct arch_reloc_insn *ri = &plan->insn[i];
		const uint8_t *p = plan->bytes + ri->off;
		uint64_t at = dest_addr + o, next = at + emitted_len(ri);
		uint64_t ret = code_addr + ri->off + ri->len;
		uint8_t *w = out + o;

		if (ri->kind == X86_RELOC_CALL && (int64_t)ret != (int64_t)(int32_t)ret)
			return refuse(why, whylen, -ERANGE, code_addr, ri->off, p, ri->len,
				      "its return address is no sign-extended imm32 to push");
		if (ri->kind != X86_RELOC_COPY && !fits_rel32(ri->target, next))
			return refuse(why, whylen, -ERANGE, code_addr, ri->off, p, ri->len,
				      "0x%llx is out of rel32 reach from the detour at 0x%llx",
				      (unsigned long long)ri->target, (unsigned long long)at);
		switch (ri->kind) {
		case X86_RELOC_COPY:
			memcpy(w, p, ri->len);
			break;
		case X86_RELOC_RIPREL:
			memcpy(w, p, ri->len);
			put32(w + ri->field_off, (uint32_t)(ri->target - next));
			break;
		case X86_RELOC_JMP:
			w[0] = 0xe9;
			put32(w + 1, (uint32_t)(ri->target - next));
			break;
		case X86_RELOC_JCC:
			w[0] = 0x0f;
			w[1] = 0x80 | ri->op;
			put32(w + 2, (uint32_t)(ri->target - next));
			break;
		case X86_RELOC_LOOP: /* op +2 (taken: to the jmp rel32); jmp +5 (not taken) */
			w[0] = ri->op;
			w[1] = 0x02;
			w[2] = 0xeb;
			w[3] = 0x05;
			w[4] = 0xe9;
			put32(w + 5, (uint32_t)(ri->target - next));
			break;
		case X86_RELOC_CALL: /* push imm32 (sign-extended): the original return address */
			w[0] = 0x68;
			put32(w + 1, (uint32_t)ret);
			w[5] = 0xe9;
			put32(w + 6, (uint32_t)(ri->target - next));
			break;
		}
		o += emitted_len(ri);
	}
	if (!fits_rel32(back, dest_addr + o + X86_JMP_REL32_LEN))
		return refuse(why, whylen, -ERANGE, code_addr, plan->pad_len + plan->len, NULL, 0,
			      "the way back is out of rel32 reach from the detour at 0x%llx",
			      (unsigned long long)(dest_addr + o));
	out[o] = 0xe9;
	put32(out + o + 1, (uint32_t)(back - (dest_addr + o + X86_JMP_REL32_LEN)));
	*out_len = o + X86_JMP_REL32_LEN;
	return 0;
}

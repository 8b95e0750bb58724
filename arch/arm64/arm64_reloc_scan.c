/* Checks around an arm64 relocation plan: what a kernel rewrites, what cannot run with interrupts
 * masked, the function's other branches (arm64_reloc_scan.h). */
#include "arch/arm64/arm64_reloc_scan.h"
#include "arch/arm64/arm64_insn.h"

#include <errno.h>

#define SP_REG 31
#define FP_REG 29

static const char *const kind_name[] = {
    [ARM64_RELOC_B] = "B",	   [ARM64_RELOC_BL] = "BL",	  [ARM64_RELOC_BCOND] = "B.cond",
    [ARM64_RELOC_CB] = "CBZ/CBNZ", [ARM64_RELOC_TB] = "TBZ/TBNZ",
};

/* A load or store other than a literal load: Rn (bits 9:5) is its base register. */
static bool loads_or_stores(uint32_t w)
{
	return (w & 0x0a000000u) == 0x08000000u && (w & 0x3b000000u) != 0x18000000u;
}

/* Checks one displaced word @w (at @at, bytes @p) of a plan made at @base; @ctx is the check's.
 * 0, or a negative errno with @why. */
typedef int (*word_check)(void *ctx, uint32_t w, uint64_t base, uint64_t at, const uint8_t *p,
			  char *why, size_t whylen);

/* Hands each displaced word of @plan to @check, stopping at the first refusal. */
static int each_word(const struct arch_reloc_plan *plan, word_check check, void *ctx, char *why,
		     size_t whylen)
{
	if (why && whylen)
		why[0] = 0;
	for (size_t i = 0; i < plan->nr && i < ARCH_RELOC_MAX_INSNS; i++) {
		const uint8_t *p = plan->bytes + plan->insn[i].off;
		int err = check(ctx, arm64_word(p), plan->code_addr,
				plan->code_addr + plan->insn[i].off, p, why, whylen);

		if (err)
			return err;
	}
	return 0;
}

/* arm64_reloc_kernel_safe's check of one word. */
static int kernel_safe_one(void *ctx, uint32_t w, uint64_t base, uint64_t at, const uint8_t *p,
			   char *why, size_t whylen)
{
	uint64_t to;
	uint8_t kind;
	bool branch = arm64_rel_branch(w, at, &to, &kind);

	(void)ctx;
	if (w == ARM64_NOP)
		return arm64_say(why, whylen, -EOPNOTSUPP, base, at, p, 4,
				 "NOP: the kernel may turn it into a branch (jump label)");
	if (branch && kind == ARM64_RELOC_B)
		return arm64_say(why, whylen, -EOPNOTSUPP, base, at, p, 4,
				 "B: the kernel may turn it into a NOP (jump label)");
	if (branch && kind == ARM64_RELOC_BL)
		return arm64_say(why, whylen, -EOPNOTSUPP, base, at, p, 4,
				 "BL: a call site the kernel may retarget");
	if (loads_or_stores(w) && ((w >> 5) & 31) != SP_REG && ((w >> 5) & 31) != FP_REG)
		return arm64_say(why, whylen, -EOPNOTSUPP, base, at, p, 4,
				 "a memory access through x%u, which may fault and be fixed up by "
				 "its address",
				 (w >> 5) & 31);
	if ((w & 0xffd80000u) == 0xd5080000u)
		return arm64_say(why, whylen, -EOPNOTSUPP, base, at, p, 4,
				 "SYS/SYSL (cache or TLB maintenance): may fault and be fixed up "
				 "by its address");
	return 0;
}

int arm64_reloc_kernel_safe(const struct arch_reloc_plan *plan, char *why, size_t whylen)
{
	return each_word(plan, kernel_safe_one, NULL, why, whylen);
}

/* Whether @w writes PSTATE.DAIF: MSR DAIFSet/DAIFClr, #imm or MSR DAIF, Xt. */
static bool writes_daif(uint32_t w)
{
	return (w & 0xfffff0dfu) == 0xd50340dfu || (w & 0xffffffe0u) == 0xd51b4220u;
}

/* How far @w moves sp down (SUB/ADD sp, sp, #imm; STP/LDP Xt with sp writeback), else 0. */
static int64_t sp_push(uint32_t w)
{
	int64_t imm = (int64_t)((w >> 10) & 0xfff) << ((w >> 22) & 1 ? 12 : 0);

	if ((w & 0xff0003ffu) == 0xd10003ffu && !(w & 0x00800000u))
		return imm; /* sub sp, sp, #imm */
	if ((w & 0xff0003ffu) == 0x910003ffu && !(w & 0x00800000u))
		return -imm;		      /* add sp, sp, #imm */
	if ((w & 0xfe8003e0u) == 0xa88003e0u) /* stp/ldp Xt, Xt2, [sp, #imm]! or [sp], #imm */
		return -8 * ((int64_t)((uint64_t)((w >> 15) & 0x7f) << 57) >> 57);
	return 0;
}

/* arm64_reloc_detour_check's check of one word; @ctx: how far sp moved down so far (int64_t). */
static int detour_one(void *ctx, uint32_t w, uint64_t base, uint64_t at, const uint8_t *p,
		      char *why, size_t whylen)
{
	uint64_t to;
	uint8_t kind;

	if (arm64_rel_branch(w, at, &to, &kind) || (w & 0xfe000000u) == 0xd6000000u)
		return arm64_say(why, whylen, -EOPNOTSUPP, base, at, p, 4,
				 "a branch would leave the detour with interrupts masked");
	if (writes_daif(w))
		return arm64_say(why, whylen, -EOPNOTSUPP, base, at, p, 4,
				 "writes DAIF: the detour runs with interrupts masked");
	if (arm64_insn_waits(p, ARM64_INSN_LEN))
		return arm64_say(why, whylen, -EOPNOTSUPP, base, at, p, 4,
				 "waits (WFI/WFE) with interrupts masked");
	*(int64_t *)ctx += sp_push(w);
	return 0;
}

int arm64_reloc_detour_check(const struct arch_reloc_plan *plan, int *pushed, char *why,
			     size_t whylen)
{
	int64_t delta = 0;
	int ret = each_word(plan, detour_one, &delta, why, whylen);

	*pushed = ret ? 0 : (int)delta;
	return ret;
}

/* Reads @body from its start and refuses the first PC-relative branch (BL only with @calls, ADR
 * only with @adr) whose target lies in [@lo, @lo + @span), with @what in the line. */
static int scan(const uint8_t *body, size_t body_len, uint64_t body_addr, uint64_t lo,
		uint64_t span, bool calls, bool adr, const char *what, char *why, size_t whylen)
{
	if (why && whylen)
		why[0] = 0;
	if (body_addr & 3)
		return arm64_say(why, whylen, -EINVAL, body_addr, body_addr, NULL, 0,
				 "the function is not 4-aligned");
	for (size_t off = 0; off + ARM64_INSN_LEN <= body_len; off += ARM64_INSN_LEN) {
		uint32_t w = arm64_word(body + off);
		uint64_t at = body_addr + off, to;
		uint8_t kind;
		const char *name;

		if (arm64_rel_branch(w, at, &to, &kind)) {
			if (kind == ARM64_RELOC_BL && !calls)
				continue;
			name = kind_name[kind];
		} else if (adr && (w & 0x9f000000u) == 0x10000000u) {
			uint64_t imm = ((w >> 5) & 0x7ffffu) << 2 | ((w >> 29) & 3);

			to = at + (uint64_t)((int64_t)(imm << 43) >> 43);
			name = "ADR";
		} else
			continue;
		if (to - lo < span)
			return arm64_say(why, whylen, -EOPNOTSUPP, body_addr, at, body + off,
					 ARM64_INSN_LEN, "%s to 0x%llx: %s", name,
					 (unsigned long long)to, what);
	}
	return 0;
}

int arm64_reloc_scan_body(const struct arch_reloc_plan *plan, const uint8_t *body, size_t body_len,
			  uint64_t body_addr, char *why, size_t whylen)
{
	uint64_t lo = plan->code_addr + plan->pad_len + ARM64_INSN_LEN;
	uint64_t span = plan->len > ARM64_INSN_LEN ? plan->len - ARM64_INSN_LEN : 0;

	return scan(body, body_len, body_addr, lo, span, true, true,
		    "inside the words a detour would replace", why, whylen);
}

int arm64_scan_branch_to(const uint8_t *body, size_t body_len, uint64_t body_addr, uint64_t target,
			 char *why, size_t whylen)
{
	return scan(body, body_len, body_addr, target, 1, false, false,
		    "jumps back to the function's first instruction", why, whylen);
}

/* arm64 instruction words hvtrace reads and writes at function entries: the breakpoint, the
 * patchable entry ftrace leaves (`mov x9, x30` then `nop`), BTI landing pads, B/BL and the calls a
 * return address follows. Every instruction is one aligned little-endian 32-bit word. Pure. */
#ifndef HVT_ARM64_INSN_H
#define HVT_ARM64_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARM64_INSN_LEN	   4
#define ARM64_BRK0	   0xd4200000u /* BRK #0 */
#define ARM64_NOP	   0xd503201fu
#define ARM64_MOV_X9_X30   0xaa1e03e9u /* ftrace's first entry word once converted at boot */
#define ARM64_BTI_C	   0xd503245fu
#define ARM64_BTI_JC	   0xd50324dfu
#define ARM64_PACIASP	   0xd503233fu
#define ARM64_PACIBSP	   0xd503237fu
#define ARM64_BRANCH_REACH (128ull << 20) /* B and BL: +-128 MiB */

/* The little-endian word at @p. */
static inline uint32_t arm64_word(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Stores @w little-endian at @p. */
static inline void arm64_put_word(uint8_t *p, uint32_t w)
{
	p[0] = (uint8_t)w;
	p[1] = (uint8_t)(w >> 8);
	p[2] = (uint8_t)(w >> 16);
	p[3] = (uint8_t)(w >> 24);
}

/* Whether the word at @p is the NOP of a patchable entry (the one ftrace turns into a BL). */
bool arm64_is_site_nop(const uint8_t *p);

/* Bytes before a function's patch site: a `bti c` (or `bti jc`) landing pad, then ftrace's
 * `mov x9, x30`, each 4 bytes when there; 0 for neither. */
size_t arm64_entry_pad_len(const uint8_t *p);

/* Whether the @skip bytes arm64_entry_pad_len counted at @p end with ftrace's `mov x9, x30`: only
 * then is the NOP after them a patch site (x9 keeps the return address a BL there overwrites in
 * x30); a function that merely opens with a NOP (an alternative's or a jump label's slot in
 * assembly, caches_clean_inval_pou) is none. */
bool arm64_site_entry_ok(const uint8_t *p, size_t skip);

/* BL (@call) or B from @at to @to into @out (4 bytes): 0, -ERANGE beyond +-128 MiB, -EINVAL when
 * either address is not 4-aligned. */
int arm64_encode_branch(uint64_t at, uint64_t to, bool call, uint8_t *out);

/* The target of a BL (or, if @jumps, a B too) at @p (@n bytes at guest address @at) into *@to: 4,
 * or 0 when none starts there. */
size_t arm64_direct_branch(const uint8_t *p, size_t n, uint64_t at, bool jumps, uint64_t *to);

/* Whether the 4 bytes at @b (those before a return address) are a call: BL, BLR, or a BLR that
 * authenticates (BLRAA, BLRAAZ, BLRAB, BLRABZ). */
bool arm64_call_precedes(const uint8_t *b);

/* Whether the word at @p (@n bytes available) waits for an interrupt or event: WFI, WFE, WFIT,
 * WFET. */
bool arm64_insn_waits(const uint8_t *p, size_t n);

#endif

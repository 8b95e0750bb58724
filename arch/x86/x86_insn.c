#include "arch/x86/x86_insn.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The 5-byte NOPs in use: P6 nopl 0(%rax,%rax,1) (gcc -mnop-mcount, Linux x86_64 ftrace),
 * the K8 and generic 0x66 runs, and the 32-bit "leal 0(%esi,%eiz,1)" with a DS prefix. */
static const uint8_t nop5_forms[][X86_NOP5_LEN] = {
	{0x0f, 0x1f, 0x44, 0x00, 0x00},
	{0x66, 0x66, 0x66, 0x66, 0x90},
	{0x66, 0x66, 0x90, 0x66, 0x90},
	{0x3e, 0x8d, 0x74, 0x26, 0x00},
};

bool x86_is_nop5(const uint8_t *p)
{
	for (size_t i = 0; i < sizeof(nop5_forms) / sizeof(nop5_forms[0]); i++)
		if (memcmp(p, nop5_forms[i], X86_NOP5_LEN) == 0)
			return true;
	return false;
}

/* FF /2 (CALL r/m64): the ModRM byte's reg field is 2. */
static bool call_modrm(uint8_t m)
{
	return ((m >> 3) & 7) == 2;
}

bool x86_call_precedes(const uint8_t *b)
{
	const uint8_t *end = b + X86_CALL_BEFORE_LEN;

	if (end[-5] == X86_CALL_REL32)
		return true;
	/* FF ModRM: mod 11 (register) or mod 00 (memory, no displacement, no SIB) */
	if (end[-2] == 0xff && call_modrm(end[-1]) && ((end[-1] >> 6) == 3 ||
	    ((end[-1] >> 6) == 0 && (end[-1] & 7) != 4 && (end[-1] & 7) != 5)))
		return true;
	/* mod 01: disp8, without and with SIB */
	if (end[-3] == 0xff && call_modrm(end[-2]) && (end[-2] >> 6) == 1 && (end[-2] & 7) != 4)
		return true;
	if (end[-4] == 0xff && call_modrm(end[-3]) && (end[-3] >> 6) == 1 && (end[-3] & 7) == 4)
		return true;
	/* disp32: mod 10 without SIB, mod 00 rm 101 (RIP-relative); with SIB: mod 10, or mod 00
	 * base 101 (absolute) */
	if (end[-6] == 0xff && call_modrm(end[-5]) && (end[-5] & 7) != 4 &&
	    ((end[-5] >> 6) == 2 || ((end[-5] >> 6) == 0 && (end[-5] & 7) == 5)))
		return true;
	if (end[-7] == 0xff && call_modrm(end[-6]) && (end[-6] & 7) == 4 &&
	    ((end[-6] >> 6) == 2 || ((end[-6] >> 6) == 0 && (end[-5] & 7) == 5)))
		return true;
	return false;
}

/* The 4 bytes a function may start with before its NOP5: ENDBR64, and the NOPs Linux seals an
 * unused ENDBR64 into at boot (its gen_endbr_poison(): "osp nopl (%rax)", then "nopl -42(%rax)",
 * whose displacement is UDB). Each is a 4-byte NOP no compiler emits there, so either marks a
 * former ENDBR site whichever kernel wrote it. */
static const uint8_t entry_markers[][4] = {
    {0xf3, 0x0f, 0x1e, 0xfa},
    {0x66, 0x0f, 0x1f, 0x00},
    {0x0f, 0x1f, 0x40, 0xd6},
};

size_t x86_entry_pad_len(const uint8_t *p)
{
	for (size_t i = 0; i < sizeof(entry_markers) / sizeof(entry_markers[0]); i++)
		if (!memcmp(p, entry_markers[i], 4))
			return 4;
	return 0;
}

int x86_encode_rel32(uint64_t at, uint64_t to, bool call, uint8_t *out)
{
	int64_t rel = (int64_t)(to - (at + X86_NOP5_LEN));
	int32_t rel32 = (int32_t)rel;

	if (rel != rel32)
		return -ERANGE;
	out[0] = call ? X86_CALL_REL32 : X86_JMP_REL32;
	memcpy(out + 1, &rel32, 4);
	return 0;
}

size_t x86_direct_branch(const uint8_t *p, size_t n, uint64_t at, bool jumps, uint64_t *to)
{
	int32_t rel;

	if (n < X86_NOP5_LEN || (p[0] != X86_CALL_REL32 && (!jumps || p[0] != X86_JMP_REL32)))
		return 0;
	memcpy(&rel, p + 1, 4);
	*to = at + X86_NOP5_LEN + (uint64_t)(int64_t)rel;
	return X86_NOP5_LEN;
}

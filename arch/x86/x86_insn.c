#include "arch/x86/x86_insn.h"

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

char *x86_format_bytes(const uint8_t *p, size_t n, char *buf)
{
	char *o = buf;

	*o = 0;
	for (size_t i = 0; i < n; i++)
		o += sprintf(o, i ? " %02x" : "%02x", p[i]);
	return buf;
}

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

char *x86_format_bytes(const uint8_t *p, size_t n, char *buf)
{
	char *o = buf;

	*o = 0;
	for (size_t i = 0; i < n; i++)
		o += sprintf(o, i ? " %02x" : "%02x", p[i]);
	return buf;
}

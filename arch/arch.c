/* The ISA tables by id and by ELF machine, and what every ISA shares (arch.h). */
#include "arch/arch.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* One line per ISA: an arm64 port adds its table here. */
static const struct arch *const arch_tables[ARCH_NR_ISAS] = {
    [ARCH_X86_64] = &arch_x86_64,
    [ARCH_ARM64] = &arch_arm64,
};

const struct arch *arch_get(enum arch_isa isa)
{
	return (unsigned)isa < ARCH_NR_ISAS ? arch_tables[isa] : NULL;
}

const struct arch *arch_of_elf(unsigned e_machine)
{
	for (unsigned i = 0; i < ARCH_NR_ISAS; i++)
		if (arch_tables[i] && arch_tables[i]->elf_machine == e_machine)
			return arch_tables[i];
	return NULL;
}

const struct arch *arch_default(void)
{
	return arch_tables[ARCH_X86_64];
}

int arch_reg_index(const struct arch *a, const char *name)
{
	for (unsigned i = 0; i < a->regs.nr; i++)
		if (!strcmp(name, a->regs.names[i]))
			return (int)i;
	return -1;
}

char *arch_format_bytes(const uint8_t *p, size_t n, char *buf)
{
	char *o = buf;

	*o = 0;
	for (size_t i = 0; i < n; i++)
		o += sprintf(o, i ? " %02x" : "%02x", p[i]);
	return buf;
}

void arch_vsay(char *why, size_t whylen, uint64_t base, uint64_t at, const uint8_t *p, size_t n,
	       const char *fmt, va_list ap)
{
	char bytes[3 * ARCH_SAY_BYTES_MAX], reason[200];

	if (!why || !whylen)
		return;
	vsnprintf(reason, sizeof(reason), fmt, ap);
	if (n > ARCH_SAY_BYTES_MAX)
		n = ARCH_SAY_BYTES_MAX;
	if (p && n)
		arch_format_bytes(p, n, bytes);
	else
		strcpy(bytes, "no bytes");
	snprintf(why, whylen, "+%llu at 0x%llx (%s): %s", (unsigned long long)(at - base),
		 (unsigned long long)at, bytes, reason);
}

/* libFuzzer harness for the kallsyms decoder (vmi_kallsyms_decode): the input is the bytes of a
 * kernel image, as a guest could lay them out. Every symbol it accepts has a name of 1 to
 * VMI_KALLSYMS_NAME_MAX bytes without a NUL, and no more symbols than the input could encode. */
#include "vmi/vmi_kallsyms.h"

#include <stdlib.h>
#include <string.h>

struct seen {
	size_t n;
	size_t len;
};

static int check(void *ctx, uint64_t addr, char type, const char *name)
{
	struct seen *s = ctx;
	size_t l = strnlen(name, VMI_KALLSYMS_NAME_MAX + 1);

	(void)addr;
	if (!type || !l || l > VMI_KALLSYMS_NAME_MAX)
		abort();
	if (++s->n > s->len / 2)
		abort(); /* each name takes 2 bytes or more */
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen s = {.len = size};
	char err[256];
	long n =
	    vmi_kallsyms_decode(data, size, 0xffffffff81000000ull, check, &s, err, sizeof(err));

	if (n >= 0 && (size_t)n != s.n)
		abort();
	if (n < 0 && !memchr(err, 0, sizeof(err)))
		abort();
	return 0;
}

#include "tests/common/skip.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void hv_skip_binary(const char *fmt, ...)
{
	va_list ap;

	fputs("SKIPPED: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	exit(HVT_SKIP_EXIT);
}

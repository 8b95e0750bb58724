#include "tests/common/junit.h"

#include "tests/common/hv_run.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

void assert_junit(const char *path, const char *want_cases)
{
	char *out = hv_sh("xmllint --noout --schema tests/common/junit.xsd %s 2>&1", path);
	char want[1024];

	snprintf(want, sizeof(want), "%s validates\n", path);
	assert_string_equal(out, want);
	free(out);
	out = hv_sh("tests/common/junit_cases.py %s", path);
	assert_string_equal(out, want_cases);
	free(out);
}

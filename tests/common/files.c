#include "tests/common/files.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

char *hv_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t len = 0, cap = 4096, n;
	char *buf = NULL, *grown;
	int err = 0;

	if (!f)
		return NULL;
	for (;;) {
		grown = realloc(buf, cap + 1);
		if (!grown) {
			err = ENOMEM;
			break;
		}
		buf = grown;
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (len < cap) {
			if (ferror(f))
				err = EIO;
			break;
		}
		cap *= 2;
	}
	fclose(f);
	if (err) {
		free(buf);
		errno = err;
		return NULL;
	}
	buf[len] = 0;
	return buf;
}

char *hv_slurp(const char *path)
{
	char *s = hv_read_file(path);

	if (!s)
		fail_msg("%s: %s (tests run from the repository's top directory)", path,
			 strerror(errno));
	return s;
}

void hv_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f)
		fail_msg("%s: %s", path, strerror(errno));
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

void hv_write_text(const char *path, const char *text)
{
	hv_write_file(path, text, strlen(text));
}

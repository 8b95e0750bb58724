/* libFuzzer harness for the QEMU command-line parser (qemu_cmdline_parse, qemu_cmdline_has_uuid):
 * the input is /proc/PID/cmdline as a hostile process could write it. What it reports must be
 * NUL-terminated, in bounds and consistent. */
#include "host/qemu/qemu_cmdline.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qemu_cmdline c;

	qemu_cmdline_parse((const char *)data, size, &c);
	if (strnlen(c.qmp, sizeof(c.qmp)) == sizeof(c.qmp) ||
	    strnlen(c.why, sizeof(c.why)) == sizeof(c.why) ||
	    strnlen(c.gdb_host, sizeof(c.gdb_host)) == sizeof(c.gdb_host) ||
	    strnlen(c.uuid, sizeof(c.uuid)) == sizeof(c.uuid))
		abort();
	if (c.qmp[0] && strncmp(c.qmp, "unix:", 5) && strncmp(c.qmp, "tcp:", 4))
		abort();
	if (c.qmp[0] && c.why[0])
		abort(); /* a usable monitor needs no excuse */
	if (c.gdb_port < 0 || c.gdb_port > 65535 || (c.gdb_port == 0) != (c.gdb_host[0] == 0))
		abort();
	if (c.uuid[0] && !qemu_cmdline_has_uuid((const char *)data, size, c.uuid))
		abort();
	return 0;
}

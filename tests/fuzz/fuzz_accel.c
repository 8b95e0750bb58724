/* libFuzzer harness for what tells hvtrace that a QEMU uses KVM (host/qemu/qemu_accel.c): the input
 * is both the reply to HMP `info kvm` and a /proc/PID/cmdline, read in place (no NUL added). */
#include "host/qemu/qemu_accel.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int kvm = qemu_accel_info_kvm((const char *)data, size);
	int cmd = qemu_accel_cmdline_kvm((const char *)data, size);

	if (kvm < -1 || kvm > 1 || (cmd != 0 && cmd != 1))
		abort();
	return 0;
}

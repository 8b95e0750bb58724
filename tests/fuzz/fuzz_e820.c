/* libFuzzer harness for the guest's E820 table image (host/qemu/qemu_e820.c): the input is the table
 * as read from guest memory; the range asked about comes from its first 16 bytes. */
#include "host/qemu/qemu_e820.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t gpa = 0x0f000000, len = 0x00c00000;

	if (size >= 16) {
		memcpy(&gpa, data, 8);
		memcpy(&len, data + 8, 8);
	}
	/* a reserved range is never also RAM */
	if (qemu_e820_covers(data, size, gpa, len, QEMU_E820_RESERVED) &&
	    qemu_e820_covers(data, size, gpa, len, QEMU_E820_RAM))
		abort();
	return 0;
}

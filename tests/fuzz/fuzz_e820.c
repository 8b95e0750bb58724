/* libFuzzer harness for the guest's E820 table images (vmi/vmi_linux_e820.c): the input is a table
 * as read from guest memory (the range asked about comes from its first 16 bytes), and split in
 * two, the kernel's and the firmware's tables. */
#include "vmi/vmi_linux_e820.h"

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
	if (vmi_linux_e820_covers(data, size, gpa, len, VMI_E820_RESERVED) &&
	    vmi_linux_e820_covers(data, size, gpa, len, VMI_E820_RAM))
		abort();
	/* the kernel's table in the first half, the firmware's in the second: a range found is
	 * 2 MiB aligned, at least 2 MiB, above 1 MiB, and reserved in the first */
	if (vmi_linux_e820_user_reserved(data, size / 2, data + size / 2, size - size / 2, &gpa,
					 &len) &&
	    ((gpa | len) & ((2u << 20) - 1) || !len || gpa < (1u << 20) ||
	     !vmi_linux_e820_covers(data, size / 2, gpa, len, VMI_E820_RESERVED)))
		abort();
	return 0;
}

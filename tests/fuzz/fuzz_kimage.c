/* libFuzzer harness for a kernel image's head (vmi/vmi_kimage.c): the input is the start of a file
 * given as --kernel or GUEST.elf, gzip'd or not; what comes out is consistent and describable. */
#include "vmi/vmi_kimage.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmi_kimage k;
	char buf[128];

	if (vmi_kimage_identify(data, size, &k) < 0)
		return 0;
	/* a kind that names its ISA by magic has that machine */
	if ((k.kind == VMI_KIMAGE_BZIMAGE || k.kind == VMI_KIMAGE_ARM64_IMAGE ||
	     k.kind == VMI_KIMAGE_RISCV_IMAGE) &&
	    !k.machine)
		abort();
	/* nothing known has no machine */
	if (k.kind == VMI_KIMAGE_UNKNOWN && k.machine)
		abort();
	vmi_kimage_describe(&k, buf, sizeof(buf));
	if (!buf[0] || strlen(buf) >= sizeof(buf))
		abort();
	return 0;
}

/* An arm64 kernel image found by its boot header (vmi_linux_arm64.h). */
#include "vmi/vmi_linux_arm64.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#define MAGIC_OFF 0x38
#define SIZE_OFF  0x10

int vmi_linux_arm64_image(vmi_read_fn read, void *ctx, uint64_t hint, uint64_t *base,
			  uint64_t *size, char *err, size_t errlen)
{
	uint64_t at = hint & ~(VMI_ARM64_IMAGE_ALIGN - 1);

	for (uint64_t k = 0; k < VMI_ARM64_IMAGE_MAX / VMI_ARM64_IMAGE_ALIGN && at >= k; k++) {
		uint64_t a = at - k * VMI_ARM64_IMAGE_ALIGN, sz;
		uint8_t h[0x40];
		int ret = read(ctx, a, h, sizeof(h));

		if (ret == -EINTR)
			return ret;
		if (ret < 0 || memcmp(h + MAGIC_OFF, "ARM\x64", 4))
			continue;
		memcpy(&sz, h + SIZE_OFF, 8);
		sz = (sz + 0xfff) & ~0xfffull;
		if (!sz || sz > VMI_ARM64_IMAGE_MAX || hint - a >= sz) {
			msg_fmt(err, errlen,
				"the arm64 kernel header at 0x%" PRIx64 " says the image is 0x%" PRIx64
				" bytes, which does not hold 0x%" PRIx64 " (at most %llu MiB)",
				a, sz, hint, VMI_ARM64_IMAGE_MAX >> 20);
			return -EINVAL;
		}
		*base = a;
		*size = sz;
		return 0;
	}
	msg_fmt(err, errlen,
		"no arm64 kernel header (\"ARM\\x64\" at 0x38) within %llu MiB below 0x%" PRIx64
		" (the kernel is not up, or that is no kernel text)",
		VMI_ARM64_IMAGE_MAX >> 20, hint);
	return -ESRCH;
}

/* Where an arm64 Linux kernel's image lies in its virtual address space. The image (KASLR puts it
 * anywhere in a 52-bit space, 2 MiB aligned) starts with the arm64 boot header, which stays in
 * memory: the magic "ARM\x64" at 0x38 and the image's size at 0x10. Found from an address inside
 * the image's text (a vCPU's PC in the kernel), walking down 2 MiB at a time. */
#ifndef HVT_VMI_LINUX_ARM64_H
#define HVT_VMI_LINUX_ARM64_H

#include "vmi/vmi_read.h"

#include <stddef.h>
#include <stdint.h>

#define VMI_ARM64_IMAGE_ALIGN (2ull << 20)
#define VMI_ARM64_IMAGE_MAX   (256ull << 20) /* how far below @hint the header may lie */

/* The image holding @hint: its first address into *@base and its size (the header's, rounded up to
 * whole 4 KiB pages) into *@size. 0; -ESRCH with @err when no header lies within
 * VMI_ARM64_IMAGE_MAX below @hint (not the kernel's text: a module's, or a kernel not up);
 * -EINVAL for a header whose size does not hold @hint or is past the bound; -EINTR from @read.
 * Calls only @read. */
int vmi_linux_arm64_image(vmi_read_fn read, void *ctx, uint64_t hint, uint64_t *base,
			  uint64_t *size, char *err, size_t errlen);

#endif

/* Loading a Linux bzImage into a linux_pc VM (host/kvm/vm.h): the decompressed kernel at its physical
 * link address (no KASLR: the kernel runs where System.map says), the initrd near the top of RAM, the
 * command line, ACPI tables, boot_params, and vCPU 0 at startup_64 in long mode (the others wait for
 * the kernel's INIT/SIPI). */
#ifndef HVT_LINUX_VM_H
#define HVT_LINUX_VM_H

#include "host/kvm/vm.h"

#include <stddef.h>
#include <stdint.h>

struct linux_image {
	const uint8_t *bzimage; /* borrowed */
	size_t bzimage_len;
	const char *bzimage_name; /* for messages */
	const uint8_t *initrd;	  /* NULL: none */
	size_t initrd_len;
	const char *cmdline;
};

/* Loads @li into @vm (created with linux_pc) and sets vCPU 0's entry state. Returns 0, -EINVAL /
 * -ERANGE / -ENOTSUP (the image or its size: one line in @err, naming the file), -ENOMEM, or another
 * negative errno from KVM. Main thread, vCPUs not started. */
int vm_load_linux(struct vm *vm, const struct linux_image *li, char *err, size_t errlen);

#endif

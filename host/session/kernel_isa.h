/* The ISA of a guest image, before anything is launched or loaded (issue 38): `run --qemu
 * --kernel` launches the QEMU of the image's ISA (qemu-system-x86_64 or qemu-system-aarch64);
 * `run --kernel` (the embedded VMM's x86 machine) and `run GUEST.elf` refuse another ISA in one
 * line naming what the file is, e.g. an arm64 Image. */
#ifndef HVT_KERNEL_ISA_H
#define HVT_KERNEL_ISA_H

#include "arch/arch.h"

#include <stddef.h>

/* The ISAs a backend runs, as a mask of 1u << enum arch_isa. */
#define KERNEL_ISA_X86_ONLY (1u << ARCH_X86_64)
#define KERNEL_ISA_ANY	    ((1u << ARCH_NR_ISAS) - 1)

/* Checks the guest image @path (given as option @opt, e.g. "--kernel", or NULL for a GUEST.elf)
 * against the ISAs of @ok: 0 with *@isa (when non-NULL) its table, arch_default() for a kind not
 * recognised (the backend's own loader then says what it lacks); -ENOEXEC with one line in @err
 * ("--kernel FILE: an arm64 Linux Image: hvtrace's own VMM runs x86_64 guests; trace it under
 * QEMU (run --qemu)", or "... guests are not supported") for a kernel of another ISA; -errno with
 * "--kernel FILE: No such file or directory" for a file that cannot be read. Reads the file's
 * start; main thread. */
int kernel_isa_pick(const char *path, const char *opt, unsigned ok, const struct arch **isa,
		    char *err, size_t errlen);

/* kernel_isa_pick for the embedded VMM: x86_64 only. */
int kernel_isa_check(const char *path, const char *opt, char *err, size_t errlen);

#endif

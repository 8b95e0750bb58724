/* Refusing a guest image of an ISA hvtrace cannot trace, in one line, before anything is launched
 * or loaded (issue 38): `run --qemu --kernel` (which launches qemu-system-x86_64), `run --kernel`
 * (the embedded VMM's x86 machine) and `run GUEST.elf` name what the file is, e.g. an arm64 Image.
 */
#ifndef HVT_KERNEL_ISA_H
#define HVT_KERNEL_ISA_H

#include <stddef.h>

/* Checks the guest image @path (given as option @opt, e.g. "--kernel", or NULL for a GUEST.elf): 0
 * when it is of the ISA the backends launch and load (x86_64; arm64's table alone does not make an
 * arm64 guest runnable), or of a kind not recognised (the backend's own loader
 * then says what it lacks); -ENOEXEC with one line in @err ("--kernel FILE: an arm64 Linux Image:
 * arm64 guests are not supported yet (issue 38); ...") for a kernel of another ISA; -errno with
 * "--kernel FILE: No such file or directory" for a file that cannot be read. Reads the file's
 * start; main thread. */
int kernel_isa_check(const char *path, const char *opt, char *err, size_t errlen);

#endif

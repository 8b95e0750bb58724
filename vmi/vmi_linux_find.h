/* Finding a running Linux kernel's symbols from outside: the guest's kallsyms, or a System.map with
 * the KASLR slide found, and the one line that says what was found. */
#ifndef HVT_VMI_LINUX_FIND_H
#define HVT_VMI_LINUX_FIND_H

#include "vmi/vmi_linux.h"
#include "vmi/vmi_read.h"

#include <stdbool.h>
#include <stddef.h>

/* The kernel's symbols into @l (zeroed, or l->arch and l->image_hint set: vmi_linux_open_kallsyms_of):
 * from the guest's kallsyms (@system_map NULL), or the System.map
 * already opened into @l (its name @system_map) with the KASLR slide found, all read through @read
 * (which may fail with -EINTR to stop the scan). -ESRCH (and why in @err) while the kernel is not
 * up; -EMEDIUMTYPE when a System.map does not match a kernel that is up, or (@booting false: a
 * kernel that runs already) when kallsyms cannot be read; -EINTR from @read; -EINVAL for symbols no
 * scan can use. */
int vmi_linux_find_symbols(struct vmi_linux *l, const char *system_map, bool booting,
			   vmi_read_fn read, void *ctx, char *err, size_t errlen);

/* The line (without "hvtrace: " and newline) that says where @l's symbols came from, how many, the
 * kernel @release ("" if unknown) and its KASLR slide, and its modules'. */
void vmi_linux_describe_symbols(const struct vmi_linux *l, const char *system_map,
				const char *release, char *buf, size_t len);

#endif

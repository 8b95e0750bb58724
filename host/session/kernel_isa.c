/* A guest image of an ISA the backends cannot run yet, refused in one line (kernel_isa.h). */
#include "host/session/kernel_isa.h"
#include "arch/arch.h"
#include "vmi/vmi_kimage.h"
#include "host/util/msg_fmt.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>

int kernel_isa_check(const char *path, const char *opt, char *err, size_t errlen)
{
	struct vmi_kimage k;
	char what[128], why[128];
	const char *isa;
	int ret = vmi_kimage_read(path, &k, why, sizeof(why));

	if (ret < 0) {
		msg_fmt(err, errlen, "%s%s%s: %s", opt ? opt : "", opt ? " " : "", path, why);
		return ret;
	}
	/* arm64 has an arch/ table now, but no backend launches or loads an arm64 guest yet: only
	 * the default ISA's kernels pass */
	if (!k.machine || k.machine == arch_default()->elf_machine)
		return 0;
	isa = vmi_kimage_isa(k.machine);
	msg_fmt(err, errlen,
		 "%s%s%s: %s: %s%s guests are not supported yet%s; hvtrace traces %s guests",
		 opt ? opt : "", opt ? " " : "", path, vmi_kimage_describe(&k, what, sizeof(what)),
		 isa ? isa : "its", isa ? "" : " machine's",
		 k.machine == EM_AARCH64 ? " (issue 38)" : "", arch_default()->name);
	return -ENOEXEC;
}

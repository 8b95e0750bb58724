/* A guest image's ISA, and the refusal of one a backend cannot run, in one line (kernel_isa.h). */
#include "host/session/kernel_isa.h"
#include "vmi/vmi_kimage.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdio.h>

int kernel_isa_pick(const char *path, const char *opt, unsigned ok, const struct arch **isa,
		    char *err, size_t errlen)
{
	const struct arch *a;
	struct vmi_kimage k;
	char what[128], why[128];
	const char *name;
	int ret = vmi_kimage_read(path, &k, why, sizeof(why));

	if (ret < 0) {
		msg_fmt(err, errlen, "%s%s%s: %s", opt ? opt : "", opt ? " " : "", path, why);
		return ret;
	}
	a = k.machine ? arch_of_elf(k.machine) : arch_default();
	for (unsigned i = 0; a && i < ARCH_NR_ISAS; i++)
		if (arch_get((enum arch_isa)i) == a && (ok >> i & 1)) {
			if (isa)
				*isa = a;
			return 0;
		}
	name = a ? a->name : vmi_kimage_isa(k.machine);
	if (a) /* hvtrace traces it, but not with this backend */
		msg_fmt(err, errlen,
			"%s%s%s: %s: hvtrace's own VMM runs %s guests; trace %s guests under QEMU "
			"(run --qemu)",
			opt ? opt : "", opt ? " " : "", path,
			vmi_kimage_describe(&k, what, sizeof(what)), arch_default()->name, name);
	else
		msg_fmt(err, errlen,
			"%s%s%s: %s: %s%s guests are not supported; hvtrace traces x86_64 and "
			"arm64 guests",
			opt ? opt : "", opt ? " " : "", path,
			vmi_kimage_describe(&k, what, sizeof(what)), name ? name : "its",
			name ? "" : " machine's");
	return -ENOEXEC;
}

int kernel_isa_check(const char *path, const char *opt, char *err, size_t errlen)
{
	return kernel_isa_pick(path, opt, KERNEL_ISA_X86_ONLY, NULL, err, errlen);
}

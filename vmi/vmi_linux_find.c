#include "vmi/vmi_linux_find.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int vmi_linux_find_symbols(struct vmi_linux *l, const char *system_map, bool booting,
			   vmi_read_fn read, void *ctx, char *err, size_t errlen)
{
	struct vmi_linux k;
	char rel[64] = "", why[256];
	int ret;

	if (!system_map) {
		ret = vmi_linux_open_kallsyms_of(l, l->arch, l->image_hint, read, ctx, err, errlen);
		if (ret == 0 || ret == -EINTR || ret == -ESRCH)
			return ret;
		if (ret == -ENOENT) { /* an image without kallsyms: the map is the way */
			size_t n = strlen(err);

			snprintf(err + n, errlen - n,
				 ": pass --system-map FILE (the kernel's System.map "
				 "or vmlinux)");
		}
		/* a booting kernel may be half in place: only a running one is final */
		return booting ? -ESRCH : -EMEDIUMTYPE;
	}
	ret = vmi_linux_find_slide(l, read, ctx, err, errlen);
	if (ret != -ESRCH)
		return ret;
	/* no banner at any slide: if the kernel is up (its kallsyms read), the map is another's */
	if (vmi_linux_open_kallsyms(&k, read, ctx, why, sizeof(why)) < 0)
		return ret;
	vmi_linux_release(&k, read, ctx, rel, sizeof(rel));
	vmi_linux_close(&k);
	msg_fmt(err, errlen,
		"--system-map %s is for another kernel: no \"Linux version\" at its linux_banner "
		"at any KASLR slide (the guest runs %s); omit --system-map to read the symbols "
		"from the guest's kallsyms",
		system_map, *rel ? rel : "another kernel");
	return -EMEDIUMTYPE;
}

void vmi_linux_describe_symbols(const struct vmi_linux *l, const char *system_map,
				const char *release, char *buf, size_t len)
{
	size_t mfuncs = 0;

	for (size_t i = 0; i < l->mods.nr; i++)
		mfuncs += l->mods.v[i].nr_funcs;
	char where[64];

	if (l->image_hi) /* arm64: the link address is not known, only where the image is */
		snprintf(where, sizeof(where), "image at 0x%llx", (unsigned long long)l->image_lo);
	else
		snprintf(where, sizeof(where), "KASLR slide 0x%llx", (unsigned long long)l->slide);
	snprintf(buf, len,
		 "symbols: %zu (%zu functions) from %s%s (kernel %s, %s); "
		 "modules: %zu, with %zu functions",
		 l->funcs.nr + l->objects.nr - mfuncs, l->funcs.nr - mfuncs,
		 system_map ? "System.map " : "the guest's kallsyms", system_map ? system_map : "",
		 *release ? release : "?", where, l->mods.nr, mfuncs);
}

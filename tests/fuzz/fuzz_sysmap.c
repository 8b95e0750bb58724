/* libFuzzer harness for the System.map parser (vmi_linux_open_map): the input is the file's text.
 * What it accepts is then looked up as the tracer does (by name and by address). */
#include "vmi/vmi_linux.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fmemopen((void *)data, size, "r");
	struct vmi_linux l;
	char err[256];

	if (!f)
		return 0; /* fmemopen refuses size 0 */
	if (vmi_linux_open_map(&l, f, "System.map", err, sizeof(err)) == 0) {
		uint64_t off;

		if (!l.funcs.nr || l.stext != vmi_symtab_find(&l.funcs, "_stext")->addr)
			abort();
		vmi_symtab_lookup(&l.funcs, l.stext);
		vmi_symtab_lookup(&l.funcs, l.etext - 1);
		vmi_symtab_lookup(&l.objects, l.banner);
		vmi_linux_cpu_gs(&l, &off);
		vmi_linux_close(&l);
	} else if (l.funcs.nr || l.objects.nr) {
		abort(); /* nothing is left to free on failure */
	}
	fclose(f);
	return 0;
}

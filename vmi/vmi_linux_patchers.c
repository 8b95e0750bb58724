/* Where a Linux guest's own ftrace decides to check and rewrite its call sites, learned from its
 * symbols: the functions hvtrace stops at (internal probes) before the guest looks at a site it
 * may have patched. */
#include "vmi/vmi_linux.h"

/* Both are global functions called from another file of the kernel (never inlined there), on every
 * x86-64 kernel from 5.x to 7.x: ftrace_modify_all_code (kernel/trace/ftrace.c, the one update of
 * every call site, reached from arch_ftrace_update_code or stop_machine) and ftrace_replace_code
 * (arch/x86/kernel/ftrace.c: ftrace_verify_code on each record, then the text_poke batch). A stop
 * at either comes before the first check of a site's bytes. */
static const char *const patchers[] = {"ftrace_modify_all_code", "ftrace_replace_code"};

const char *vmi_linux_patcher_names(void)
{
	return "ftrace_modify_all_code, ftrace_replace_code";
}

size_t vmi_linux_text_patchers(const struct vmi_linux *l, uint64_t *addrs, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof(patchers) / sizeof(patchers[0]) && n < max; i++) {
		const struct vmi_sym *s = vmi_symtab_find(&l->funcs, patchers[i]);

		if (s && s->addr)
			addrs[n++] = s->addr;
	}
	return n;
}

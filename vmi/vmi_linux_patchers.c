/* Where a Linux guest's own text patchers decide to check and rewrite its code, learned from its
 * symbols: the functions hvtrace stops at (internal probes) before the guest looks at bytes it may
 * have patched. */
#include "vmi/vmi_linux.h"

/* Every one is a global function called from another file of the kernel (never inlined there), on
 * every x86-64 kernel from 5.x to 7.x:
 * - ftrace_modify_all_code (kernel/trace/ftrace.c): the one update of every call site, reached
 *   from arch_ftrace_update_code or stop_machine, for a tracer, a filter, a kprobe or a BPF
 *   trampoline on an fentry site, livepatch;
 * - ftrace_replace_code (arch/x86/kernel/ftrace.c): ftrace_verify_code on each record, then the
 *   text_poke batch; called from the first;
 * - arch_prepare_kprobe (arch/x86/kernel/kprobes/core.c, from kernel/kprobes.c): a kprobe off an
 *   fentry site decodes the function from its start and copies the instruction it replaces with
 *   INT3, before arming it; any instruction may be its target, so every detour goes back there. */
static const struct {
	const char *name;
	bool detours;
} patchers[] = {
    {"ftrace_modify_all_code", false},
    {"ftrace_replace_code", false},
    {"arch_prepare_kprobe", true},
};

#define NR_PATCHERS (sizeof(patchers) / sizeof(patchers[0]))

const char *vmi_linux_patcher_names(bool detours)
{
	return detours ? "arch_prepare_kprobe" : "ftrace_modify_all_code, ftrace_replace_code";
}

size_t vmi_linux_text_patchers(const struct vmi_linux *l, struct vmi_patcher *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < NR_PATCHERS && n < max; i++) {
		const struct vmi_sym *s = vmi_symtab_find(&l->funcs, patchers[i].name);

		if (s && s->addr)
			out[n++] = (struct vmi_patcher){.addr = s->addr,
							.detours = patchers[i].detours};
	}
	return n;
}

/* Entry probes: sites for the functions a session names that have no fentry site (notrace,
 * noinstr, asm, or a kernel built without ftrace), at their first instruction. */
#ifndef HVT_ENTRY_SITES_H
#define HVT_ENTRY_SITES_H

#include "host/session/session.h"
#include "vmi/vmi_read.h"
#include "vmi/vmi_sites.h"
#include "vmi/vmi_symtab.h"

/* Adds to @sites (of a guest of ISA @a) an entry site (vmi_site.entry) for each function of @funcs
 * without one in @sites that the session names exactly with -l, -g, -e or -r (a name without glob
 * characters), and with
 * --entry (or @every: a guest without any fentry site, whose every function is traceable) for each
 * one an -l or -g glob matches (every function without -l or -g; __pfx_ and
 * __cfi_ padding never, nor the function at @reserved: the tracer's return trampoline, 0 none). The
 * first bytes of each are read through @read/@ctx. @no_entry: NULL
 * where the target can probe an entry (a breakpoint whose instruction then runs in place), else
 * why not ("F has no fentry site: @no_entry"): a function that would need one is refused with it.
 * @sites must hold the fentry sites already, built from @funcs; pointers into @sites->v taken
 * before are invalid afterwards. Returns the number of entry sites added, -ENOMEM, or
 * -ENOTSUP/-EFAULT with one line in @err naming the function. */
long entry_sites_add(const struct arch *a, const struct session *s, struct vmi_sites *sites,
		     const struct vmi_symtab *funcs, vmi_read_fn read, void *ctx,
		     const char *no_entry, uint64_t reserved, bool every, char *err, size_t errlen);

/* The sites of -e func+OFFSET events (vmi_site.inside), each with a name of its own. */
struct inside_sites {
	struct vmi_sites sites;
	struct vmi_symtab names; /* "func+0xOFF", one per site; the sites point into it */
};

/* Builds @out: one site per distinct func+OFFSET of the session's -e events, at that instruction of
 * the function of that name in @funcs, after checking that the offset lies inside the function
 * (its symbol's size, else up to the next symbol) and that an instruction starts there (decoded
 * from the function's first byte, read through @read/@ctx), and not a function's own site in
 * @sites (its fentry or entry site: -e func(...) probes that). @no_entry as for entry_sites_add:
 * why the target cannot probe one (refused with it), or NULL. Returns the number of sites,
 * -ENOMEM, or -ENOENT/-EINVAL/-EFAULT/-ENOTSUP/-EEXIST/-EOPNOTSUPP (an instruction that waits for
 * an interrupt: the arch's insn_waits) with one line in @err naming the event. */
long inside_sites_build(const struct arch *a, const struct session *s,
			const struct vmi_sites *sites, const struct vmi_symtab *funcs,
			vmi_read_fn read, void *ctx, const char *no_entry, struct inside_sites *out,
			char *err, size_t errlen);

void inside_sites_free(struct inside_sites *in);

/* Whether the session names @name exactly (no glob): with -l, -g, -e or -r. Pure. */
bool entry_sites_named(const struct session *s, const char *name);

#endif

#include "host/session/detour_plan.h"
#include "host/session/entry_sites.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The range [*lo, *hi) between symbols @from and @to, or false when the guest has not both. */
static bool text_range(const struct vmi_symtab *funcs, const char *from, const char *to,
		       uint64_t *lo, uint64_t *hi)
{
	const struct vmi_sym *a = vmi_symtab_find(funcs, from);
	const struct vmi_sym *b = vmi_symtab_find(funcs, to);

	if (!a || !b || a->addr >= b->addr)
		return false;
	*lo = a->addr;
	*hi = b->addr;
	return true;
}

/* Plans probe @p's detour from @buf (the function's bytes); 0 or -errno with @why. */
static int plan_one(const struct arch *a, const struct probe *p, const struct vmi_symtab *funcs,
		    vmi_read_fn read, void *ctx, uint8_t *buf, struct arch_reloc_plan *plan,
		    char *why, size_t whylen)
{
	/* an instruction inside a function: its own name ("f+0xOFF"); the function holds it */
	const struct vmi_sym *f = p->inside ? vmi_symtab_lookup(funcs, p->addr) : p->func;
	uint64_t end, len, skip;
	int ret, pushed;

	if (!f) {
		msg_fmt(why, whylen, "no function holds it in the guest's symbols");
		return -ENOENT;
	}
	end = vmi_symtab_end(funcs, f);
	if (strstr(f->name, ".cold")) {
		/* entered by a jump from its function, whose frame is live: no return address */
		msg_fmt(why, whylen, "the cold part of a function, not an entry");
		return -EPERM;
	}
	if ((p->addr & 4095) > 4096 - (uint64_t)a->jmp_len) {
		msg_fmt(why, whylen, "the JMP would span two pages (it is written in one piece)");
		return -ERANGE;
	}
	if (!end || end <= p->addr || p->addr < f->addr) {
		msg_fmt(why, whylen, "its end is unknown");
		return -ENODATA;
	}
	len = end - f->addr;
	skip = p->addr - f->addr; /* its ENDBR64 (or the NOP sealed over one), or the offset */
	if (len > DETOUR_FUNC_MAX) {
		msg_fmt(why, whylen, "%llu bytes long, more than the %u scanned",
			(unsigned long long)len, DETOUR_FUNC_MAX);
		return -EFBIG;
	}
	if (read(ctx, f->addr, buf, len) < 0) {
		msg_fmt(why, whylen, "its %llu bytes at 0x%llx cannot be read",
			(unsigned long long)len, (unsigned long long)f->addr);
		return -EFAULT;
	}
	ret = a->reloc_plan(buf + skip, len - skip, p->addr, a->jmp_len, plan, why, whylen);
	if (ret == 0)
		ret = a->reloc_kernel_safe(plan, why, whylen);
	if (ret == 0)
		ret = a->reloc_detour_check(plan, &pushed, why, whylen);
	if (ret == 0)
		ret = a->reloc_scan_body(plan, buf, len, f->addr, why, whylen);
	return ret;
}

long detour_plan(struct tracer *t, const struct session *s, const struct vmi_symtab *funcs,
		 vmi_read_fn read, void *ctx, bool no_user, FILE *note)
{
	const struct probe_table *probes = tracer_probes(t);
	uint8_t *buf = malloc(DETOUR_FUNC_MAX);
	uint64_t elo = 0, ehi = 0, ilo = 0, ihi = 0;
	bool have_entry = no_user ||
			  (text_range(funcs, "__entry_text_start", "__entry_text_end", &elo, &ehi) &&
			   text_range(funcs, "_sinittext", "_einittext", &ilo, &ihi));
	long planned = 0, quiet = 0;

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < probe_count(probes); i++) {
		const struct probe *p = probe_at(probes, i);
		struct arch_reloc_plan plan;
		char why[256] = "";
		int ret;

		if (!p->entry)
			continue;
		if (!have_entry) {
			msg_fmt(why, sizeof(why),
				"the guest's symbols do not say where its entry text is "
				"(__entry_text_start/_end)");
			ret = -ENOENT;
		} else if (p->addr >= elo && p->addr < ehi) {
			msg_fmt(why, sizeof(why),
				"in the kernel's entry text (%%gs may be the user's)");
			ret = -EPERM;
		} else
			ret = plan_one(tracer_arch(t), p, funcs, read, ctx, buf, &plan, why,
				       sizeof(why));
		if (ret == 0)
			ret = tracer_set_detour(t, p->id, &plan);
		if (ret == -ENOMEM) {
			free(buf);
			return -ENOMEM;
		}
		if (ret == 0)
			planned++;
		else if (!p->inside && !entry_sites_named(s, p->func->name))
			quiet++;
		else if (note)
			fprintf(note, "hvtrace: %s: stays a trap probe %s: %s\n", p->func->name,
				p->inside ? "(no detour there)" : "at its entry", why);
	}
	if (quiet && note)
		fprintf(note,
			"hvtrace: %ld more function%s without an fentry site %s: %s first "
			"bytes cannot be moved safely (name one with -l to see why)\n",
			quiet, quiet == 1 ? "" : "s",
			quiet == 1 ? "stays a trap probe" : "stay trap probes",
			quiet == 1 ? "its" : "their");
	free(buf);
	return planned;
}

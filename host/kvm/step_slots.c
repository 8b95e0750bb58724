#include "host/kvm/step_slots.h"
#include "host/session/entry_sites.h"
#include "host/session/session.h"
#include "arch/arch.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_MAX                                                                                   \
	(64u << 10)  /* the most of a function read to look for branches back to its entry */
#define INSN_READ 16 /* one instruction (15 bytes) is all a slot holds */

/* Reads what a slot needs at @addr: up to INSN_READ bytes, fewer where the function (or what can be
 * read) ends first. The number of bytes read, or 0. */
static size_t read_insn(vmi_read_fn read, void *ctx, uint64_t addr, uint64_t end, uint8_t *b)
{
	size_t n = end > addr && end - addr < INSN_READ ? (size_t)(end - addr) : INSN_READ;

	for (; n; n--)
		if (read(ctx, addr, b, n) == 0)
			return n;
	return 0;
}

/* Whether entry site @v can be served by a slot. 0, or -errno with @why. */
static int check_site(const struct vmi_site *v, const struct vmi_symtab *funcs, vmi_read_fn read,
		      void *ctx, char *why, size_t whylen)
{
	const struct arch *a = arch_get(ARCH_X86_64); /* the embedded VMM's guests */
	const struct vmi_sym *f = v->func;
	uint64_t end = vmi_symtab_end(funcs, f);
	struct arch_reloc_plan plan;
	uint8_t insn[INSN_READ], *body;
	size_t n, len;
	int ret;

	n = read_insn(read, ctx, v->addr, end, insn);
	if (!n) {
		msg_fmt(why, whylen, "its first bytes at 0x%llx cannot be read",
			(unsigned long long)v->addr);
		return -EFAULT;
	}
	ret = a->reloc_plan(insn, n, v->addr, 1, &plan, why, whylen);
	if (ret < 0)
		return ret;
	if (!end || end <= f->addr)
		return 0; /* nothing known to lie inside it past the instruction */
	len = end - f->addr > SCAN_MAX ? SCAN_MAX : (size_t)(end - f->addr);
	body = malloc(len);
	if (!body)
		return -ENOMEM;
	ret = read(ctx, f->addr, body, len) < 0 ? -EFAULT : 0;
	if (ret < 0)
		msg_fmt(why, whylen, "its bytes at 0x%llx cannot be read",
			(unsigned long long)f->addr);
	if (!ret)
		ret = a->scan_branch_to(body, len, f->addr, v->addr, why, whylen);
	if (!ret && v->addr != f->addr) /* a jump to the ENDBR64 before it runs into it too */
		ret = a->scan_branch_to(body, len, f->addr, f->addr, why, whylen);
	free(body);
	return ret;
}

long step_slots_check(const struct session *s, struct vmi_sites *sites,
		      const struct vmi_symtab *funcs, vmi_read_fn read, void *ctx, FILE *note,
		      char *err, size_t errlen)
{
	size_t keep = 0;
	long dropped = 0;

	for (size_t i = 0; i < sites->nr; i++) {
		const struct vmi_site *v = &sites->v[i];
		char why[300];
		int ret = v->entry ? check_site(v, funcs, read, ctx, why, sizeof(why)) : 0;

		if (ret == -ENOMEM)
			return -ENOMEM;
		if (ret < 0 && entry_sites_named(s, v->func->name)) {
			msg_fmt(err, errlen,
				"%s: no fentry site, and a breakpoint at its first instruction "
				"cannot trace it exactly: %s",
				v->func->name, why);
			return ret;
		}
		if (ret < 0) {
			dropped++;
			continue;
		}
		sites->v[keep++] = *v;
	}
	sites->nr = keep;
	if (dropped && note)
		fprintf(
		    note,
		    "hvtrace: %ld function%s without an fentry site left out: a breakpoint at "
		    "%s first instruction cannot trace %s exactly (name one with -l to see why)\n",
		    dropped, dropped == 1 ? "" : "s", dropped == 1 ? "its" : "their",
		    dropped == 1 ? "it" : "them");
	return dropped;
}

size_t step_slots_count(const struct vmi_sites *sites)
{
	size_t n = 0;

	for (size_t i = 0; i < sites->nr; i++)
		n += sites->v[i].entry;
	return n;
}

int step_slots_write(struct step_slots *ss, const struct vmi_sites *sites, uint8_t *area,
		     uint64_t area_gva, size_t cap, vmi_read_fn read, void *ctx, char *err,
		     size_t errlen)
{
	size_t need = step_slots_count(sites);

	memset(ss, 0, sizeof(*ss));
	if (!need)
		return 0;
	if (need > cap) {
		msg_fmt(err, errlen, "%zu entry probes, room for %zu out-of-line copies", need,
			cap);
		return -ENOSPC;
	}
	ss->v = calloc(need, sizeof(*ss->v));
	if (!ss->v)
		return -ENOMEM;
	for (size_t i = 0; i < sites->nr; i++) {
		const struct vmi_site *v = &sites->v[i];
		uint64_t gva = area_gva + ss->nr * STEP_SLOT_SIZE;
		const struct arch *a = arch_get(ARCH_X86_64);
		struct arch_reloc_plan plan;
		uint8_t insn[INSN_READ];
		char why[300];
		size_t n, len;
		int ret;

		if (!v->entry)
			continue;
		n = read_insn(read, ctx, v->addr, 0, insn);
		ret = n ? a->reloc_plan(insn, n, v->addr, 1, &plan, why, sizeof(why)) : -EFAULT;
		if (!n)
			msg_fmt(why, sizeof(why), "its first bytes cannot be read");
		if (!ret)
			ret =
			    a->reloc_emit(&plan, insn, v->addr, gva, area + ss->nr * STEP_SLOT_SIZE,
					  STEP_SLOT_SIZE, &len, why, sizeof(why));
		if (ret < 0) {
			msg_fmt(err, errlen, "%s: its first instruction cannot run out of line: %s",
				v->func->name, why);
			step_slots_free(ss);
			return ret;
		}
		ss->v[ss->nr++] = (struct step_slot){.addr = v->addr, .slot = gva};
	}
	return 0;
}

uint64_t step_slots_find(const struct step_slots *ss, uint64_t addr)
{
	size_t i =
	    vmi_lower_bound(ss->v, ss->nr, sizeof(*ss->v), offsetof(struct step_slot, addr), addr);

	return i < ss->nr && ss->v[i].addr == addr ? ss->v[i].slot : 0;
}

void step_slots_free(struct step_slots *ss)
{
	free(ss->v);
	memset(ss, 0, sizeof(*ss));
}

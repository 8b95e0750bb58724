/* Return-site breakpoints (ret_sites.h). */
#include "host/trace/ret_sites.h"

#include <errno.h>

static struct ret_site *find(struct ret_sites *rs, uint64_t addr)
{
	for (unsigned i = 0; i < rs->nr; i++)
		if (rs->v[i].addr == addr)
			return &rs->v[i];
	return NULL;
}

int ret_sites_hook(struct ret_sites *rs, struct target *tgt, unsigned cpu, uint64_t addr)
{
	struct ret_site *s = find(rs, addr), n = {.addr = addr, .refs = 1};
	int ret;

	if (s) {
		s->refs++;
		return 0;
	}
	if (rs->nr == RET_SITES_MAX) {
		rs->full++;
		return -ENOSPC;
	}
	ret = tgt->ops->translate(tgt, cpu, addr, &n.gpa);
	if (ret == 0)
		ret = tgt->ops->read_phys(tgt, n.gpa, &n.orig, 1);
	if (ret == 0)
		ret = tgt->ops->insert_bp(tgt, addr, n.gpa, n.orig);
	if (ret < 0)
		return ret;
	rs->v[rs->nr++] = n;
	return 0;
}

bool ret_sites_has(const struct ret_sites *rs, uint64_t addr)
{
	return find((struct ret_sites *)rs, addr) != NULL;
}

void ret_sites_unref(struct ret_sites *rs, struct target *tgt, uint64_t addr)
{
	struct ret_site *s = find(rs, addr);

	if (!s || --s->refs)
		return;
	tgt->ops->remove_bp(tgt, s->addr, s->gpa, s->orig);
	*s = rs->v[--rs->nr];
}

void ret_sites_remove_all(struct ret_sites *rs, struct target *tgt)
{
	for (unsigned i = 0; i < rs->nr; i++)
		tgt->ops->remove_bp(tgt, rs->v[i].addr, rs->v[i].gpa, rs->v[i].orig);
	rs->nr = 0;
}

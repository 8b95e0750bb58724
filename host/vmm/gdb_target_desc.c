/* A gdbstub's target description: the guest's ISA, its system-register numbers. */
#include "host/vmm/gdb_target_desc.h"
#include "host/util/msg_fmt.h"
#include "host/util/peer_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REGNUM_MAX 4096

int gdb_desc_regnum(const char *xml, const char *name)
{
	size_t nl = strlen(name);
	const char *p = xml;

	while ((p = strstr(p, "<reg ")) != NULL) {
		const char *end = strchr(p, '>'), *n, *r;
		long v;

		if (!end)
			return -1;
		n = strstr(p, " name=\"");
		if (n && n < end && !strncmp(n + 7, name, nl) && n[7 + nl] == '"') {
			r = strstr(p, " regnum=\"");
			if (!r || r > end)
				return -1;
			r += 9;
			v = 0;
			if (*r < '0' || *r > '9')
				return -1;
			while (*r >= '0' && *r <= '9' && v < REGNUM_MAX)
				v = v * 10 + (*r++ - '0');
			return *r == '"' && v < REGNUM_MAX ? (int)v : -1;
		}
		p = end;
	}
	return -1;
}

void gdb_desc_arch(const char *xml, char *out, size_t cap)
{
	const char *p = strstr(xml, "<architecture>"), *e;
	size_t n;

	out[0] = 0;
	if (!p)
		return;
	p += strlen("<architecture>");
	e = strstr(p, "</architecture>");
	if (!e)
		return;
	n = (size_t)(e - p) < cap - 1 ? (size_t)(e - p) : cap - 1;
	memcpy(out, p, n);
	out[n] = 0;
}

/* The whole annex @annex into @out (@cap bytes, NUL-terminated). 0, -E2BIG past @cap, -EPROTO for
 * a reply that is not `m`/`l` data, -errno. */
static int read_annex(struct gdb *g, const char *annex, char *out, size_t cap, char *err,
		      size_t errlen)
{
	size_t used = 0;
	char cmd[160];
	int rc;

	for (;;) {
		snprintf(cmd, sizeof(cmd), "qXfer:features:read:%s:%zx,ffb", annex, used);
		rc = gdb_command(g, cmd);
		if (rc) {
			msg_fmt(err, errlen, "gdbstub: reading the target description %s: %s", annex,
				g->why[0] ? g->why : strerror(-rc));
			return rc;
		}
		if ((g->pkt[0] != 'm' && g->pkt[0] != 'l') || !g->pkt_len) {
			char txt[64];

			msg_fmt(err, errlen, "gdbstub: the target description %s came as \"%s\"",
				annex, peer_text(g->pkt, g->pkt_len, txt, sizeof(txt)));
			return -EPROTO;
		}
		if (used + g->pkt_len - 1 >= cap) {
			msg_fmt(err, errlen, "gdbstub: the target description %s is larger than %zu KiB",
				annex, cap >> 10);
			return -E2BIG;
		}
		memcpy(out + used, g->pkt + 1, g->pkt_len - 1);
		used += g->pkt_len - 1;
		out[used] = 0;
		if (g->pkt[0] == 'l' || g->pkt_len == 1)
			return 0;
	}
}

/* The annexes target.xml includes (`<xi:include href="NAME"/>`), one after another, until one
 * describes every name of @l: its regnums into g->sys_regno[]. */
static int learn_sys_regs(struct gdb *g, const struct arch_gdb_layout *l, const char *target,
			  char *buf, char *err, size_t errlen)
{
	const char *p = target;
	unsigned found = 0;
	char missing[64] = "";

	while (found < l->nr_sys_names && (p = strstr(p, "href=\"")) != NULL) {
		char annex[96];
		const char *e = strchr(p + 6, '"');
		size_t n;
		int rc;

		if (!e)
			break;
		n = (size_t)(e - p - 6);
		p = e;
		if (!n || n >= sizeof(annex) || memchr(p - n, ':', n) || memchr(p - n, ',', n))
			continue; /* not a name that fits a qXfer request */
		memcpy(annex, e - n, n);
		annex[n] = 0;
		rc = read_annex(g, annex, buf, GDB_DESC_MAX, err, errlen);
		if (rc)
			return rc;
		if (l->counter_freq_name && g->freq_regno < 0)
			g->freq_regno = gdb_desc_regnum(buf, l->counter_freq_name);
		for (unsigned i = 0; i < l->nr_once_names && i < ARCH_GDB_ONCE_MAX; i++)
			if (g->once_regno[i] < 0)
				g->once_regno[i] = gdb_desc_regnum(buf, l->once_names[i]);
		for (unsigned i = 0; i < l->nr_sys_names; i++) {
			int r = gdb_desc_regnum(buf, l->sys_names[i]);

			if (r >= 0 && g->sys_regno[l->sys_first + i] < 0) {
				g->sys_regno[l->sys_first + i] = r;
				found++;
			}
		}
	}
	for (unsigned i = 0; i < l->nr_sys_names; i++)
		if (g->sys_regno[l->sys_first + i] < 0) {
			msg_fmt(missing, sizeof(missing), "%s", l->sys_names[i]);
			break;
		}
	if (missing[0]) {
		msg_fmt(err, errlen,
			"gdbstub: its target description gives no register number for %s (hvtrace "
			"reads it to walk the guest's page tables and find its tasks)",
			missing);
		return -ENOENT;
	}
	return 0;
}

int gdb_target_desc(struct gdb *g, char *err, size_t errlen)
{
	char *target = malloc(GDB_DESC_MAX), *buf = malloc(GDB_DESC_MAX), name[64], txt[80];
	const struct arch *a = NULL;
	int rc;

	if (!target || !buf) {
		free(target), free(buf);
		msg_fmt(err, errlen, "gdbstub: out of memory");
		return -ENOMEM;
	}
	rc = read_annex(g, "target.xml", target, GDB_DESC_MAX, err, errlen);
	if (rc)
		goto out;
	gdb_desc_arch(target, name, sizeof(name));
	for (unsigned i = 0; i < ARCH_NR_ISAS && name[0]; i++) {
		const struct arch *c = arch_get((enum arch_isa)i);

		if (c && c->gdb && c->gdb->xml_arch && !strcmp(c->gdb->xml_arch, name))
			a = c;
	}
	if (name[0] && !a) {
		msg_fmt(err, errlen,
			"the gdbstub describes a \"%s\" guest: hvtrace traces x86_64 and arm64 "
			"guests",
			peer_text(name, strlen(name), txt, sizeof(txt)));
		rc = -ENOEXEC;
		goto out;
	}
	g->arch = a ? a : arch_default();
	for (unsigned i = 0; i < ARCH_GDB_SYS_MAX; i++)
		g->sys_regno[i] = -1;
	g->freq_regno = -1;
	for (unsigned i = 0; i < ARCH_GDB_ONCE_MAX; i++)
		g->once_regno[i] = -1;
	if (g->arch->gdb->nr_sys_names)
		rc = learn_sys_regs(g, g->arch->gdb, target, buf, err, errlen);
out:
	free(target);
	free(buf);
	return rc;
}

#include "host/qemu/qemu_memmap.h"
#include "host/qemu/qmp_json.h"
#include "host/vmm/tcp.h"
#include "host/util/msg_fmt.h"
#include "host/util/peer_text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define PAGE	4096ull
#define SAMPLES 4096 /* pages compared per backend when several mappings fit */

/* ---- text of QEMU's monitor ------------------------------------------------------------------ */

/* The next line of @*text into @line (without its "\r\n"), @*text moved past it. 1, 0 at the end,
 * -1 when the line does not fit. */
static int next_line(const char **text, char *line, size_t cap)
{
	const char *s = *text;
	size_t n;

	if (!*s)
		return 0;
	n = strcspn(s, "\n");
	*text = s + n + (s[n] == '\n');
	if (n && s[n - 1] == '\r')
		n--;
	if (n >= cap)
		return -1;
	memcpy(line, s, n);
	line[n] = 0;
	return 1;
}

/* A monitor table's line that does not parse: "@what out of shape: '<line>'" in @err, the start of
 * the line printable. Returns -EINVAL. */
static int out_of_shape(const char *what, const char *line, char *err, size_t errlen)
{
	char buf[96];

	peer_text(line, strnlen(line, 80), buf, sizeof(buf));
	msg_fmt(err, errlen, "%s out of shape: '%s'", what, buf);
	return -EINVAL;
}

/* The end of monitor command @cmd's table: @rc is next_line's last (-1: a line did not fit);
 * @missing, when not NULL, what the text lacked. Returns 0, or -EINVAL with one line in @err. */
static int table_end(const char *cmd, int rc, const char *missing, char *err, size_t errlen)
{
	if (rc < 0)
		msg_fmt(err, errlen, "%s: a line longer than %d bytes", cmd,
			QEMU_MEMMAP_MAX_LINE - 1);
	else if (missing)
		msg_fmt(err, errlen, "%s: %s", cmd, missing);
	else
		return 0;
	return -EINVAL;
}

/* 1 to 16 hex digits at @*p (after an optional 0x), @*p moved past them. */
static bool hex(const char **p, uint64_t *v)
{
	const char *s = *p;
	unsigned n = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	*v = 0;
	for (;; s++, n++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (n == 16)
			return false;
		*v = *v << 4 | d;
	}
	*p = s;
	return n > 0;
}

static bool skip(const char **p, const char *lit)
{
	size_t n = strlen(lit);

	if (strncmp(*p, lit, n))
		return false;
	*p += n;
	return true;
}

/* A name token (no blank) at @*p into @out; false when empty or too long. */
static bool name(const char **p, char *out)
{
	size_t n = strcspn(*p, " \t");

	if (!n || n >= QEMU_MEMMAP_NAME)
		return false;
	memcpy(out, *p, n);
	out[n] = 0;
	*p += n;
	return true;
}

/* "  LO-HI (prio N, KIND): NAME[ @OFFSET]..." into @r; *@ram says whether KIND is "ram". */
static bool range_line(const char *s, struct qemu_ram_range *r, bool *ram)
{
	uint64_t lo, hi;
	const char *kind;
	size_t klen;

	if (!skip(&s, "  ") || !hex(&s, &lo) || !skip(&s, "-") || !hex(&s, &hi) ||
	    !skip(&s, " (prio "))
		return false;
	s += strspn(s, "-0123456789");
	if (!skip(&s, ", "))
		return false;
	kind = s;
	s = strstr(s, "): ");
	if (!s)
		return false;
	klen = (size_t)(s - kind);
	s += 3;
	*ram = klen == 3 && !strncmp(kind, "ram", 3);
	if (hi < lo || hi - lo == UINT64_MAX)
		return false;
	r->gpa = lo;
	r->len = hi - lo + 1;
	r->offset = 0;
	if (!name(&s, r->name))
		return false;
	if (skip(&s, " @") && !hex(&s, &r->offset))
		return false;
	return true;
}

int qemu_mtree_parse(const char *text, struct qemu_ram_range *r, unsigned max, unsigned *nr,
		     char *err, size_t errlen)
{
	char line[QEMU_MEMMAP_MAX_LINE];
	bool in_view = false, in_mem = false, found = false;
	int rc;

	*nr = 0;
	while ((rc = next_line(&text, line, sizeof(line))) > 0) {
		struct qemu_ram_range x;
		bool ram;

		if (!strncmp(line, "FlatView #", 10)) {
			in_view = true;
			in_mem = false;
			continue;
		}
		if (!line[0]) {
			in_view = in_mem = false;
			continue;
		}
		if (in_view && !strcmp(line, " AS \"memory\", root: system")) {
			if (found) {
				msg_fmt(err, errlen,
					"info mtree: two flat views of address space memory");
				return -EINVAL;
			}
			found = in_mem = true;
			continue;
		}
		if (!in_mem || strncmp(line, "  ", 2) ||
		    !strchr("0123456789abcdefABCDEF", line[2]) || !line[2])
			continue;
		if (!range_line(line, &x, &ram))
			return out_of_shape("info mtree: a range", line, err, errlen);
		if (!ram)
			continue;
		if (*nr == max) {
			msg_fmt(err, errlen, "info mtree: more than %u RAM ranges", max);
			return -EINVAL;
		}
		r[(*nr)++] = x;
	}
	return table_end("info mtree", rc, found ? NULL : "no flat view of address space memory",
			 err, errlen);
}

/* "4 KiB" and the like into bytes (powers of two only: page sizes). */
static bool page_size(const char *num, const char *unit, uint64_t *v)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(num, &end, 10);
	if (errno || *end || !n || n > 1024 || (n & (n - 1)) || !strchr("0123456789", num[0]))
		return false;
	for (unsigned i = 0; i < 4; i++)
		if (!strcmp(unit, units[i])) {
			*v = (uint64_t)n << (10 * i);
			return true;
		}
	return false;
}

/* Splits @line at blanks into at most @max tokens (in place); their number, or max + 1. */
static unsigned tokens(char *line, char **tok, unsigned max)
{
	unsigned n = 0;
	char *save, *t;

	for (t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		if (n == max)
			return max + 1;
		tok[n++] = t;
	}
	return n;
}

/* The columns of `info ramblock` hvtrace reads, named by its header line. */
enum rb_col { RB_NAME, RB_PSIZE, RB_OFFSET, RB_USED, RB_TOTAL, RB_HVA, RB_RO, RB_OTHER };

#define RB_MAX_COLS 16

/* The header line @line into @col (the column of each value, in order): "Block Name" is one column,
 * any header word not known here is a column of its own. The number of columns, or 0 when the line
 * is no header (Block Name, PSize and Used are needed, each once). */
static unsigned ramblock_header(char *line, enum rb_col *col)
{
	static const char *const names[] = {[RB_PSIZE] = "PSize", [RB_OFFSET] = "Offset",
					    [RB_USED] = "Used",	  [RB_TOTAL] = "Total",
					    [RB_HVA] = "HVA",	  [RB_RO] = "RO"};
	unsigned n = 0, seen = 0, nt;
	char *t[RB_MAX_COLS];

	nt = tokens(line, t, RB_MAX_COLS);
	if (nt > RB_MAX_COLS)
		return 0;
	for (unsigned i = 0; i < nt; i++) {
		enum rb_col c = RB_OTHER;

		if (n == RB_MAX_COLS)
			return 0;
		if (!strcmp(t[i], "Block") && i + 1 < nt && !strcmp(t[i + 1], "Name")) {
			c = RB_NAME;
			i++;
		}
		for (unsigned k = RB_PSIZE; k < RB_OTHER && c == RB_OTHER; k++)
			if (!strcmp(t[i], names[k]))
				c = (enum rb_col)k;
		if (c != RB_OTHER && (seen & 1u << c))
			return 0;
		seen |= 1u << c;
		col[n++] = c;
	}
	return (seen & 1u << RB_NAME) && (seen & 1u << RB_PSIZE) && (seen & 1u << RB_USED) ? n : 0;
}

/* One block line @line into @x, its values read by the columns @col[0..@ncol) (PSize takes two
 * words, "4 KiB"; every other column one). False when the line does not fit them. */
static bool ramblock_line(char *line, const enum rb_col *col, unsigned ncol, struct qemu_ramblock *x)
{
	char *t[RB_MAX_COLS * 2 + 1];
	unsigned nt = tokens(line, t, RB_MAX_COLS * 2), k = 0;
	uint64_t total = 0, offset, *v;
	bool has_total = false;
	const char *p;

	memset(x, 0, sizeof(*x));
	for (unsigned i = 0; i < ncol; i++) {
		if (k + (col[i] == RB_PSIZE) >= nt)
			return false;
		switch (col[i]) {
		case RB_NAME:
			if (strlen(t[k]) >= QEMU_MEMMAP_NAME)
				return false;
			strcpy(x->name, t[k]);
			break;
		case RB_PSIZE:
			if (!page_size(t[k], t[k + 1], &x->psize))
				return false;
			k++;
			break;
		case RB_USED:
		case RB_TOTAL:
		case RB_HVA:
		case RB_OFFSET:
			v = col[i] == RB_USED ? &x->used : col[i] == RB_TOTAL ? &total
						      : col[i] == RB_HVA ? &x->hva : &offset;
			p = t[k];
			if (!hex(&p, v) || *p)
				return false;
			has_total |= col[i] == RB_TOTAL;
			break;
		case RB_RO:
			if (strcmp(t[k], "ro") && strcmp(t[k], "rw"))
				return false;
			x->ro = !strcmp(t[k], "ro");
			break;
		case RB_OTHER:
			break;
		}
		k++;
	}
	return k == nt && (!has_total || x->used <= total);
}

int qemu_ramblock_parse(const char *text, struct qemu_ramblock *b, unsigned max, unsigned *nr,
			char *err, size_t errlen)
{
	char line[QEMU_MEMMAP_MAX_LINE], copy[QEMU_MEMMAP_MAX_LINE];
	enum rb_col col[RB_MAX_COLS];
	unsigned ncol = 0;
	int rc;

	*nr = 0;
	while ((rc = next_line(&text, line, sizeof(line))) > 0) {
		struct qemu_ramblock x;

		memcpy(copy, line, sizeof(line));
		if (!ncol) {
			ncol = ramblock_header(copy, col);
			continue;
		}
		if (!line[strspn(line, " \t")])
			continue;
		if (!ramblock_line(copy, col, ncol, &x))
			return out_of_shape("info ramblock: a block", line, err, errlen);
		for (unsigned i = 0; i < *nr; i++)
			if (!strcmp(b[i].name, x.name)) {
				char name[80];

				msg_fmt(err, errlen, "info ramblock: block %s listed twice",
					peer_str(x.name, name, sizeof(name)));
				return -EINVAL;
			}
		if (*nr == max) {
			msg_fmt(err, errlen, "info ramblock: more than %u blocks", max);
			return -EINVAL;
		}
		b[(*nr)++] = x;
	}
	return table_end("info ramblock", rc,
			 ncol ? NULL : "no table (Block Name, PSize, ..., Used)", err, errlen);
}

int qemu_memdev_parse(const char *text, char (*ids)[QEMU_MEMMAP_NAME], unsigned max, unsigned *nr,
		      char *err, size_t errlen)
{
	char line[QEMU_MEMMAP_MAX_LINE];
	int rc;

	*nr = 0;
	while ((rc = next_line(&text, line, sizeof(line))) > 0) {
		const char *p = line;
		char id[QEMU_MEMMAP_NAME];

		if (!skip(&p, "memory backend: "))
			continue;
		if (!name(&p, id) || *p)
			return out_of_shape("info memdev: a backend id", line, err, errlen);
		if (*nr == max) {
			msg_fmt(err, errlen, "info memdev: more than %u backends", max);
			return -EINVAL;
		}
		strcpy(ids[(*nr)++], id);
	}
	return table_end("info memdev", rc, NULL, err, errlen);
}

int qemu_memdev_parse_qmp(const char *json, char (*ids)[QEMU_MEMMAP_NAME], unsigned max,
			  unsigned *nr, char *err, size_t errlen)
{
	size_t len = strlen(json), i = qmp_json_skip_ws(json, 0, len);

	*nr = 0;
	if (i == len || json[i] != '[')
		goto bad;
	i = qmp_json_skip_ws(json, i + 1, len);
	while (i < len && json[i] != ']') {
		struct qmp_json_scan st = {0};
		size_t n, vlen;
		const char *v;
		int rc;

		if (json[i] != '{' || !(n = qmp_json_bracket_scan(json + i, len - i, &st)))
			goto bad;
		rc = qmp_json_member(json + i, n, "id", &v, &vlen);
		if (rc == -ENOENT) { /* QEMU before 4.0 names no backend: its HMP text does */
			msg_fmt(err, errlen, "query-memdev: a backend without an id");
			return -ENOENT;
		}
		if (rc || *nr == max || qmp_json_string(v, vlen, ids[*nr], QEMU_MEMMAP_NAME) ||
		    !ids[*nr][0] || strpbrk(ids[*nr], " \t\r\n")) {
			if (*nr == max)
				msg_fmt(err, errlen, "query-memdev: more than %u backends", max);
			else
				msg_fmt(err, errlen, "query-memdev: a backend id out of shape");
			return -EINVAL;
		}
		for (unsigned k = 0; k < *nr; k++)
			if (!strcmp(ids[k], ids[*nr])) {
				char id[80];

				msg_fmt(err, errlen, "query-memdev: backend %s listed twice",
					peer_str(ids[k], id, sizeof(id)));
				return -EINVAL;
			}
		(*nr)++;
		i = qmp_json_skip_ws(json, i + n, len);
		if (i < len && json[i] == ',')
			i = qmp_json_skip_ws(json, i + 1, len);
		else if (i == len || json[i] != ']')
			goto bad;
	}
	if (i < len && qmp_json_skip_ws(json, i + 1, len) == len)
		return 0;
bad:
	msg_fmt(err, errlen, "query-memdev: not an array of backends");
	return -EINVAL;
}

/* ---- host mappings --------------------------------------------------------------------------- */

int qemu_maps_parse(FILE *f, const uint64_t *sizes, unsigned nsizes, struct qemu_host_map *m,
		    unsigned max, unsigned *nr, char *err, size_t errlen)
{
	char line[QEMU_MEMMAP_MAX_LINE];
	struct qemu_host_map *last = NULL; /* the candidate whose smaps fields follow */

	*nr = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off, kb;
		char perms[8], dev[16];
		unsigned long inode;
		const char *path;
		bool wanted = false;
		int n = 0;

		if (!strchr(line, '\n')) { /* a longer line (a long path): skip the rest of it */
			int c;

			while ((c = fgetc(f)) != EOF && c != '\n')
				;
		}
		if (last && sscanf(line, "KernelPageSize: %llu kB", &kb) == 1) {
			last->pagesize = kb < (1ull << 40) ? kb << 10 : 0;
			continue;
		}
		if (sscanf(line, "%llx-%llx %7s %llx %15s %lu %n", &lo, &hi, perms, &off, dev,
			   &inode, &n) < 6 ||
		    !n) {
			continue;
		}
		last = NULL;
		path = line + n;
		/* readable, writable, not executable; anonymous (no path) or a file (memfd, tmpfs,
		 * hugetlbfs): no [heap], [stack] and the like */
		if (hi <= lo || strncmp(perms, "rw-", 3) ||
		    (*path && *path != '\n' && *path != '/'))
			continue;
		for (unsigned i = 0; i < nsizes; i++)
			wanted |= hi - lo == sizes[i];
		if (!wanted)
			continue;
		if (*nr == max) {
			msg_fmt(err, errlen, "more than %u host mappings of a RAM block's size",
				max);
			return -E2BIG;
		}
		last = &m[(*nr)++];
		*last = (struct qemu_host_map){.lo = lo, .hi = hi, .pagesize = PAGE};
	}
	return 0;
}

/* ---- the map --------------------------------------------------------------------------------- */

bool qemu_memmap_wanted(const struct qemu_memmap_in *in, const char *block)
{
	for (unsigned i = 0; i < in->nr_memdevs; i++)
		if (!strcmp(in->memdevs[i], block))
			return true;
	for (unsigned i = 0; !in->nr_memdevs && i < in->nr_ranges; i++)
		if (!strcmp(in->ranges[i].name, block))
			return true;
	return false;
}

/* Does mapping @map fit block @b (size and page size)? */
static bool fits(const struct qemu_host_map *map, const struct qemu_ramblock *b)
{
	return map->hi - map->lo == b->used && map->pagesize == b->psize;
}

/* The guest-physical address of the page at @off in block @b (a range of it maps it), or false. */
static bool gpa_of(const struct qemu_memmap_in *in, const struct qemu_ramblock *b, uint64_t off,
		   uint64_t *gpa)
{
	for (unsigned i = 0; i < in->nr_ranges; i++) {
		const struct qemu_ram_range *r = &in->ranges[i];

		if (!strcmp(r->name, b->name) && off >= r->offset && off - r->offset < r->len &&
		    r->len - (off - r->offset) >= PAGE) {
			*gpa = r->gpa + (off - r->offset);
			return true;
		}
	}
	return false;
}

/* Tells which of the mappings @cand[0..*n) holds block @b: drops those whose content differs from
 * the guest's at sampled pages until one is left. -EEXIST if several are left, -ENOENT if none. */
static int by_content(const struct qemu_memmap_in *in, const struct qemu_ramblock *b,
		      unsigned *cand, unsigned *n)
{
	static uint8_t guest[PAGE], page[QEMU_MEMMAP_MAX_MAPS][PAGE];
	uint64_t step = b->used / SAMPLES, gpa;
	unsigned k;

	if (!in->host_read)
		return -EIO;
	step = step < PAGE ? PAGE : step & ~(PAGE - 1);
	for (uint64_t off = 0; off + PAGE <= b->used && *n > 1; off += step) {
		bool differ = false;

		if (!gpa_of(in, b, off, &gpa))
			continue;
		for (unsigned i = 0; i < *n; i++) {
			if (in->host_read(in->host_ctx, in->maps[cand[i]].lo + off, page[i], PAGE) <
			    0)
				return -EIO;
			differ |= i && memcmp(page[i], page[0], PAGE);
		}
		if (!differ)
			continue;
		if (!in->phys_read || in->phys_read(in->phys_ctx, gpa, guest, PAGE) < 0)
			return -EIO;
		for (unsigned i = k = 0; i < *n; i++) {
			if (!memcmp(page[i], guest, PAGE)) {
				memmove(page[k], page[i], PAGE);
				cand[k++] = cand[i];
			}
		}
		*n = k;
	}
	return *n == 1 ? 0 : *n ? -EEXIST : -ENOENT;
}

static int by_gpa(const void *a, const void *b)
{
	const struct proc_mem_region *x = a, *y = b;

	return x->gpa < y->gpa ? -1 : x->gpa > y->gpa;
}

int qemu_memmap_resolve(const struct qemu_memmap_in *in, struct proc_mem_region *out, unsigned max,
			unsigned *nr, char *err, size_t errlen)
{
	int owner[QEMU_MEMMAP_MAX_MAPS]; /* the block each mapping holds, -1 none */
	int map_of[QEMU_MEMMAP_MAX_BLOCKS];
	unsigned n = 0;

	*nr = 0;
	if (in->nr_maps > QEMU_MEMMAP_MAX_MAPS || in->nr_blocks > QEMU_MEMMAP_MAX_BLOCKS) {
		msg_fmt(err, errlen, "too many RAM blocks or host mappings");
		return -E2BIG;
	}
	for (unsigned i = 0; i < in->nr_maps; i++)
		owner[i] = -1;
	for (unsigned bi = 0; bi < in->nr_blocks; bi++) {
		const struct qemu_ramblock *b = &in->blocks[bi];
		unsigned cand[QEMU_MEMMAP_MAX_MAPS], nc = 0, alike = 0;
		int rc = 0;

		map_of[bi] = -1;
		if (!qemu_memmap_wanted(in, b->name))
			continue;
		if (!b->used || b->used % b->psize) {
			msg_fmt(err, errlen,
				"memory backend %s: %" PRIu64 " bytes in %" PRIu64 "-byte pages",
				b->name, b->used, b->psize);
			return -EINVAL;
		}
		/* QEMU 10.0 prints where the block is (HVA): the mapping that starts there */
		for (unsigned i = 0; i < in->nr_maps; i++)
			if (fits(&in->maps[i], b) && (!b->hva || in->maps[i].lo == b->hva))
				cand[nc++] = i;
		for (unsigned j = 0; j < in->nr_blocks && !b->hva; j++)
			alike += qemu_memmap_wanted(in, in->blocks[j].name) &&
				 in->blocks[j].used == b->used && in->blocks[j].psize == b->psize;
		if (!nc && b->hva) {
			msg_fmt(err, errlen,
				"memory backend %s: no mapping of %" PRIu64 " MiB in %" PRIu64
				"-KiB pages at 0x%" PRIx64
				" (info ramblock's HVA) in the QEMU process",
				b->name, b->used >> 20, b->psize >> 10, b->hva);
			return -ENOENT;
		}
		if (!nc) {
			msg_fmt(err, errlen,
				"memory backend %s: no mapping of %" PRIu64 " MiB in %" PRIu64
				"-KiB pages in the QEMU process",
				b->name, b->used >> 20, b->psize >> 10);
			return -ENOENT;
		}
		/* one mapping that fits and no other backend like this one: it is this one's */
		if (nc > 1 || alike > 1)
			rc = by_content(in, b, cand, &nc);
		if (rc == -EIO) {
			msg_fmt(err, errlen,
				"memory backend %s: cannot compare its candidate mappings with "
				"guest memory",
				b->name);
			return -EIO;
		}
		if (rc == -EEXIST) {
			msg_fmt(err, errlen,
				"memory backends of %" PRIu64
				" MiB: %u mappings fit %s and hold the same "
				"bytes at every page compared; cannot tell them apart",
				b->used >> 20, nc, b->name);
			return -EEXIST;
		}
		if (rc == -ENOENT || owner[cand[0]] >= 0) {
			snprintf(
			    err, errlen,
			    "memory backend %s: no mapping in the QEMU process holds its bytes",
			    b->name);
			return -ENOENT;
		}
		owner[cand[0]] = (int)bi;
		map_of[bi] = (int)cand[0];
	}
	for (unsigned i = 0; i < in->nr_ranges; i++) {
		const struct qemu_ram_range *r = &in->ranges[i];
		const struct qemu_host_map *map = NULL;
		unsigned bi;

		for (bi = 0; bi < in->nr_blocks && !map; bi++)
			if (!strcmp(in->blocks[bi].name, r->name) && map_of[bi] >= 0)
				map = &in->maps[map_of[bi]];
		if (!map)
			continue; /* device RAM, ROM shadows: not a backend's */
		if (r->offset > map->hi - map->lo || r->len > map->hi - map->lo - r->offset ||
		    r->gpa + r->len < r->gpa) {
			msg_fmt(err, errlen,
				"info mtree: range 0x%" PRIx64 "+0x%" PRIx64
				" of %s at offset 0x%" PRIx64 " is outside its %" PRIu64 " MiB",
				r->gpa, r->len, r->name, r->offset, (map->hi - map->lo) >> 20);
			return -EINVAL;
		}
		if (n == QEMU_MEMMAP_MAX_RANGES) {
			msg_fmt(err, errlen, "more than %u RAM ranges", QEMU_MEMMAP_MAX_RANGES);
			return -E2BIG;
		}
		/* staged in @out when it has room, else refused below */
		if (n < max)
			out[n] = (struct proc_mem_region){r->gpa, r->len, map->lo + r->offset};
		n++;
	}
	if (n > max) {
		msg_fmt(err, errlen, "more than %u guest RAM regions", max);
		return -E2BIG;
	}
	qsort(out, n, sizeof(*out), by_gpa);
	for (unsigned i = 1; i < n; i++)
		if (out[i].gpa < out[i - 1].gpa + out[i - 1].len) {
			msg_fmt(err, errlen,
				"info mtree: RAM ranges at 0x%" PRIx64 " and 0x%" PRIx64 " overlap",
				out[i - 1].gpa, out[i].gpa);
			return -EINVAL;
		}
	/* merge neighbours contiguous in both address spaces */
	*nr = 0;
	for (unsigned i = 0; i < n; i++) {
		struct proc_mem_region *prev = *nr ? &out[*nr - 1] : NULL;

		if (prev && prev->gpa + prev->len == out[i].gpa &&
		    prev->hva + prev->len == out[i].hva)
			prev->len += out[i].len;
		else
			out[(*nr)++] = out[i];
	}
	if (!*nr) {
		msg_fmt(err, errlen, "info mtree: no RAM range of a memory backend");
		return -ENOENT;
	}
	return 0;
}

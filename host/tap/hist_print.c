#include "host/tap/hist_print.h"
#include "host/trace/escape.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The kernel's %ps (@offset false: "name") or %pS ("name+0xoff/0xsize") of @addr. */
static void sym_text(char *buf, size_t len, uint64_t addr, const struct vmi_symtab *syms,
		     bool offset)
{
	const struct vmi_sym *s = syms ? vmi_symtab_lookup(syms, addr) : NULL;
	size_t n;

	if (!s) {
		snprintf(buf, len, "0x%" PRIx64, addr);
		return;
	}
	n = escape_str(buf, len, s->name, SIZE_MAX);
	if (offset && n < len)
		snprintf(buf + n, len - n, "+0x%" PRIx64 "/0x%" PRIx64, addr - s->addr, s->size);
}

int hist_entry_format(char *buf, size_t len, const struct hist_spec *spec,
		      const struct hist_entry *e, const struct vmi_symtab *syms)
{
	bool multiline = false;
	size_t n = 0;

#define PUT(...)                                                                                   \
	do {                                                                                       \
		if (n < len)                                                                       \
			n += (size_t)snprintf(buf + n, len - n, __VA_ARGS__);                      \
	} while (0)
	if (!len)
		return 0;
	buf[0] = 0;
	PUT("{ ");
	for (unsigned i = 0; i < spec->nr_keys; i++) {
		const struct hist_field *f = &spec->keys[i];
		unsigned long long v = e->key[i];
		char text[ESCAPE_SIZE(VMI_COMM_LEN) + 256];

		if (i)
			PUT(", ");
		if (f->src == HIST_SRC_STACKTRACE) {
			/* as the kernel's: the name, then a frame a line (%pS, nine spaces in) up
			 * to the first 0; the closing brace then follows the last line */
			PUT("%s:\n", f->name);
			for (unsigned k = 0; k < HIST_STACK_DEPTH && e->stack[k]; k++) {
				sym_text(text, sizeof(text), e->stack[k], syms, true);
				PUT("%9c%s\n", ' ', text);
			}
			multiline = true;
			continue;
		}
		switch (f->mod) {
		case HIST_MOD_HEX:
			PUT("%s: %llx", f->name, v);
			break;
		case HIST_MOD_SYM:
		case HIST_MOD_SYM_OFFSET:
			sym_text(text, sizeof(text), v, syms, f->mod == HIST_MOD_SYM_OFFSET);
			PUT("%s: [%llx] %-*s", f->name, v, f->mod == HIST_MOD_SYM ? 45 : 55, text);
			break;
		case HIST_MOD_EXECNAME:
			escape_str(text, sizeof(text), e->comm, VMI_COMM_LEN);
			PUT("%s: %-16s[%10llu]", f->name, text, v);
			break;
		case HIST_MOD_LOG2:
			PUT("%s: ~ 2^%-2llu", f->name, v);
			break;
		case HIST_MOD_BUCKETS:
			PUT("%s: ~ %llu-%llu", f->name, v, v + f->buckets - 1);
			break;
		default:
			PUT("%s: %10llu", f->name, v);
			break;
		}
	}
	PUT("%s} hitcount: %10llu", multiline ? "" : " ", (unsigned long long)e->sum[0]);
	for (unsigned i = 0; i < spec->nr_vals; i++) {
		const struct hist_field *f = &spec->vals[i];

		if (f->mod == HIST_MOD_HEX)
			PUT("  %s: %10llx", f->name, (unsigned long long)e->sum[1 + i]);
		else
			PUT("  %s: %10llu", f->name, (unsigned long long)e->sum[1 + i]);
	}
	PUT("\n");
#undef PUT
	return (int)n;
}

/* Orders entry indices by the spec's sort keys, then by their keys (a stable answer for ties). */
static int by_sort(const void *a, const void *b, void *arg)
{
	const struct hist *h = arg;
	const struct hist_entry *x = &h->elts[*(const uint32_t *)a];
	const struct hist_entry *y = &h->elts[*(const uint32_t *)b];

	for (unsigned i = 0; i < h->spec.nr_sort; i++) {
		const struct hist_sort *s = &h->spec.sort[i];
		uint64_t u = s->is_key ? x->key[s->idx] : x->sum[s->idx];
		uint64_t v = s->is_key ? y->key[s->idx] : y->sum[s->idx];

		if (u != v)
			return (u < v) != s->descending ? -1 : 1;
	}
	for (unsigned i = 0; i < h->spec.nr_keys; i++)
		if (x->key[i] != y->key[i])
			return x->key[i] < y->key[i] ? -1 : 1;
	return 0;
}

int hist_print(const struct hist *h, const struct vmi_symtab *syms, bool first, FILE *out)
{
	uint32_t *order = malloc((h->nr_elts ? h->nr_elts : 1) * sizeof(*order));
	char info[1024], line[4096];

	if (!order)
		return -ENOMEM;
	for (uint32_t i = 0; i < h->nr_elts; i++)
		order[i] = i;
	qsort_r(order, h->nr_elts, sizeof(*order), by_sort, (void *)h);
	hist_spec_info(info, sizeof(info), &h->spec);
	fprintf(out, "%s# event histogram\n#\n# trigger info: %s\n#\n\n", first ? "" : "\n\n",
		info);
	for (uint32_t i = 0; i < h->nr_elts; i++) {
		int n = hist_entry_format(line, sizeof(line), &h->spec, &h->elts[order[i]], syms);

		fwrite(line, 1, n < (int)sizeof(line) ? (size_t)n : sizeof(line) - 1, out);
	}
	free(order);
	fprintf(out,
		"\nTotals:\n    Hits: %" PRIu64 "\n    Entries: %u\n    Dropped: %" PRIu64 "\n",
		h->hits, h->nr_elts, h->dropped);
	return ferror(out) ? -EIO : 0;
}

#include "host/session/text_verify.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int text_verify_begin(struct text_verify *v, vmi_read_fn read, void *ctx, uint64_t start,
		      uint64_t end)
{
	int ret;

	memset(v, 0, sizeof(*v));
	if (end <= start)
		return -EINVAL;
	v->before = malloc(end - start);
	if (!v->before)
		return -ENOMEM;
	ret = read(ctx, start, v->before, end - start);
	if (ret < 0) {
		text_verify_free(v);
		return ret;
	}
	v->start = start;
	v->len = end - start;
	return 0;
}

/* Whether hvtrace may have written the byte at @addr, which now holds @now. */
static bool ours(const struct arch *a, const struct probe_table *probes, uint64_t trampoline,
		 uint64_t addr, uint8_t now)
{
	uint64_t span = a->site_len > a->jmp_len ? a->site_len : a->jmp_len;

	if (trampoline && addr == trampoline && a->bp_len == 1 && now == a->bp[0])
		return true;
	for (uint64_t back = 0; back < span && back <= addr; back++) {
		const struct probe *p = probe_lookup(probes, addr - back);

		/* an entry probe's breakpoint covers its first byte alone, a detour's JMP more */
		if (p && (!p->entry || p->detour || back == 0))
			return true;
	}
	return false;
}

int text_verify_end(const struct text_verify *v, const struct arch *arch, vmi_read_fn read,
		    void *ctx, const struct probe_table *probes, uint64_t trampoline,
		    struct text_verdict *out)
{
	uint8_t *now = malloc(v->len ? v->len : 1);
	bool in_run = false;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!now)
		return -ENOMEM;
	ret = read(ctx, v->start, now, v->len);
	if (ret < 0) {
		free(now);
		return ret;
	}
	out->len = v->len;
	for (size_t i = 0; i < v->len; i++) {
		uint64_t a = v->start + i;

		if (now[i] == v->before[i]) {
			in_run = false;
			continue;
		}
		if (ours(arch, probes, trampoline, a, now[i])) {
			if (!out->ours++) {
				out->ours_at = a;
				out->ours_now = now[i];
				out->ours_was = v->before[i];
			}
			in_run = false;
			continue;
		}
		if (!out->kernel++)
			out->kernel_at = a;
		if (!in_run)
			out->kernel_runs++;
		in_run = true;
	}
	free(now);
	return 0;
}

void text_verify_free(struct text_verify *v)
{
	free(v->before);
	v->before = NULL;
	v->len = 0;
}

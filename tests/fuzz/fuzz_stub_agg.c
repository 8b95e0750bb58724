/* libFuzzer harness for the stub's aggregation tables as the host reads them back
 * (host/trace/stub_agg.c): the input is a CPU's table as a hostile guest may leave it, checked
 * against two counting probes (one by pid with log2 returns, one counting calls) and a trap probe;
 * every item kept must be what the stub can write, and the items never pass the capacity. */
#include "host/trace/stub_agg.h"

#include <stdlib.h>
#include <string.h>

#define CAP 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vmi_sym syms[3] = {
	    {.name = (char *)"a"}, {.name = (char *)"b"}, {.name = (char *)"c"}};
	static struct vmi_site sites[3];
	static struct probe_table probes;
	static bool ready;
	struct stub_agg_ent raw[CAP + 8];
	struct stub_agg_item items[CAP];
	struct stub_agg a = {.v = items, .cap = CAP};
	size_t n = size / sizeof(raw[0]);

	if (!ready) {
		const struct vmi_site *sel[3] = {&sites[0], &sites[1], &sites[2]};

		for (unsigned i = 0; i < 3; i++)
			sites[i] = (struct vmi_site){.addr = 0x1000 * (i + 1), .func = &syms[i]};
		if (probe_table_init(&probes, sel, 3) < 0)
			abort();
		probes.v[0].stub = probes.v[1].stub = true;
		probes.v[0].agg = probes.v[1].agg = probes.v[2].agg = true;
		probes.v[0].agg_count = probes.v[1].agg_count = true;
		probes.v[0].agg_mode = STUB_AGG_RET | STUB_AGG_PID | STUB_AGG_LOG2;
		ready = true;
	}
	if (n > sizeof(raw) / sizeof(raw[0]))
		n = sizeof(raw) / sizeof(raw[0]);
	memcpy(raw, data, n * sizeof(raw[0]));
	stub_agg_parse(&a, raw, n, 3, &probes);
	if (a.nr > CAP || a.nr + a.rejected > n)
		abort();
	for (size_t i = 0; i < a.nr; i++) {
		const struct stub_agg_item *it = &items[i];

		if (it->probe > 1 || it->cpu != 3 || !it->hits || it->comm[15])
			abort();
		if (it->probe == 1 && (it->has_pid || it->is_return || it->is_unwound))
			abort();
		if (it->is_unwound && (it->has_pid || it->is_return || it->sum_ns))
			abort();
		if (it->is_return &&
		    (it->max_ns > it->sum_ns || it->log2 != stub_agg_log2(it->max_ns)))
			abort();
		if (it->has_pid && (it->pid < 0 || it->pid > STUB_AGG_PID_MAX))
			abort();
	}
	return 0;
}

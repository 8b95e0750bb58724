/* libFuzzer harness for the viewer sinks (sink_chrome, sink_folded) and the live JSON Lines
 * (sink_json): `report` feeds the first two records read back from a trace.dat, `run --format
 * jsonl` the third records built from what a guest wrote, so any record stream must give well-formed
 * output. The input: one
 * byte of settings (tracer, vCPU count), then 64-byte hvt_records, any order, any field; an event's
 * payload is the input's first bytes. The JSON must be printable ASCII with balanced brackets
 * outside its strings, the folded text printable lines, the JSON Lines one complete object per line
 * (closed strings and balanced brackets at each newline). */
#include "host/sink/sink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct vmi_symtab syms;
static struct fe_spec spec;

/* The writer's lookup (sink_lookup_fn): an event's or a typed return's spec at odd addresses. */
static void look_up(const void *ctx, struct sink_rec *sr)
{
	(void)ctx;
	uint8_t t = sr->r->type;

	sr->spec = (t == HVT_REC_EVENT || t == HVT_REC_EVENT_ALONE || t == HVT_REC_RETURN_EVENT) &&
			   sr->r->ip & 1
		       ? &spec
		       : NULL;
}

/* Printable ASCII and newlines only; for JSON also strings closed and brackets balanced; for JSON
 * Lines (@lines) at each newline, which only ends an object. */
static void check(const char *buf, size_t len, bool json, bool lines)
{
	bool str = false, esc = false;
	long depth = 0;

	for (size_t i = 0; i < len; i++) {
		char c = buf[i];

		if (!(c == '\n' && !str) && (c < 0x20 || c > 0x7e))
			abort();
		if (lines && c == '\n' && (depth || (i && buf[i - 1] != '}')))
			abort();
		if (!json)
			continue;
		if (esc)
			esc = false;
		else if (str && c == '\\')
			esc = true;
		else if (c == '"')
			str = !str;
		else if (!str && (c == '{' || c == '['))
			depth++;
		else if (!str && (c == '}' || c == ']') && --depth < 0)
			abort();
	}
	if (json && (str || depth))
		abort();
	if (!json && len && buf[len - 1] != '\n')
		abort();
}

static int json_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus)
{
	sink_json_init(s, out, syms, nr_cpus);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t payload[4096];
	int (*init[3])(struct sink *, FILE *, const struct vmi_symtab *,
		       unsigned) = {sink_chrome_init, sink_folded_init, json_init};

	if (!syms.nr) {
		char err[64];
		size_t pos;

		vmi_symtab_add(&syms, 0x1000, 0x100, "main");
		vmi_symtab_add(&syms, 0x1100, 0x100, "we\"ird;\\\x01sym\n");
		vmi_symtab_sort(&syms);
		if (fe_parse("f(int a, string s, x8 b[4])", &spec, err, sizeof(err), &pos))
			abort();
	}
	if (!size)
		return 0;
	memset(payload, 0, sizeof(payload));
	memcpy(payload, data, size < sizeof(payload) ? size : sizeof(payload));
	for (int k = 0; k < 3; k++) {
		struct sink s;
		char *buf = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&buf, &len);

		if (!out || init[k](&s, out, &syms, data[0] & 7) < 0)
			abort();
		s.tracer = data[0] & 8 ? "function_graph" : "function";
		s.ops->begin(&s);
		for (size_t off = 1; off + sizeof(struct hvt_record) <= size;
		     off += sizeof(struct hvt_record)) {
			struct hvt_record r;
			struct sink_rec sr = {.r = &r};

			memcpy(&r, data + off, sizeof(r));
			sr.payload = hvt_record_has_payload(&r) ? payload : NULL;
			look_up(NULL, &sr);
			sink_record(&s, &sr, NULL);
		}
		s.ops->end(&s);
		fclose(out);
		check(buf, len, k != 1, k == 2);
		free(buf);
	}
	return 0;
}

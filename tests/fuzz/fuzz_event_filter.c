/* libFuzzer harness for --filter-event: the input is "EXPR" or "EXPR\nSPEC\nPAYLOAD": the
 * expression is parsed, bound to the -e spec (a fixed one if SPEC is absent or does not parse) and
 * evaluated on the payload bytes (as captured guest data: anything), cut short and whole. */
#include "host/trace/event_filter.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[1024];
	struct ef_filter *f = malloc(sizeof(*f));
	struct fe_spec spec;
	const char *spec_text = "f(int a, u64 b, string s+0, char[4] c+0, u16[2] arr+0, x8 h)";
	char *nl, *payload_at = NULL;
	size_t pos;

	if (!text || !f)
		goto out;
	memcpy(text, data, size);
	text[size] = 0;
	nl = strchr(text, '\n');
	if (nl) {
		char *nl2;

		*nl = 0;
		nl2 = strchr(nl + 1, '\n');
		if (nl2) {
			*nl2 = 0;
			payload_at = nl2 + 1;
		}
		if (fe_parse(nl + 1, &spec, err, sizeof(err), &pos) == 0)
			spec_text = NULL;
	}
	if (spec_text && fe_parse(spec_text, &spec, err, sizeof(err), &pos) < 0)
		abort();
	if (ef_parse(text, f, err, sizeof(err)) < 0) {
		if (!memchr(err, 0, sizeof(err)))
			abort();
		goto out;
	}
	if (ef_bind(f, &spec, err, sizeof(err)) == 0) {
		size_t need = fe_payload_size(&spec);
		uint8_t *payload = calloc(1, need + 1);
		size_t have = payload_at ? size - (size_t)(payload_at - text) : 0;

		if (payload) {
			memcpy(payload,
			       payload_at ? (const uint8_t *)data + (payload_at - text) : data,
			       have < need ? have : need);
			(void)ef_match(f, payload, need);
			if (ef_match(f, payload, need ? need - 1 : 0))
				abort(); /* a short payload matches nothing */
			free(payload);
		}
	}
out:
	free(f);
	free(text);
	return 0;
}

/* libFuzzer harness for the function-based event spec parser, and for capture and formatting of what
 * it accepts (guest memory made of the input's bytes). */
#include "host/trace/fevent.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct blob {
	const uint8_t *data;
	size_t size;
};

/* "Guest memory": the input repeated from address 0x1000; everything else faults. */
static int blob_read(void *ctx, uint64_t gva, void *buf, size_t len)
{
	struct blob *b = ctx;

	if (!b->size || gva < 0x1000 || gva - 0x1000 > (1u << 20) || len > (1u << 20))
		return -EFAULT;
	for (size_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = b->data[(gva - 0x1000 + i) % b->size];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[256], out[8192];
	struct fe_spec spec;
	size_t pos;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	if (fe_parse(text, &spec, err, sizeof(err), &pos) == 0) {
		struct blob b = {data, size};
		struct arch_regs regs = {.r[X86_RDI] = 0x1000,
					 .r[X86_RSI] = 0x1008,
					 .r[X86_RDX] = 0x2000,
					 .r[X86_RCX] = 0,
					 .r[X86_R8] = 0xffffffff81000000ull,
					 .r[X86_R9] = 0x1010,
					 .r[X86_RSP] = 0x1100};
		uint8_t *payload = malloc(fe_payload_size(&spec) + 1);

		if (payload) {
			fe_capture(arch_default(), &spec, &regs, blob_read, &b, payload);
			fe_format(out, sizeof(out), &spec, payload, NULL);
			free(payload);
		}
	} else {
		if (pos > size)
			abort(); /* the caret must point into the spec */
		fe_format_error(out, sizeof(out), text, pos, err);
	}
	free(text);
	return 0;
}

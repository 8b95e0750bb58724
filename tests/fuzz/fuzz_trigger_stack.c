/* libFuzzer harness for stacktrace's guest stack walk and its formatting: the input is the guest's
 * stack (from address 0x10000, everything else unreadable); its first 16 bytes choose RSP and RBP
 * within it, a few words of it play hooked returns. The walk must stay bounded and in range, and
 * every address it returns is the function or a text address. */
#include "host/sink/sink_trigger.h"
#include "host/trace/trigger.h"

#include <stdlib.h>
#include <string.h>

#define BASE	0x10000ull
#define TEXT_LO 0x400000ull
#define TEXT_HI 0x410000ull
#define TRAMP	0x40f000ull

struct mem {
	const uint8_t *data;
	size_t size;
};

static int mem_read(void *ctx, uint64_t gva, void *buf, size_t len)
{
	struct mem *m = ctx;

	if (gva < BASE || gva - BASE > m->size || len > m->size - (gva - BASE))
		return -1;
	memcpy(buf, m->data + (gva - BASE), len);
	return 0;
}

static uint64_t resolve(void *ctx, uint64_t slot)
{
	(void)ctx;
	return slot & 8 ? TEXT_LO + (slot & 0xfff) : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem m = {data, size};
	struct trigger_stack_cfg c = {.text_lo = TEXT_LO,
				      .text_hi = TEXT_HI,
				      .read = mem_read,
				      .ctx = &m,
				      .trampoline = TRAMP,
				      .resolve = resolve};
	uint64_t out[TRIGGER_MAX_FRAMES], sel[2] = {0, 0};
	struct vmi_symtab syms = {0};
	struct hvt_record r = {.cpu = 1, .pid = 7, .type = HVT_REC_STACK};
	char buf[TRIGGER_MAX_FRAMES * 200 + 256];
	size_t n;

	memcpy(sel, data, size < 16 ? size : 16);
	n = trigger_walk_stack(&c, TEXT_LO, BASE + sel[0] % (size + 64),
			       BASE + sel[1] % (size + 64), out, TRIGGER_MAX_FRAMES);
	if (n < 1 || n > TRIGGER_MAX_FRAMES || out[0] != TEXT_LO)
		abort();
	for (size_t i = 1; i < n; i++)
		if (out[i] < TEXT_LO || out[i] >= TEXT_HI)
			abort();
	/* symbols named by guest bytes, as a Linux guest's kallsyms are */
	if (size > 40) {
		char name[33];

		memcpy(name, data + 8, 32);
		name[32] = 0;
		vmi_symtab_add(&syms, TEXT_LO, 0x8000, name);
		vmi_symtab_add(&syms, TEXT_LO + 0x8000, 0, "second");
		vmi_symtab_sort(&syms);
	}
	memcpy(r.comm, data, size < sizeof(r.comm) ? size : sizeof(r.comm));
	int len = sink_stack_format(buf, sizeof(buf), &r, out, n, &syms);

	if (len < 0 || (size_t)len >= sizeof(buf) || memchr(buf, 0, (size_t)len))
		abort();
	vmi_symtab_free(&syms);
	return 0;
}

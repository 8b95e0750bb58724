/* --verify-text: the guest kernel's text as it was just before hvtrace's first patch, compared with
 * what it holds after the detach. hvtrace answers for the bytes it (or QEMU for it) may have
 * written: the five bytes of every probe's site, and an INT3 on the trampoline. The rest of the
 * text is the kernel's own, which a kernel traced from early boot goes on patching (alternatives,
 * return thunks, static keys): those changes are counted and shown, never blamed on hvtrace. */
#ifndef HVT_TEXT_VERIFY_H
#define HVT_TEXT_VERIFY_H

#include "host/trace/probe.h"
#include "vmi/vmi_read.h"

#include <stddef.h>
#include <stdint.h>

struct text_verify {
	uint64_t start;
	size_t len;
	uint8_t *before; /* owned */
};

struct text_verdict {
	size_t len;	  /* bytes compared */
	size_t ours;	  /* differing bytes hvtrace may have written: the verdict */
	uint64_t ours_at; /* the first of them */
	uint8_t ours_now, ours_was;
	size_t kernel;	    /* differing bytes elsewhere: the kernel's own patching */
	size_t kernel_runs; /* runs of consecutive such bytes */
	uint64_t kernel_at; /* the first of them */
};

/* Reads the reference copy of [@start, @end) through @read (the VM stopped, nothing patched yet).
 * 0, -EINVAL for an empty range, -ENOMEM, or the read's error. Main thread. */
int text_verify_begin(struct text_verify *v, vmi_read_fn read, void *ctx, uint64_t start,
		      uint64_t end);

/* Reads the text (of ISA @arch) again (after the detach, the VM stopped) and compares it with the
 * reference: differences inside a site of @probes, or a breakpoint now on @trampoline (0: none),
 * are hvtrace's (out->ours); others are the kernel's. 0 or the read's error. Main thread. */
int text_verify_end(const struct text_verify *v, const struct arch *arch, vmi_read_fn read,
		    void *ctx, const struct probe_table *probes, uint64_t trampoline,
		    struct text_verdict *out);

/* Frees the reference copy. Safe on a zeroed struct. */
void text_verify_free(struct text_verify *v);

#endif

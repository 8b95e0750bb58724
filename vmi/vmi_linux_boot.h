/* A Linux kernel loaded but not started (the embedded VMM's run --kernel): its fentry call sites as
 * the compiler left them, `call __fentry__`, listed in __mcount_loc, .init.text's included. Before
 * the first instruction the host takes a probed site from ftrace (the NOP5 ftrace would write, and
 * the site's __mcount_loc entry zeroed: ftrace_init skips a zero, so it never checks or rewrites
 * that site); after the kernel freed its init memory, the probes in .init.text are no longer
 * anybody's (vmi_linux_init_freed). Reads only, through a vmi_read_fn. */
#ifndef HVT_VMI_LINUX_BOOT_H
#define HVT_VMI_LINUX_BOOT_H

#include "vmi/vmi_linux.h"
#include "vmi/vmi_sites.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VMI_BOOT_MAX_LOCS (1u << 21) /* __mcount_loc entries (a distribution kernel has ~50k) */

struct vmi_boot {
	uint64_t loc_start; /* GVA of __mcount_loc's first entry (u64 addresses) */
	size_t nr_locs;
	uint64_t init_lo, init_hi; /* .init.text: [_sinittext, _einittext) */
	struct vmi_boot_loc {
		uint64_t site, loc; /* a site and the GVA of its __mcount_loc entry */
	} *locs;		    /* sorted by site, one per site of the vmi_sites built */
	size_t nr;
	size_t skipped; /* entries that were not a `call __fentry__` in the kernel's text */
};

/* The sites of the kernel @l describes (kallsyms or System.map, slide 0): every __mcount_loc entry
 * in _stext.._etext or .init.text whose five bytes are `call __fentry__` (others are counted in
 * b->skipped), paired with its function into @sites; @b keeps where each entry is. Returns 0, or a
 * negative errno with one line in @err (-ENOENT: a symbol is missing; -EINVAL: the table is out of
 * the image or too large; @read's). Caller frees both (vmi_linux_boot_free, vmi_sites_free). */
int vmi_linux_boot_sites(struct vmi_linux *l, vmi_read_fn read, void *ctx, struct vmi_boot *b,
			 struct vmi_sites *sites, char *err, size_t errlen);

/* The GVA of @site's __mcount_loc entry, 0 if none. Pure. */
uint64_t vmi_linux_boot_loc(const struct vmi_boot *b, uint64_t site);

/* True if the site_len bytes @bytes at @site are @a's `call __fentry__` (@fentry). Pure. */
bool vmi_linux_calls_fentry(const struct arch *a, const uint8_t *bytes, uint64_t site,
			    uint64_t fentry);

/* Boot tracing takes a site from ftrace before the kernel runs: the site's `call __fentry__`
 * becomes the NOP5 ftrace_init would have written (@nop5), and its __mcount_loc entry is zeroed so
 * that ftrace_init skips it (it would otherwise find the host's CALL where it expects its own and
 * disable itself). Whether @site may be taken: it has an __mcount_loc entry (@loc, from
 * vmi_linux_boot_loc) whose value
 * @entry (read from the guest) is @site, and its five bytes @bytes are `call __fentry__` (@fentry).
 * Pure; @bytes and @entry are the guest's, checked here. A bzImage is an x86_64 kernel. */
bool vmi_linux_boot_can_take(uint64_t site, uint64_t loc, uint64_t entry, const uint8_t bytes[5],
			     uint64_t fentry);

/* The five bytes a taken site becomes (see vmi_linux_boot_can_take). */
extern const uint8_t vmi_linux_boot_nop5[5];

/* Whether the kernel may have freed its init memory: 1 when system_state (read through @read) is
 * past SYSTEM_SCHEDULING (1; Linux >= 5.13 sets SYSTEM_FREEING_INITMEM before it frees), 0 when
 * not, -1 when it cannot be read (then assume it did). The value is the guest's word: a lie only
 * changes whether the host puts NOP5s back into the guest's .init.text, each one still checked to
 * be the host's CALL first. */
int vmi_linux_init_freed(const struct vmi_linux *l, vmi_read_fn read, void *ctx);

void vmi_linux_boot_free(struct vmi_boot *b);

#endif

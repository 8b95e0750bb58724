/* A freestanding ELF guest prepared for tracing: image, patchable sites (checked in the file) and the
 * task layout it exports. Shared by `run` and `list-functions`. */
#ifndef HVT_GUEST_IMAGE_H
#define HVT_GUEST_IMAGE_H

#include "arch/arch.h"
#include "vmi/vmi_elf.h"
#include "vmi/vmi_sites.h"
#include "vmi/vmi_task.h"

struct guest_image {
	const struct arch *arch; /* its ISA (vmi_elf opens x86_64 executables only) */
	struct vmi_elf elf;
	struct vmi_sites sites;
	struct vmi_task_layout task;
	/* built without -pg (no __mcount_loc): no fentry site at all, so every function is
	 * traceable at its first instruction (entry probes) */
	bool no_fentry;
	struct vmi_symtab c_funcs; /* its C functions, from its DWARF (vmi_dwarf.h); may be empty */
};

/* Opens @path, builds its sites and checks each is a NOP5 in the file; without __mcount_loc it has
 * none (no_fentry) and must have function symbols. Reads its C functions from its DWARF. Returns 0
 * or a negative errno with one line in @err naming the file or the site. Caller frees with
 * guest_image_close. */
int guest_image_open(struct guest_image *g, const char *path, char *err, size_t errlen);

/* Reads the image's bytes at guest-virtual @gva as loaded (a vmi_read_fn; @ctx: the struct
 * guest_image). 0 or -EFAULT outside its segments' file bytes. Any thread. */
int guest_image_read(void *ctx, uint64_t gva, void *buf, size_t len);
void guest_image_close(struct guest_image *g);

#endif

/* A freestanding ELF guest prepared for tracing: image, patchable sites (checked in the file) and the
 * task layout it exports. Shared by `run` and `list-functions`. */
#ifndef HVT_GUEST_IMAGE_H
#define HVT_GUEST_IMAGE_H

#include "vmi/vmi_elf.h"
#include "vmi/vmi_sites.h"
#include "vmi/vmi_task.h"

struct guest_image {
	struct vmi_elf elf;
	struct vmi_sites sites;
	struct vmi_task_layout task;
};

/* Opens @path, builds its sites and checks each is a NOP5 in the file. Returns 0 or a negative errno with
 * one line in @err naming the file or the site. Caller frees with guest_image_close. */
int guest_image_open(struct guest_image *g, const char *path, char *err, size_t errlen);
void guest_image_close(struct guest_image *g);

#endif

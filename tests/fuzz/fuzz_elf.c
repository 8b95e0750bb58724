/* libFuzzer harness for the ELF reader (vmi_elf_open_mem, libelf's elf_memory): the input is the
 * file. What it accepts goes through what the embedded VMM's guest image does with it: sites from
 * __mcount_loc paired with functions, each site's bytes found in the file and checked for a NOP5.
 */
#include "vmi/vmi_elf.h"
#include "vmi/vmi_sites.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	struct vmi_elf img;
	struct vmi_sites sites;
	char err[256];

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (vmi_elf_open_mem(&img, copy, size, "fuzz.elf", 0, err, sizeof(err)) < 0)
		return 0; /* the buffer is the image's, freed with it */
	for (size_t i = 0; i < img.nr_segs; i++)
		if (img.segs[i].data < img.file ||
		    img.segs[i].filesz > img.file_size - (size_t)(img.segs[i].data - img.file))
			abort(); /* every segment lies inside the file */
	for (size_t i = 0; i < img.nr_segs; i++)
		for (size_t j = i + 1; j < img.nr_segs; j++) {
			const struct vmi_segment *a = &img.segs[i], *b = &img.segs[j];

			if (a->filesz > a->memsz)
				abort(); /* file bytes fit in memory */
			if (a->memsz && b->memsz &&
			    ((a->vaddr <= b->vaddr && b->vaddr - a->vaddr < a->memsz) ||
			     (b->vaddr <= a->vaddr && a->vaddr - b->vaddr < b->memsz)))
				abort(); /* no two PT_LOADs overlap (issue 37) */
		}
	if (vmi_sites_build(&sites, img.mcount, img.nr_mcount, &img.funcs) == 0) {
		for (size_t i = 0; i < sites.nr; i++) {
			const uint8_t *b = vmi_elf_bytes_at(&img, sites.v[i].addr, 5);

			if (b)
				vmi_site_check(arch_default(), &sites.v[i], b, err, sizeof(err));
		}
		vmi_sites_free(&sites);
	}
	vmi_symtab_lookup(&img.funcs, img.entry);
	vmi_symtab_find(&img.objects, "hvt_tasks");
	vmi_elf_bytes_at(&img, img.entry, 16);
	vmi_elf_close(&img);
	return 0;
}

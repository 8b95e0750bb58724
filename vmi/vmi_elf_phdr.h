/* The first checks of an ELF64 image, on its raw bytes before libelf sees it: the ELF header's
 * identification, and the program header table as a whole (where it lies, how many entries, each
 * PT_LOAD inside the file and consistent, no two PT_LOADs overlapping). Each defect is named:
 * which header, which field. */
#ifndef HVT_VMI_ELF_PHDR_H
#define HVT_VMI_ELF_PHDR_H

#include <stddef.h>
#include <stdint.h>

/* Most PT_LOAD program headers an image may have. */
#define VMI_ELF_MAX_LOADS 4096

/* One PT_LOAD of an image. */
struct vmi_segment {
	uint64_t paddr, vaddr;
	uint64_t filesz, memsz;
	const uint8_t *data; /* filesz bytes, points into the image's file buffer */
};

/* Whether the @size bytes at @file start with the identification of a little-endian ELF64 file
 * and hold its whole ELF header: 0, or -ENOEXEC with one line in @err naming @path ("PATH: not an
 * ELF64 file"). Reads at most the 64 bytes of the header. Pure. */
int vmi_elf_check_ident(const uint8_t *file, size_t size, const char *path, char *err,
			size_t errlen);

/* The PT_LOAD segments of the ELF64 image @file (@size bytes, vmi_elf_check_ident passed), after
 * checking the program header table as a whole: e_phentsize, e_phnum (PN_XNUM resolved through
 * section header 0), the table inside the file, and for each PT_LOAD p_filesz <= p_memsz, its file
 * bytes inside the file, no address range wrapping around, no overlap with another PT_LOAD in
 * virtual or physical addresses. Returns the count with a malloc'd array in *@segs (pointing into
 * @file; NULL when there is none), or -ENOEXEC / -ENOMEM with one line in @err naming @path, the
 * header and the field. Pure. */
long vmi_elf_load_segments(const uint8_t *file, size_t size, const char *path,
			   struct vmi_segment **segs, char *err, size_t errlen);

#endif

/* A guest image read from an ELF64 x86_64 file with libelf: loadable segments, function symbols,
 * patchable sites (__mcount_loc) and data symbols the tracer needs. */
#ifndef HVT_VMI_ELF_H
#define HVT_VMI_ELF_H

#include "vmi/vmi_elf_phdr.h"
#include "vmi/vmi_file.h"
#include "vmi/vmi_symtab.h"

#include <stddef.h>
#include <stdint.h>

/* Largest ELF file vmi_elf_open takes (a vmlinux with its debug information fits). */
#define VMI_ELF_MAX_SIZE (4ull << 30)

struct vmi_elf {
	char *path;
	const uint8_t *file; /* whole file: @map's, or @owned */
	size_t file_size;
	struct vmi_file_map map; /* vmi_elf_open: the file mapped read-only */
	uint8_t *owned;		 /* vmi_elf_open_mem: the caller's buffer, taken over */
	uint64_t entry;
	struct vmi_segment *segs;
	size_t nr_segs;
	struct vmi_symtab funcs;   /* STT_FUNC symbols */
	struct vmi_symtab objects; /* STT_OBJECT symbols */
	uint64_t *mcount;	   /* addresses listed in __mcount_loc, sorted */
	size_t nr_mcount;
};

/* Maps @path read-only (vmi_file_map: a regular file of at most VMI_ELF_MAX_SIZE bytes, opened
 * without blocking), checks its ELF header and program headers (vmi_elf_phdr.h) before libelf reads
 * it. Returns 0, or a negative errno with a one-line reason in @err (naming the file): -ENOENT
 * missing, -EINVAL not a regular file, -EFBIG too large, -ENOEXEC not an ELF64 x86_64 executable
 * or a defect of its program headers, -ENODATA no __mcount_loc section.
 * Without @need_mcount the missing section is not an error. The caller owns @img (vmi_elf_close).
 */
int vmi_elf_open(struct vmi_elf *img, const char *path, int need_mcount, char *err, size_t errlen);

/* Same as vmi_elf_open on the @size bytes at @file (malloc'ed; @img owns them from now on, also on
 * failure), named @path in messages. Any thread; touches no file. */
int vmi_elf_open_mem(struct vmi_elf *img, uint8_t *file, size_t size, const char *path,
		     int need_mcount, char *err, size_t errlen);

/* The file bytes at guest-virtual @vaddr, @len long, if a segment's file image holds them; else
 * NULL. */
const uint8_t *vmi_elf_bytes_at(const struct vmi_elf *img, uint64_t vaddr, size_t len);

void vmi_elf_close(struct vmi_elf *img);

#endif

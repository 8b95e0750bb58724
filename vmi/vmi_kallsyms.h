/* The kernel's own symbol table, rebuilt from the compressed kallsyms tables in guest memory
 * (kallsyms_token_table/_index, _markers, _names, _num_syms, _offsets + _relative_base), found by
 * their shape in the kernel image: no System.map or vmlinux needed. Knows the 6.1 layout and the
 * newer ones (seqs_of_names after markers from 6.2; offsets and relative_base after token_index
 * from 6.4; from 7.0 labels aligned to 4, not 8, and place-relative offsets with no
 * relative_base), checking each by the shape it gives, and 2-byte name lengths. Every value read
 * from the guest is bounded: a hostile or half-written table gives an error, never a crash or an
 * endless loop. */
#ifndef HVT_VMI_KALLSYMS_H
#define HVT_VMI_KALLSYMS_H

#include "vmi/vmi_read.h"

#include <stddef.h>
#include <stdint.h>

#define VMI_KALLSYMS_NAME_MAX  511	    /* longest name (KSYM_NAME_LEN - 1) */
#define VMI_KALLSYMS_MAX_SYMS  (1u << 22)   /* most symbols accepted */
#define VMI_KALLSYMS_MAX_IMAGE (256u << 20) /* most bytes of kernel image read from the guest */
#define VMI_KALLSYMS_MAX_READS 65536u	    /* most reads one search makes */

/* One symbol: its runtime address (per-CPU ones: their offset in the per-CPU section), type letter
 * (t, T, d, b, r, ...) and NUL-terminated name (at most VMI_KALLSYMS_NAME_MAX bytes). Returns 0 or
 * a negative errno, which stops the decoding and is returned. */
typedef int (*vmi_kallsyms_fn)(void *ctx, uint64_t addr, char type, const char *name);

/* Decodes the kallsyms tables inside @img (@len bytes of the kernel image, mapped at @base: the
 * tables' alignment (4 or 8) is taken relative to @base, which is 8-aligned), calling @add for each
 * symbol in table order. Pure: any thread. Returns the number of symbols, -ENOENT (no kallsyms
 * tables found:
 * "<why>" in @err), -EINVAL (tables found but inconsistent, @err names what and where), or @add's
 * error. */
long vmi_kallsyms_decode(const uint8_t *img, size_t len, uint64_t base, vmi_kallsyms_fn add,
			 void *actx, char *err, size_t errlen);

/* Finds the kernel image in the kernel-image mapping (0xffffffff80000000, 1 GiB, 2 MiB-aligned),
 * reads it through @read (unmapped pages read as zeros, within VMI_KALLSYMS_MAX_READS reads and
 * VMI_KALLSYMS_MAX_IMAGE bytes), and decodes it as vmi_kallsyms_decode. The image is what is mapped
 * there (the kernel's own page tables map _text to _end alone); where more than
 * VMI_KALLSYMS_MAX_IMAGE is (a linear map of RAM: the boot's page tables, or the embedded VMM's
 * loader), the tables are looked for 64 MiB at a time in each mapped run and the image is then
 * the extent its own symbols give (_text to _end, else to the highest). Returns as
 * vmi_kallsyms_decode, or -ESRCH when nothing of the image is mapped (a kernel not up yet), -ENOENT
 * when no run of a linear map holds the tables, -E2BIG past the budgets (the image by its symbols
 * included), or -EINTR as soon as @read fails so. Caller's thread. */
long vmi_kallsyms_read(vmi_read_fn read, void *ctx, vmi_kallsyms_fn add, void *actx, char *err,
		       size_t errlen);

/* Reads the kernel image at @base (@size bytes, whole pages, at most VMI_KALLSYMS_MAX_IMAGE) through
 * @read (unmapped pages read as zeros, within VMI_KALLSYMS_MAX_READS reads, @reads of them spent
 * already) and decodes it as vmi_kallsyms_decode: for an ISA whose image is found another way
 * (arm64: vmi_linux_arm64_image). Returns as vmi_kallsyms_read. Caller's thread. */
long vmi_kallsyms_read_range(vmi_read_fn read, void *ctx, uint64_t base, size_t size,
			     unsigned reads, vmi_kallsyms_fn add, void *actx, char *err,
			     size_t errlen);

#endif

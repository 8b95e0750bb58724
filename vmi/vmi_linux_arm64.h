/* Where an arm64 Linux kernel's image lies in its virtual address space. The image (KASLR puts it
 * anywhere in a 52-bit space, 2 MiB aligned) starts with the arm64 boot header, which stays in
 * memory: the magic "ARM\x64" at 0x38 and the image's size at 0x10. Found from an address inside
 * the image's text (a vCPU's PC in the kernel), walking down 2 MiB at a time. */
#ifndef HVT_VMI_LINUX_ARM64_H
#define HVT_VMI_LINUX_ARM64_H

#include "vmi/vmi_read.h"

#include <stddef.h>
#include <stdint.h>

#define VMI_ARM64_IMAGE_ALIGN (2ull << 20)
#define VMI_ARM64_IMAGE_MAX   (256ull << 20) /* how far below @hint the header may lie */

/* The image holding @hint: its first address into *@base and its size (the header's, rounded up to
 * whole 4 KiB pages) into *@size. Where the header is not mapped (6.1 maps the kernel from _stext,
 * 64 KiB above it), the run of mapped 64 KiB steps around @hint instead: down to the first unmapped
 * one, and up to the first unmapped one (the init segment, unmapped once freed, ends it: the text
 * and rodata, where kallsyms lies, are in it). 0; -ESRCH with @err when nothing around @hint is
 * mapped; -EINVAL for a header whose size does not hold @hint or is past the bound; -EINTR from
 * @read. Calls only @read. */
int vmi_linux_arm64_image(vmi_read_fn read, void *ctx, uint64_t hint, uint64_t *base,
			  uint64_t *size, char *err, size_t errlen);

/* saved_command_line (a char *), which a kernel without KALLSYMS_ALL leaves out of kallsyms, from
 * the code of the function that prints it for /proc/cmdline (@funcs' cmdline_proc_show): its first
 * ADRP Xn followed within four instructions by LDR Xm, [Xn, #off] (the pointer's load), the address
 * they form within max(@size, 1 GiB) past the image's start @base (the range kallsyms gives a
 * 6.1 image found without its header ends with its text), put in @objects. Nothing when it is already
 * there, when the function is not, or when its code has no such pair. Calls only @read. */
struct vmi_symtab;
void vmi_linux_arm64_cmdline(struct vmi_symtab *objects, const struct vmi_symtab *funcs,
			     vmi_read_fn read, void *ctx, uint64_t base, uint64_t size);

/* The `modules` list head (a struct list_head), which a kernel without KALLSYMS_ALL leaves out of
 * kallsyms, from the code of /proc/modules' m_next (@funcs'), which passes its address to
 * seq_list_next in x1: its first ADRP X1 followed within four instructions by ADD X1, X1, #off,
 * the address within max(@size, 1 GiB) past @base, 8-byte aligned, its two pointers kernel
 * addresses (both the head itself for an empty list, or neither), put in @objects as `modules`.
 * Nothing when it is already there, when the function is not, or when its code or the list has
 * another shape (the module walk bounds and checks every entry further). Calls only @read. */
void vmi_linux_arm64_modules(struct vmi_symtab *objects, const struct vmi_symtab *funcs,
			     vmi_read_fn read, void *ctx, uint64_t base, uint64_t size);

/* What a kernel built without KALLSYMS_ALL (Debian's 6.1 arm64) leaves out of kallsyms and hvtrace
 * reads: linux_banner (the "Linux version " string) and __start_BTF/__stop_BTF (the vmlinux BTF
 * blob: magic 0xeb9f, version 1, a 24-byte header, types then strings), found by their shape in
 * [@base, @base + @size) and put in @objects under those names. Each one found only if absent;
 * nothing when the image cannot be read. Calls only @read. */
struct vmi_symtab;
void vmi_linux_arm64_missing(struct vmi_symtab *objects, vmi_read_fn read, void *ctx,
			     uint64_t base, uint64_t size);

#endif

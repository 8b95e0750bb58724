/* Booting a Linux kernel directly in 64-bit mode (the x86 64-bit boot protocol, as Firecracker and
 * kvmtool do for vmlinux): the guest-physical layout, the e820 map, boot_params ("zero page"), the
 * kernel ELF's loadable segments and the boot GDT. Pure: everything is written into a host buffer
 * that is the guest's RAM. */
#ifndef HVT_LINUX_BOOT_H
#define HVT_LINUX_BOOT_H

#include "host/kvm/bzimage.h"

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* Guest-physical layout below 1 MiB (the kernel reserves that MiB itself). */
#define LB_GDT_GPA 0x6000ull	   /* the boot GDT: __BOOT_CS 0x10, __BOOT_DS 0x18 */
#define LB_ZERO_PAGE_GPA 0x7000ull /* boot_params, RSI at entry */
#define LB_CMDLINE_GPA 0x20000ull  /* the command line, NUL-terminated */
#define LB_CMDLINE_MAX 0x10000ull
/* the stub's page directory and page table (host/kvm/target_kvm.c): RAM the kernel's direct map
 * covers, so its page-table walkers (ptdump's W+X check) can read them, in the first MiB, which Linux
 * >= 5.13 reserves whole and never allocates from but for the real-mode trampoline (top-down, near
 * LB_LOWMEM_END) */
#define LB_STUB_PT_GPA 0x10000ull
#define LB_STUB_PT_SIZE 0x2000ull
#define LB_ACPI_GPA 0xe0000ull /* RSDP, then the ACPI tables (host/kvm/acpi.h), up to 1 MiB */
#define LB_LOWMEM_END 0x9f000ull
#define LB_HIGH_GPA 0x100000ull

#define LB_BOOT_CS 0x10
#define LB_BOOT_DS 0x18
#define LB_GDT_ENTRIES 4

#define E820_RAM 1
#define E820_RESERVED 2
#define E820_MAX 128 /* boot_params holds that many */

struct e820_entry {
	uint64_t addr, size;
	uint32_t type;
};

/* The e820 map of a guest with @ram_size bytes of RAM whose top from @reserved_gpa belongs to the
 * VMM: RAM below 0x9f000, reserved up to 1 MiB (ACPI tables there), RAM from 1 MiB to @reserved_gpa,
 * reserved above. Writes at most @max entries to @e; returns the count. */
unsigned lboot_e820(uint64_t ram_size, uint64_t reserved_gpa, struct e820_entry *e, unsigned max);

/* Copies the loadable segments of the kernel ELF @elf (@len bytes) to their physical addresses in
 * @ram, which must end below @limit; *@entry is the ELF entry (startup_64, physical), *@end the end of
 * the highest segment. Returns 0, or -EINVAL/-ERANGE with one line in @err. */
int lboot_load_elf(uint8_t *ram, uint64_t limit, const uint8_t *elf, size_t len, uint64_t *entry,
		   uint64_t *end, char *err, size_t errlen);

struct lboot_params {
	const struct bzimage *bz;
	uint64_t cmdline_gpa;
	uint64_t initrd_gpa, initrd_size; /* 0, 0: none */
	uint64_t rsdp_gpa;		  /* 0: none */
	const struct e820_entry *e820;
	unsigned nr_e820;
};

/* Fills the 4096-byte @zp as boot_params: the file's setup header, type_of_loader 0xff, the command
 * line's and initrd's addresses (also their 64-bit extensions), the RSDP (acpi_rsdp_addr) and the
 * e820 map. Pure. */
void lboot_zero_page(uint8_t zp[4096], const struct lboot_params *p);

/* Writes the boot GDT (LB_GDT_ENTRIES descriptors: null, null, 64-bit code, data) to @gdt. */
void lboot_gdt(uint64_t gdt[LB_GDT_ENTRIES]);

/* Whether a kernel booted with command line @cmdline reboots by a triple fault: its last reboot=
 * parameter's last type option is 't' (Linux's reboot_setup: comma-separated options, each known by
 * its first letter; b, a, k, t, e, p choose the way). Otherwise it resets through ACPI or the
 * 8042 (the default), and a triple fault is a crash. Pure. */
bool lboot_reboots_by_triple_fault(const char *cmdline);

#endif

/* The Linux guest's own E820 table (Linux's e820.c: `struct e820_table *e820_table`, a u32
 * count, then packed 20-byte entries {u64 addr, u64 size, u32 type}), read from guest memory to
 * prove that a RAM range hvtrace asked the kernel to reserve (memmap=SIZE$ADDR) really is reserved:
 * the kernel neither allocates nor maps E820 reserved ranges. Every value is the guest's: bounded.
 */
#ifndef HVT_VMI_LINUX_E820_H
#define HVT_VMI_LINUX_E820_H

#include "vmi/vmi_read.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VMI_E820_ENTRY_SIZE 20
#define VMI_E820_MAX	    512 /* entries read at most (the kernel's: 128 + 3 per node) */
#define VMI_E820_RAM	    1
#define VMI_E820_RESERVED   2

/* Whether the table image @tbl (@len bytes: the count, then the entries) has one entry of @type
 * covering all of [@gpa, @gpa + @size) and no entry of another type overlapping it. Pure. */
bool vmi_linux_e820_covers(const uint8_t *tbl, size_t len, uint64_t gpa, uint64_t size,
			   uint32_t type);

/* A RAM range reserved on the kernel command line (memmap=SIZE$ADDR) of a guest hvtrace did not
 * start: the largest E820 reserved entry of the kernel's table @cur that its firmware table @fw (as
 * the boot loader passed it, e820_table_firmware) shows as RAM, above 1 MiB, trimmed to 2 MiB
 * boundaries, at least 2 MiB. Pure. True with *@gpa and *@size. */
bool vmi_linux_e820_user_reserved(const uint8_t *cur, size_t cur_len, const uint8_t *fw,
				  size_t fw_len, uint64_t *gpa, uint64_t *size);

/* Reads the table the kernel pointer at @ptr_addr (the e820_table symbol) points to into @buf
 * (@len bytes, at most the count's worth). Returns the bytes read (>= 4) or -EFAULT. */
long vmi_linux_e820_read(vmi_read_fn read, void *ctx, uint64_t ptr_addr, uint8_t *buf, size_t len);

#endif

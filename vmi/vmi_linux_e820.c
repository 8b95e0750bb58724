/* The Linux guest's E820 table read from its memory, and what it says of a RAM range. */
#include "vmi/vmi_linux_e820.h"

#include <errno.h>
#include <string.h>

/* Entries of the table image @tbl (@len >= 4 bytes): its count, no more than the bytes hold. */
static uint32_t entries(const uint8_t *tbl, size_t len)
{
	uint32_t nr;

	memcpy(&nr, tbl, 4);
	if (nr > (len - 4) / VMI_E820_ENTRY_SIZE)
		nr = (uint32_t)((len - 4) / VMI_E820_ENTRY_SIZE);
	return nr;
}

/* Entry @i (< entries()) of @tbl. */
static void entry(const uint8_t *tbl, uint32_t i, uint64_t *addr, uint64_t *size, uint32_t *type)
{
	const uint8_t *e = tbl + 4 + (size_t)i * VMI_E820_ENTRY_SIZE;

	memcpy(addr, e, 8);
	memcpy(size, e + 8, 8);
	memcpy(type, e + 16, 4);
}

bool vmi_linux_e820_covers(const uint8_t *tbl, size_t len, uint64_t gpa, uint64_t size,
			   uint32_t type)
{
	uint32_t nr;
	bool covered = false;

	if (len < 4 || !size || gpa + size < gpa)
		return false;
	nr = entries(tbl, len);
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t addr, sz, end;
		uint32_t t;

		entry(tbl, i, &addr, &sz, &t);
		end = addr + sz < addr ? UINT64_MAX : addr + sz;
		if (end <= gpa || addr >= gpa + size)
			continue; /* no overlap */
		if (t != type)
			return false;
		if (addr <= gpa && end >= gpa + size)
			covered = true;
	}
	return covered;
}

#define MIB1 (1ull << 20)
#define MIB2 (2ull << 20)

bool vmi_linux_e820_user_reserved(const uint8_t *cur, size_t cur_len, const uint8_t *fw,
				  size_t fw_len, uint64_t *gpa, uint64_t *size)
{
	uint32_t nr;
	bool found = false;

	if (cur_len < 4)
		return false;
	nr = entries(cur, cur_len);
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t addr, sz, lo, hi;
		uint32_t t;

		entry(cur, i, &addr, &sz, &t);
		if (t != VMI_E820_RESERVED || addr < MIB1 || addr + sz < addr ||
		    addr > UINT64_MAX - MIB2)
			continue;
		lo = (addr + MIB2 - 1) & ~(MIB2 - 1);
		hi = (addr + sz) & ~(MIB2 - 1);
		if (hi <= lo || hi - lo < MIB2 || (found && hi - lo <= *size))
			continue;
		/* the whole entry, not just the part used: RAM as the firmware said, and still
		 * reserved as a whole in the kernel's table */
		if (!vmi_linux_e820_covers(fw, fw_len, addr, sz, VMI_E820_RAM) ||
		    !vmi_linux_e820_covers(cur, cur_len, lo, hi - lo, VMI_E820_RESERVED))
			continue;
		*gpa = lo;
		*size = hi - lo;
		found = true;
	}
	return found;
}

long vmi_linux_e820_read(vmi_read_fn read, void *ctx, uint64_t ptr_addr, uint8_t *buf, size_t len)
{
	uint64_t tbl;
	uint32_t nr;
	size_t want;

	if (len < 4 || read(ctx, ptr_addr, &tbl, 8) < 0 || read(ctx, tbl, &nr, 4) < 0)
		return -EFAULT;
	want = 4 + (size_t)(nr < VMI_E820_MAX ? nr : VMI_E820_MAX) * VMI_E820_ENTRY_SIZE;
	if (want > len)
		want = len;
	if (read(ctx, tbl, buf, want) < 0)
		return -EFAULT;
	return (long)want;
}

#include "host/qemu/qemu_e820.h"

#include <errno.h>
#include <string.h>

bool qemu_e820_covers(const uint8_t *tbl, size_t len, uint64_t gpa, uint64_t size, uint32_t type)
{
	uint32_t nr;
	bool covered = false;

	if (len < 4 || !size || gpa + size < gpa)
		return false;
	memcpy(&nr, tbl, 4);
	if (nr > (len - 4) / QEMU_E820_ENTRY_SIZE)
		nr = (uint32_t)((len - 4) / QEMU_E820_ENTRY_SIZE);
	for (uint32_t i = 0; i < nr; i++) {
		const uint8_t *e = tbl + 4 + (size_t)i * QEMU_E820_ENTRY_SIZE;
		uint64_t addr, sz, end;
		uint32_t t;

		memcpy(&addr, e, 8);
		memcpy(&sz, e + 8, 8);
		memcpy(&t, e + 16, 4);
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

bool qemu_e820_user_reserved(const uint8_t *cur, size_t cur_len, const uint8_t *fw, size_t fw_len,
			     uint64_t *gpa, uint64_t *size)
{
	uint32_t nr;
	bool found = false;

	if (cur_len < 4)
		return false;
	memcpy(&nr, cur, 4);
	if (nr > (cur_len - 4) / QEMU_E820_ENTRY_SIZE)
		nr = (uint32_t)((cur_len - 4) / QEMU_E820_ENTRY_SIZE);
	for (uint32_t i = 0; i < nr; i++) {
		const uint8_t *e = cur + 4 + (size_t)i * QEMU_E820_ENTRY_SIZE;
		uint64_t addr, sz, lo, hi;
		uint32_t t;

		memcpy(&addr, e, 8);
		memcpy(&sz, e + 8, 8);
		memcpy(&t, e + 16, 4);
		if (t != QEMU_E820_RESERVED || addr < MIB1 || addr + sz < addr ||
		    addr > UINT64_MAX - MIB2)
			continue;
		lo = (addr + MIB2 - 1) & ~(MIB2 - 1);
		hi = (addr + sz) & ~(MIB2 - 1);
		if (hi <= lo || hi - lo < MIB2 || (found && hi - lo <= *size))
			continue;
		/* the whole entry, not just the part used: RAM as the firmware said, and still
		 * reserved as a whole in the kernel's table */
		if (!qemu_e820_covers(fw, fw_len, addr, sz, QEMU_E820_RAM) ||
		    !qemu_e820_covers(cur, cur_len, lo, hi - lo, QEMU_E820_RESERVED))
			continue;
		*gpa = lo;
		*size = hi - lo;
		found = true;
	}
	return found;
}

long qemu_e820_read(vmi_read_fn read, void *ctx, uint64_t ptr_addr, uint8_t *buf, size_t len)
{
	uint64_t tbl;
	uint32_t nr;
	size_t want;

	if (len < 4 || read(ctx, ptr_addr, &tbl, 8) < 0 || read(ctx, tbl, &nr, 4) < 0)
		return -EFAULT;
	want = 4 + (size_t)(nr < QEMU_E820_MAX ? nr : QEMU_E820_MAX) * QEMU_E820_ENTRY_SIZE;
	if (want > len)
		want = len;
	if (read(ctx, tbl, buf, want) < 0)
		return -EFAULT;
	return (long)want;
}

#include "arch/arm64/arm64_pagewalk.h"

#include <errno.h>
#include <stdbool.h>

unsigned arm64_mode_of_tcr(uint64_t tcr, bool upper)
{
	unsigned tsz = (unsigned)(tcr >> (upper ? 16 : 0)) & 0x3f;
	unsigned tg = (unsigned)(tcr >> (upper ? 30 : 14)) & 3, gshift;
	unsigned ds = (unsigned)(tcr >> 59) & 1;

	if (upper) /* TG1: 1 16 KiB, 2 4 KiB, 3 64 KiB */
		gshift = tg == 1 ? 14 : tg == 2 ? 12 : tg == 3 ? 16 : 0;
	else /* TG0: 0 4 KiB, 1 64 KiB, 2 16 KiB */
		gshift = tg == 0 ? 12 : tg == 1 ? 16 : tg == 2 ? 14 : 0;
	/* 52-bit inputs (TnSZ < 16) need LPA2 with 4 and 16 KiB granules; 64 KiB has them (LVA) */
	if (!gshift || tsz > 48 || tsz < 12 || (tsz < 16 && gshift != 16 && !ds))
		return 0;
	return (64 - tsz) | gshift << 8 | ds << 16;
}

/* The output address a descriptor (or TTBR) holds, aligned to @align_shift, with the high bits of
 * a 52-bit address where the format puts them. */
static uint64_t out_addr(uint64_t d, unsigned gshift, bool ds, unsigned align_shift)
{
	uint64_t a;

	if (ds) /* LPA2 (4 and 16 KiB granules): OA[49:shift] in place, OA[51:50] in bits 9:8 */
		a = (d & 0x0003fffffffff000ull) | ((d >> 8) & 3) << 50;
	else if (gshift == 16) /* 64 KiB granule: OA[51:48] in bits 15:12 */
		a = (d & 0x0000ffffffff0000ull) | ((d >> 12) & 0xf) << 48;
	else
		a = d & 0x0000fffffffff000ull;
	return a & ~((1ull << align_shift) - 1);
}

/* Whether a block descriptor is legal at @level of a walk with granule shift @g. */
static bool block_ok(unsigned g, bool ds, int level)
{
	if (level == 2)
		return true;
	if (level == 1)
		return g != 14 || ds;
	return level == 0 && g == 12 && ds;
}

int arm64_translate(arm64_read_pte_fn read, void *ctx, uint64_t ttbr, unsigned mode, uint64_t gva,
		    uint64_t *gpa)
{
	unsigned ia = ARM64_MODE_IA(mode), g = ARM64_MODE_GSHIFT(mode), stride;
	bool ds = ARM64_MODE_DS(mode);
	int levels, level;
	uint64_t table;

	if ((g != 12 && g != 14 && g != 16) || ia <= g || ia > 52)
		return -EINVAL;
	ds = ds && g != 16; /* TCR_EL1.DS means nothing with 64 KiB pages */
	if (ia > 48 && g != 16 && !ds)
		return -EINVAL; /* no level -1 (4 KiB) or 52-bit level 0 (16 KiB) without LPA2 */
	stride = g - 3;
	levels = (int)((ia - g + stride - 1) / stride);
	/* the address must be of its half: bits ia..55 all equal (the top byte may be a tag) */
	{
		uint64_t top = (gva << 8) >> (8 + ia), ones = (1ull << (56 - ia)) - 1;

		if (top != 0 && top != ones)
			return -EFAULT;
	}
	/* TTBR: BADDR[47:1] (a start table smaller than 64 bytes has address bits in 5:1); with
	 * 52-bit output addresses the table is 64-byte aligned and bits 5:2 hold BADDR[51:48] */
	table = ttbr & 0x0000fffffffffffeull;
	if (ds || (g == 16 && ia == 52))
		table = (table & ~0x3full) | ((ttbr >> 2) & 0xf) << 48;
	for (level = 4 - levels; level <= 3; level++) {
		unsigned shift = g + stride * (unsigned)(3 - level);
		unsigned bits = level == 4 - levels ? ia - shift : stride;
		uint64_t idx = (gva >> shift) & ((1ull << bits) - 1), d;

		if (read(ctx, table + idx * 8, &d) < 0)
			return -EFAULT;
		if (!(d & 1))
			return -EFAULT;
		if (level == 3) {
			if (!(d & 2))
				return -EFAULT; /* reserved at level 3 */
			*gpa = out_addr(d, g, ds, g) | (gva & ((1ull << g) - 1));
			return 0;
		}
		if (!(d & 2)) { /* a block: 4 KiB at levels 1-2 (0 with LPA2), 16 KiB at 2 (1 with
				 * LPA2), 64 KiB at 1-2; elsewhere the descriptor is reserved */
			if (!block_ok(g, ds, level))
				return -EFAULT;
			*gpa = out_addr(d, g, ds, shift) | (gva & ((1ull << shift) - 1));
			return 0;
		}
		table = out_addr(d, g, ds, g);
	}
	return -EFAULT;
}

int arm64_walk_to(arm64_read_pte_fn read, void *ctx, uint64_t ttbr, unsigned mode, uint64_t gva,
		  int stop, uint64_t *at, int *level)
{
	unsigned ia = ARM64_MODE_IA(mode), g = ARM64_MODE_GSHIFT(mode), stride;
	bool ds = ARM64_MODE_DS(mode);
	int levels, lv;
	uint64_t table;

	if ((g != 12 && g != 14 && g != 16) || ia <= g || ia > 52 || stop < 2 || stop > 3)
		return -EINVAL;
	ds = ds && g != 16;
	if (ia > 48 && g != 16 && !ds)
		return -EINVAL;
	stride = g - 3;
	levels = (int)((ia - g + stride - 1) / stride);
	{
		uint64_t top = (gva << 8) >> (8 + ia), ones = (1ull << (56 - ia)) - 1;

		if (top != 0 && top != ones)
			return -EFAULT;
	}
	table = ttbr & 0x0000fffffffffffeull;
	if (ds || (g == 16 && ia == 52))
		table = (table & ~0x3full) | ((ttbr >> 2) & 0xf) << 48;
	for (lv = 4 - levels; lv <= 3; lv++) {
		unsigned shift = g + stride * (unsigned)(3 - lv);
		unsigned bits = lv == 4 - levels ? ia - shift : stride;
		uint64_t idx = (gva >> shift) & ((1ull << bits) - 1), d;

		*at = table + idx * 8;
		*level = lv;
		if (lv == stop)
			return 0;
		if (read(ctx, *at, &d) < 0 || !(d & 1))
			return -EFAULT;
		if (!(d & 2))
			return block_ok(g, ds, lv) ? 0 : -EFAULT; /* a block above @stop */
		table = out_addr(d, g, ds, g);
	}
	return -EFAULT;
}

uint64_t arm64_level2_span(unsigned mode)
{
	unsigned g = ARM64_MODE_GSHIFT(mode);

	return g ? 1ull << (g + (g - 3)) : 0;
}

#define DESC_AP1    (1ull << 6)
#define DESC_AP2    (1ull << 7)
#define DESC_GP	    (1ull << 50)
#define DESC_DBM    (1ull << 51)
#define DESC_CONTIG (1ull << 52)
#define DESC_PXN    (1ull << 53)
#define DESC_UXN    (1ull << 54)

int arm64_pie_index(uint64_t pir, uint64_t pire0, unsigned el1_perm)
{
	for (unsigned i = 0; i < 16; i++)
		if (((pir >> (4 * i)) & 0xf) == el1_perm && !((pire0 >> (4 * i)) & 0xf))
			return (int)i;
	return -1;
}

uint64_t arm64_desc_set_pi(uint64_t d, unsigned pi)
{
	d &= ~(DESC_UXN | DESC_PXN | DESC_DBM | DESC_AP1);
	return d | (pi & 8 ? DESC_UXN : 0) | (pi & 4 ? DESC_PXN : 0) | (pi & 2 ? DESC_DBM : 0) |
	       (pi & 1 ? DESC_AP1 : 0);
}

bool arm64_desc_guarded(uint64_t leaf)
{
	return (leaf & 1) && (leaf & DESC_GP);
}

uint64_t arm64_block_desc(uint64_t leaf, int leaf_level, unsigned mode, uint64_t pa, bool exec)
{
	unsigned g = ARM64_MODE_GSHIFT(mode);
	bool ds = ARM64_MODE_DS(mode) && g != 16;
	uint64_t span = arm64_level2_span(mode), d;

	if (!span || (pa & (span - 1)) || !(leaf & 1) || ((leaf & 2) != 0) != (leaf_level == 3))
		return 0;
	/* attributes: AttrIndx, NS, AP, SH (not with LPA2: OA[51:50] there), AF, nG; the upper ones
	 * but the output address, contiguous, dirty-state and execute-never bits */
	d = leaf & (ds ? 0xcfcull : 0xffcull);
	d |= leaf & 0xfff8000000000000ull & ~(DESC_DBM | DESC_CONTIG | DESC_PXN | DESC_UXN);
	d &= ~(DESC_AP2 | DESC_GP);
	d |= DESC_UXN | (exec ? DESC_AP2 : DESC_PXN) | 1; /* a block: bits 1:0 = 01 */
	if (ds) /* OA[49:shift] in place, OA[51:50] in bits 9:8 */
		d |= (pa & 0x0003ffffffffffffull) | ((pa >> 50) & 3) << 8;
	else if (g == 16)
		d |= (pa & 0x0000ffffffffffffull) | ((pa >> 48) & 0xf) << 12;
	else
		d |= pa & 0x0000ffffffffffffull;
	return d;
}

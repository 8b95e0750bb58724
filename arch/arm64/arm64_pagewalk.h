/* The arm64 stage-1 page walk of one translation regime half (TTBR0_EL1 or TTBR1_EL1 with the
 * matching TCR_EL1 fields): 4, 16 or 64 KiB granules, 25- to 52-bit input addresses, LPA2
 * descriptors (TCR_EL1.DS) and 64 KiB-granule 52-bit output addresses, blocks at any level the
 * granule allows. Pure. */
#ifndef HVT_ARM64_PAGEWALK_H
#define HVT_ARM64_PAGEWALK_H

#include <stdbool.h>
#include <stdint.h>

/* Reads the 8-byte descriptor at guest-physical @gpa: 0 or a negative errno. */
typedef int (*arm64_read_pte_fn)(void *ctx, uint64_t gpa, uint64_t *pte);

/* The walk's parameters packed into arch.h's `unsigned mode`: bits 0-6 the input-address size
 * (64 - TnSZ), 8-12 the granule's shift (12, 14 or 16), bit 16 LPA2 (TCR_EL1.DS). */
#define ARM64_MODE_IA(m)    ((m)&0x7f)
#define ARM64_MODE_GSHIFT(m) (((m) >> 8) & 0x1f)
#define ARM64_MODE_DS(m)    (((m) >> 16) & 1)

/* The mode of TCR_EL1 value @tcr for the upper half (@upper: TTBR1, T1SZ and TG1) or the lower
 * (TTBR0, T0SZ, TG0); 0 when the granule field holds a reserved value. */
unsigned arm64_mode_of_tcr(uint64_t tcr, bool upper);

/* Translates @gva through the tables at @ttbr (a TTBRn_EL1 value: ASID and CnP ignored) walked as
 * @mode says, into *@gpa. 0, -EFAULT (not mapped, a read failed, a reserved descriptor), -EINVAL
 * (a mode arm64_mode_of_tcr never gives). */
int arm64_translate(arm64_read_pte_fn read, void *ctx, uint64_t ttbr, unsigned mode, uint64_t gva,
		    uint64_t *gpa);

#endif

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

/* Walks @gva through the tables at @ttbr as @mode says down to level @stop (2 or 3), or to a block
 * above it: the guest-physical address of the descriptor there in *@at and its level in *@level
 * (whatever that descriptor holds: it is not read). 0, -EFAULT (a read failed, or an invalid or
 * reserved descriptor above @stop), -EINVAL (a mode arm64_mode_of_tcr never gives, or @stop). */
int arm64_walk_to(arm64_read_pte_fn read, void *ctx, uint64_t ttbr, unsigned mode, uint64_t gva,
		  int stop, uint64_t *at, int *level);

/* Bytes a block descriptor at level 2 maps with @mode's granule (4 KiB: 2 MiB). */
uint64_t arm64_level2_span(unsigned mode);

/* A level-2 block descriptor of @mode mapping guest-physical @pa (arm64_level2_span aligned), its
 * memory attributes, shareability, access flag and nG those of @leaf (a valid page or block
 * descriptor of the same tables: the kernel's text, so normal cacheable memory as the kernel maps
 * it), never executable at EL0; with @exec read-only and executable at EL1, else read-write (no
 * DBM) and never executable; not contiguous. 0 when @leaf is not a valid leaf. Pure. */
uint64_t arm64_block_desc(uint64_t leaf, int leaf_level, unsigned mode, uint64_t pa, bool exec);

/* Stage-1 permission indirection (FEAT_S1PIE, on when TCR2_EL1.PIE is set): a descriptor's bits
 * 54 (UXN), 53 (PXN), 51 (DBM) and 6 (AP[1]) are then a 4-bit index into PIR_EL1 (EL1's
 * permission) and PIRE0_EL1 (EL0's), 4 bits per index, instead of AP/PXN/UXN. The permission
 * values hvtrace asks for (no overlay: POR_EL1 does not apply to them): */
#define ARM64_TCR2_PIE	(1ull << 1)
#define ARM64_TCR2_D128 (1ull << 5)
#define ARM64_PIE_RX	0xa /* read, execute */
#define ARM64_PIE_RW	0xc /* read, write */

/* The lowest index whose PIR_EL1 field (@pir) is @el1_perm and whose PIRE0_EL1 field (@pire0) is 0
 * (no EL0 access), -1 when there is none. Pure. */
int arm64_pie_index(uint64_t pir, uint64_t pire0, unsigned el1_perm);

/* Descriptor @d with its index bits (54, 53, 51, 6) those of index @pi (0-15). Pure. */
uint64_t arm64_desc_set_pi(uint64_t d, unsigned pi);

/* Whether the valid leaf descriptor @leaf maps guarded pages (GP, bit 50: BTI enforced at EL1, so
 * an indirect branch may land only on a landing pad there). Pure. */
bool arm64_desc_guarded(uint64_t leaf);

#endif

/* The code of an x86 detour slot (guest-stub/stub_abi.h's layout, handed in as struct
 * arch_detour_slot): a CALL into the stub, the displaced instructions relocated, the way back. */
#ifndef HVT_X86_DETOUR_H
#define HVT_X86_DETOUR_H

#include "arch/arch.h"

/* See struct arch's detour_code. Pure. */
int x86_detour_code(const struct arch_reloc_plan *plan, const struct arch_detour_slot *slot,
		    uint64_t at, uint64_t entry, uint8_t *code, size_t *len, char *why,
		    size_t whylen);

#endif

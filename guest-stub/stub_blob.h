/* The stub of each guest ISA as the host copies it into a guest: its bytes and where its routines
 * start in them (guest-stub/<isa>/blob.c describes its ISA's stub.S). host/trace/stub.c picks the
 * blob of the guest's ISA and knows nothing else of it. Const data; any thread. */
#ifndef HVT_GUEST_STUB_BLOB_H
#define HVT_GUEST_STUB_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STUB_BLOB_IRQ_MAX 4

struct stub_blob {
	const char *isa;      /* "x86_64", "arm64": for messages */
	unsigned elf_machine; /* the guest ISA's e_machine (arch->elf_machine) */
	const uint8_t *start, *end;
	/* the entry routines by hook | 2 * arguments | 4 * graph root | 8 * from a detour slot;
	 * NULL: this ISA's stub has none */
	const uint8_t *entry[16];
	const uint8_t *agg[8]; /* the counting routines by mode (STUB_AGG_*), NULL: none */
	const uint8_t *ret;    /* the return routine */
	/* Offsets from an entry (or counting) routine's start, and from the return routine's, of
	 * the instructions that run with interrupts on; and further addresses where they are on (an
	 * ISA without an interrupt shadow: its last instructions). */
	uint8_t entry_irq_on[STUB_BLOB_IRQ_MAX], nr_entry_irq_on;
	uint8_t ret_irq_on[STUB_BLOB_IRQ_MAX], nr_ret_irq_on;
	const uint8_t *irq_at[STUB_BLOB_IRQ_MAX];
	unsigned nr_irq_at;
	/* [irq_lo, irq_hi): code that runs with interrupts on throughout (x86: the counting routines
	 * and the return routine, pinned to their CPU by the preempt count, H_PREEMPT_GS); NULL:
	 * none */
	const uint8_t *irq_lo, *irq_hi;
	/* Offsets in a detour slot (stub_abi.h) where a context can be interrupted */
	uint8_t slot_irq_on[STUB_BLOB_IRQ_MAX], nr_slot_irq_on;
	/* The return address is hooked in a register (arm64's x30, signed by the function's own
	 * prologue) rather than in a stack slot: the host can never write it back, a detach waits
	 * for the hooked frames to return through the stub instead. */
	bool ret_in_register;
	/* The stub reads its CPU number from a register the VMM sets per vCPU (arm64: MPIDR_EL1's
	 * affinity), so the guest need not say where it keeps it. */
	bool cpu_from_vmm;
};

/* The stub for the ISA of ELF machine @elf_machine, NULL when hvtrace has none. Pure. */
const struct stub_blob *stub_blob_of(unsigned elf_machine);

extern const struct stub_blob stub_blob_x86_64, stub_blob_arm64;

#endif

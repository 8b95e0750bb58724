/* The x86-64 stub (guest-stub/x86/stub.S, assembled into this binary by the host's compiler) as a
 * struct stub_blob. */
#include "guest-stub/stub_blob.h"

#include <elf.h>

extern const uint8_t hvt_stub_start[], hvt_stub_entry[], hvt_stub_entry_ret[],
    hvt_stub_entry_args[], hvt_stub_entry_ret_args[], hvt_stub_entry_root[],
    hvt_stub_entry_root_args[], hvt_stub_detour[], hvt_stub_detour_ret[], hvt_stub_detour_args[],
    hvt_stub_detour_ret_args[], hvt_stub_detour_root[], hvt_stub_detour_root_args[], hvt_stub_ret[],
    hvt_stub_end[], hvt_stub_count[], hvt_stub_count_pid[], hvt_stub_count_ret[],
    hvt_stub_count_ret_pid[], hvt_stub_count_ret_log2[], hvt_stub_count_ret_pid_log2[], hvt_stub_ret_end[];

const struct stub_blob stub_blob_x86_64 = {
    .isa = "x86_64",
    .elf_machine = EM_X86_64,
    .start = hvt_stub_start,
    .end = hvt_stub_end,
    /* none at 4, 6, 12, 14: a root's return is always hooked */
    .entry =
	{
	    [0] = hvt_stub_entry,
	    [1] = hvt_stub_entry_ret,
	    [2] = hvt_stub_entry_args,
	    [3] = hvt_stub_entry_ret_args,
	    [5] = hvt_stub_entry_root,
	    [7] = hvt_stub_entry_root_args,
	    [8] = hvt_stub_detour,
	    [9] = hvt_stub_detour_ret,
	    [10] = hvt_stub_detour_args,
	    [11] = hvt_stub_detour_ret_args,
	    [13] = hvt_stub_detour_root,
	    [15] = hvt_stub_detour_root_args,
	},
    /* none for a log2 mode without the return */
    .agg =
	{
	    [0] = hvt_stub_count,
	    [2] = hvt_stub_count_pid,
	    [1] = hvt_stub_count_ret,
	    [3] = hvt_stub_count_ret_pid,
	    [5] = hvt_stub_count_ret_log2,
	    [7] = hvt_stub_count_ret_pid_log2,
	},
    .ret = hvt_stub_ret,
    /* SAVE's PUSHF and CLI (test_stub checks the bytes); the counting routines (agg.S) and the
     * return routine (ret.S), which follow the entry routines, anywhere (no CLI where the header
     * gives the preempt count: pinned by it instead, preemptible before PIN and after UNPIN; and
     * without it they mask interrupts only after their first dozen instructions) */
    .entry_irq_on = {0, 1},
    .nr_entry_irq_on = 2,
    .irq_lo = hvt_stub_count,
    .irq_hi = hvt_stub_ret_end,
    /* a detour slot's CALL (its way back runs under STI's shadow) */
    .slot_irq_on = {0},
    .nr_slot_irq_on = 1,
};

/* The arm64 stub (guest-stub/arm64/stub.S, assembled by binutils-aarch64-linux-gnu into
 * $(BUILD)/guest-stub/arm64/stub_bytes.h by scripts/stub-blob.sh) as a struct stub_blob. */
#include "guest-stub/stub_abi.h"
#include "guest-stub/stub_blob.h"
/* generated into $(BUILD) (the Makefile's -I$(BUILD) for this file alone), not a source file */
#include <guest-stub/arm64/stub_bytes.h>

#include <elf.h>

#define AT(name) (hvt_stub_bytes + HVT_STUB_OFF_##name)

_Static_assert(HVT_STUB_OFF_hvt_stub_start == 0, "the arm64 stub starts with hvt_stub_start");
_Static_assert(HVT_STUB_OFF_hvt_stub_end <= sizeof(hvt_stub_bytes), "the arm64 stub's end");

const struct stub_blob stub_blob_arm64 = {
    .isa = "arm64",
    .elf_machine = EM_AARCH64,
    .start = hvt_stub_bytes,
    .end = AT(hvt_stub_end),
    .entry =
	{
	    [0] = AT(hvt_stub_entry),
	    [1] = AT(hvt_stub_entry_ret),
	    [2] = AT(hvt_stub_entry_args),
	    [3] = AT(hvt_stub_entry_ret_args),
	    [5] = AT(hvt_stub_entry_root),
	    [7] = AT(hvt_stub_entry_root_args),
	    [8] = AT(hvt_stub_detour),
	    [9] = AT(hvt_stub_detour_ret),
	    [10] = AT(hvt_stub_detour_args),
	    [11] = AT(hvt_stub_detour_ret_args),
	    [13] = AT(hvt_stub_detour_root),
	    [15] = AT(hvt_stub_detour_root_args),
	},
    /* none for a log2 mode without the return */
    .agg =
	{
	    [0] = AT(hvt_stub_count),
	    [1] = AT(hvt_stub_count_ret),
	    [2] = AT(hvt_stub_count_pid),
	    [3] = AT(hvt_stub_count_ret_pid),
	    [5] = AT(hvt_stub_count_ret_log2),
	    [7] = AT(hvt_stub_count_ret_pid_log2),
	},
    .ret = AT(hvt_stub_ret),
    /* MRS x16, DAIF and MSR DAIFSet, #3 open each routine (the counting ones too); each leaves by one of two RETs, after
     * MSR DAIFClr, #3 or after MSR DAIF, x16 (arm64 has no interrupt shadow) */
    .entry_irq_on = {0, 4},
    .nr_entry_irq_on = 2,
    .ret_irq_on = {0, 4},
    .nr_ret_irq_on = 2,
    .irq_at = {AT(hvt_stub_irq_entry_out), AT(hvt_stub_irq_ret_out), AT(hvt_stub_irq_entry_out2),
	       AT(hvt_stub_irq_ret_out2)},
    .nr_irq_at = 4,
    /* a detour slot (arch/arm64/arm64_detour.h): its STP and BL, run as the function had
     * interrupts, and the B after its MSR DAIFClr at DT_STI (no shadow) */
    .slot_irq_on = {0, 4, DT_STI + 4},
    .nr_slot_irq_on = 3,
    .ret_in_register = true,
    .cpu_from_vmm = true,
};

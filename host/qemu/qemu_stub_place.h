/* Where the in-guest stub of a Linux guest under QEMU lives: RAM the kernel was told to keep out of
 * use (memmap=, asked for at launch, or found in an attached guest's own command line), else the
 * low memory target_qemu finds. Main thread. */
#ifndef HVT_QEMU_STUB_PLACE_H
#define HVT_QEMU_STUB_PLACE_H

#include "host/qemu/qemu_launch.h"
#include "host/qemu/target_qemu.h"
#include "host/session/session.h"
#include "vmi/vmi_linux.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct qemu_stub_place {
	uint64_t resv_gpa, resv_size; /* the RAM memmap= reserves (0 size: none) */
	char resv_why[160];	      /* why the stub is not there ("" if it is) */
};

/* run --qemu with stub probes: asks @q to reserve RAM (memmap=) as large as the stub with rings of
 * --buffer-size-kb per vCPU needs, and QEMU's nice for stub probes. */
void qemu_stub_place_reserve(struct qemu_stub_place *sp, const struct session *s,
			     struct qemu_launch_cfg *q);

/* Places the stub's area in @tq for the kernel @l (@launched: QEMU was launched by hvtrace, else
 * attached to). "" in @why when it is placed, else why stub probes cannot work (a --probe reason).
 */
void qemu_stub_place(struct qemu_stub_place *sp, struct target_qemu *tq, struct vmi_linux *l,
		     bool launched, char *why, size_t whylen);

#endif

/* What target_qemu.c (the target: registers, memory, breakpoints) and target_qemu_run.c (the run
 * loop: stops, hits, steps, holds) share. Private to those two files; the main thread. */
#ifndef HVT_TARGET_QEMU_INT_H
#define HVT_TARGET_QEMU_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct target_qemu;

/* vCPU @cpu's registers, read from the gdbstub once per stop. 0 or -errno. */
int tq_cpu_regs(struct target_qemu *q, unsigned cpu);

/* Writes out the RIPs changed at this stop. 0 or -errno. */
int tq_flush_rips(struct target_qemu *q);

/* Forgets every vCPU's registers (they change while the VM runs). */
void tq_invalidate_regs(struct target_qemu *q);

/* Lets the stopped VM run (the changed RIPs written first). 0 or -errno. */
int tq_resume_vm(struct target_qemu *q);

/* Stops the running VM (0x03), or keeps it stopped. 0 or -errno. */
int tq_stop_vm(struct target_qemu *q);

/* Guest-virtual memory of vCPU @cpu (its page tables). 0 or -errno. */
int tq_access_virt(struct target_qemu *q, unsigned cpu, uint64_t gva, void *buf, size_t len,
		   bool write);

#endif

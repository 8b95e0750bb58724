/* The guest task running on a vCPU: found through a per-vCPU array of task pointers in guest memory
 * (the freestanding guest's `hvtrace_current`, later Linux's per-CPU current_task with BTF offsets). */
#ifndef HVT_VMI_TASK_H
#define HVT_VMI_TASK_H

#include "vmi/vmi_read.h"

#include <stdbool.h>
#include <stdint.h>

#define VMI_COMM_LEN 16
#define VMI_MAX_CPUS 64

struct vmi_task_layout {
	bool valid;			     /* false: no task info */
	bool unknown;			     /* without info: "<unknown>"-0 instead of "cpu<N>"-0 */
	uint64_t current_slot[VMI_MAX_CPUS]; /* GVA of the pointer to the task running on CPU N */
	uint64_t preempt_slot[VMI_MAX_CPUS]; /* GVA of CPU N's preempt count (x86 Linux; 0: unknown) */
	uint32_t in_interrupt_mask; /* the preempt count's bits set while an interrupt is served */
	unsigned pid_off;		     /* offsets in the task struct */
	unsigned comm_off;
	bool has_task_gs; /* stub probes: the current task pointer is the u64 at %gs:task_gs_off
			   * (exact while the per-CPU areas move at boot; current_slot is not) */
	uint64_t task_gs_off;
	bool has_cpu_gs;		     /* the CPU number is the u32 at %gs:cpu_gs_off */
	uint64_t cpu_gs_off;
	uint32_t cpu_aux_mask; /* nonzero: the CPU number is RDTSCP's ECX (IA32_TSC_AUX) & this,
				* preferred to %gs:cpu_gs_off */
	bool cpu_apic_id;      /* the CPU number is CPUID leaf 1's APIC ID (EBX[31:24]): the VMM set
				* each vCPU's to its index; used when neither of the above is there */
};

struct vmi_task {
	int32_t pid;
	char comm[VMI_COMM_LEN]; /* NUL-terminated */
};

/* Fills @out with the task on @cpu, reading guest memory through @read (which sees it as @cpu
 * does). Without task info it is "cpu<N>"-0 (or "<unknown>"-0 if the layout says so); if the guest
 * memory cannot be read it is "<unknown>"-0. Never fails. Any thread; calls only @read. */
void vmi_task_current(const struct vmi_task_layout *l, unsigned cpu, vmi_read_fn read, void *ctx,
		      struct vmi_task *out);

/* Fills @out from the task struct at @task (read through @read), as vmi_task_current does for @cpu
 * once it has the pointer; @task 0 means none ("cpu<N>"-0 or "<unknown>"-0). */
void vmi_task_at(const struct vmi_task_layout *l, unsigned cpu, uint64_t task, vmi_read_fn read,
		 void *ctx, struct vmi_task *out);

#endif

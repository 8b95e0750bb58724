/* The guest task running on a vCPU: found through a per-vCPU array of task pointers in guest memory
 * (the freestanding guest's `hvtrace_current`, later Linux's per-CPU current_task with BTF offsets). */
#ifndef HVT_VMI_TASK_H
#define HVT_VMI_TASK_H

#include "vmi/vmi_read.h"

#include <stdbool.h>
#include <stdint.h>

#define VMI_COMM_LEN 16
#define VMI_MAX_CPUS 64

/* Every task of a Linux guest and its kernel stack: the processes from init_task's `tasks` list, the
 * threads of each from its signal's `thread_head` (offsets from BTF). valid false: not known. */
struct vmi_task_list {
	bool valid;
	uint64_t init_task;	  /* GVA of init_task, the list's head */
	unsigned tasks_off;	  /* task_struct.tasks (list_head) */
	unsigned signal_off;	  /* task_struct.signal */
	unsigned thread_head_off; /* signal_struct.thread_head */
	unsigned thread_node_off; /* task_struct.thread_node */
	unsigned stack_off;	  /* task_struct.stack */
	unsigned sp_off;	  /* task_struct.thread.sp: the stack pointer saved at its last switch */
	uint32_t stack_size;	  /* THREAD_SIZE */
};

#define VMI_TASKS_MAX (1u << 16) /* threads a walk visits at most (a bound a guest cannot grow) */

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
	bool has_preempt_gs; /* stub probes: the preempt count is the u32 at %gs:preempt_gs_off (the
			      * counting routines raise it rather than mask interrupts) */
	uint64_t preempt_gs_off;
	uint64_t cpu_gs_off;
	uint32_t cpu_aux_mask; /* nonzero: the CPU number is RDTSCP's ECX (IA32_TSC_AUX) & this,
				* preferred to %gs:cpu_gs_off */
	bool cpu_apic_id;      /* the CPU number is CPUID leaf 1's APIC ID (EBX[31:24]): the VMM set
				* each vCPU's to its index; used when neither of the above is there */
	struct vmi_task_list list; /* every task's kernel stack (Linux with BTF) */
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

/* One task's kernel stack as vmi_task_stacks hands it over: @task, its stack's lowest address
 * @stack (@size bytes) and the stack pointer saved at its last switch @sp (not checked). */
typedef int (*vmi_task_stack_fn)(void *arg, uint64_t task, uint64_t stack, uint32_t size,
				 uint64_t sp);

/* Calls @fn for every thread of the guest (init_task's list of processes, each one's threads), at
 * most VMI_TASKS_MAX; a task without a stack (exiting) is skipped. The lists are followed as the
 * guest left them: run it with the guest stopped. A nonzero return of @fn ends the walk with it.
 * Returns 0, -ENOENT (@l->valid false), -EFAULT (a read failed), -ELOOP (a list that does not
 * come back to its head within the bound: the guest's lists are not trusted), or @fn's value.
 * Any thread; calls only @read and @fn. */
int vmi_task_stacks(const struct vmi_task_list *l, vmi_read_fn read, void *ctx,
		    vmi_task_stack_fn fn, void *arg);

#endif

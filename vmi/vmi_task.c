#include "vmi/vmi_task.h"

#include <stdio.h>
#include <string.h>

static void no_task(const struct vmi_task_layout *l, unsigned cpu, struct vmi_task *out)
{
	if (l->unknown)
		strcpy(out->comm, "<unknown>");
	else
		snprintf(out->comm, sizeof(out->comm), "cpu%u", cpu);
	out->pid = 0;
}

void vmi_task_at(const struct vmi_task_layout *l, unsigned cpu, uint64_t task, vmi_read_fn read,
		 void *ctx, struct vmi_task *out)
{
	if (!l->valid || !task) {
		no_task(l, cpu, out);
		return;
	}
	if (read(ctx, task + l->pid_off, &out->pid, 4) < 0 ||
	    read(ctx, task + l->comm_off, out->comm, VMI_COMM_LEN) < 0) {
		strcpy(out->comm, "<unknown>");
		out->pid = 0;
		return;
	}
	out->comm[VMI_COMM_LEN - 1] = 0;
}

void vmi_task_current(const struct vmi_task_layout *l, unsigned cpu, vmi_read_fn read, void *ctx,
		      struct vmi_task *out)
{
	uint64_t task;

	if (!l->valid || cpu >= VMI_MAX_CPUS) {
		no_task(l, cpu, out);
		return;
	}
	if (read(ctx, l->current_slot[cpu], &task, 8) < 0 || !task) {
		strcpy(out->comm, "<unknown>");
		out->pid = 0;
		return;
	}
	vmi_task_at(l, cpu, task, read, ctx, out);
}

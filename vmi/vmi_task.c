#include "vmi/vmi_task.h"

#include <errno.h>
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

/* The walk's state: the threads visited so far against VMI_TASKS_MAX. */
struct task_walk {
	const struct vmi_task_list *l;
	vmi_read_fn read;
	void *ctx;
	vmi_task_stack_fn fn;
	void *arg;
	unsigned long visited;
};

static int read_u64(const struct task_walk *w, uint64_t gva, uint64_t *v)
{
	return w->read(w->ctx, gva, v, 8) < 0 ? -EFAULT : 0;
}

/* One task: its stack handed to the callback, unless it has none. */
static int visit(struct task_walk *w, uint64_t task)
{
	uint64_t stack, sp;

	if (++w->visited > VMI_TASKS_MAX)
		return -ELOOP;
	if (read_u64(w, task + w->l->stack_off, &stack) < 0 ||
	    read_u64(w, task + w->l->sp_off, &sp) < 0)
		return -EFAULT;
	return stack ? w->fn(w->arg, task, stack, w->l->stack_size, sp) : 0;
}

/* Every thread of process @proc, from its signal's thread_head (the process alone without one). */
static int threads_of(struct task_walk *w, uint64_t proc)
{
	uint64_t signal, head, node;
	int ret;

	if (read_u64(w, proc + w->l->signal_off, &signal) < 0)
		return -EFAULT;
	if (!signal)
		return visit(w, proc);
	head = signal + w->l->thread_head_off;
	if (read_u64(w, head, &node) < 0)
		return -EFAULT;
	while (node != head) {
		ret = visit(w, node - w->l->thread_node_off);
		if (ret)
			return ret;
		if (read_u64(w, node, &node) < 0)
			return -EFAULT;
	}
	return 0;
}

int vmi_task_stacks(const struct vmi_task_list *l, vmi_read_fn read, void *ctx,
		    vmi_task_stack_fn fn, void *arg)
{
	struct task_walk w = {l, read, ctx, fn, arg, 0};
	uint64_t head, pos, proc;
	int ret;

	if (!l->valid)
		return -ENOENT;
	head = l->init_task + l->tasks_off;
	if (read_u64(&w, head, &pos) < 0)
		return -EFAULT;
	for (proc = l->init_task;;) {
		ret = threads_of(&w, proc);
		if (ret)
			return ret;
		if (pos == head)
			return 0;
		if (++w.visited > VMI_TASKS_MAX)
			return -ELOOP;
		proc = pos - l->tasks_off;
		if (read_u64(&w, pos, &pos) < 0)
			return -EFAULT;
	}
}

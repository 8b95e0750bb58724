#include "tests/common/fake_tasks.h"

#include <string.h>

#define TASKS_OFF	0x10
#define SIGNAL_OFF	0x20
#define THREAD_NODE_OFF 0x30
#define STACK_OFF	0x40
#define SP_OFF		0x50
#define THREAD_HEAD_OFF 0x08

uint64_t fake_task_addr(uint64_t gva, unsigned i)
{
	return gva + i * FAKE_TASK_SIZE;
}

uint64_t fake_task_thread_next(uint64_t gva, unsigned i)
{
	return fake_task_addr(gva, i) + THREAD_NODE_OFF;
}

static uint64_t signal_addr(uint64_t gva, unsigned process)
{
	return gva + (FAKE_TASKS_MAX + process) * FAKE_TASK_SIZE;
}

static void put(uint8_t *buf, uint64_t gva, uint64_t at, uint64_t v)
{
	memcpy(buf + (at - gva), &v, 8);
}

void fake_tasks_build(uint8_t *buf, uint64_t gva, const struct fake_task *t, unsigned nr,
		      uint32_t stack_size, struct vmi_task_list *out)
{
	unsigned nr_proc = 0, leader[FAKE_TASKS_MAX];

	memset(buf, 0, 2 * FAKE_TASKS_MAX * FAKE_TASK_SIZE);
	for (unsigned i = 0; i < nr; i++) {
		uint64_t task = fake_task_addr(gva, i), sig = signal_addr(gva, t[i].process);
		uint64_t head = sig + THREAD_HEAD_OFF;

		put(buf, gva, task + STACK_OFF, t[i].stack);
		put(buf, gva, task + SP_OFF, t[i].sp);
		put(buf, gva, task + SIGNAL_OFF, sig);
		if (t[i].process == nr_proc)
			leader[nr_proc++] = i;
		/* the thread list: head -> the process's tasks in order -> head */
		put(buf, gva, task + THREAD_NODE_OFF, head);
		for (unsigned j = i; j-- > 0;)
			if (t[j].process == t[i].process) {
				put(buf, gva, fake_task_addr(gva, j) + THREAD_NODE_OFF,
				    task + THREAD_NODE_OFF);
				break;
			}
		if (leader[t[i].process] == i)
			put(buf, gva, head, task + THREAD_NODE_OFF);
	}
	/* the process list: init_task -> each leader -> init_task */
	for (unsigned p = 0; p < nr_proc; p++)
		put(buf, gva, fake_task_addr(gva, leader[p]) + TASKS_OFF,
		    fake_task_addr(gva, leader[p + 1 < nr_proc ? p + 1 : 0]) + TASKS_OFF);
	*out = (struct vmi_task_list){
	    .valid = true,
	    .init_task = gva,
	    .tasks_off = TASKS_OFF,
	    .signal_off = SIGNAL_OFF,
	    .thread_head_off = THREAD_HEAD_OFF,
	    .thread_node_off = THREAD_NODE_OFF,
	    .stack_off = STACK_OFF,
	    .sp_off = SP_OFF,
	    .stack_size = stack_size,
	};
}

/* A Linux task list for unit tests, laid out in a test's buffer as the guest keeps it: init_task
 * heading the processes' `tasks` list, each process's threads on its signal's `thread_head`, each
 * task with a stack pointer and a saved stack pointer (vmi_task_list's offsets, made up here). */
#ifndef HVT_TESTS_FAKE_TASKS_H
#define HVT_TESTS_FAKE_TASKS_H

#include "vmi/vmi_task.h"

#include <stddef.h>
#include <stdint.h>

#define FAKE_TASK_SIZE 0x100ull /* each task struct, then each signal struct, in the buffer */
#define FAKE_TASKS_MAX 8

struct fake_task {
	unsigned
	    process;	/* tasks of one process share its number; task 0 (init_task) is process 0 */
	uint64_t stack; /* task_struct.stack (0: none) */
	uint64_t sp;	/* task_struct.thread.sp */
};

/* Writes @nr tasks (@nr <= FAKE_TASKS_MAX; processes numbered 0, 1, ... in order of first task)
 * into @buf, which the test maps at guest address @gva (at least 2 * FAKE_TASKS_MAX *
 * FAKE_TASK_SIZE bytes), and fills @out for them with @stack_size. The task struct of task i is at
 * fake_task_addr(@gva, i). */
void fake_tasks_build(uint8_t *buf, uint64_t gva, const struct fake_task *t, unsigned nr,
		      uint32_t stack_size, struct vmi_task_list *out);

/* Guest address of task @i's struct. */
uint64_t fake_task_addr(uint64_t gva, unsigned i);

/* Guest address of task @i's next-thread pointer (thread_node.next), to make a hostile list. */
uint64_t fake_task_thread_next(uint64_t gva, unsigned i);

#endif

/* The guest tasks a sink has seen, each a (pid, comm) pair (the per-CPU idle tasks share pid 0 but
 * not their comm), numbered in order of appearance, for sinks that keep state per task. */
#ifndef HVT_TASK_TABLE_H
#define HVT_TASK_TABLE_H

#include "vmi/vmi_task.h"

#include <stdbool.h>
#include <stdint.h>

struct task_table {
	unsigned nr, max;
	int32_t *pid; /* max of them */
	char (*comm)[VMI_COMM_LEN];
	unsigned *slot; /* open addressing, 2 * max slots: task index + 1, 0 = free */
};

/* Room for @max tasks. Returns 0 or -1 (no memory). */
int task_table_init(struct task_table *t, unsigned max);

/* The index of task (@pid, @comm: VMI_COMM_LEN bytes, NUL-terminated or not), added when new
 * (*@added true); @max once the table is full (the sinks' "other tasks"). Writer thread. */
unsigned task_table_find(struct task_table *t, int32_t pid, const char *comm, bool *added);

void task_table_free(struct task_table *t);

#endif

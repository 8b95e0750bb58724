#include "host/sink/task_table.h"

#include <stdlib.h>
#include <string.h>

int task_table_init(struct task_table *t, unsigned max)
{
	memset(t, 0, sizeof(*t));
	t->max = max;
	t->pid = calloc(max, sizeof(*t->pid));
	t->comm = calloc(max, sizeof(*t->comm));
	t->slot = calloc(2 * (size_t)max, sizeof(*t->slot));
	if (!t->pid || !t->comm || !t->slot) {
		task_table_free(t);
		return -1;
	}
	return 0;
}

unsigned task_table_find(struct task_table *t, int32_t pid, const char *comm, bool *added)
{
	uint32_t h = (uint32_t)pid * 2654435761u;
	size_t n = 2 * (size_t)t->max;

	*added = false;
	for (size_t i = 0; i < VMI_COMM_LEN && comm[i]; i++)
		h = (h ^ (uint8_t)comm[i]) * 16777619u;
	for (size_t probe = 0; probe < n; probe++) {
		size_t s = (h + probe) % n;
		unsigned i = t->slot[s];

		if (!i) {
			if (t->nr == t->max)
				return t->max;
			i = t->nr++;
			t->pid[i] = pid;
			memcpy(t->comm[i], comm, VMI_COMM_LEN);
			t->slot[s] = i + 1;
			*added = true;
			return i;
		}
		if (t->pid[i - 1] == pid &&
		    !memcmp(t->comm[i - 1], comm, strnlen(comm, VMI_COMM_LEN)) &&
		    strnlen(t->comm[i - 1], VMI_COMM_LEN) == strnlen(comm, VMI_COMM_LEN))
			return i - 1;
	}
	return t->max; /* not reached: never more than half full */
}

void task_table_free(struct task_table *t)
{
	free(t->pid);
	free(t->comm);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

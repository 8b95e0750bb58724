/* What a backend sets in the tracer after tracer_init (tracer.h): the tracer's struct is written only
 * in host/trace. */
#include "host/trace/tracer.h"

#include <string.h>

void tracer_set_before_detach(struct tracer *t, void (*fn)(void *ctx), void *ctx)
{
	t->before_detach = fn;
	t->before_detach_ctx = ctx;
}

void tracer_set_task_slots(struct tracer *t, const uint64_t *current, const uint64_t *preempt)
{
	memcpy(t->task.current_slot, current, sizeof(t->task.current_slot));
	memcpy(t->task.preempt_slot, preempt, sizeof(t->task.preempt_slot));
}

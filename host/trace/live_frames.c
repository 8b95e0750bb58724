/* Saved contexts on a guest's kernel stacks (see live_frames.h). */
#include "host/trace/live_frames.h"

#include <errno.h>
#include <stdlib.h>

/* Kernel stacks read in one scan at most: a bound a guest cannot grow. */
#define SCAN_BYTES_MAX (64ull << 20)

struct stack_scan {
	struct target *t;
	uint64_t running[VMI_MAX_CPUS]; /* the task on each vCPU */
	unsigned nr_running;
	uint64_t lo, hi;
	live_frame_fn hit;
	void *ctx;
	uint64_t *buf; /* one stack */
	uint32_t buf_size;
	unsigned long stacks;
	uint64_t bytes;
};

static int read_kernel(void *ctx, uint64_t gva, void *buf, size_t len)
{
	struct target *t = ctx;

	return t->ops->read_kernel(t, gva, buf, len);
}

bool live_frame_kernel_cs(uint64_t next)
{
	uint16_t cs = (uint16_t)next;

	return cs && cs < 0x100 && (cs & 3) == 0;
}

/* One task's stack: from its saved stack pointer up, or whole when it runs on a vCPU or its
 * pointer lies outside it. */
static int scan_stack(void *arg, uint64_t task, uint64_t stack, uint32_t size, uint64_t sp)
{
	struct stack_scan *s = arg;
	uint64_t from = stack;
	size_t n;
	bool running = false;

	if (size > s->buf_size || stack & 7 || stack + size < stack)
		return -EINVAL;
	for (unsigned c = 0; c < s->nr_running; c++)
		running |= s->running[c] == task;
	if (!running && sp >= stack && sp < stack + size)
		from = sp & ~7ull;
	n = (size_t)(stack + size - from) / 8;
	s->bytes += n * 8;
	if (s->bytes > SCAN_BYTES_MAX)
		return -E2BIG;
	/* a stack not mapped is a task that cannot run again (its stack freed as it exits) */
	if (s->t->ops->read_kernel(s->t, from, s->buf, n * 8) < 0)
		return 0;
	s->stacks++;
	for (size_t i = 0; i + 1 < n; i++)
		if (s->buf[i] >= s->lo && s->buf[i] <= s->hi &&
		    s->hit(s->ctx, s->buf[i], s->buf[i + 1]))
			return 1;
	return 0;
}

int live_frames_scan(struct target *t, const struct vmi_task_layout *task, unsigned nr_cpus,
		     uint64_t lo, uint64_t hi, live_frame_fn hit, void *ctx,
		     struct live_frames_seen *seen)
{
	struct stack_scan s = {.t = t, .lo = lo, .hi = hi, .hit = hit, .ctx = ctx};
	int ret;

	if (!task || !task->valid || !task->list.valid || !t->ops->read_kernel) {
		*seen = (struct live_frames_seen){LIVE_FRAMES_RAM, 0};
		return t->ops->scan_ram ? t->ops->scan_ram(t, lo, hi, hit, ctx) : -ENOTSUP;
	}
	for (unsigned c = 0; c < nr_cpus && c < VMI_MAX_CPUS; c++)
		if (t->ops->read_kernel(t, task->current_slot[c], &s.running[s.nr_running], 8) == 0)
			s.nr_running++;
		else
			return -EFAULT;
	s.buf_size = task->list.stack_size;
	s.buf = malloc(s.buf_size);
	if (!s.buf)
		return -ENOMEM;
	ret = vmi_task_stacks(&task->list, read_kernel, t, scan_stack, &s);
	free(s.buf);
	*seen = (struct live_frames_seen){LIVE_FRAMES_TASKS, s.stacks};
	if (ret < 0 && t->ops->scan_ram) {
		/* lists a guest broke, or more tasks than the bounds: all of RAM instead */
		*seen = (struct live_frames_seen){LIVE_FRAMES_RAM, 0};
		return t->ops->scan_ram(t, lo, hi, hit, ctx);
	}
	return ret;
}

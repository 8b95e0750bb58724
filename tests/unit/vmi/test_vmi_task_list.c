/* vmi_task_stacks: every thread of a guest from init_task's process list and each process's thread
 * list, with its stack and saved stack pointer; bounded against a guest whose lists never come
 * back to their head, and failing (not guessing) on memory it cannot read. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/fake_mem.h"
#include "tests/common/fake_tasks.h"
#include "vmi/vmi_task.h"

#include <errno.h>
#include <string.h>

#define TASKS 0xffff888000100000ull

static uint8_t buf[2 * FAKE_TASKS_MAX * FAKE_TASK_SIZE];
static struct fake_mem mem;
static struct vmi_task_list list;

struct seen {
	uint64_t task[16], stack[16], sp[16];
	unsigned n;
	int stop_at; /* return 7 at this visit (1-based); 0: never */
};

static int record(void *arg, uint64_t task, uint64_t stack, uint32_t size, uint64_t sp)
{
	struct seen *s = arg;

	assert_int_equal(size, 16384);
	if (s->n < 16) {
		s->task[s->n] = task;
		s->stack[s->n] = stack;
		s->sp[s->n] = sp;
	}
	s->n++;
	return s->stop_at && (int)s->n == s->stop_at ? 7 : 0;
}

/* init_task (no stack), a process of two threads, a process of one, a thread without a stack. */
static const struct fake_task tasks[] = {
    {0, 0, 0}, {1, 0x10000, 0x13f00}, {1, 0x20000, 0x23e00}, {2, 0x30000, 0x33d00}, {2, 0, 0},
};

static int setup(void **state)
{
	(void)state;
	fake_mem_init(&mem);
	fake_mem_map(&mem, TASKS, buf, sizeof(buf));
	fake_tasks_build(buf, TASKS, tasks, 5, 16384, &list);
	return 0;
}

static void test_every_thread(void **state)
{
	struct seen s = {0};

	(void)state;
	assert_int_equal(vmi_task_stacks(&list, fake_mem_read, &mem, record, &s), 0);
	assert_int_equal(s.n, 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(s.task[i], fake_task_addr(TASKS, i + 1));
		assert_int_equal(s.stack[i], tasks[i + 1].stack);
		assert_int_equal(s.sp[i], tasks[i + 1].sp);
	}
}

/* The callback's nonzero value ends the walk with it. */
static void test_callback_stops(void **state)
{
	struct seen s = {.stop_at = 2};

	(void)state;
	assert_int_equal(vmi_task_stacks(&list, fake_mem_read, &mem, record, &s), 7);
	assert_int_equal(s.n, 2);
}

/* A thread list that loops without coming back to its head: the walk stops at VMI_TASKS_MAX. */
static void test_loop_bounded(void **state)
{
	struct seen s = {0};
	uint64_t self = fake_task_thread_next(TASKS, 2);

	(void)state;
	memcpy(buf + (self - TASKS), &self, 8); /* thread 2's next is itself */
	assert_int_equal(vmi_task_stacks(&list, fake_mem_read, &mem, record, &s), -ELOOP);
	assert_true(s.n >= 2 && s.n <= VMI_TASKS_MAX);
}

/* A pointer out of guest memory, and no list at all. */
static void test_unreadable(void **state)
{
	struct seen s = {0};
	uint64_t wild = 0xdead000000000000ull;
	struct vmi_task_list none = {0};

	(void)state;
	memcpy(buf + (fake_task_thread_next(TASKS, 1) - TASKS), &wild, 8);
	assert_int_equal(vmi_task_stacks(&list, fake_mem_read, &mem, record, &s), -EFAULT);
	assert_int_equal(vmi_task_stacks(&none, fake_mem_read, &mem, record, &s), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_every_thread, setup),
	    cmocka_unit_test_setup(test_callback_stops, setup),
	    cmocka_unit_test_setup(test_loop_bounded, setup),
	    cmocka_unit_test_setup(test_unreadable, setup),
	};

	return cmocka_run_group_tests_name("vmi_task_list", tests, NULL, NULL);
}

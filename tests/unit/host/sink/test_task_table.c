/* The guest tasks a viewer sink keeps (host/sink/task_table.c): (pid, comm) pairs numbered in order
 * of appearance, the per-CPU idle tasks (one pid, several comms) told apart, a comm that fills all
 * VMI_COMM_LEN bytes without a NUL, and a full table answering its max for every new task while it
 * still finds the ones it holds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/sink/task_table.h"

#include <stdio.h>
#include <string.h>

/* @name in a VMI_COMM_LEN buffer, as a record's comm holds it (the rest zeroed). */
static void comm_of(char comm[VMI_COMM_LEN], const char *name)
{
	memset(comm, 0, VMI_COMM_LEN);
	memcpy(comm, name, strnlen(name, VMI_COMM_LEN));
}

static unsigned find(struct task_table *t, int32_t pid, const char *name, bool *added)
{
	char comm[VMI_COMM_LEN];

	comm_of(comm, name);
	return task_table_find(t, pid, comm, added);
}

static void numbered_in_order_of_appearance(void **state)
{
	struct task_table t;
	bool added;

	(void)state;
	assert_int_equal(task_table_init(&t, 8), 0);
	assert_int_equal(find(&t, 101, "worker1", &added), 0);
	assert_true(added);
	assert_int_equal(find(&t, 102, "worker2", &added), 1);
	assert_true(added);
	assert_int_equal(find(&t, 101, "worker1", &added), 0);
	assert_false(added);
	assert_int_equal(find(&t, 103, "worker3", &added), 2);
	assert_true(added);
	assert_int_equal(find(&t, 102, "worker2", &added), 1);
	assert_false(added);
	assert_int_equal(t.nr, 3);
	assert_int_equal(t.pid[0], 101);
	assert_int_equal(t.pid[1], 102);
	assert_int_equal(t.pid[2], 103);
	assert_string_equal(t.comm[1], "worker2");
	task_table_free(&t);
	assert_null(t.pid);
	assert_null(t.comm);
	assert_null(t.slot);
}

/* pid 0 is every vCPU's idle task: cpu0 and cpu1 are two tasks; one comm under two pids too */
static void pid_and_comm_both_count(void **state)
{
	struct task_table t;
	bool added;

	(void)state;
	assert_int_equal(task_table_init(&t, 8), 0);
	assert_int_equal(find(&t, 0, "cpu0", &added), 0);
	assert_int_equal(find(&t, 0, "cpu1", &added), 1);
	assert_true(added);
	assert_int_equal(find(&t, 7, "cpu1", &added), 2);
	assert_true(added);
	/* a comm that is a prefix of another is another task */
	assert_int_equal(find(&t, 0, "cpu", &added), 3);
	assert_true(added);
	assert_int_equal(find(&t, 0, "cpu10", &added), 4);
	assert_true(added);
	assert_int_equal(find(&t, 0, "cpu1", &added), 1);
	assert_false(added);
	assert_int_equal(find(&t, 0, "cpu", &added), 3);
	assert_false(added);
	/* the empty comm is a name like any other */
	assert_int_equal(find(&t, 0, "", &added), 5);
	assert_true(added);
	assert_int_equal(find(&t, 0, "", &added), 5);
	assert_false(added);
	assert_int_equal(t.nr, 6);
	task_table_free(&t);
}

/* a guest's comm may fill the field without a NUL: the same 16 bytes find the same task */
static void comm_without_nul(void **state)
{
	struct task_table t;
	char full[VMI_COMM_LEN], other[VMI_COMM_LEN];
	bool added;

	(void)state;
	memset(full, 'a', sizeof(full));
	memset(other, 'a', sizeof(other));
	other[VMI_COMM_LEN - 1] = 'b';
	assert_int_equal(task_table_init(&t, 4), 0);
	assert_int_equal(task_table_find(&t, 5, full, &added), 0);
	assert_true(added);
	assert_int_equal(task_table_find(&t, 5, other, &added), 1);
	assert_true(added);
	assert_int_equal(task_table_find(&t, 5, full, &added), 0);
	assert_false(added);
	assert_memory_equal(t.comm[0], full, VMI_COMM_LEN);
	assert_memory_equal(t.comm[1], other, VMI_COMM_LEN);
	task_table_free(&t);
}

/* the table is bounded: once full, a new task is max ("other tasks") and added stays false; the
 * tasks it holds are still found, whatever their hash */
static void full_table_answers_max(void **state)
{
	enum { MAX = 64 };
	struct task_table t;
	char name[VMI_COMM_LEN];
	bool added;

	(void)state;
	assert_int_equal(task_table_init(&t, MAX), 0);
	for (unsigned i = 0; i < MAX; i++) {
		snprintf(name, sizeof(name), "t%u", i);
		assert_int_equal(find(&t, (int32_t)(1000 + i), name, &added), i);
		assert_true(added);
	}
	assert_int_equal(t.nr, MAX);
	for (unsigned i = 0; i < 3 * MAX; i++) {
		snprintf(name, sizeof(name), "new%u", i);
		assert_int_equal(find(&t, (int32_t)(5000 + i), name, &added), MAX);
		assert_false(added);
	}
	assert_int_equal(t.nr, MAX);
	for (unsigned i = 0; i < MAX; i++) {
		snprintf(name, sizeof(name), "t%u", i);
		assert_int_equal(find(&t, (int32_t)(1000 + i), name, &added), i);
		assert_false(added);
		assert_int_equal(t.pid[i], (int32_t)(1000 + i));
		assert_string_equal(t.comm[i], name);
	}
	task_table_free(&t);
}

/* a table of one: the first task is 0, every other the max */
static void table_of_one(void **state)
{
	struct task_table t;
	bool added;

	(void)state;
	assert_int_equal(task_table_init(&t, 1), 0);
	assert_int_equal(find(&t, -1, "cpu0", &added), 0);
	assert_true(added);
	assert_int_equal(find(&t, -2, "cpu1", &added), 1);
	assert_false(added);
	assert_int_equal(find(&t, -1, "cpu0", &added), 0);
	assert_false(added);
	task_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(numbered_in_order_of_appearance),
	    cmocka_unit_test(pid_and_comm_both_count),
	    cmocka_unit_test(comm_without_nul),
	    cmocka_unit_test(full_table_answers_max),
	    cmocka_unit_test(table_of_one),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* host/trace/record.h: the record layout and hvt_record_entry. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/record.h"

#include <string.h>

/* ---- struct hvt_record ---------------------------------------------------------------------- */

static void test_record_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct hvt_record), 64);
	assert_int_equal(offsetof(struct hvt_record, comm) + VMI_COMM_LEN, 64);
}

/* hvt_record_entry overwrites every field, whatever the slot held before. */
static void test_record_entry(void **state)
{
	struct vmi_task task;
	struct hvt_record r;

	(void)state;
	memset(&task, 0, sizeof(task));
	task.pid = 4242;
	strcpy(task.comm, "worker1");
	memset(&r, 0xa5, sizeof(r));

	hvt_record_entry(&r, 1234567890ull, 3, 0xffffffff81000010ull, 0xffffffff81000abcull, &task);
	assert_int_equal(r.ts, 1234567890ull);
	assert_int_equal(r.ip, 0xffffffff81000010ull);
	assert_int_equal(r.parent, 0xffffffff81000abcull);
	assert_int_equal(r.value, 0);
	assert_int_equal(r.duration, 0);
	assert_int_equal(r.pid, 4242);
	assert_int_equal(r.cpu, 3);
	assert_int_equal(r.type, HVT_REC_ENTRY);
	assert_int_equal(r.depth, 0);
	assert_memory_equal(r.comm, task.comm, VMI_COMM_LEN);
	assert_string_equal(r.comm, "worker1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_record_layout),
	    cmocka_unit_test(test_record_entry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* rec_filter: -P, --comm and --cpu decisions on records, and their argument parsers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/rec_filter.h"
#include "tests/common/record.h"

#include <errno.h>
#include <string.h>

/* An entry of @comm-@pid on @cpu (the fields a filter looks at). */
static struct hvt_record rec(unsigned cpu, int pid, const char *comm)
{
	return hv_record(HVT_REC_ENTRY, 1, cpu, 0x1000, 0x2000, 0, pid, comm);
}

static void test_empty_keeps_all(void **state)
{
	struct rec_filter f = {0};
	struct hvt_record r = rec(5, 7, "x");

	(void)state;
	assert_false(rec_filter_active(&f));
	assert_false(rec_filter_active(NULL));
	assert_true(rec_filter_keep(&f, &r, NULL, 0));
}

static void test_cpus(void **state)
{
	struct rec_filter f = {0};
	char err[128];

	(void)state;
	assert_int_equal(rec_filter_add_cpus(&f, "0,2-3", err, sizeof(err)), 0);
	assert_int_equal(rec_filter_add_cpus(&f, "1023", err, sizeof(err)), 0);
	assert_true(rec_filter_active(&f));
	for (unsigned c = 0; c < 1100; c++) {
		struct hvt_record r = rec(c, 1, "a");

		assert_int_equal(rec_filter_keep(&f, &r, NULL, 0),
				 c == 0 || c == 2 || c == 3 || c == 1023);
	}
	/* a lost-events mark is never dropped */
	struct hvt_record lost = rec(1, 0, "");

	lost.type = HVT_REC_LOST;
	assert_true(rec_filter_keep(&f, &lost, NULL, 0));
	rec_filter_free(&f);
}

static void test_cpu_errors(void **state)
{
	static const struct {
		const char *list, *err;
	} bad[] = {
	    {"", "--cpu '': expected a CPU number (0 to 1023) at column 1"},
	    {"1,", "--cpu '1,': expected a CPU number (0 to 1023) at column 3"},
	    {"2-1", "--cpu '2-1': a range must ascend at column 3"},
	    {"1-", "--cpu '1-': expected a CPU number (0 to 1023) at column 3"},
	    {"1 2", "--cpu '1 2': expected ',' or '-' at column 2"},
	    {"99999999999999999999",
	     "--cpu '99999999999999999999': expected a CPU number (0 to 1023) "
	     "at column 1"},
	    {"-1", "--cpu '-1': expected a CPU number (0 to 1023) at column 1"},
	    {"0x1", "--cpu '0x1': expected ',' or '-' at column 2"},
	};
	struct rec_filter f = {0};
	char err[128];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(rec_filter_add_cpus(&f, bad[i].list, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, bad[i].err);
	}
	/* a refused list adds nothing */
	assert_false(rec_filter_active(&f));
}

static void test_tasks(void **state)
{
	struct rec_filter f = {0};
	char err[128];

	(void)state;
	assert_int_equal(rec_filter_add_pid(&f, "42", err, sizeof(err)), 0);
	assert_int_equal(rec_filter_add_comm(&f, "kworker/*", err, sizeof(err)), 0);
	struct hvt_record a = rec(0, 42, "bash"), b = rec(0, 43, "kworker/0:1"),
			  c = rec(0, 43, "bash");

	assert_true(rec_filter_keep(&f, &a, NULL, 0));
	assert_true(rec_filter_keep(&f, &b, NULL, 0));
	assert_false(rec_filter_keep(&f, &c, NULL, 0));
	/* a comm without its NUL (a hostile guest's) is still bounded */
	memset(c.comm, 'k', sizeof(c.comm));
	assert_false(rec_filter_keep(&f, &c, NULL, 0));
	/* with --cpu too: both must hold */
	assert_int_equal(rec_filter_add_cpus(&f, "1", err, sizeof(err)), 0);
	assert_false(rec_filter_keep(&f, &a, NULL, 0));
	a.cpu = 1;
	assert_true(rec_filter_keep(&f, &a, NULL, 0));
	rec_filter_free(&f);
	assert_false(rec_filter_active(&f));
}

static void test_task_errors(void **state)
{
	struct rec_filter f = {0};
	char err[128];

	(void)state;
	assert_int_equal(rec_filter_add_pid(&f, "x", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "-P 'x': expected a guest pid (0 to 1073741824)");
	assert_int_equal(rec_filter_add_pid(&f, "12a", err, sizeof(err)), -EINVAL);
	assert_int_equal(rec_filter_add_pid(&f, "+1", err, sizeof(err)), -EINVAL);
	assert_int_equal(rec_filter_add_pid(&f, "1073741825", err, sizeof(err)), -EINVAL);
	assert_int_equal(rec_filter_add_comm(&f, "", err, sizeof(err)), -EINVAL);
	assert_false(rec_filter_active(&f));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty_keeps_all), cmocka_unit_test(test_cpus),
	    cmocka_unit_test(test_cpu_errors),	    cmocka_unit_test(test_tasks),
	    cmocka_unit_test(test_task_errors),
	};

	return cmocka_run_group_tests_name("rec_filter", tests, NULL, NULL);
}

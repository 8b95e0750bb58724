/* record --host's pure parts: where the host's file goes (host_rec_path) and the vCPU threads from
 * QMP's query-cpus-fast, as QEMU answers and as a hostile peer might (qemu_vcpu_threads_parse);
 * and, on the host's real tracefs (root; skipped without it), the sweep of instances a killed
 * hvtrace left (host_rec_sweep). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/hosttrace/host_rec.h"
#include "host/qemu/qemu_vcpu_threads.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <tracefs.h>
#include <unistd.h>

static void test_path(void **state)
{
	static const char *const cases[][2] = {
	    {"trace.dat", "trace-host.dat"}, {"out/run.1/trace.dat", "out/run.1/trace-host.dat"},
	    {"/tmp/t", "/tmp/t-host"},	     {"dir.d/t", "dir.d/t-host"},
	    {".hidden", ".hidden-host"},     {"a.b.dat", "a.b-host.dat"},
	};
	char out[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(host_rec_path(cases[i][0], out, sizeof(out)), 0);
		assert_string_equal(out, cases[i][1]);
	}
	assert_int_equal(host_rec_path("trace.dat", out, 10), -ENAMETOOLONG);
}

/* QEMU 7.2's answer for 2 vCPUs (abridged members kept as QEMU sends them), in any order */
static void test_vcpu_threads(void **state)
{
	const char *json =
	    "[{\"thread-id\": 4012, \"props\": {\"core-id\": 0, \"thread-id\": 0, \"node-id\": 0, "
	    "\"socket-id\": 1}, \"qom-path\": \"/machine/unattached/device[1]\", \"cpu-index\": 1, "
	    "\"target\": \"x86_64\"}, {\"thread-id\": 4011, \"props\": {\"core-id\": 0, "
	    "\"thread-id\": 0, \"socket-id\": 0}, \"qom-path\": \"/machine/unattached/device[0]\", "
	    "\"cpu-index\": 0, \"target\": \"x86_64\"}]";
	int tids[8];
	unsigned nr;
	char err[128];

	(void)state;
	assert_int_equal(qemu_vcpu_threads_parse(json, tids, 8, &nr, err, sizeof(err)), 0);
	assert_int_equal(nr, 2);
	assert_int_equal(tids[0], 4011);
	assert_int_equal(tids[1], 4012);
}

static void test_vcpu_threads_hostile(void **state)
{
	static const struct {
		const char *json, *err;
	} cases[] = {
	    {"{}", "query-cpus-fast: not an array of vCPUs"},
	    {"[]", "query-cpus-fast: no vCPU"},
	    {"[{\"cpu-index\": 0}]", "query-cpus-fast: a vCPU without a cpu-index or thread-id"},
	    {"[{\"cpu-index\": 0, \"thread-id\": -5}]",
	     "query-cpus-fast: a vCPU without a cpu-index or thread-id"},
	    {"[{\"cpu-index\": 0, \"thread-id\": 0}]",
	     "query-cpus-fast: a vCPU without a cpu-index or thread-id"},
	    {"[{\"cpu-index\": 0, \"thread-id\": \"7\"}]",
	     "query-cpus-fast: a vCPU without a cpu-index or thread-id"},
	    {"[{\"cpu-index\": 99999999999, \"thread-id\": 7}]",
	     "query-cpus-fast: a vCPU without a cpu-index or thread-id"},
	    {"[{\"cpu-index\": 8, \"thread-id\": 7}]", "query-cpus-fast: vCPU 8 out of range"},
	    {"[{\"cpu-index\": 0, \"thread-id\": 7}, {\"cpu-index\": 0, \"thread-id\": 8}]",
	     "query-cpus-fast: vCPU 0 listed twice"},
	    {"[{\"cpu-index\": 1, \"thread-id\": 7}]", "query-cpus-fast: vCPU 0 missing"},
	    {"[{\"cpu-index\": 0, \"thread-id\": 7} {\"cpu-index\": 1, \"thread-id\": 8}]",
	     "query-cpus-fast: not an array of vCPUs"},
	    {"[{\"cpu-index\": 0, \"thread-id\": 7}] x", "query-cpus-fast: not an array of vCPUs"},
	    {"[{\"cpu-index\": 0, \"thread-id\": 7}", "query-cpus-fast: not an array of vCPUs"},
	};
	int tids[8];
	unsigned nr = 5;
	char err[128];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		assert_int_equal(
		    qemu_vcpu_threads_parse(cases[i].json, tids, 8, &nr, err, sizeof(err)),
		    -EINVAL);
		assert_string_equal(err, cases[i].err);
		assert_int_equal(nr, 0);
	}
}

static bool make_named(int pid, const char *suffix, char *name, size_t len)
{
	struct tracefs_instance *i;

	snprintf(name, len, "hvtrace-%d%s", pid, suffix);
	i = tracefs_instance_create(name);
	tracefs_instance_free(i);
	return i && tracefs_instance_exists(name);
}

static bool make_instance(int pid, char *name, size_t len)
{
	return make_named(pid, "", name, len);
}

static void drop_instance(const char *name)
{
	struct tracefs_instance *i = tracefs_instance_alloc(NULL, name);

	if (i)
		tracefs_instance_destroy(i);
	tracefs_instance_free(i);
}

/* Instances of a process that is gone and of this very pid go; a live process's (an hvtrace, or
 * not: init) and a name not hvtrace-PID stay. tsc_follow's hvtrace-PID-tsc of a process that is
 * gone goes too, this process's own never; host_rec_sweep_dead leaves this pid's hvtrace-PID. */
static void test_sweep(void **state)
{
	char gone[32], other[32], own[32], live[32], mine[32] = "hvtrace-x1", gone_tsc[40],
	    own_tsc[40], odd[40];
	int sync[2], dead, runner;
	char c;

	(void)state;
	if (geteuid() != 0 || !tracefs_tracing_dir() || !make_instance(getpid(), own, sizeof(own)))
		skip();
	dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	assert_int_equal(pipe(sync), 0);
	runner = fork();
	if (runner == 0) { /* a live hvtrace, by its name */
		prctl(PR_SET_NAME, "hvtrace");
		if (write(sync[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_int_equal(read(sync[0], &c, 1), 1);
	assert_true(make_instance(dead, gone, sizeof(gone)));
	assert_true(make_instance(1, other, sizeof(other))); /* init */
	assert_true(make_instance(runner, live, sizeof(live)));
	tracefs_instance_free(tracefs_instance_create(mine));
	assert_true(make_named(dead, "-tsc", gone_tsc, sizeof(gone_tsc)));
	assert_true(make_named(getpid(), "-tsc", own_tsc, sizeof(own_tsc)));
	assert_true(make_named(dead, "-tscx", odd, sizeof(odd)));

	assert_int_equal(host_rec_sweep_dead(), 2);
	assert_false(tracefs_instance_exists(gone));
	assert_false(tracefs_instance_exists(gone_tsc));
	assert_true(tracefs_instance_exists(own));
	assert_true(tracefs_instance_exists(own_tsc));
	assert_true(tracefs_instance_exists(odd));
	assert_true(make_instance(dead, gone, sizeof(gone)));

	assert_int_equal(host_rec_sweep(), 2);
	assert_true(tracefs_instance_exists(own_tsc));
	assert_false(tracefs_instance_exists(gone));
	assert_true(tracefs_instance_exists(other));
	assert_false(tracefs_instance_exists(own));
	assert_true(tracefs_instance_exists(live));
	assert_true(tracefs_instance_exists(mine));
	assert_int_equal(host_rec_sweep(), 0);

	drop_instance(live);
	drop_instance(other);
	drop_instance(mine);
	drop_instance(own_tsc);
	drop_instance(odd);
	kill(runner, SIGKILL);
	waitpid(runner, NULL, 0);
	close(sync[0]);
	close(sync[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_path),
	    cmocka_unit_test(test_vcpu_threads),
	    cmocka_unit_test(test_vcpu_threads_hostile),
	    cmocka_unit_test(test_sweep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

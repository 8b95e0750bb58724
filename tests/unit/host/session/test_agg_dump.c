/* SIGUSR2 on demand (agg_dump): the signal sent to the process reaches the dump's thread and
 * nothing else (blocked everywhere), each one asks for one dump, and the stop ends the thread;
 * the hists' copy a dump prints from is the tables as they were, left apart from them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/session/agg_dump.h"
#include "host/tap/hist.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Whether a dump is asked for within about a second. */
static bool wanted_soon(struct agg_dump *d)
{
	for (int i = 0; i < 1000; i++) {
		if (agg_dump_wanted(d))
			return true;
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	return false;
}

static void test_signal_asks_once(void **state)
{
	struct agg_dump d;
	sigset_t now;

	(void)state;
	assert_int_equal(agg_dump_start(&d), 0);
	pthread_sigmask(SIG_BLOCK, NULL, &now);
	assert_true(sigismember(&now, AGG_DUMP_SIGNAL)); /* this thread never takes it */
	assert_false(agg_dump_wanted(&d));
	assert_int_equal(kill(getpid(), AGG_DUMP_SIGNAL), 0);
	assert_true(wanted_soon(&d));
	assert_false(agg_dump_wanted(&d)); /* one signal, one dump */
	assert_int_equal(kill(getpid(), AGG_DUMP_SIGNAL), 0);
	assert_true(wanted_soon(&d));
	/* the tables are readable until the detach says otherwise */
	assert_true(d.live);
	agg_dump_end_live(&d);
	assert_false(d.live);
	agg_dump_stop(&d);
	assert_false(d.running);
	agg_dump_stop(&d); /* idempotent */
}

static void test_copy_apart(void **state)
{
	struct hist_set set = {0}, copy;
	struct hist *h = calloc(1, sizeof(*h));
	char err[128];
	uint64_t key[1] = {7}, none[1] = {0};
	const char a[VMI_COMM_LEN] = "a"; /* a comm is VMI_COMM_LEN bytes */

	(void)state;
	assert_non_null(h);
	assert_int_equal(hist_parse("f:hist:keys=common_pid", &h->spec, err, sizeof(err)), 0);
	h->stack_key = -1;
	h->elts = calloc(h->spec.size, sizeof(*h->elts));
	h->slots = calloc(2 * h->spec.size, sizeof(*h->slots));
	h->mask = 2 * h->spec.size - 1;
	set.v = h;
	set.nr = 1;
	hist_account(h, key, none, a);
	assert_int_equal(hist_set_copy(&copy, &set), 0);
	hist_account(h, key, none, a); /* the tap goes on: the copy keeps what it had */
	hist_account(&copy.v[0], key, none, a);
	hist_account(&copy.v[0], key, none, a);
	assert_int_equal(h->hits, 2);
	assert_int_equal(copy.v[0].hits, 3);
	assert_int_equal(copy.v[0].nr_elts, 1);
	assert_int_equal(copy.v[0].elts[0].sum[0], 3);
	assert_int_equal(h->elts[0].sum[0], 2);
	assert_ptr_not_equal(copy.v[0].elts, h->elts);
	hist_set_free(&copy);
	hist_set_free(&set);
	assert_int_equal(hist_set_copy(&copy, &set), 0); /* an empty set */
	assert_int_equal(copy.nr, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_signal_asks_once),
	    cmocka_unit_test(test_copy_apart),
	};

	return cmocka_run_group_tests_name("agg_dump", tests, NULL, NULL);
}

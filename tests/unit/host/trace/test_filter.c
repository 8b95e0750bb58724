/* host/filter: ftrace globs and the -l / -n selection over a guest's sites. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/filter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- filter_glob_match ---------------------------------------------------------------------- */

static void test_glob_exact(void **state)
{
	(void)state;
	assert_true(filter_glob_match("fib", "fib"));
	assert_false(filter_glob_match("fib", "fi"));
	assert_false(filter_glob_match("fib", "fibs"));
	assert_false(filter_glob_match("fib", "xfib"));
	assert_false(filter_glob_match("fib", "FIB"));
	assert_true(filter_glob_match("", ""));
	assert_false(filter_glob_match("", "fib"));
}

static void test_glob_star(void **state)
{
	(void)state;
	/* prefix* */
	assert_true(filter_glob_match("tree_*", "tree_a"));
	assert_true(filter_glob_match("tree_*", "tree_leaf"));
	assert_true(filter_glob_match("tree_*", "tree_"));
	assert_false(filter_glob_match("tree_*", "tree"));
	assert_false(filter_glob_match("tree_*", "xtree_a"));
	/* *suffix */
	assert_true(filter_glob_match("*_leaf", "tree_leaf"));
	assert_true(filter_glob_match("*_leaf", "_leaf"));
	assert_false(filter_glob_match("*_leaf", "tree_leafy"));
	/* *mid* */
	assert_true(filter_glob_match("*ee_l*", "tree_leaf"));
	assert_true(filter_glob_match("*ee_l*", "ee_l"));
	assert_false(filter_glob_match("*ee_l*", "tree_a"));
	/* a*b */
	assert_true(filter_glob_match("t*f", "tree_leaf"));
	assert_true(filter_glob_match("t*f", "tf"));
	assert_false(filter_glob_match("t*f", "tree_a"));
	assert_false(filter_glob_match("t*f", "tree_leaf_"));
	/* * alone */
	assert_true(filter_glob_match("*", "anything"));
	assert_true(filter_glob_match("*", ""));
}

static void test_glob_question_and_class(void **state)
{
	(void)state;
	assert_true(filter_glob_match("fi?", "fib"));
	assert_false(filter_glob_match("fi?", "fi"));
	assert_false(filter_glob_match("fi?", "fibs"));
	assert_true(filter_glob_match("tree_?", "tree_a"));
	assert_false(filter_glob_match("tree_?", "tree_leaf"));

	assert_true(filter_glob_match("tree_[ab]", "tree_a"));
	assert_true(filter_glob_match("tree_[ab]", "tree_b"));
	assert_false(filter_glob_match("tree_[ab]", "tree_c"));
	assert_false(filter_glob_match("tree_[ab]", "tree_ab"));
	assert_true(filter_glob_match("tree_[a-c]", "tree_c"));
	assert_false(filter_glob_match("tree_[a-c]", "tree_d"));
	assert_true(filter_glob_match("[ft]*", "fib"));
	assert_true(filter_glob_match("[ft]*", "tree_a"));
	assert_false(filter_glob_match("[ft]*", "workload_run"));
}

/* ---- filter_select -------------------------------------------------------------------------- */

/* The test guest's functions, one site each, in address order. */
static const char *const names[] = {
    "fib", "tree_leaf", "tree_a", "tree_b", "tree_root", "task_leaf", "task_step", "workload_run",
};
#define NR_NAMES (sizeof(names) / sizeof(names[0]))

struct fixture {
	struct vmi_symtab syms;
	struct vmi_sites sites;
	const struct vmi_site **sel;
	size_t nr;
	char err[256];
};

static int fixture_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	uint64_t addrs[NR_NAMES];

	if (!f)
		return -1;
	for (size_t i = 0; i < NR_NAMES; i++) {
		addrs[i] = 0x401000 + 0x40 * i;
		if (vmi_symtab_add(&f->syms, addrs[i], 0x40, names[i]) < 0)
			return -1;
	}
	vmi_symtab_sort(&f->syms);
	if (vmi_sites_build(&f->sites, addrs, NR_NAMES, &f->syms) < 0 || f->sites.nr != NR_NAMES)
		return -1;
	*state = f;
	return 0;
}

static int fixture_teardown(void **state)
{
	struct fixture *f = *state;

	free(f->sel);
	vmi_sites_free(&f->sites);
	vmi_symtab_free(&f->syms);
	free(f);
	return 0;
}

static int select_(struct fixture *f, char *const *l, size_t nl, char *const *n, size_t nn)
{
	free(f->sel);
	f->sel = NULL;
	f->nr = 0;
	f->err[0] = 0;
	return filter_select(&f->sites, l, nl, n, nn, &f->sel, &f->nr, f->err, sizeof(f->err));
}

/* The selection, as "name name ..." for exact comparison. */
static const char *selected(const struct fixture *f)
{
	static char buf[512];

	buf[0] = 0;
	for (size_t i = 0; i < f->nr; i++) {
		if (i)
			strcat(buf, " ");
		strcat(buf, f->sel[i]->func->name);
	}
	return buf;
}

/* No -l and no -n: every site, pointing into the sites array, in address order. */
static void test_select_all(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(select_(f, NULL, 0, NULL, 0), 0);
	assert_int_equal(f->nr, NR_NAMES);
	for (size_t i = 0; i < NR_NAMES; i++)
		assert_ptr_equal(f->sel[i], &f->sites.v[i]);
	assert_string_equal(f->err, "");
}

/* Several -l globs select the union, each site once, in address order. */
static void test_select_filter_union(void **state)
{
	struct fixture *f = *state;
	char *l[] = {"tree_*", "fib", "tree_a"};

	assert_int_equal(select_(f, l, 3, NULL, 0), 0);
	assert_string_equal(selected(f), "fib tree_leaf tree_a tree_b tree_root");

	assert_int_equal(select_(f, (char *[]){"*step"}, 1, NULL, 0), 0);
	assert_string_equal(selected(f), "task_step");
	assert_ptr_equal(f->sel[0], &f->sites.v[6]);
}

/* -n removes from the -l selection, or from everything without -l. */
static void test_select_notrace(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(select_(f, (char *[]){"tree_*"}, 1, (char *[]){"tree_leaf"}, 1), 0);
	assert_string_equal(selected(f), "tree_a tree_b tree_root");

	assert_int_equal(select_(f, NULL, 0, (char *[]){"t*", "fib"}, 2), 0);
	assert_string_equal(selected(f), "workload_run");

	/* a -n glob that matches only unselected functions is fine */
	assert_int_equal(select_(f, (char *[]){"fib"}, 1, (char *[]){"task_*"}, 1), 0);
	assert_string_equal(selected(f), "fib");
}

/* A glob that matches no function fails, naming the flag and the glob. */
static void test_select_glob_matches_nothing(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(select_(f, (char *[]){"fib", "xyz*"}, 2, NULL, 0), -ENOENT);
	assert_string_equal(f->err, "-l 'xyz*': matches no traceable function");
	assert_null(f->sel);

	assert_int_equal(select_(f, NULL, 0, (char *[]){"xyz*"}, 1), -ENOENT);
	assert_string_equal(f->err, "-n 'xyz*': matches no traceable function");

	assert_int_equal(select_(f, (char *[]){"tree_*"}, 1, (char *[]){"tree_leaf", "tree_c"}, 2),
			 -ENOENT);
	assert_string_equal(f->err, "-n 'tree_c': matches no traceable function");
}

/* Excluding everything that was selected fails. */
static void test_select_everything_excluded(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(select_(f, (char *[]){"fib"}, 1, (char *[]){"fib"}, 1), -ENOENT);
	assert_string_equal(f->err, "-n: excludes every function the filter selected");
	assert_null(f->sel);

	assert_int_equal(select_(f, NULL, 0, (char *[]){"*"}, 1), -ENOENT);
	assert_string_equal(f->err, "-n: excludes every function the filter selected");

	assert_int_equal(select_(f, (char *[]){"tree_[ab]"}, 1, (char *[]){"tree_?"}, 1), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_glob_exact),
	    cmocka_unit_test(test_glob_star),
	    cmocka_unit_test(test_glob_question_and_class),
	    cmocka_unit_test_setup_teardown(test_select_all, fixture_setup, fixture_teardown),
	    cmocka_unit_test_setup_teardown(test_select_filter_union, fixture_setup,
					    fixture_teardown),
	    cmocka_unit_test_setup_teardown(test_select_notrace, fixture_setup, fixture_teardown),
	    cmocka_unit_test_setup_teardown(test_select_glob_matches_nothing, fixture_setup,
					    fixture_teardown),
	    cmocka_unit_test_setup_teardown(test_select_everything_excluded, fixture_setup,
					    fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* --profile as ftrace's trace_stat/function files: trace_print_graph_duration's columns, the
 * sample variance in the kernel's unsigned arithmetic (function_stat_show), one section per CPU
 * and the merged one, sorted by time; and what the stub counted added with profile_add_counted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/tap/profile_stat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_duration(void **state)
{
	char b[64];

	(void)state;
	/* the microseconds, then as many digits of the nanoseconds as keep the value in 7 digits,
	 * " us ", padded to 8 characters before it */
	profile_stat_duration(b, sizeof(b), 0);
	assert_string_equal(b, "0.000 us    ");
	profile_stat_duration(b, sizeof(b), 999);
	assert_string_equal(b, "0.999 us    ");
	profile_stat_duration(b, sizeof(b), 12345);
	assert_string_equal(b, "12.345 us   ");
	profile_stat_duration(b, sizeof(b), 1234567);
	assert_string_equal(b, "1234.567 us ");
	profile_stat_duration(b, sizeof(b), 12345678);
	assert_string_equal(b, "12345.67 us ");
	profile_stat_duration(b, sizeof(b), 123456789);
	assert_string_equal(b, "123456.7 us ");
	profile_stat_duration(b, sizeof(b), 1234567890);
	assert_string_equal(b, "1234567 us  ");
	assert_int_equal(profile_stat_duration(b, 4, 1234567890), 12); /* snprintf's length */
	assert_string_equal(b, "123");
}

static void test_line(void **state)
{
	/* three calls of 1, 1 and 2 us: 4 us, 1.333 us on average, s^2 = (3 * 6e6 - 16e6) /
	 * (3 * 2 * 1000) = 333 (ns^2 / 1000: shown as 0.333 us, as the kernel shows it) */
	struct profile_entry e = {.hits = 3, .returns = 3, .total_ns = 4000, .sumsq_ns = 6000000};
	struct profile_entry one = {.hits = 1, .total_ns = 5000, .sumsq_ns = 25000000};
	struct profile_entry wrap = {.hits = 1ull << 62, .total_ns = 1, .sumsq_ns = 1};
	char b[256];

	(void)state;
	profile_stat_line(b, sizeof(b), "vfs_read", &e);
	assert_string_equal(b, "  vfs_read                                 3    4.000 us        "
			       "1.333 us        0.333 us    \n");
	profile_stat_line(b, sizeof(b), "a_function_name_longer_than_thirty_characters", &one);
	assert_string_equal(b, "  a_function_name_longer_than_th           1    5.000 us        "
			       "5.000 us        0.000 us    \n");
	/* a guest's count whose n * (n - 1) * 1000 wraps to 0: no variance rather than a trap */
	profile_stat_line(b, sizeof(b), "f", &wrap);
	assert_non_null(strstr(b, "0.000 us    \n"));
}

/* A probe table of three functions. */
static struct vmi_symtab syms;
static struct vmi_site sites[3];
static struct probe_table probes;

static void test_print(void **state)
{
	const struct vmi_site *sel[3] = {&sites[0], &sites[1], &sites[2]};
	struct profile p;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	memset(&syms, 0, sizeof(syms));
	vmi_symtab_add(&syms, 0x1000, 0x100, "fa");
	vmi_symtab_add(&syms, 0x2000, 0x100, "fb");
	vmi_symtab_add(&syms, 0x3000, 0x100, "fc");
	vmi_symtab_sort(&syms);
	for (unsigned i = 0; i < 3; i++)
		sites[i] = (struct vmi_site){.addr = 0x1000 * (i + 1), .func = &syms.syms[i]};
	assert_int_equal(probe_table_init(&probes, sel, 3), 0);
	assert_int_equal(profile_init(&p, &probes), 0);
	assert_int_equal(profile_set_cpus(&p, 2), 0);
	/* fa: 2 calls on CPU 0 of 3 us each; fb: a call on each CPU, and two returns on CPU 1 of 4
	 * and 6 us (s^2 2 us^2); fc: none */
	profile_add_counted(&p, 0, 0, false, 2, 0, 0, 0);
	profile_add_counted(&p, 0, 0, true, 2, 6000, 18000000, 3000);
	profile_add_counted(&p, 0, 1, false, 1, 0, 0, 0);
	profile_add_counted(&p, 1, 1, false, 1, 0, 0, 0);
	profile_add_counted(&p, 1, 1, true, 2, 10000, 52000000, 6000);
	profile_add_counted(&p, 7, 2, false, 0, 0, 0, 0); /* a CPU past the tables: the last's */
	profile_add_counted(&p, 0, 9, false, 5, 0, 0, 0); /* no such probe: nothing */
	assert_int_equal(p.v[0].hits, 2);
	assert_int_equal(p.v[1].hits, 2);
	assert_int_equal(p.v[1].max_ns, 6000);
	f = open_memstream(&text, &len);
	assert_int_equal(profile_stat_print(&p, f), 0);
	fclose(f);
	assert_string_equal(
	    text,
	    "trace_stat/function0:\n"
	    "  Function                               Hit    Time            Avg             s^2\n"
	    "  --------                               ---    ----            ---             ---\n"
	    "  fa                                       2    6.000 us        3.000 us        0.000 "
	    "us    \n"
	    "  fb                                       1    0.000 us        0.000 us        0.000 "
	    "us    \n"
	    "\n"
	    "trace_stat/function1:\n"
	    "  Function                               Hit    Time            Avg             s^2\n"
	    "  --------                               ---    ----            ---             ---\n"
	    "  fb                                       1    10.000 us       10.000 us       0.000 "
	    "us    \n"
	    "\n"
	    "trace_stat/function (all CPUs):\n"
	    "  Function                               Hit    Time            Avg             s^2\n"
	    "  --------                               ---    ----            ---             ---\n"
	    "  fb                                       2    10.000 us       5.000 us        2.000 "
	    "us    \n"
	    "  fa                                       2    6.000 us        3.000 us        0.000 "
	    "us    \n");
	free(text);
	profile_free(&p);
	probe_table_free(&probes);
	vmi_symtab_free(&syms);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_duration),
	    cmocka_unit_test(test_line),
	    cmocka_unit_test(test_print),
	};

	return cmocka_run_group_tests_name("profile_stat", tests, NULL, NULL);
}

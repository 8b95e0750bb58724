/* report --exits' exit reason names: the word after "reason " in a kvm_exit's printed text
 * (host_side_reason_from_info), each reason learnt once and found again (host_side_learn), and that text as libtraceevent prints a record through this host's
 * own kvm:kvm_exit format (its __print_symbolic tables; skipped where the host's tracefs has no
 * kvm_exit), for a VMX and an SVM exit. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/sink/tracedat_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

static void test_from_info(void **state)
{
	static const struct {
		const char *info, *name; /* NULL: no name */
	} cases[] = {
	    {"vcpu 0 reason HLT rip 0xffffffff81000000 info1 0x0", "HLT"},
	    {"vcpu 1 reason EXTERNAL_INTERRUPT rip 0x1 info 0 0", "EXTERNAL_INTERRUPT"},
	    {"vcpu 0 reason hlt rip 0xffffffff81000000", "hlt"},
	    {"vcpu 0 reason npf rip 0x1", "npf"},
	    {"reason MSR", "MSR"},
	    /* kvm_userspace_exit, the exits of a host whose KVM fires no kvm_exit (PVM) */
	    {"reason KVM_EXIT_INTERNAL_ERROR (17)", "KVM_EXIT_INTERNAL_ERROR"},
	    {"vcpu 0 reason 0x7c rip 0x1", NULL}, /* the table has no name for it */
	    {"vcpu 0 reason 124 rip 0x1", NULL},
	    {"vcpu 0 reason ff rip 0x1", NULL},
	    {"vcpu 0 reason  HLT", NULL},
	    {"vcpu 0 reason ", NULL},
	    {"vcpu 0 exit_reason=12", NULL},
	    {"", NULL},
	    /* longer than a name may be: no name, not a cut one */
	    {"reason AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA rip", NULL},
	};
	char name[HOST_SIDE_NAME_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool ok = host_side_reason_from_info(cases[i].info, name, sizeof(name));

		if (!cases[i].name) {
			if (ok)
				fail_msg("'%s': named %s", cases[i].info, name);
			continue;
		}
		if (!ok)
			fail_msg("'%s': no name", cases[i].info);
		assert_string_equal(name, cases[i].name);
	}
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 16);

	*len = f && buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
	if (f)
		fclose(f);
	return buf;
}

static void set_field(struct tep_event *ev, const char *name, unsigned char *data, uint64_t v)
{
	struct tep_format_field *f = tep_find_any_field(ev, name);

	if (f && f->size <= 8)
		memcpy(data + f->offset, &v, (size_t)f->size);
}

/* A kvm_exit record printed through the host's own format, its reason named from that text. */
static bool name_through_format(struct tep_handle *tep, struct tep_event *ev, unsigned isa,
				uint32_t reason, char *name, size_t len)
{
	unsigned char data[256] = {0};
	struct tep_record rec = {.data = data, .size = sizeof(data)};
	struct trace_seq seq;
	bool ok;

	set_field(ev, "common_type", data, (uint64_t)ev->id);
	set_field(ev, "exit_reason", data, reason);
	set_field(ev, "isa", data, isa);
	trace_seq_init(&seq);
	tep_print_event(tep, &seq, &rec, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&seq);
	ok = host_side_reason_from_info(seq.buffer, name, len);
	if (getenv("HVT_TEST_VERBOSE"))
		fprintf(stderr, "%s\n", seq.buffer);
	trace_seq_destroy(&seq);
	return ok;
}

static void test_host_format(void **state)
{
	const char *paths[] = {"/sys/kernel/tracing/events/kvm/kvm_exit/format",
			       "/sys/kernel/debug/tracing/events/kvm/kvm_exit/format"};
	struct tep_handle *tep = NULL;
	struct tep_event *ev = NULL;
	char *fmt = NULL, name[HOST_SIDE_NAME_LEN];
	size_t len = 0;

	(void)state;
	for (size_t i = 0; i < 2 && !len; i++) {
		free(fmt);
		fmt = slurp(paths[i], &len);
	}
	if (!len || !strstr(fmt, "__print_symbolic") || !strstr(fmt, " isa;") ||
	    !(tep = tep_alloc())) {
		free(fmt);
		skip(); /* no kvm_exit with VMX and SVM tables on this host */
	}
	assert_int_equal(tep_parse_event(tep, fmt, len, "kvm"), 0);
	ev = tep_find_event_by_name(tep, "kvm", "kvm_exit");
	assert_non_null(ev);
	/* the kernel's KVM_ISA_VMX 1 and KVM_ISA_SVM 2; VMX's HLT is 12, SVM's 0x78 */
	assert_true(name_through_format(tep, ev, 1, 12, name, sizeof(name)));
	assert_string_equal(name, "HLT");
	assert_true(name_through_format(tep, ev, 1, 1, name, sizeof(name)));
	assert_string_equal(name, "EXTERNAL_INTERRUPT");
	assert_true(name_through_format(tep, ev, 2, 0x78, name, sizeof(name)));
	assert_string_equal(name, "hlt");
	/* a reason no table names */
	assert_false(name_through_format(tep, ev, 1, 0xfff0, name, sizeof(name)));
	tep_free(tep);
	free(fmt);
}

/* Reasons learnt once each, found again by number: VMX's and SVM's through the index, any other
 * number (a hostile or future one) by the scan; no more than HOST_SIDE_NAMES kept. */
static void test_learn(void **state)
{
	static struct host_side h; /* large: not on the stack */
	uint32_t r;

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_null(host_side_reason_name(&h, 12));
	assert_true(host_side_learns(&h, 12));
	host_side_learn(&h, 12, "vcpu 0 reason HLT rip 0x1 info1 0x0");
	host_side_learn(&h, 0x400, "vcpu 1 reason npf rip 0x2");
	host_side_learn(&h, 0xfff0, "vcpu 0 reason 0xfff0 rip 0x3"); /* no name in the table */
	host_side_learn(&h, 0x7fffffff, "vcpu 0 reason far rip 0x3");
	host_side_learn(&h, 48, NULL); /* could not be printed */
	/* the first exit of a reason names it; later ones change nothing */
	assert_false(host_side_learns(&h, 12));
	host_side_learn(&h, 12, "vcpu 0 reason OTHER rip 0x1");
	assert_int_equal(h.nr_names, 5);
	assert_string_equal(host_side_reason_name(&h, 12), "HLT");
	assert_string_equal(host_side_reason_name(&h, 0x400), "npf");
	assert_null(host_side_reason_name(&h, 0xfff0));
	assert_false(host_side_learns(&h, 0xfff0));
	assert_string_equal(host_side_reason_name(&h, 0x7fffffff), "far");
	assert_null(host_side_reason_name(&h, 48));
	assert_false(host_side_learns(&h, 48));
	assert_null(host_side_reason_name(&h, 13));
	assert_null(host_side_reason_name(&h, HOST_SIDE_INDEXED));
	/* full: the rest are not kept, indexed or not */
	for (r = 100; h.nr_names < HOST_SIDE_NAMES; r++)
		host_side_learn(&h, r, "vcpu 0 reason X rip 0x1");
	assert_false(host_side_learns(&h, 1000));
	assert_false(host_side_learns(&h, 0x12345678));
	host_side_learn(&h, 1000, "vcpu 0 reason LATE rip 0x1");
	host_side_learn(&h, 0x12345678, "vcpu 0 reason LATE rip 0x1");
	assert_int_equal(h.nr_names, HOST_SIDE_NAMES);
	assert_null(host_side_reason_name(&h, 1000));
	assert_null(host_side_reason_name(&h, 0x12345678));
	assert_string_equal(host_side_reason_name(&h, r - 1), "X");
	assert_string_equal(host_side_reason_name(&h, 0x7fffffff), "far");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_from_info),
	    cmocka_unit_test(test_learn),
	    cmocka_unit_test(test_host_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

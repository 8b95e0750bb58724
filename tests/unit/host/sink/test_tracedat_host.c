/* report --exits' exit reason names: the word after "reason " in a kvm_exit's printed text
 * (host_side_reason_from_info), and that text as libtraceevent prints a record through this host's
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_from_info),
	    cmocka_unit_test(test_host_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

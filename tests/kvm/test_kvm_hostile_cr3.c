/* A guest that switches page tables under hvtrace (issue #10): vCPU 0 of test-guest-hostile-cr3
 * maps the text's addresses onto a copy and vCPU 1's stack onto a decoy, and rewrites one patched
 * site itself, while vCPU 1 calls traced functions. hvtrace patches and restores by the
 * guest-physical addresses resolved at attach, so after `--duration` the guest finds (and reports
 * through its exit status, 0 only if all holds): the real text byte-identical to the ELF but for
 * the site it rewrote, the copy and the decoy never written, and vCPU 1 still running through the
 * restored sites. hvtrace names the rewritten site in one line and leaves it alone. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"
#include "host/kvm/guest_image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one line hvtrace prints about the site of hc_rewritten, whose INT3 or CALL the guest
 * overwrote with the NOP5 66 66 90 66 90. */
static void rewritten_line(char *buf, size_t len)
{
	struct guest_image g;
	char err[256];
	uint64_t site = 0;

	assert_int_equal(guest_image_open(&g, hv_guest("hostile-cr3"), err, sizeof(err)), 0);
	for (size_t i = 0; i < g.sites.nr; i++)
		if (!strcmp(g.sites.v[i].func->name, "hc_rewritten"))
			site = g.sites.v[i].addr;
	guest_image_close(&g);
	assert_true(site != 0);
	/* the guest keeps the boot identity map for its text: guest-physical = guest-virtual */
	snprintf(buf, len,
		 "hvtrace: hc_rewritten: site 0x%llx was rewritten by the guest (guest-physical "
		 "0x%llx holds 66 66 90 66 90): left as it is\n",
		 (unsigned long long)site, (unsigned long long)site);
}

/* Runs the hostile guest with @args (NULL-terminated, at most 4) for two traced seconds. */
static void run_hostile(struct hv_result *r, const char *const *args)
{
	const char *argv[16] = {"run"};
	char want[256];
	int n = 1;

	while (*args)
		argv[n++] = *args++;
	argv[n++] = "--duration";
	argv[n++] = "2";
	argv[n++] = "--timeout"; /* a guest that never sees the detach must not hang the suite */
	argv[n++] = "120";
	argv[n++] = hv_guest("hostile-cr3");
	argv[n] = NULL;
	hv_run(r, argv, 0, 0);
	if (r->status != 0)
		print_message("console:\n%s\nstderr:\n%s\n", r->console, r->err);
	/* the guest's own verdict, written to port 0xf4 after its checks */
	assert_int_equal(r->status, 0);
	assert_non_null(strstr(r->console, "hvt-hostile: cpu0 runs a copy of the text\n"));
	assert_non_null(strstr(r->console, "hvt-hostile: cpu1 calls after the detach 0x40\n"));
	assert_non_null(strstr(r->console, "hvt-hostile: ok\n"));
	assert_null(strstr(r->console, "differs"));
	assert_null(strstr(r->console, "written"));
	/* nothing on stderr but the one line naming the site the guest rewrote */
	rewritten_line(want, sizeof(want));
	assert_string_equal(r->err, want);
	assert_non_null(strstr(r->trace, "lost: 0\n"));
}

/* -p function with @probe probes: vCPU 1's calls are traced; vCPU 0, which only ever executes the
 * copy (whose sites hold another NOP5), has no event at all. */
static void run_function(const char *probe)
{
	const char *args[] = {"-p", "function", "--probe", probe, NULL};
	struct hv_result r;

	run_hostile(&r, args);
	assert_true(trace_count(&r, "hc_leaf", 1) > 0);
	assert_int_equal(trace_count(&r, NULL, 0), 0);
	hv_result_free(&r);
}

/* Trap probes: every INT3 comes out of the real text, none goes into the copy. */
static void test_hostile_cr3_trap(void **state)
{
	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	run_function("trap");
}

/* Stub probes: every CALL comes out of the real text before the stub is unmapped, so vCPU 1 runs on
 * (with the CALL left in, it would die in the unmapped stub: KVM_EXIT_INTERNAL_ERROR, status 3). */
static void test_hostile_cr3_stub(void **state)
{
	(void)state;
	run_function("stub");
}

/* Return probes: the trampoline goes into vCPU 1's real stack slots (through vCPU 1's page tables,
 * not vCPU 0's, which map that stack onto the decoy), so the returns are traced, and the detach
 * hands them back there. */
static void test_hostile_cr3_returns(void **state)
{
	const char *args[] = {"-p", "function", "-r", "hc_leaf", NULL};
	struct hv_result r;

	(void)state;
	run_hostile(&r, args);
	assert_true(count_text(r.trace, " [001] ") > 0);
	assert_true(count_text(r.trace, "<- hc_leaf) ret=") > 0);
	assert_int_equal(count_text(r.trace, " [000] "), 0);
	hv_result_free(&r);
}

/* function_graph: every function of vCPU 1 gets its return through its own stack. */
static void test_hostile_cr3_graph(void **state)
{
	const char *args[] = {"-p", "function_graph", NULL};
	struct hv_result r;

	(void)state;
	run_hostile(&r, args);
	assert_true(count_text(r.trace, "|      hc_leaf();\n") > 0);
	assert_int_equal(count_text(r.trace, "\n 0) "), 0);
	hv_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hostile_cr3_trap),
	    cmocka_unit_test(test_hostile_cr3_stub),
	    cmocka_unit_test(test_hostile_cr3_returns),
	    cmocka_unit_test(test_hostile_cr3_graph),
	};

	kvm_require();
	return cmocka_run_group_tests_name("kvm_hostile_cr3", tests, NULL, NULL);
}

/* The hostile data guest (tests/guest/hostile_data.c) against hvtrace: a stub depth bound of 255
 * with a 250-deep recursion, forged ring records, a gap, wrapped lost counters, a scribbled shadow
 * stack and a task named "x\n[000] forged\x1b[2J". hvtrace ends with the guest's own status, every
 * trace line is one hvtrace wrote (nothing forged, no control byte), the counts are the host's,
 * and the guest's text is byte-identical after the detach. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"
#include "host/trace/tracer.h"
#include "host/trace/tracer_int.h" /* white-box: the tracer's fields */
#include "host/kvm/vcpu.h"
#include "host/sink/sink.h"
#include "host/sink/writer.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_ESCAPED "x\\n[000] forged\\x1b"
#define GUEST_LOST   " guest-reported-lost 18446744073709551615 " /* 2^64 - 16 + 16, saturated */
/* The same losses where they are in each vCPU's stream: vCPU 0's guest ring says 2^64 - 16, plus the
 * host's gap of 1, marked before the records after them; vCPU 1's says 16, after its last record
 * (the writer marks it at the end). */
#define LOST_LINES "\nCPU:0 [LOST 18446744073709551601 EVENTS]\n"

/* Every byte is printable or ends a line, and every line is a header/trailer line, a lost-events
 * line or starts the way @sink's lines do (function_graph: also the context-switch block's dashes
 * and the empty line after it): no guest byte began a line. */
static void assert_clean(const char *trace, bool graph)
{
	for (const char *p = trace; *p; p++)
		assert_true(*p == '\n' || (*p >= 0x20 && *p < 0x7f));
	for (const char *l = trace; *l; l = strchr(l, '\n') + 1) {
		if (graph)
			assert_true(*l == '#' || !strncmp(l, " 0) ", 4) || !strncmp(l, "CPU:", 4) ||
				    !strncmp(l, " ------------------------------------------\n", 44) ||
				    *l == '\n');
		else
			assert_true(*l == '#' || !strncmp(l, "            cpu0-0 ", 19) ||
				    !strncmp(l, "CPU:", 4) ||
				    !strncmp(l, NAME_ESCAPED "-66 ", strlen(NAME_ESCAPED "-66 ")));
		assert_false(!strncmp(l, "[000] forged", 12));
		assert_non_null(strchr(l, '\n'));
	}
}

/* The function_graph lines from their "|  " on, in order: comparable between two runs. */
static char *graph_body(const char *trace)
{
	char *out = calloc(1, strlen(trace) + 1);

	for (const char *p = trace; (p = strstr(p, "|  ")); p++) {
		const char *eol = strchr(p, '\n');

		strncat(out, p, (size_t)(eol - p) + 1);
		p = eol;
	}
	return out;
}

/* ./hvtrace run with @probe and @tracer (function_graph: with return values), --stats, --profile;
 * the guest's own status is 0. */
static void run(struct hv_result *r, const char *probe, const char *tracer)
{
	bool graph = !strcmp(tracer, "function_graph");
	const char *argv[] = {"run",
			      "--probe",
			      probe,
			      "-p",
			      tracer,
			      "--stats",
			      "--profile",
			      hv_guest("hostile-data"),
			      graph ? "--funcgraph-retval" : NULL,
			      NULL};

	hv_run(r, argv, 0, 0);
	assert_int_equal(r->status, 0);
}

/* function_graph with return values on stub probes: the 255 depth bound and the forged depth-255
 * return crashed the writer before (SIGSEGV). Every record deeper than the host's bound (128) and
 * every forged one is rejected and counted; the gap is the host's only loss; the guest's wrapped
 * counters are shown as its own, saturated. The graph equals the trap probes' one. */
static void test_stub_graph(void **state)
{
	struct hv_result stub, trap;
	char *g1, *g2;

	(void)state;
	run(&stub, "stub", "function_graph");
	assert_non_null(strstr(stub.console, "hvt-hostile: stub found\nhvt-hostile: ok\n"));
	assert_clean(stub.trace, true);
	/* the comm cut to 7 bytes before escaping, as print_graph_proc cuts it */
	assert_int_equal(count_text(stub.trace, " 0)  x\\n[000]-66   =>     cpu0-0    \n"), 1);
	assert_int_equal(count_text(stub.trace, LOST_LINES), 1);
	assert_int_equal(count_text(stub.trace, "hd_deep() {\n"), 127);
	assert_int_equal(count_text(stub.trace, "hd_deep(); /* ret=0x7a */\n"), 1);
	assert_int_equal(count_text(stub.trace, "} /* hd_deep ret="), 127);
	for (int i = 0; i < 4; i++) {
		char leaf[64];

		snprintf(leaf, sizeof(leaf), "|  hd_after(); /* ret=0x%x */\n", 2 * i);
		assert_int_equal(count_text(stub.trace, leaf), 1);
	}
	assert_non_null(strstr(stub.trace,
			       "\n# entries-written: 269   lost: 1   guest-reported-lost: "
			       "18446744073709551615\n"));
	/* 269 records written + 244 deeper than 128 + 3 forged; the decoy on its own stack is the
	 * one slot written back */
	assert_int_equal(hv_stat(stub.err, "stub probes ", "records "), 516);
	assert_int_equal(hv_stat(stub.err, "stub probes ", "rejected "), 247);
	assert_int_equal(hv_stat(stub.err, "stub probes ", "lost "), 1);
	assert_non_null(strstr(stub.err, GUEST_LOST));
	assert_int_equal(hv_stat(stub.err, "probes ", "restored-slots "), 1);
	assert_non_null(
	    strstr(stub.err, "hvtrace: guest-reported: 18446744073709551615 events missed"));

	if (!needs_int3_exits("test_stub_graph (the trap probes' graph to compare)")) {
		hv_result_free(&stub);
		return;
	}
	run(&trap, "trap", "function_graph");
	assert_non_null(strstr(trap.console, "hvt-hostile: no stub\nhvt-hostile: ok\n"));
	assert_clean(trap.trace, true);
	assert_non_null(strstr(trap.trace, "\n# entries-written: 269   lost: 0\n"));
	g1 = graph_body(stub.trace);
	g2 = graph_body(trap.trace);
	assert_string_equal(g1, g2);
	free(g1);
	free(g2);
	hv_result_free(&stub);
	hv_result_free(&trap);
}

/* The function tracer: the forged task name is one escaped field of its lines, with either kind of
 * probe; with stubs, the three forged records are rejected. */
static void test_function_lines(void **state)
{
	struct hv_result r;

	(void)state;
	run(&r, "stub", "function");
	assert_clean(r.trace, false);
	assert_int_equal(count_text(r.trace, NAME_ESCAPED "-66      [000] "), 2);
	assert_int_equal(count_text(r.trace, LOST_LINES), 1);
	assert_int_equal(count_text(r.trace, "[LOST "), 2);
	assert_non_null(strstr(r.trace, "# entries-in-buffer/entries-written: 257/258   #P:2\n"));
	assert_non_null(strstr(r.trace, "\n# entries-written: 257   lost: 1   guest-reported-lost: "
					"18446744073709551615\n"));
	assert_int_equal(hv_stat(r.err, "stub probes ", "rejected "), 3);
	hv_result_free(&r);
	if (!needs_int3_exits("test_function_lines (trap probes)"))
		return;
	run(&r, "trap", "function");
	assert_clean(r.trace, false);
	assert_int_equal(count_text(r.trace, NAME_ESCAPED "-66      [000] "), 2);
	assert_non_null(strstr(r.trace, "\n# entries-written: 257   lost: 0\n"));
	hv_result_free(&r);
}

/* In this process, to read guest memory after the detach: the guest's text (every function's
 * bytes) equals the ELF file's, and of its scribbled frames only the one whose slot lies on its own
 * stack and holds the return routine's address was written back. */
static void text_after_detach(bool stub)
{
	struct kvm_fixture f;
	struct sink sink;
	struct writer w = {0};
	struct pollfd ended;
	unsigned nr_rings;
	char err[256];
	const struct vmi_sym *other, *same;
	uint64_t same_addr;

	kvm_fixture_boot(&f, hv_guest("hostile-data"), true, stub);
	assert_int_equal(tracer_attach(f.tr, err, sizeof(err)), 0);
	assert_int_equal(sink_graph_init(&sink, f.devnull, &f.g.elf.funcs, 2, true, false), 0);
	struct ring *rings = tracer_rings(f.tr, &nr_rings);

	assert_int_equal(writer_start(&w, rings, nr_rings, &sink, tracer_horizon, f.tr), 0);
	assert_int_equal(vcpu_start_all(&f.vm, err, sizeof(err)), 0);
	ended = (struct pollfd){.fd = f.vm.event_fd, .events = POLLIN};
	assert_int_equal(poll(&ended, 1, 600000), 1);
	assert_int_equal(f.vm.end, VM_END_GUEST_EXIT);
	assert_int_equal(f.vm.end_status, 0);
	assert_int_equal(tracer_detach(f.tr), 0);
	vcpu_join_all(&f.vm);
	writer_stop(&w, tracer_lost(f.tr));
	writer_free(&w);

	assert_true(kvm_sites_pristine(&f));
	for (size_t i = 0; i < f.g.elf.funcs.nr; i++) {
		const struct vmi_sym *fn = &f.g.elf.funcs.syms[i];
		const uint8_t *file = vmi_elf_bytes_at(&f.g.elf, fn->addr, fn->size);

		assert_non_null(file);
		assert_memory_equal(vm_gpa_ptr(&f.vm, fn->addr, fn->size), file, fn->size);
	}
	other = vmi_symtab_find(&f.g.elf.objects, "hd_decoy_other");
	same = vmi_symtab_find(&f.g.elf.objects, "hd_decoy_same_addr");
	assert_non_null(other);
	assert_non_null(same);
	memcpy(&same_addr, vm_gpa_ptr(&f.vm, same->addr, 8), 8);
	if (stub) {
		assert_memory_equal(vm_gpa_ptr(&f.vm, other->addr, 8), &f.tr->stub.stub.ret, 8);
		assert_memory_equal(vm_gpa_ptr(&f.vm, same_addr, 8), &(uint64_t){0x4444}, 8);
		assert_int_equal(f.tr->restored_slots, 1);
	} else {
		assert_int_equal(same_addr, 0);
	}
	kvm_fixture_free(&f);
}

static void test_text_after_detach_stub(void **state)
{
	(void)state;
	text_after_detach(true);
}

static void test_text_after_detach_trap(void **state)
{
	(void)state;
	if (!needs_int3_exits(__func__)) {
		skip();
		return;
	}
	text_after_detach(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stub_graph),
	    cmocka_unit_test(test_function_lines),
	    cmocka_unit_test(test_text_after_detach_stub),
	    cmocka_unit_test(test_text_after_detach_trap),
	};

	kvm_require();
	return cmocka_run_group_tests_name("kvm_hostile_data", tests, NULL, NULL);
}

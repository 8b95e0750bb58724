/* --trigger: the parser, the tracing on/off timeline, and the guest stack walk over fake guest
 * memory (frame pointers, hooked returns, the text scan without frame pointers, hostile stacks). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/trigger.h"

#include <errno.h>
#include <string.h>

static void test_parse(void **state)
{
	struct trigger t;
	char err[256];

	(void)state;
	assert_int_equal(trigger_parse("do_sys_openat2:traceoff", &t, err, sizeof(err)), 0);
	assert_string_equal(t.func, "do_sys_openat2");
	assert_int_equal(t.cmd, TRIG_TRACEOFF);
	assert_int_equal(t.count, -1);
	assert_int_equal(trigger_parse("a.isra.0:stacktrace:5", &t, err, sizeof(err)), 0);
	assert_string_equal(t.func, "a.isra.0");
	assert_int_equal(t.cmd, TRIG_STACKTRACE);
	assert_int_equal(t.count, 5);
	assert_int_equal(trigger_parse("f:snapshot:2147483647", &t, err, sizeof(err)), 0);
	assert_int_equal(t.count, 2147483647l);
	assert_int_equal(trigger_parse("f:traceon", &t, err, sizeof(err)), 0);
	assert_string_equal(trigger_cmd_name(t.cmd), "traceon");
	/* on the -e event inside a function: named as that event's probe ("f+0xOFF") */
	assert_int_equal(trigger_parse("vfs_read+9:stacktrace", &t, err, sizeof(err)), 0);
	assert_string_equal(t.func, "vfs_read+0x9");
	assert_int_equal(trigger_parse("vfs_read+0x1a:traceoff:1", &t, err, sizeof(err)), 0);
	assert_string_equal(t.func, "vfs_read+0x1a");
	assert_int_equal(trigger_parse("vfs_read+0:traceoff", &t, err, sizeof(err)), 0);
	assert_string_equal(t.func, "vfs_read");

	static const struct {
		const char *text, *err;
	} bad[] = {
	    {"", "--trigger '': expected FUNC:COMMAND[:N]"},
	    {":traceon", "--trigger ':traceon': expected FUNC:COMMAND[:N]"},
	    {"f", "--trigger 'f': expected FUNC:COMMAND[:N]"},
	    {"f:", "--trigger 'f:': unknown command (traceon, traceoff, stacktrace, snapshot, "
		   "hist)"},
	    {"f:traceonx",
	     "--trigger 'f:traceonx': unknown command (traceon, traceoff, stacktrace, "
	     "snapshot, hist)"},
	    {"f:trace", "--trigger 'f:trace': unknown command (traceon, traceoff, stacktrace, "
			"snapshot, hist)"},
	    {"f g:traceon", "--trigger 'f g:traceon': bad function name"},
	    {"+1:traceon", "--trigger '+1:traceon': bad function name"},
	    {"f+:traceon", "--trigger 'f+:traceon': bad offset into the function"},
	    {"f+x:traceon", "--trigger 'f+x:traceon': bad offset into the function"},
	    {"f+1+2:traceon", "--trigger 'f+1+2:traceon': bad offset into the function"},
	    {"f+0x100001:traceon", "--trigger 'f+0x100001:traceon': bad offset into the function"},
	    {"f:traceon:",
	     "--trigger 'f:traceon:': expected a count from 1 to 2147483647 after the "
	     "command"},
	    {"f:traceon:0", "--trigger 'f:traceon:0': expected a count from 1 to 2147483647 after "
			    "the command"},
	    {"f:traceon:-1",
	     "--trigger 'f:traceon:-1': expected a count from 1 to 2147483647 after "
	     "the command"},
	    {"f:traceon:2147483648", "--trigger 'f:traceon:2147483648': expected a count from 1 to "
				     "2147483647 after the command"},
	    {"f:traceon:1:2", "--trigger 'f:traceon:1:2': expected a count from 1 to 2147483647 "
			      "after the command"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(trigger_parse(bad[i].text, &t, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, bad[i].err);
	}
	char longname[300];

	memset(longname, 'a', 200);
	strcpy(longname + 200, ":traceon");
	assert_int_equal(trigger_parse(longname, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "': function name too long"));
}

static void test_timeline(void **state)
{
	struct tracing_state s;

	(void)state;
	tracing_state_init(&s, true);
	assert_true(tracing_state_at(&s, 0));
	assert_false(tracing_state_set(&s, true, 10)); /* already on */
	assert_true(tracing_state_set(&s, false, 100));
	assert_true(tracing_state_at(&s, 99));
	assert_false(tracing_state_at(&s, 100));
	assert_false(tracing_state_set(&s, false, 150));
	assert_true(tracing_state_set(&s, true, 200));
	assert_false(tracing_state_at(&s, 199));
	assert_true(tracing_state_at(&s, 200));
	assert_true(tracing_state_at(&s, 50));
	/* a switch from a hit stamped earlier than the last switch takes the last one's time */
	assert_true(tracing_state_set(&s, false, 120));
	assert_false(tracing_state_at(&s, 199));
	assert_false(tracing_state_at(&s, 200));
	assert_true(tracing_state_at(&s, 99));
	/* more switches than the log holds: the recent past stays exact, older times read as the
	 * oldest logged switch left them */
	tracing_state_init(&s, false);
	for (uint64_t k = 1; k <= 3 * TRACING_LOG; k++)
		assert_true(tracing_state_set(&s, k & 1, 1000 * k));
	for (uint64_t k = 2 * TRACING_LOG + 1; k <= 3 * TRACING_LOG; k++) {
		assert_int_equal(tracing_state_at(&s, 1000 * k), k & 1);
		assert_int_equal(tracing_state_at(&s, 1000 * k + 999), k & 1);
	}
	assert_int_equal(tracing_state_at(&s, 5), !((2 * TRACING_LOG + 1) & 1));
}

/* Fake guest memory: a stack page at STACK (readable [STACK, STACK + len)). */
#define STACK	0x7000
#define TEXT_LO 0x400000
#define TEXT_HI 0x500000
#define TRAMP	0x4ff000

static uint64_t mem[8192 / 8];
static size_t mem_len = sizeof(mem);

static int fake_read(void *ctx, uint64_t gva, void *buf, size_t len)
{
	(void)ctx;
	if (gva < STACK || gva - STACK > mem_len || len > mem_len - (gva - STACK))
		return -EFAULT;
	memcpy(buf, (uint8_t *)mem + (gva - STACK), len);
	return 0;
}

static uint64_t resolve_slot;
static uint64_t fake_resolve(void *ctx, uint64_t slot)
{
	(void)ctx;
	return slot == resolve_slot ? 0x401234 : 0;
}

static const struct trigger_stack_cfg cfg = {.text_lo = TEXT_LO,
					     .text_hi = TEXT_HI,
					     .read = fake_read,
					     .trampoline = TRAMP,
					     .resolve = fake_resolve};

#define W(off) mem[(off) / 8]

static void test_frame_pointers(void **state)
{
	uint64_t out[TRIGGER_MAX_FRAMES];
	size_t n;

	(void)state;
	memset(mem, 0, sizeof(mem));
	mem_len = sizeof(mem);
	/* rsp = STACK+0x100: return address; frames at +0x200 -> +0x300 -> +0x400 -> 0 */
	W(0x100) = 0x400100;
	W(0x200) = STACK + 0x300, W(0x208) = 0x400200;
	W(0x300) = STACK + 0x400, W(0x308) = TRAMP; /* a hooked return */
	W(0x400) = 0, W(0x408) = 0x400400;
	resolve_slot = STACK + 0x308;
	n = trigger_walk_stack(&cfg, 0x400000, STACK + 0x100, STACK + 0x200, out,
			       TRIGGER_MAX_FRAMES);
	assert_int_equal(n, 5);
	assert_int_equal(out[0], 0x400000);
	assert_int_equal(out[1], 0x400100);
	assert_int_equal(out[2], 0x400200);
	assert_int_equal(out[3], 0x401234);
	assert_int_equal(out[4], 0x400400);
	/* bounded by max */
	assert_int_equal(trigger_walk_stack(&cfg, 0x400000, STACK + 0x100, STACK + 0x200, out, 3),
			 3);
	assert_int_equal(trigger_walk_stack(&cfg, 0x400000, STACK + 0x100, STACK + 0x200, out, 0),
			 0);
	/* a guest without frame pointers (ORC): the chain is not followed, the stack is scanned */
	{
		struct trigger_stack_cfg orc = cfg;

		orc.no_frame_pointers = true;
		n = trigger_walk_stack(&orc, 0x400000, STACK + 0x100, STACK + 0x200, out,
				       TRIGGER_MAX_FRAMES);
		assert_int_equal(n,
				 5); /* ip, ret, then 0x400200, the hooked one, 0x400400 by scan */
		assert_int_equal(out[2], 0x400200);
		assert_int_equal(out[3], 0x401234);
		assert_int_equal(out[4], 0x400400);
		/* a hist's key: the frames it can vouch for only (no scan) */
		orc.reliable_only = true;
		assert_int_equal(trigger_walk_stack(&orc, 0x400000, STACK + 0x100, STACK + 0x200,
						    out, TRIGGER_MAX_FRAMES),
				 2);
		/* ... which with frame pointers is the whole chain */
		orc.no_frame_pointers = false;
		assert_int_equal(trigger_walk_stack(&orc, 0x400000, STACK + 0x100, STACK + 0x200,
						    out, TRIGGER_MAX_FRAMES),
				 5);
	}
	/* a return address out of the text: just the function */
	W(0x100) = 0x1234;
	assert_int_equal(trigger_walk_stack(&cfg, 0x400000, STACK + 0x100, STACK + 0x200, out, 16),
			 1);
}

static void test_hostile_frames(void **state)
{
	uint64_t out[TRIGGER_MAX_FRAMES];
	size_t n;

	(void)state;
	memset(mem, 0, sizeof(mem));
	mem_len = sizeof(mem);
	W(0x100) = 0x400100;
	/* a frame pointing to itself, or down the stack: the chain stops after that frame (no loop)
	 */
	W(0x200) = STACK + 0x200, W(0x208) = 0x400200;
	n = trigger_walk_stack(&cfg, 0x400000, STACK + 0x100, STACK + 0x200, out,
			       TRIGGER_MAX_FRAMES);
	assert_int_equal(n, 3); /* ip, ret, the self frame's return */
	assert_int_equal(out[2], 0x400200);
	W(0x200) = STACK + 0x100;
	n = trigger_walk_stack(&cfg, 0x400000, STACK + 0x100, STACK + 0x200, out,
			       TRIGGER_MAX_FRAMES);
	assert_int_equal(n, 3);
	/* misaligned, below rsp, far above: no chain; the scan finds the text words */
	memset(mem, 0, sizeof(mem));
	W(0x100) = 0x400100;
	W(0x180) = 0x400180;
	W(0x1000) = 0x401000;
	W(0x1008) = 0xffffffff81000000ull; /* not text here */
	for (uint64_t rbp = 0; rbp < 4; rbp++) {
		uint64_t bad[] = {STACK + 0x203, STACK + 0x80, STACK + 0x100 + TRIGGER_STACK_WINDOW,
				  0};

		n = trigger_walk_stack(&cfg, 0x400000, STACK + 0x100, bad[rbp], out,
				       TRIGGER_MAX_FRAMES);
		if (n != 4)
			fail_msg("rbp %#llx: %zu frames: %#llx %#llx %#llx",
				 (unsigned long long)bad[rbp], n, (unsigned long long)out[1],
				 (unsigned long long)out[2], (unsigned long long)out[3]);
		assert_int_equal(out[1], 0x400100);
		assert_int_equal(out[2], 0x400180);
		assert_int_equal(out[3], 0x401000);
	}
	/* the scan stops at the first unreadable byte (the end of the fake stack) */
	mem_len = 0x1000;
	n = trigger_walk_stack(&cfg, 0x400000, STACK + 0x100, 0, out, TRIGGER_MAX_FRAMES);
	assert_int_equal(n, 3);
	/* a stack at the top of the address space: no window */
	n = trigger_walk_stack(&cfg, 0x400000, UINT64_MAX - 8, 0, out, TRIGGER_MAX_FRAMES);
	assert_int_equal(n, 1);
	/* a stack full of text addresses: at most max */
	mem_len = sizeof(mem);
	for (size_t i = 0; i < sizeof(mem) / 8; i++)
		mem[i] = 0x400000 + i;
	n = trigger_walk_stack(&cfg, 0x400000, STACK + 0x100, 0, out, TRIGGER_MAX_FRAMES);
	assert_int_equal(n, TRIGGER_MAX_FRAMES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_timeline),
	    cmocka_unit_test(test_frame_pointers),
	    cmocka_unit_test(test_hostile_frames),
	};

	return cmocka_run_group_tests_name("trigger", tests, NULL, NULL);
}

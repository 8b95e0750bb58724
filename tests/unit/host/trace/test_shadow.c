/* Shadow stacks: grouping by guest stack, matching by slot, tail calls, abandoned frames, bounds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/shadow.h"

#include <string.h>

#define TRAMP 0xfffff000ull
#define STACK_A 0x200000ull /* 64 KiB stacks */
#define STACK_B 0x210000ull

static struct shadow sh;

static int setup(void **state)
{
	(void)state;
	return shadow_init(&sh, 64, 16, TRAMP);
}

static int teardown(void **state)
{
	(void)state;
	shadow_free(&sh);
	return 0;
}

static unsigned dropped_count;
static void on_drop(void *ctx, const struct shadow_entry *e)
{
	(void)ctx;
	(void)e;
	dropped_count++;
}

static void push(uint64_t slot, uint64_t orig, uint32_t probe)
{
	struct shadow_stack *st = shadow_lock(&sh, slot, true);
	const struct shadow_entry *top;
	struct shadow_entry e = {.slot = slot, .orig = orig, .probe = probe};

	assert_non_null(st);
	shadow_drop_dead(&sh, st, slot, orig == TRAMP ? TRAMP : orig, on_drop, NULL);
	top = shadow_top(st);
	e.depth = top ? top->depth + 1 : 0;
	assert_true(shadow_push(st, &e));
	shadow_unlock(st);
}

static bool pop(uint64_t slot, struct shadow_entry *out)
{
	struct shadow_stack *st = shadow_lock(&sh, slot, false);
	bool ok;

	if (!st)
		return false;
	ok = shadow_pop(st, slot, out, on_drop, NULL);
	shadow_unlock(st);
	return ok;
}

static void test_nested_calls_return_in_order(void **state)
{
	struct shadow_entry e;

	(void)state;
	shadow_clear(&sh);
	push(STACK_A + 0xff00, 0x1001, 1);
	push(STACK_A + 0xfe00, 0x1002, 2);
	push(STACK_A + 0xfd00, 0x1003, 3);
	assert_true(pop(STACK_A + 0xfd00, &e));
	assert_int_equal(e.orig, 0x1003);
	assert_int_equal(e.depth, 2);
	assert_true(pop(STACK_A + 0xfe00, &e));
	assert_int_equal(e.orig, 0x1002);
	assert_true(pop(STACK_A + 0xff00, &e));
	assert_int_equal(e.depth, 0);
	assert_false(pop(STACK_A + 0xff00, &e));
}

/* Two guest stacks interleave (task switches): each keeps its own entries. */
static void test_stacks_are_separate(void **state)
{
	struct shadow_entry e;

	(void)state;
	shadow_clear(&sh);
	push(STACK_A + 0xff00, 0xa1, 1);
	push(STACK_B + 0xff00, 0xb1, 2);
	push(STACK_A + 0xfe00, 0xa2, 3);
	push(STACK_B + 0xfe00, 0xb2, 4);
	assert_true(pop(STACK_B + 0xfe00, &e));
	assert_int_equal(e.orig, 0xb2);
	assert_int_equal(e.depth, 1);
	assert_true(pop(STACK_A + 0xfe00, &e));
	assert_int_equal(e.orig, 0xa2);
	assert_true(pop(STACK_A + 0xff00, &e));
	assert_int_equal(e.orig, 0xa1);
	assert_true(pop(STACK_B + 0xff00, &e));
	assert_int_equal(e.orig, 0xb1);
}

/* A tail call pushes a second entry for the same slot (which already holds the trampoline): the first
 * return gives the trampoline back, the second the real address. */
static void test_tail_call(void **state)
{
	struct shadow_entry e;

	(void)state;
	shadow_clear(&sh);
	push(STACK_A + 0xff00, 0x4242, 1);
	push(STACK_A + 0xff00, TRAMP, 2);
	assert_int_equal(shadow_resolve(&sh, STACK_A + 0xff00), 0x4242);
	assert_true(pop(STACK_A + 0xff00, &e));
	assert_int_equal(e.probe, 2);
	assert_int_equal(e.orig, TRAMP);
	assert_int_equal(e.depth, 1);
	assert_true(pop(STACK_A + 0xff00, &e));
	assert_int_equal(e.probe, 1);
	assert_int_equal(e.orig, 0x4242);
}

/* Frames abandoned by a non-local exit are dropped (and reported) by the next return above them, and
 * by a new call at the same or a shallower slot whose slot no longer holds the trampoline. */
static void test_abandoned_frames(void **state)
{
	struct shadow_entry e;

	(void)state;
	shadow_clear(&sh);
	dropped_count = 0;
	push(STACK_A + 0xff00, 0x1, 1);
	push(STACK_A + 0xfe00, 0x2, 2);
	push(STACK_A + 0xfd00, 0x3, 3);
	assert_true(pop(STACK_A + 0xff00, &e)); /* longjmp'd over two frames */
	assert_int_equal(e.orig, 0x1);
	assert_int_equal(dropped_count, 2);

	dropped_count = 0;
	push(STACK_A + 0xfe00, 0x5, 5);
	push(STACK_A + 0xfe00, 0x6, 6); /* same slot, overwritten by a fresh call: the old frame is dead */
	assert_int_equal(dropped_count, 1);
	assert_true(pop(STACK_A + 0xfe00, &e));
	assert_int_equal(e.orig, 0x6);
	assert_int_equal(e.depth, 0);
	assert_false(pop(STACK_A + 0xfe00, &e));
}

static void test_depth_bound(void **state)
{
	struct shadow_stack *st;
	struct shadow_entry e = {.orig = 1};

	(void)state;
	shadow_clear(&sh);
	st = shadow_lock(&sh, STACK_A + 0xffff, true);
	for (unsigned i = 0; i < SHADOW_MAX_DEPTH; i++) {
		e.slot = STACK_A + 0xff00 - 8 * i;
		assert_true(shadow_push(st, &e));
	}
	e.slot -= 8;
	assert_false(shadow_push(st, &e));
	assert_int_equal(st->nr, SHADOW_MAX_DEPTH);
	shadow_unlock(st);
}

static unsigned visited;
static uint64_t visit_order[8];
static void visit(void *ctx, const struct shadow_entry *e)
{
	(void)ctx;
	visit_order[visited++] = e->orig;
}

/* Teardown walks newest first, so a tail-call slot ends up with its real return address. */
static void test_for_each_newest_first(void **state)
{
	(void)state;
	shadow_clear(&sh);
	visited = 0;
	push(STACK_A + 0xff00, 0x10, 1);
	push(STACK_A + 0xff00, TRAMP, 2);
	shadow_for_each(&sh, visit, NULL);
	assert_int_equal(visited, 2);
	assert_int_equal(visit_order[0], TRAMP);
	assert_int_equal(visit_order[1], 0x10);
}

/* A return handed back at detach (vCPU on the trampoline): all entries of its slot go, others stay. */
static void test_forget(void **state)
{
	struct shadow_entry e;

	(void)state;
	shadow_clear(&sh);
	push(STACK_A + 0xff00, 0x10, 1);
	push(STACK_A + 0xfe00, 0x20, 2);
	push(STACK_A + 0xfe00, TRAMP, 3);
	shadow_forget(&sh, STACK_A + 0xfe00);
	assert_false(pop(STACK_A + 0xfe00, &e));
	assert_true(pop(STACK_A + 0xff00, &e));
	assert_int_equal(e.orig, 0x10);
}

/* A return in flight: its entry popped, the vCPU still on the trampoline (the tracing process died
 * before moving it). Its address stays known until the stack changes again; forgetting it counts it
 * as the one return handed back. */
static void test_popped_entry_resolves(void **state)
{
	struct shadow_entry e;

	(void)state;
	shadow_clear(&sh);
	push(STACK_A + 0xff00, 0x10, 1);
	push(STACK_A + 0xfe00, 0x20, 2);
	assert_true(pop(STACK_A + 0xfe00, &e));
	assert_int_equal(shadow_resolve(&sh, STACK_A + 0xfe00), 0x20);
	assert_int_equal(shadow_resolve(&sh, STACK_A + 0xfd00), 0);
	assert_int_equal(shadow_forget(&sh, STACK_A + 0xfe00), 1);
	assert_int_equal(shadow_resolve(&sh, STACK_A + 0xfe00), 0);
	/* a later call on that stack overwrites what was popped: nothing in flight any more */
	assert_true(pop(STACK_A + 0xff00, &e));
	assert_int_equal(shadow_resolve(&sh, STACK_A + 0xff00), 0x10);
	push(STACK_A + 0xff00, 0x30, 3);
	assert_true(pop(STACK_A + 0xff00, &e));
	push(STACK_A + 0xfe00, 0x40, 4);
	assert_int_equal(shadow_resolve(&sh, STACK_A + 0xff00), 0);
	/* a tail call: the live entry wins over the popped one (whose orig is the trampoline) */
	shadow_clear(&sh);
	push(STACK_A + 0xff00, 0x50, 5);
	push(STACK_A + 0xff00, TRAMP, 6);
	assert_true(pop(STACK_A + 0xff00, &e));
	assert_int_equal(e.orig, TRAMP);
	assert_int_equal(shadow_resolve(&sh, STACK_A + 0xff00), 0x50);
}

/* The table of stacks is bounded: once full, a new stack gets none (the caller counts a miss). */
static void test_table_full(void **state)
{
	struct shadow small;

	(void)state;
	assert_int_equal(shadow_init(&small, 16, 16, TRAMP), 0);
	for (uint64_t i = 0; i < 16; i++) {
		struct shadow_stack *st = shadow_lock(&small, (i + 1) << 16, true);

		assert_non_null(st);
		shadow_unlock(st);
	}
	assert_null(shadow_lock(&small, 100ull << 16, true));
	assert_non_null(shadow_lock(&small, 3ull << 16, false));
	shadow_free(&small);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nested_calls_return_in_order),
		cmocka_unit_test(test_stacks_are_separate),
		cmocka_unit_test(test_tail_call),
		cmocka_unit_test(test_abandoned_frames),
		cmocka_unit_test(test_depth_bound),
		cmocka_unit_test(test_for_each_newest_first),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_forget),
		cmocka_unit_test(test_popped_entry_resolves),
	};

	return cmocka_run_group_tests_name("shadow", tests, setup, teardown);
}

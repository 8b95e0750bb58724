/* The instrumented part of the test guest (built with -pg -mfentry -mnop-mcount -mrecord-mcount).
 * Every function counts its own calls per vCPU, so the trace can be compared with the guest's counts. */
#include "tests/guest/guest.h"

noinline long fib(long n)
{
	COUNT(FN_FIB);
	if (n < 2)
		return n;
	return fib(n - 1) + fib(n - 2);
}

noinline long tree_leaf(long x)
{
	COUNT(FN_TREE_LEAF);
	return x * x;
}

noinline long tree_a(long x)
{
	COUNT(FN_TREE_A);
	return tree_leaf(x) + tree_leaf(x + 1);
}

noinline long tree_b(long x)
{
	COUNT(FN_TREE_B);
	return tree_a(x) * tree_leaf(x);
}

/* tree_a(1) + tree_a(2) + tree_b(3) = 5 + 13 + 225 = 243 */
noinline long tree_root(void)
{
	COUNT(FN_TREE_ROOT);
	return tree_a(1) + tree_a(2) + tree_b(3);
}

noinline long task_leaf(long x)
{
	COUNT(FN_TASK_LEAF);
	return x * 3 + 1;
}

/* Yields in the middle: the task resumes on the next vCPU, so this call returns on another one. */
noinline long task_step(struct task *t, long i)
{
	long a, b;

	COUNT(FN_TASK_STEP);
	a = task_leaf(i + t->pid);
	task_yield_migrate(t);
	b = task_leaf(a);
	return a + b;
}

noinline void task_body(struct task *t)
{
	long sum = 0;

	COUNT(FN_TASK_BODY);
	for (long i = 0; i < TASK_STEPS; i++)
		sum += task_step(t, i);
	t->result = sum;
}

/* Calls itself until @depth reaches 0, then jumps back to nl_outer: no call returns. */
noinline void nl_inner(struct jmpbuf *b, long depth)
{
	COUNT(FN_NL_INNER);
	if (!b)
		return;
	if (depth > 1)
		nl_inner(b, depth - 1);
	nl_longjmp(b, NL_VALUE);
}

/* A non-local exit: NL_DEPTH nested nl_inner frames are abandoned. Returns NL_VALUE. */
noinline long nl_outer(void)
{
	struct jmpbuf b;
	volatile long r;

	COUNT(FN_NL_OUTER);
	r = nl_setjmp(&b);
	if (r == 0)
		nl_inner(&b, NL_DEPTH);
	return r;
}

/* Recursion DEEP_CALLS deep; returns n. */
noinline long deep(long n)
{
	COUNT(FN_DEEP);
	if (n <= 1)
		return 1;
	return deep(n - 1) + 1;
}

/* The target of function-based events: never dereferences @label (it may be a bad pointer). */
noinline long ev_target(struct ev_obj *o, const char *label, const uint32_t *vals, long n)
{
	COUNT(FN_EV_TARGET);
	(void)label;
	(void)vals;
	return o->id + n;
}

/* fib(FIB_BASE + cpu % 4) into *fib_out and TREE_ROUNDS call trees; returns the number of wrong tree
 * values. */
noinline long workload_run(int cpu, long *fib_out)
{
	long bad = 0;

	COUNT(FN_WORKLOAD_RUN);
	*fib_out = fib(FIB_BASE + cpu % 4);
	for (int r = 0; r < TREE_ROUNDS; r++)
		if (tree_root() != TREE_VALUE)
			bad++;
	if (tail_top(TAIL_ARG) != 2 * (TAIL_ARG + 2))
		bad++;
	if (nl_outer() != NL_VALUE)
		bad++;
	if (deep(DEEP_CALLS) != DEEP_CALLS)
		bad++;
	{
		long ev_call(int bad);

		if (ev_call(0) != 45 || ev_call(1) != 45)
			bad++;
	}
	return bad;
}

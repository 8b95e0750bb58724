/* Instrumented tail calls (built with -O2 -foptimize-sibling-calls): tail_top jumps to tail_mid, which
 * jumps to tail_leaf, so all three share one return slot. tail_top(x) = 2 * (x + 2). */
#include "tests/guest/guest.h"

noinline long tail_leaf(long x)
{
	COUNT(FN_TAIL_LEAF);
	return x * 2;
}

noinline long tail_mid(long x)
{
	COUNT(FN_TAIL_MID);
	return tail_leaf(x + 1);
}

noinline long tail_top(long x)
{
	COUNT(FN_TAIL_TOP);
	return tail_mid(x + 1);
}

/* Splitting one test binary's cmocka tests between processes run side by side (make test's
 * HVT_TEST_JOBS): $HVT_TEST_SHARD=K/N keeps the tests whose index in the binary's table is K modulo N.
 * Each shard needs its own names for what the binary shares between its tests (test_linux: its
 * libvirt domain, $HVT_TEST_DOMAIN). */
#ifndef HVT_TESTS_SHARD_H
#define HVT_TESTS_SHARD_H

#include <stdbool.h>
#include <stddef.h>

/* Whether test number INDEX of the binary's table runs in this process: always without
 * $HVT_TEST_SHARD; with it, INDEX % N == K. A malformed value (not K/N with 0 <= K < N) prints one
 * line naming it and exits with status 2. */
bool hv_shard_keeps(size_t index);

#endif

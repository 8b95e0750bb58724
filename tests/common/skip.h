/* A test binary that cannot run here (no /dev/kvm, no QEMU, no Linux guest...) says so in one line
 * "SKIPPED: <reason>" and exits HVT_SKIP_EXIT, which scripts/run-tests.sh counts as skipped and
 * lists with its reason. A single cmocka test that cannot run calls cmocka's skip() instead. */
#ifndef HVT_TESTS_SKIP_H
#define HVT_TESTS_SKIP_H

/* The exit status of a test binary that did not run (the kernel selftests' KSFT_SKIP). */
#define HVT_SKIP_EXIT 77

/* Prints "SKIPPED: " and the printf-formatted reason as one line on stdout, flushes it and exits
 * with HVT_SKIP_EXIT. Call it from main, before any test runs. */
__attribute__((noreturn, format(printf, 1, 2))) void hv_skip_binary(const char *fmt, ...);

#endif

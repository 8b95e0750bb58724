/* Checks of a JUnit XML report hvtrace wrote (--junit), by tools independent of hvtrace. */
#ifndef HVT_TESTS_JUNIT_H
#define HVT_TESTS_JUNIT_H

/* Fails the running cmocka test unless the report @path validates against tests/common/junit.xsd
 * (xmllint) and junitparser reads exactly @want_cases in it (tests/common/junit_cases.py: one
 * "suite|class|case|result" line per case). */
void assert_junit(const char *path, const char *want_cases);

#endif

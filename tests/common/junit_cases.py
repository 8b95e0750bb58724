#!/usr/bin/python3
"""Reads a JUnit XML report with junitparser (the JUnit reader CI tools build on) and prints one line
per test case: suite, test case, passed or the kind and message of its result. Exit 1 if the file is
not a JUnit report junitparser can read, or its counts disagree with its test cases."""
import sys

from junitparser import Error, Failure, JUnitXml

xml = JUnitXml.fromfile(sys.argv[1])
for suite in xml:
    cases = list(suite)
    failed = sum(1 for c in cases if any(isinstance(r, Failure) for r in c.result))
    errors = sum(1 for c in cases if any(isinstance(r, Error) for r in c.result))
    if (suite.tests, suite.failures, suite.errors) != (len(cases), failed, errors):
        sys.exit(f"{suite.name}: counts {suite.tests}/{suite.failures}/{suite.errors} "
                 f"but {len(cases)} cases, {failed} failed, {errors} errors")
    for case in cases:
        if case.is_passed:
            print(f"{suite.name}|{case.classname}|{case.name}|passed")
        for r in case.result:
            print(f"{suite.name}|{case.classname}|{case.name}|{r._tag}|{r.type}|{r.message}")
